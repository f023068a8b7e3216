//! One client connection: TLS negotiation, then a loop that reads a message and runs
//! it while watching for a cancel request, the client going away and the shutdown
//! deadline.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use pgwire::api::auth::sasl::SASLState;
use pgwire::api::{ClientInfo, NoopHandler, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{
    MaybeTls, PgWireMessageServerCodec, negotiate_tls, process_error, process_message,
};
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};
use tokio::time::{Instant, sleep, sleep_until, timeout};
use tokio_util::codec::Framed;

use super::cancel::CancelGuard;
use super::named::Named;
use super::statement::{Parser, Prepared};
use super::{CLOSE_TIMEOUT, STARTUP_TIMEOUT, Server};

/// The socket as pgwire frames it.
type Socket = Framed<MaybeTls, PgWireMessageServerCodec<Prepared>>;

/// How often a running query checks whether its client hung up while the client has
/// sent more than the server read (readiness then stays set, so waiting on it alone
/// would spin).
const HANG_UP_POLL: Duration = Duration::from_millis(200);

/// A connection's state, shared by its protocol handlers.
pub(super) struct Connection {
    pub(super) server: Arc<Server>,
    /// Parses statements in the connection's session (set once authenticated).
    pub(super) parser: Arc<Parser>,
    pub(super) sasl: tokio::sync::Mutex<SASLState>,
    /// Woken by a cancel request carrying this connection's backend key.
    pub(super) cancel: Arc<Notify>,
    pub(super) cancel_guard: OnceLock<CancelGuard>,
    /// The client's named statements and portals.
    pub(super) named: Mutex<Named>,
}

impl Connection {
    /// The client's named statements and portals.
    pub(super) fn named(&self) -> MutexGuard<'_, Named> {
        // The sets stay consistent after any panic (each change is one call).
        self.named.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Serves one client until it leaves, fails, or the server stops.
pub(super) async fn run(stream: TcpStream, server: Arc<Server>) {
    let Ok((stream, watcher)) = with_watcher(stream) else {
        return;
    };
    let tls = server
        .shared
        .tls
        .clone()
        .map(pgwire::tokio::TlsAcceptor::from);
    let socket = timeout(STARTUP_TIMEOUT, negotiate_tls::<Prepared>(stream, tls)).await;
    let Ok(Ok(Some(mut socket))) = socket else {
        return;
    };
    let connection = Arc::new(Connection {
        parser: Arc::new(Parser::new(Arc::clone(&server.catalog_parser))),
        sasl: tokio::sync::Mutex::new(SASLState::Initial),
        cancel: Arc::new(Notify::new()),
        cancel_guard: OnceLock::new(),
        named: Mutex::new(Named::default()),
        server,
    });
    serve_messages(&mut socket, &watcher, &connection).await;
}

/// The message loop.
async fn serve_messages(socket: &mut Socket, watcher: &TcpStream, connection: &Arc<Connection>) {
    let startup_deadline = Instant::now() + STARTUP_TIMEOUT;
    let mut shutdown = connection.server.shutdown.clone();
    let mut deadline = connection.server.deadline.clone();
    // Whether the client waits for nothing more (the last answer was ReadyForQuery):
    // only then may shutdown close the connection before the deadline.
    let mut at_boundary = true;
    loop {
        let authenticating = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let message = tokio::select! {
            message = socket.next() => message,
            () = sleep_until(startup_deadline), if authenticating => return,
            () = shutdown.started(), if at_boundary => return terminate(socket).await,
        };
        let Some(Ok(message)) = message else {
            return;
        };
        if matches!(message, PgWireFrontendMessage::Terminate(_)) {
            return;
        }
        at_boundary = authenticating
            || matches!(
                message,
                PgWireFrontendMessage::Query(_) | PgWireFrontendMessage::Sync(_)
            );
        let extended = message.is_extended_query();
        let admitted = connection.named().admit(&message);
        let outcome = match admitted {
            Ok(()) => run_message(message, socket, watcher, connection, &mut deadline).await,
            Err(e) => Outcome::Done(Err(e)),
        };
        let outcome = match outcome {
            Outcome::Done(outcome) => outcome,
            Outcome::HungUp => return,
            Outcome::Deadline => return terminate(socket).await,
        };
        if let Err(error) = outcome {
            let error = connection.describe(error);
            let reported = connection.report_rejects(socket).await;
            if reported.is_err() || process_error(socket, error, extended).await.is_err() {
                return;
            }
        }
    }
}

/// How running a message ended.
enum Outcome {
    /// It was answered, or failed (and the error is for the client).
    Done(PgWireResult<()>),
    /// The client went away.
    HungUp,
    /// The shutdown deadline passed.
    Deadline,
}

/// Runs `message`, unless a cancel request, the client hanging up or the shutdown
/// deadline stops it first (dropping its future stops its query).
async fn run_message(
    message: PgWireFrontendMessage,
    socket: &mut Socket,
    watcher: &TcpStream,
    connection: &Arc<Connection>,
    deadline: &mut watch::Receiver<bool>,
) -> Outcome {
    tokio::select! {
            outcome = process_message(
                message,
                socket,
                Arc::clone(connection),
                Arc::clone(connection),
                Arc::clone(connection),
                Arc::new(NoopHandler),
                Arc::clone(&connection.server.cancels),
            ) => Outcome::Done(outcome),
            () = connection.cancel.notified() => Outcome::Done(Err(PgWireError::QueryCanceled)),
            // The connection then ends, which frees its session.
            () = hung_up(watcher) => Outcome::HungUp,
            () = passed(deadline) => Outcome::Deadline,
    }
}

/// Resolves once the shutdown deadline passed.
async fn passed(deadline: &mut watch::Receiver<bool>) {
    // An error means the server is gone, which is a deadline too.
    let _ = deadline.wait_for(|passed| *passed).await;
}

/// Tells the client the server is shutting down, then closes the connection.
async fn terminate(socket: &mut Socket) {
    let error = ErrorInfo::new(
        "FATAL".to_string(),
        "57P01".to_string(),
        "terminating connection because the server is shutting down".to_string(),
    );
    let goodbye = async {
        socket
            .send(PgWireBackendMessage::ErrorResponse(error.into()))
            .await?;
        socket.close().await
    };
    // The client may not read; it gets no more than the close timeout.
    let _ = timeout(CLOSE_TIMEOUT, goodbye).await;
}

/// The stream, and a second handle on the same socket that only watches for the client
/// hanging up while a query runs (the first is busy inside the query's handler then).
fn with_watcher(stream: TcpStream) -> std::io::Result<(TcpStream, TcpStream)> {
    let stream = stream.into_std()?;
    let watcher = stream.try_clone()?;
    Ok((TcpStream::from_std(stream)?, TcpStream::from_std(watcher)?))
}

/// Resolves once the client closed its end of the connection (or the socket failed).
async fn hung_up(watcher: &TcpStream) {
    loop {
        match watcher.ready(Interest::READABLE).await {
            Ok(ready) if !ready.is_read_closed() => sleep(HANG_UP_POLL).await,
            _ => return,
        }
    }
}
