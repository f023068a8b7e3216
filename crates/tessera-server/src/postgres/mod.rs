//! The PostgreSQL wire server: psql, psycopg, JDBC, DBeaver and Metabase talk to Tessera
//! as if it were PostgreSQL.
//!
//! pgwire decodes and encodes the protocol; this module drives each connection itself
//! (see [`connection`]) so that a running query can be cancelled, noticed as abandoned
//! when its client disconnects, and stopped at the shutdown deadline. Each connection
//! authenticates with SCRAM-SHA-256 ([`auth`]), then holds one Tessera session until it
//! closes; statements go through [`TesseraSession::execute`](tessera_engine::TesseraSession::execute)
//! ([`query`], [`statement`]) and results are encoded from Arrow by arrow-pg.

mod auth;
mod cancel;
mod catalog;
mod connection;
mod encode;
mod named;
mod parameters;
mod query;
mod statement;
mod wire_types;

use std::sync::Arc;
use std::time::Duration;

use datafusion_pg_catalog::sql::PostgresCompatibilityParser;
use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::{PidSecretKeyGenerator, RandomPidSecretKeyGenerator};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::{ServerError, Shared, Shutdown};

/// Connections beyond the session limit that may be open at once: clients being told
/// "too many sessions", cancel requests, and clients still authenticating. More are
/// closed at once, so that idle sockets cannot exhaust the process's file descriptors.
const CONNECTIONS_BEYOND_SESSIONS: usize = 64;

/// How long a connection may take to negotiate TLS and authenticate.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// How long closing connections may take after the shutdown deadline (a client that
/// does not read its socket must not keep the server alive).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// A pause after a failed `accept` (out of file descriptors, say), so that the loop
/// does not spin while the condition lasts.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(100);

/// What every connection of the PostgreSQL server shares.
struct Server {
    shared: Arc<Shared>,
    scram: ScramAuth,
    keys: RandomPidSecretKeyGenerator,
    cancels: Arc<cancel::CancelRegistry>,
    catalog_parser: Arc<PostgresCompatibilityParser>,
    shutdown: Shutdown,
    /// `true` once running queries must be cancelled.
    deadline: watch::Receiver<bool>,
}

impl Server {
    fn keys(&self) -> &dyn PidSecretKeyGenerator {
        &self.keys
    }
}

/// Serves the PostgreSQL wire protocol on `listener` until shutdown.
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    shutdown: Shutdown,
) -> Result<(), ServerError> {
    let (deadline_sender, deadline) = watch::channel(false);
    let connections_max = shared.sessions.sessions_max() + CONNECTIONS_BEYOND_SESSIONS;
    let server = Arc::new(Server {
        scram: auth::scram(&shared.credentials),
        shared,
        keys: RandomPidSecretKeyGenerator::default(),
        cancels: Arc::new(cancel::CancelRegistry::default()),
        catalog_parser: Arc::new(PostgresCompatibilityParser::new()),
        shutdown: shutdown.clone(),
        deadline,
    });
    let mut connections = JoinSet::new();
    accept(&listener, &server, &mut connections, connections_max).await;
    drop(listener);
    let mut grace = shutdown.clone();
    tokio::select! {
        () = drain(&mut connections) => return Ok(()),
        () = grace.deadline() => {}
    }
    // Connections see the deadline, cancel their queries and say why they close.
    let _ = deadline_sender.send(true);
    if tokio::time::timeout(CLOSE_TIMEOUT, drain(&mut connections))
        .await
        .is_err()
    {
        connections.shutdown().await;
    }
    Ok(())
}

/// Accepts connections until shutdown begins, at most `connections_max` open at once.
async fn accept(
    listener: &TcpListener,
    server: &Arc<Server>,
    connections: &mut JoinSet<()>,
    connections_max: usize,
) {
    let mut shutdown = server.shutdown.clone();
    loop {
        tokio::select! {
            () = shutdown.started() => return,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) if connections.len() < connections_max => {
                    // A reply is several small writes; Nagle's algorithm would hold the
                    // last one for the client's delayed ACK.
                    let _ = stream.set_nodelay(true);
                    connections.spawn(connection::run(stream, Arc::clone(server)));
                }
                // Over the limit: closing the socket at once is the cheapest answer.
                Ok(_) => {}
                Err(e) => {
                    eprintln!("PostgreSQL wire: cannot accept a connection: {e}");
                    tokio::time::sleep(ACCEPT_RETRY_DELAY).await;
                }
            },
        }
    }
}

/// Waits for every connection to end.
async fn drain(connections: &mut JoinSet<()>) {
    while connections.join_next().await.is_some() {}
}
