//! `tessera serve`: Tessera behind the protocols users' tools already speak.
//!
//! `tessera serve --storage-side` runs [`storage_side`] instead: the near-data worker
//! that runs sub-plans beside the object store.
//!
//! Otherwise one process answers two protocols, each in its own module:
//!
//! - [`postgres`]: the PostgreSQL wire protocol (psql, psycopg, JDBC, DBeaver, Metabase).
//! - [`flight_sql`]: Arrow Flight SQL (ADBC, JDBC Flight SQL, Superset), which streams
//!   Arrow batches without converting them to rows.
//!
//! Both share what this module holds: [`Sessions`], which opens one
//! [`TesseraSession`] per client connection (its own `SET`s, temporary tables and memory
//! pool) and bounds how many are open at once; the [`Credentials`] every client must
//! present; the optional TLS identity; and the [`Shutdown`] signal that stops accepting
//! connections and lets running queries finish for a bounded grace period.

pub mod flight_sql;
pub mod postgres;
pub mod storage_side;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tessera_blob::S3Config;
use tessera_engine::{SessionOptions, TesseraSession};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A listening address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The TLS certificate or key could not be read or used.
    #[error("TLS: {0}")]
    Tls(String),
    /// A session could not be opened (its configuration is invalid).
    #[error("cannot open a session: {0}")]
    Session(#[from] datafusion::error::DataFusionError),
    /// Every session slot is taken.
    #[error("too many sessions: the server allows {sessions_max} at once")]
    TooManySessions {
        /// The configured limit.
        sessions_max: usize,
    },
    /// A protocol server failed while running.
    #[error("{protocol} server: {message}")]
    Protocol {
        /// Which protocol.
        protocol: &'static str,
        /// One sentence.
        message: String,
    },
}

/// The user name and password every client presents (PostgreSQL SCRAM or cleartext
/// over TLS; Flight SQL basic authentication, answered with a bearer token).
#[derive(Clone)]
pub struct Credentials {
    /// The one user name the server accepts.
    pub user: String,
    /// Its password (never logged or echoed).
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// PEM files of the server's TLS identity.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain.
    pub cert: PathBuf,
    /// The private key.
    pub key: PathBuf,
}

/// What `tessera serve` listens on and how.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The PostgreSQL wire address, if served.
    pub postgres: Option<SocketAddr>,
    /// The Arrow Flight SQL address, if served.
    pub flight_sql: Option<SocketAddr>,
    /// What clients must present.
    pub credentials: Credentials,
    /// Serve over TLS with this identity (both protocols).
    pub tls: Option<TlsFiles>,
    /// Sessions open at once, over both protocols; more are refused with a message.
    pub sessions_max: usize,
    /// How long running queries may go on after a shutdown signal before they are
    /// cancelled.
    pub shutdown_grace: Duration,
}

/// Opens client sessions and bounds how many are open at once.
pub struct Sessions {
    s3: S3Config,
    options: SessionOptions,
    permits: Arc<Semaphore>,
    sessions_max: usize,
}

/// A client's session; its slot is given back when it is dropped.
pub struct OpenSession {
    /// The session the client's statements run in.
    pub session: TesseraSession,
    _permit: OwnedSemaphorePermit,
}

impl Sessions {
    /// Sessions configured like `s3` and `options` (each client may `SET` its own
    /// options afterwards), at most `sessions_max` at once.
    pub fn new(s3: S3Config, options: SessionOptions, sessions_max: usize) -> Self {
        assert!(sessions_max > 0, "a server allows at least one session");
        Self {
            s3,
            options,
            permits: Arc::new(Semaphore::new(sessions_max)),
            sessions_max,
        }
    }

    /// How many sessions may be open at once.
    pub fn sessions_max(&self) -> usize {
        self.sessions_max
    }

    /// A new session, or [`ServerError::TooManySessions`] when every slot is taken.
    pub fn open(&self) -> Result<OpenSession, ServerError> {
        let permit = Arc::clone(&self.permits).try_acquire_owned().map_err(|_| {
            ServerError::TooManySessions {
                sessions_max: self.sessions_max,
            }
        })?;
        let session = TesseraSession::new(self.s3.clone(), self.options.clone())?;
        Ok(OpenSession {
            session,
            _permit: permit,
        })
    }
}

/// The server-wide stop signal: `true` once shutdown began.
#[derive(Clone)]
pub struct Shutdown {
    stopping: watch::Receiver<bool>,
    grace: Duration,
}

impl Shutdown {
    /// Resolves once shutdown began (stop accepting connections then).
    pub async fn started(&mut self) {
        // An error means the sender is gone, which also ends the server.
        let _ = self.stopping.wait_for(|stopping| *stopping).await;
    }

    /// Resolves when running queries must be cancelled: the grace period after
    /// shutdown began.
    pub async fn deadline(&mut self) {
        self.started().await;
        tokio::time::sleep(self.grace).await;
    }
}

/// What both protocol servers share.
pub struct Shared {
    /// Opens client sessions.
    pub sessions: Sessions,
    /// What clients must present.
    pub credentials: Credentials,
    /// The TLS identity, when serving over TLS.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// Runs the configured protocol servers until `stop` resolves, then stops accepting
/// connections, gives running queries `config.shutdown_grace` to finish, and returns.
pub async fn serve(
    config: ServerConfig,
    sessions: Sessions,
    stop: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    let tls = config.tls.as_ref().map(tls_config).transpose()?;
    let shared = Arc::new(Shared {
        sessions,
        credentials: config.credentials.clone(),
        tls,
    });
    let (stopping, receiver) = watch::channel(false);
    let shutdown = Shutdown {
        stopping: receiver,
        grace: config.shutdown_grace,
    };
    let mut servers = tokio::task::JoinSet::new();
    if let Some(address) = config.postgres {
        let listener = bind(address).await?;
        eprintln!(
            "PostgreSQL wire protocol on {}",
            listener_address(&listener)
        );
        servers.spawn(postgres::serve(
            listener,
            Arc::clone(&shared),
            shutdown.clone(),
        ));
    }
    if let Some(address) = config.flight_sql {
        let listener = bind(address).await?;
        eprintln!("Arrow Flight SQL on {}", listener_address(&listener));
        servers.spawn(flight_sql::serve(
            listener,
            Arc::clone(&shared),
            shutdown.clone(),
        ));
    }
    tokio::select! {
        () = stop => {}
        Some(finished) = servers.join_next() => {
            // A server ended on its own: stop the other one too.
            let _ = stopping.send(true);
            servers.abort_all();
            return flatten(finished);
        }
    }
    let _ = stopping.send(true);
    while let Some(finished) = servers.join_next().await {
        flatten(finished)?;
    }
    Ok(())
}

fn flatten(
    finished: Result<Result<(), ServerError>, tokio::task::JoinError>,
) -> Result<(), ServerError> {
    finished.map_err(|e| ServerError::Protocol {
        protocol: "server",
        message: e.to_string(),
    })?
}

/// A listener on `address`.
pub async fn bind(address: SocketAddr) -> Result<TcpListener, ServerError> {
    TcpListener::bind(address)
        .await
        .map_err(|source| ServerError::Bind { address, source })
}

/// The address `listener` listens on, as text.
pub fn listener_address(listener: &TcpListener) -> String {
    listener
        .local_addr()
        .map_or_else(|e| e.to_string(), |a| a.to_string())
}

/// The rustls configuration of `files` (a certificate chain and its private key).
fn tls_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, ServerError> {
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| ServerError::Tls(format!("{}: {e}", files.cert.display())))?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| ServerError::Tls(format!("{}: {e}", files.key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ServerError::Tls(e.to_string()))?;
    Ok(Arc::new(config))
}
