//! The Arrow Flight SQL server (being built; see issue 22).

use std::sync::Arc;

use tokio::net::TcpListener;

use crate::{ServerError, Shared, Shutdown};

/// Serves the Arrow Flight SQL protocol on `listener` until shutdown.
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    shutdown: Shutdown,
) -> Result<(), ServerError> {
    let _ = (listener, shared, shutdown);
    Err(ServerError::Protocol {
        protocol: "Arrow Flight SQL",
        message: "not built yet".to_string(),
    })
}
