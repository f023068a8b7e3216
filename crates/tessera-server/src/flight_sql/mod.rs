//! The Arrow Flight SQL server (ADBC, JDBC Flight SQL, Superset): results stream as
//! Arrow batches without being converted to rows.
//!
//! A client logs in with basic authentication in the handshake and gets a bearer token
//! that names its own session ([`clients`]); statements are planned by GetFlightInfo
//! and streamed by DoGet ([`stream`]); prepared statements bind parameters to
//! DataFusion placeholders ([`statements`], [`prepared`]); catalog metadata comes from
//! the session's `information_schema` ([`metadata`]).

mod actions;
mod auth;
mod clients;
mod connections;
mod metadata;
mod prepared;
mod queries;
mod service;
mod statements;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use arrow_flight::flight_service_server::FlightServiceServer;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::{ServerError, Shared, Shutdown};

/// How long a session may go unused before it is closed and its slot freed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// How often idle sessions are looked for.
const IDLE_SWEEP_INTERVAL: Duration = Duration::from_secs(30);
/// How long connections may take to close after the grace period ended (their
/// streams have been told to stop by then).
const CLOSE_AFTER_DEADLINE: Duration = Duration::from_secs(2);
/// The largest message a client may send (parameter batches); results are split into
/// messages of about 2 MiB by the encoder.
const MESSAGE_BYTES_MAX: usize = 64 << 20;

/// Serves the Arrow Flight SQL protocol on `listener` until shutdown.
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    shutdown: Shutdown,
) -> Result<(), ServerError> {
    let tls = shared.tls.as_ref().map(|config| {
        // gRPC clients require HTTP/2 to be negotiated by ALPN.
        let mut config = config.as_ref().clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        TlsAcceptor::from(Arc::new(config))
    });
    let clients = Arc::new(clients::Clients::new(shared));
    let service = service::Service::new(Arc::clone(&clients), shutdown.clone()).map_err(|e| {
        ServerError::Protocol {
            protocol: "Arrow Flight SQL",
            message: e.message().to_string(),
        }
    })?;
    tokio::spawn(expire_idle(Arc::clone(&clients), shutdown.clone()));
    let incoming = connections::incoming(listener, tls, clients, shutdown.clone());
    let server = FlightServiceServer::new(service)
        .max_decoding_message_size(MESSAGE_BYTES_MAX)
        .max_encoding_message_size(MESSAGE_BYTES_MAX);
    let mut started = shutdown.clone();
    let serving = tonic::transport::Server::builder()
        .add_service(server)
        .serve_with_incoming_shutdown(incoming, async move { started.started().await });
    let mut deadline = shutdown;
    tokio::select! {
        served = serving => served.map_err(|e| ServerError::Protocol {
            protocol: "Arrow Flight SQL",
            message: e.to_string(),
        }),
        // Streams stop at the deadline; a client that does not read their end must not
        // keep the server from exiting.
        () = async move {
            deadline.deadline().await;
            tokio::time::sleep(CLOSE_AFTER_DEADLINE).await;
        } => Ok(()),
    }
}

/// Closes idle sessions until shutdown.
async fn expire_idle(clients: Arc<clients::Clients>, mut shutdown: Shutdown) {
    loop {
        tokio::select! {
            () = shutdown.started() => return,
            () = tokio::time::sleep(IDLE_SWEEP_INTERVAL) => clients.expire_idle(IDLE_TIMEOUT),
        }
    }
}
