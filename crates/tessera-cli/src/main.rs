//! `tessera`: SQL analytics over JSON and tables in object storage.
//!
//! The binary is the edge where errors become one sentence on stderr and an exit code;
//! everything below it returns typed errors.

mod bench;
mod cache;
mod cluster;
mod demo;
mod generate;
mod ingest;
mod output;
mod progress;
mod run;
mod serve;
mod shell;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use datafusion::error::DataFusionError;
use tessera_blob::{S3Config, S3Overrides};
use tessera_engine::options::{MemoryLimit, SqlDialect};
use tessera_engine::{OnError, SessionOptions, TesseraSession};

use crate::output::Format;

/// Tessera: fast SQL over JSON and tables in object storage.
#[derive(Parser, Debug)]
#[command(name = "tessera", version, about, long_about = None)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// Settings every command accepts.
#[derive(Args, Debug, Clone)]
struct GlobalArgs {
    /// S3 endpoint URL (overrides AWS_ENDPOINT_URL and the AWS profile).
    #[arg(long, global = true)]
    endpoint_url: Option<String>,
    /// S3 region (overrides AWS_REGION).
    #[arg(long, global = true)]
    region: Option<String>,
    /// AWS profile from the shared config and credentials files.
    #[arg(long, global = true)]
    profile: Option<String>,
    /// Threads (partitions) per query; default: all cores.
    #[arg(long, global = true)]
    threads: Option<usize>,
    /// What to do with malformed JSON lines: fail (default) or skip and report.
    #[arg(long, global = true, value_parser = parse_on_error)]
    on_error: Option<OnError>,
    /// Memory a query's operators may hold before spilling to disk or failing: a size
    /// (2GB, 512MiB) or a share of physical memory (default 50%).
    #[arg(long, global = true, value_parser = parse_memory_limit)]
    memory_limit: Option<MemoryLimit>,
    /// Whose meaning SQL text has: postgres (default) or duckdb (DuckDB's grammar and
    /// semantics: `/` with a fractional result, `IN [...]` lists, NULLs sorted last).
    #[arg(long, global = true, value_parser = parse_dialect)]
    dialect: Option<SqlDialect>,
    /// Run queries on the Ballista cluster whose scheduler is here (df://HOST:PORT, a
    /// `tessera cluster scheduler`); sets `tessera.cluster`.
    #[arg(long, global = true, env = "TESSERA_CLUSTER")]
    cluster: Option<String>,
}

fn parse_memory_limit(text: &str) -> Result<MemoryLimit, String> {
    text.parse()
        .map_err(|e: datafusion::error::DataFusionError| e.to_string())
}

fn parse_dialect(text: &str) -> Result<SqlDialect, String> {
    text.parse()
        .map_err(|e: datafusion::error::DataFusionError| e.to_string())
}

fn parse_on_error(text: &str) -> Result<OnError, String> {
    text.parse()
        .map_err(|e: datafusion::error::DataFusionError| e.to_string())
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run SQL statements (separated by ';') and print the results.
    Sql {
        /// The SQL text.
        query: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Write the results of the last statement to this file instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Print how long each statement took (to stderr).
        #[arg(long)]
        timer: bool,
    },
    /// Interactive SQL shell with history and line editing.
    Shell,
    /// Generate a data set.
    Gen {
        #[command(subcommand)]
        dataset: generate::Dataset,
    },
    /// Generate a Bluesky data set locally and run showcase queries on it.
    Demo(demo::DemoArgs),
    /// Load NDJSON into a Tessera table (JSON tiles in Parquet Variant) in one commit.
    Ingest(ingest::IngestArgs),
    /// Benchmarks (results on stdout as Markdown).
    Bench {
        #[command(subcommand)]
        bench: bench::Bench,
    },
    /// Serve SQL over the PostgreSQL wire protocol and Arrow Flight SQL (clients log in
    /// with --user and the password in TESSERA_PASSWORD).
    Serve(serve::ServeArgs),
    /// A Ballista cluster that runs Tessera's plans: scheduler, executor, or a local
    /// try-out of both.
    Cluster {
        #[command(subcommand)]
        command: cluster::ClusterCommand,
    },
    /// The block cache's directory (`SET tessera.cache_dir`): statistics, clearing.
    Cache {
        #[command(subcommand)]
        command: cache::CacheCommand,
    },
    /// Remove data files no table version references, older than the retention period.
    Vacuum {
        /// The table location.
        table: String,
        /// Keep unreferenced files younger than this many seconds (a writer may be
        /// about to commit them).
        #[arg(long, default_value_t = 3600)]
        retention_secs: u64,
    },
}

/// Blocks up to this size come from malloc's heap, not from their own mapping.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: libc::c_int = 32 << 20;

/// Free memory at the top of malloc's heap up to this size stays mapped.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD_BYTES: libc::c_int = 256 << 20;

/// glibc's malloc gives blocks above its (dynamic) mapping threshold, such as a column
/// chunk's decoded pages, back to the kernel when a query frees them, and the next query
/// takes them again one page fault at a time: a fifth of a short query's time went to
/// the kernel (100 runs of a 9 ms query over API models: 0.18-0.32 s of system time
/// against 0.05-0.10 s with these bounds, at 2-4% more resident memory). mimalloc and
/// jemalloc were slower still on ingest (docs/BENCHMARKS.md).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_freed_memory() {
    // SAFETY: mallopt only sets two tuning parameters of glibc's allocator; it is called
    // first thing in `main`, before any other thread exists, and both values are in the
    // ranges glibc documents (it returns 0 and changes nothing otherwise).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES);
    }
}

/// Other allocators keep their own defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_freed_memory() {}

fn main() -> ExitCode {
    keep_freed_memory();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Command::Serve(args) = cli.command {
        // Each client gets its own session, configured like this command's.
        let (s3, options) =
            session_settings(&cli.global).map_err(|e| anyhow::anyhow!(sentence(None, &e)))?;
        serve::run(s3, options, args)
            .await
            .map_err(|e| anyhow::anyhow!(sentence(None, &e)))?;
        return Ok(ExitCode::SUCCESS);
    }
    let session = open_session(&cli.global).map_err(|e| anyhow::anyhow!(sentence(None, &e)))?;
    let result = run_command(&session, cli.command)
        .await
        .map_err(|e| anyhow::anyhow!(sentence(Some(&session), &e)));
    tessera_cache::block::flush_shared().await;
    result
}

/// One sentence for `error`: each cause once (a wrapped error's text often repeats its
/// source's), a query error as the session describes it, without "External error:".
fn sentence(session: Option<&TesseraSession>, error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = match (session, cause.downcast_ref::<DataFusionError>()) {
            (Some(session), Some(e)) => session.describe_error(e),
            _ => cause.to_string(),
        };
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        if cause.is::<DataFusionError>() && session.is_some() {
            // The description already followed the error's own chain.
            break;
        }
    }
    text
}

async fn run_command(session: &TesseraSession, command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Sql {
            query,
            format,
            output,
            timer,
        } => {
            let mut sink = output::open_sink(output.as_deref(), format)?;
            let ok = run::run_script(session, &query, format, &mut sink, timer).await?;
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Shell => {
            let all_ok = shell::run(session).await?;
            // A person at a terminal saw each error; a script's caller needs the status.
            let interactive = std::io::stdin().is_terminal();
            Ok(if all_ok || interactive {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Gen { dataset } => generate::run(session, dataset)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Demo(args) => demo::run(session, args).await.map(|()| ExitCode::SUCCESS),
        Command::Ingest(args) => ingest::run(session, args).await.map(|()| ExitCode::SUCCESS),
        Command::Bench { bench } => bench::run(session.stores().s3_config(), bench)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Cache { command } => cache::run(command).map(|()| ExitCode::SUCCESS),
        Command::Cluster { command } => cluster::run(session, command)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Serve(_) => unreachable!("dispatch serves before opening a session"),
        Command::Vacuum {
            table,
            retention_secs,
        } => {
            let report = session
                .vacuum(&table, std::time::Duration::from_secs(retention_secs))
                .await?;
            eprintln!("{report}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn open_session(global: &GlobalArgs) -> anyhow::Result<TesseraSession> {
    let (s3, options) = session_settings(global)?;
    Ok(TesseraSession::new(s3, options)?)
}

/// The object store configuration and session options the global arguments ask for.
fn session_settings(global: &GlobalArgs) -> anyhow::Result<(S3Config, SessionOptions)> {
    let overrides = S3Overrides {
        endpoint: global.endpoint_url.clone(),
        region: global.region.clone(),
        profile: global.profile.clone(),
    };
    let s3 = S3Config::from_environment(&overrides)?;
    let options = SessionOptions {
        target_partitions: global.threads,
        on_error: global.on_error,
        memory_limit: global.memory_limit,
        dialect: global.dialect,
        cache_dir: tessera_engine::default_cache_dir(&|k| std::env::var(k).ok()),
        worker_token: tessera_engine::default_worker_token(&|k| std::env::var(k).ok()),
        cluster: global.cluster.clone(),
    };
    Ok((s3, options))
}
