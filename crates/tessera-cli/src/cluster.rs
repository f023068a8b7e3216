//! `tessera cluster`: a Ballista cluster that runs Tessera's plans: its scheduler, an
//! executor, or both on this machine for a try-out (`tessera cluster local`). Clients
//! send queries with `tessera sql --cluster df://HOST:PORT` or
//! `SET tessera.cluster = 'df://HOST:PORT'`.

use std::net::{SocketAddr, TcpListener};
use std::process::Stdio;

use anyhow::{Context, bail};
use clap::Subcommand;
use tessera_cluster::{ExecutorSettings, SchedulerSettings};
use tessera_engine::TesseraSession;
use tessera_engine::physical_plan::cluster_exec::scheduler_url;
use tokio::process::{Child, Command};

use crate::serve::stop_signal;

/// What `tessera cluster` starts.
#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Ballista's scheduler: takes the plans of clients, cuts them into stages and hands
    /// their tasks to the executors.
    Scheduler {
        /// The address clients and executors connect to.
        #[arg(long, default_value = "127.0.0.1:50050")]
        bind: SocketAddr,
        /// Seconds after which a silent executor is lost and its tasks run elsewhere.
        #[arg(long, default_value_t = 30)]
        executor_timeout_s: u64,
        /// Executors that must have registered before `/readyz` answers 200.
        #[arg(long, default_value_t = 1)]
        ready_executors: usize,
    },
    /// An executor: runs tasks, reading the files with this machine's credentials.
    Executor(ExecutorArgs),
    /// A scheduler and `--executors` executors as processes on this machine, until
    /// Ctrl-C.
    Local {
        /// Executors to start.
        #[arg(long, default_value_t = 2)]
        executors: usize,
        /// The scheduler's address.
        #[arg(long, default_value = "127.0.0.1:50050")]
        bind: SocketAddr,
        /// Tasks each executor runs at once.
        #[arg(long, default_value_t = 1)]
        slots: usize,
    },
}

/// Options of `tessera cluster executor`.
#[derive(clap::Args, Debug)]
pub struct ExecutorArgs {
    /// The scheduler, as df://HOST:PORT.
    #[arg(long)]
    scheduler: String,
    /// The host this executor binds and advertises.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port shuffled data is fetched from (Arrow Flight).
    #[arg(long, default_value_t = 50051)]
    flight_port: u16,
    /// The port the executor registers for the scheduler's calls.
    #[arg(long, default_value_t = 50052)]
    grpc_port: u16,
    /// Tasks run at once.
    #[arg(long, default_value_t = 1)]
    slots: usize,
}

/// Ballista's log lines at or above `TESSERA_LOG` (error, warn (default), info, debug,
/// trace), on stderr.
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            eprintln!("{} {}: {}", record.level(), record.target(), record.args());
        }
    }

    fn flush(&self) {}
}

fn start_log() {
    let level = std::env::var("TESSERA_LOG")
        .ok()
        .and_then(|l| l.parse().ok())
        .unwrap_or(log::LevelFilter::Warn);
    if log::set_logger(&StderrLog).is_ok() {
        log::set_max_level(level);
    }
}

/// Runs `command` until it stops or is stopped.
pub async fn run(session: &TesseraSession, command: ClusterCommand) -> anyhow::Result<()> {
    start_log();
    match command {
        ClusterCommand::Scheduler {
            bind,
            executor_timeout_s,
            ready_executors,
        } => {
            let listener = tokio::net::TcpListener::bind(bind)
                .await
                .with_context(|| format!("the scheduler cannot listen on {bind}"))?;
            eprintln!("scheduler listening on df://{bind}");
            let settings = SchedulerSettings {
                executor_timeout_s,
                ready_executors,
            };
            tokio::select! {
                served = tessera_cluster::run_scheduler(listener, settings, session) => served?,
                () = stop_signal() => {}
            }
            Ok(())
        }
        ClusterCommand::Executor(args) => {
            let settings = executor_settings(args)?;
            eprintln!(
                "executor on {}:{} serving df://{}:{}",
                settings.host,
                settings.flight_port,
                settings.scheduler_host,
                settings.scheduler_port
            );
            Ok(tessera_cluster::run_executor(settings, session, stop_signal()).await?)
        }
        ClusterCommand::Local {
            executors,
            bind,
            slots,
        } => local(executors, bind, slots).await,
    }
}

fn executor_settings(args: ExecutorArgs) -> anyhow::Result<ExecutorSettings> {
    let url = scheduler_url(&args.scheduler)?;
    let address = url.trim_start_matches("http://");
    let Some((host, port)) = address.rsplit_once(':') else {
        bail!(
            "--scheduler must be df://HOST:PORT, not '{}'",
            args.scheduler
        );
    };
    Ok(ExecutorSettings {
        scheduler_host: host.to_string(),
        scheduler_port: port.parse()?,
        host: args.host,
        flight_port: args.flight_port,
        grpc_port: args.grpc_port,
        slots: args.slots,
    })
}

/// Executors `tessera cluster local` starts at most (each takes two ports).
const LOCAL_EXECUTORS_MAX: usize = 64;

/// A scheduler and `executors` executors, each its own process of this binary, until
/// Ctrl-C or one of them stops.
async fn local(executors: usize, bind: SocketAddr, slots: usize) -> anyhow::Result<()> {
    if !(1..=LOCAL_EXECUTORS_MAX).contains(&executors) {
        bail!("--executors must be 1 to {LOCAL_EXECUTORS_MAX}, not {executors}");
    }
    let scheduler = format!("df://{bind}");
    let mut children = vec![spawn(&[
        "cluster",
        "scheduler",
        "--bind",
        &bind.to_string(),
        "--ready-executors",
        &executors.to_string(),
    ])?];
    for _ in 0..executors {
        let (flight, grpc) = (free_port(bind)?, free_port(bind)?);
        children.push(spawn(&[
            "cluster",
            "executor",
            "--scheduler",
            &scheduler,
            "--host",
            &bind.ip().to_string(),
            "--flight-port",
            &flight.to_string(),
            "--grpc-port",
            &grpc.to_string(),
            "--slots",
            &slots.to_string(),
        ])?);
    }
    eprintln!(
        "a cluster of {executors} executors x {slots} slots at {scheduler}; \
         try `tessera sql --cluster {scheduler} '...'`; Ctrl-C stops it"
    );
    let exited = futures::future::select_all(children.iter_mut().map(|c| Box::pin(c.wait())));
    let stopped = tokio::select! {
        (status, _, _) = exited => Some(status),
        () = stop_signal() => None,
    };
    for child in &mut children {
        // Already gone when it is the one that stopped.
        let _ = child.start_kill();
    }
    for child in &mut children {
        let _ = child.wait().await;
    }
    match stopped {
        Some(status) => bail!("a process of the cluster stopped ({}), so all did", status?),
        None => Ok(()),
    }
}

/// This binary with `args`, sharing this process's environment and stderr.
fn spawn(args: &[&str]) -> anyhow::Result<Child> {
    let binary = std::env::current_exe().context("this binary's path")?;
    Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting a process of the cluster")
}

/// A port on `bind`'s host that was free a moment ago.
fn free_port(bind: SocketAddr) -> anyhow::Result<u16> {
    let listener = TcpListener::bind(SocketAddr::new(bind.ip(), 0))?;
    Ok(listener.local_addr()?.port())
}
