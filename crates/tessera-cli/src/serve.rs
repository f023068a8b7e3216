//! `tessera serve`: the PostgreSQL wire and Arrow Flight SQL servers in one process, or
//! with `--storage-side` the near-data worker; stopped cleanly by SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use tessera_blob::S3Config;
use tessera_engine::{SessionOptions, TesseraSession, WorkerToken};
use tessera_server::storage_side::WorkerConfig;
use tessera_server::{Credentials, ServerConfig, Sessions, TlsFiles};

/// Options of `tessera serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address of the PostgreSQL wire protocol server (`off` to not serve it).
    #[arg(long, default_value = "127.0.0.1:5433", value_parser = parse_address)]
    postgres: Listen,
    /// Address of the Arrow Flight SQL server (`off` to not serve it).
    #[arg(long, default_value = "127.0.0.1:32010", value_parser = parse_address)]
    flight_sql: Listen,
    /// The user name clients log in with.
    #[arg(long, default_value = "tessera")]
    user: String,
    /// The password clients log in with (from the environment only, so that it never
    /// shows in a process listing).
    #[arg(
        long = "password",
        env = "TESSERA_PASSWORD",
        hide_env_values = true,
        hide = true
    )]
    password: Option<String>,
    /// Run the storage-side worker instead: one process beside the object store that
    /// runs the sub-plans of clients with `SET tessera.pushdown = 'worker'` (they
    /// present the token in TESSERA_WORKER_TOKEN).
    #[arg(long)]
    storage_side: bool,
    /// Address of the storage-side worker's Arrow Flight server.
    #[arg(long, default_value = "127.0.0.1:50071")]
    worker_address: SocketAddr,
    /// Partitions the storage-side worker runs at once; clients compute more themselves.
    #[arg(long, default_value_t = 32)]
    streams_max: usize,
    /// The token clients of the storage-side worker present (from the environment
    /// only).
    #[arg(
        long = "worker-token",
        env = "TESSERA_WORKER_TOKEN",
        hide_env_values = true,
        hide = true
    )]
    worker_token: Option<String>,
    /// Serve over TLS with this PEM certificate chain (with --tls-key).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Client sessions open at once over both protocols; more are refused.
    #[arg(long, default_value_t = 64)]
    sessions_max: usize,
    /// Seconds running queries may go on after SIGTERM before they are cancelled.
    #[arg(long, default_value_t = 10)]
    shutdown_grace_secs: u64,
}

/// A listening address, or none.
#[derive(Debug, Clone, Copy)]
struct Listen(Option<SocketAddr>);

fn parse_address(text: &str) -> Result<Listen, String> {
    if text == "off" {
        return Ok(Listen(None));
    }
    text.parse()
        .map(|a| Listen(Some(a)))
        .map_err(|e| format!("{text}: {e} (expected HOST:PORT or off)"))
}

/// Serves until SIGTERM or Ctrl-C.
pub async fn run(s3: S3Config, options: SessionOptions, args: ServeArgs) -> anyhow::Result<()> {
    if args.storage_side {
        return run_storage_side(s3, options, args).await;
    }
    anyhow::ensure!(args.sessions_max > 0, "--sessions-max must be at least 1");
    anyhow::ensure!(
        args.postgres.0.is_some() || args.flight_sql.0.is_some(),
        "nothing to serve: --postgres and --flight-sql are both off"
    );
    let password = args.password.unwrap_or_default();
    anyhow::ensure!(
        !password.is_empty(),
        "set TESSERA_PASSWORD to the password clients log in with"
    );
    let config = ServerConfig {
        postgres: args.postgres.0,
        flight_sql: args.flight_sql.0,
        credentials: Credentials {
            user: args.user,
            password,
        },
        tls: args
            .tls_cert
            .zip(args.tls_key)
            .map(|(cert, key)| TlsFiles { cert, key }),
        sessions_max: args.sessions_max,
        shutdown_grace: Duration::from_secs(args.shutdown_grace_secs),
    };
    let sessions = Sessions::new(s3, options, args.sessions_max);
    tessera_server::serve(config, sessions, stop_signal()).await?;
    eprintln!("stopped");
    Ok(())
}

/// Runs the storage-side worker until SIGTERM or Ctrl-C.
async fn run_storage_side(
    s3: S3Config,
    options: SessionOptions,
    args: ServeArgs,
) -> anyhow::Result<()> {
    anyhow::ensure!(args.streams_max > 0, "--streams-max must be at least 1");
    let token = args.worker_token.unwrap_or_default();
    anyhow::ensure!(
        !token.is_empty(),
        "set TESSERA_WORKER_TOKEN to the token clients of the worker present"
    );
    let config = WorkerConfig {
        token: WorkerToken::new(&token),
        streams_max: args.streams_max,
    };
    let session = TesseraSession::new(s3, options)?;
    let listener = tessera_server::bind(args.worker_address).await?;
    eprintln!(
        "storage-side worker (Arrow Flight) on {}",
        tessera_server::listener_address(&listener)
    );
    tessera_server::storage_side::serve(listener, config, session, stop_signal()).await?;
    eprintln!("stopped");
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C (SIGINT).
pub(crate) async fn stop_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            // Without a SIGTERM handler, Ctrl-C still stops the server.
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        () = terminate => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    eprintln!("shutting down: running queries have the grace period to finish");
}
