//! The PostgreSQL wire server (being built; see issue 22).

use std::sync::Arc;

use tokio::net::TcpListener;

use crate::{ServerError, Shared, Shutdown};

/// Serves the PostgreSQL wire protocol on `listener` until shutdown.
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    shutdown: Shutdown,
) -> Result<(), ServerError> {
    let _ = (listener, shared, shutdown);
    Err(ServerError::Protocol {
        protocol: "PostgreSQL wire",
        message: "not built yet".to_string(),
    })
}
