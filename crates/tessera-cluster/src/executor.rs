//! `tessera cluster executor`: Ballista's executor parts (its pull loop, task runner and
//! shuffle Flight service), running tasks with Tessera's codec, functions, settings and
//! stores, and woken at once when there is work (see [`crate::wake`]).
//!
//! The process is assembled here rather than by Ballista's `start_executor_process`,
//! which gives its pull loop no way to be woken.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_flight::flight_service_server::FlightServiceServer;
use ballista_core::error::BallistaError;
use ballista_core::serde::protobuf::executor_status::Status;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_core::serde::protobuf::{
    ExecutorRegistration, ExecutorStatus, ExecutorStoppedParams, HeartBeatParams,
};
use ballista_core::serde::{BallistaCodec, BallistaLogicalExtensionCodec};
use ballista_core::utils::{
    GrpcClientConfig, GrpcServerConfig, create_grpc_client_endpoint, create_grpc_server,
};
use ballista_executor::execution_loop::poll_loop;
use ballista_executor::executor::Executor;
use ballista_executor::executor_process::{ExecutorProcessConfig, structure_executor_metadata};
use ballista_executor::flight_service::BallistaFlightService;
use ballista_executor::health::ExecutorHealth;
use ballista_executor::metrics::LoggingMetricsCollector;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use tessera_engine::TesseraSession;
use tessera_engine::physical_plan::codec::ClusterCodec;
use tokio::net::UdpSocket;
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tonic::transport::Channel;

use crate::error::ClusterError;
use crate::parts;
use crate::task_count::CountingEngine;
use crate::wake;

/// How long an executor keeps trying to reach its scheduler at start.
const CONNECT_WAIT_S_MAX: u64 = 10;

/// The largest gRPC message an executor sends or takes (Ballista's default).
const MESSAGE_BYTES_MAX: usize = 16 * 1024 * 1024;

/// Where an executor listens and which scheduler it serves.
#[derive(Debug, Clone)]
pub struct ExecutorSettings {
    /// The scheduler's host.
    pub scheduler_host: String,
    /// The scheduler's port.
    pub scheduler_port: u16,
    /// The host the executor binds and advertises.
    pub host: String,
    /// The port other executors and clients fetch shuffled data from (Arrow Flight); the
    /// UDP port of the same number takes the scheduler's wake-ups.
    pub flight_port: u16,
    /// The port the executor registers for the scheduler's calls.
    pub grpc_port: u16,
    /// Tasks run at once.
    pub slots: usize,
}

/// Runs an executor until `stop` completes (the caller's signal handling) or one of its
/// services fails; tasks read files through `session`'s stores. On `stop` the scheduler
/// is told, so it moves this executor's tasks at once rather than after its timeout.
pub async fn run_executor(
    settings: ExecutorSettings,
    session: &TesseraSession,
    stop: impl Future<Output = ()>,
) -> Result<(), ClusterError> {
    if settings.slots == 0 {
        return Err(ClusterError::Settings(
            "an executor needs at least one slot".into(),
        ));
    }
    // Shuffle files live here until the job is done, and all of them go with the process.
    let dir = tempfile::TempDir::new()
        .map_err(|e| ClusterError::Settings(format!("the executor's work directory: {e}")))?;
    let work_dir = work_dir_path(&dir)?;
    let address = flight_address(&settings)?;
    let poll_now = Arc::new(Notify::new());
    let task_ended = Arc::new(Notify::new());
    let free_slots = Arc::new(Semaphore::new(settings.slots));
    let executor = Arc::new(executor(
        &settings,
        address,
        session,
        &work_dir,
        &task_ended,
    ));
    let registration = executor.metadata.clone();
    let scheduler = connect(&settings).await?;

    let mut services: JoinSet<Result<(), ClusterError>> = JoinSet::new();
    let codec = BallistaCodec::<LogicalPlanNode, PhysicalPlanNode>::new(
        Arc::new(BallistaLogicalExtensionCodec::default()),
        Arc::new(ClusterCodec::default()),
    );
    let polling = poll_loop(
        scheduler.clone(),
        executor,
        codec,
        Some(Arc::clone(&poll_now)),
        Some(Arc::clone(&free_slots)),
        ExecutorHealth::new(),
    );
    services.spawn(async move {
        polling
            .await
            .map_err(ClusterError::ballista("the executor's task loop"))
    });
    services.spawn(serve_shuffles(address, work_dir));
    start_wakes(&mut services, &settings, poll_now, task_ended, free_slots).await;

    tokio::select! {
        ended = services.join_next() => match ended {
            Some(Ok(result)) => result,
            Some(Err(e)) => Err(ClusterError::Settings(format!("an executor service stopped: {e}"))),
            None => Ok(()),
        },
        () = stop => {
            report_stopped(scheduler, registration).await;
            Ok(())
        }
    }
}

fn work_dir_path(dir: &tempfile::TempDir) -> Result<String, ClusterError> {
    dir.path().to_str().map(str::to_owned).ok_or_else(|| {
        ClusterError::Settings(format!(
            "the executor's work directory {} is not UTF-8",
            dir.path().display()
        ))
    })
}

fn flight_address(settings: &ExecutorSettings) -> Result<SocketAddr, ClusterError> {
    let address = format!("{}:{}", settings.host, settings.flight_port);
    address
        .parse()
        .map_err(|e| ClusterError::Settings(format!("the executor's address {address}: {e}")))
}

/// Ballista's executor with Tessera's parts: its functions, settings and runtime come
/// from `session`, and its stages count their tasks and say when each one ends.
fn executor(
    settings: &ExecutorSettings,
    address: SocketAddr,
    session: &TesseraSession,
    work_dir: &str,
    task_ended: &Arc<Notify>,
) -> Executor {
    let state = session.context().state();
    let runtime = state.runtime_env().clone();
    Executor::new(
        registration(settings),
        work_dir,
        Arc::new(move |_| Ok(Arc::clone(&runtime))),
        parts::settings(session),
        Arc::new(parts::functions(&state)),
        Arc::new(LoggingMetricsCollector::default()),
        settings.slots,
        Arc::new(CountingEngine::new(
            &address.to_string(),
            Arc::clone(task_ended),
        )),
    )
}

/// What the executor tells the scheduler about itself: where it is, its slots, and the
/// machine (Ballista's own description).
fn registration(settings: &ExecutorSettings) -> ExecutorRegistration {
    let config = ExecutorProcessConfig {
        external_host: Some(settings.host.clone()),
        port: settings.flight_port,
        grpc_port: settings.grpc_port,
        ..ExecutorProcessConfig::default()
    };
    let slots = u32::try_from(settings.slots).unwrap_or(u32::MAX);
    structure_executor_metadata(&Arc::new(config), slots)
}

/// A client of the scheduler, retried for [`CONNECT_WAIT_S_MAX`] so that an executor
/// may start before its scheduler.
async fn connect(
    settings: &ExecutorSettings,
) -> Result<SchedulerGrpcClient<Channel>, ClusterError> {
    let url = format!(
        "http://{}:{}",
        settings.scheduler_host, settings.scheduler_port
    );
    let endpoint = create_grpc_client_endpoint(url.clone(), Some(&GrpcClientConfig::default()))
        .map_err(|e| ClusterError::Settings(format!("the scheduler's address {url}: {e}")))?;
    let deadline = Instant::now() + Duration::from_secs(CONNECT_WAIT_S_MAX);
    let channel = loop {
        match endpoint.connect().await {
            Ok(channel) => break channel,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => {
                return Err(ClusterError::Settings(format!(
                    "the scheduler at {url} did not answer within {CONNECT_WAIT_S_MAX} s: {e}"
                )));
            }
        }
    };
    Ok(SchedulerGrpcClient::new(channel)
        .max_decoding_message_size(MESSAGE_BYTES_MAX)
        .max_encoding_message_size(MESSAGE_BYTES_MAX))
}

/// Serves the shuffle files under `work_dir` to the tasks of later stages.
async fn serve_shuffles(address: SocketAddr, work_dir: String) -> Result<(), ClusterError> {
    let flight = FlightServiceServer::new(BallistaFlightService::new(work_dir))
        .max_decoding_message_size(MESSAGE_BYTES_MAX)
        .max_encoding_message_size(MESSAGE_BYTES_MAX);
    create_grpc_server(&GrpcServerConfig::default())
        .add_service(flight)
        .serve(address)
        .await
        .map_err(|e| {
            ClusterError::ballista("the executor's shuffle service")(BallistaError::TonicError(e))
        })
}

/// Starts the three sources that wake the task loop. Without the UDP port (taken by
/// another process), the backstop and the tasks' ends still wake it.
async fn start_wakes(
    services: &mut JoinSet<Result<(), ClusterError>>,
    settings: &ExecutorSettings,
    poll_now: Arc<Notify>,
    task_ended: Arc<Notify>,
    free_slots: Arc<Semaphore>,
) {
    match UdpSocket::bind((settings.host.as_str(), settings.flight_port)).await {
        Ok(socket) => {
            services.spawn(service(wake::listen(socket, Arc::clone(&poll_now))));
        }
        Err(e) => log::warn!(
            "the executor takes no wake-ups on UDP {}:{} ({e}); it polls every {} ms",
            settings.host,
            settings.flight_port,
            wake::BACKSTOP_MS
        ),
    }
    services.spawn(service(wake::backstop(Arc::clone(&poll_now))));
    services.spawn(service(wake::after_tasks(task_ended, free_slots, poll_now)));
}

/// A service that runs until the process ends, as one of the executor's services.
async fn service(forever: impl Future<Output = ()>) -> Result<(), ClusterError> {
    forever.await;
    Ok(())
}

/// Tells the scheduler this executor stops: first that it takes no more tasks, then that
/// it is gone, so its tasks run elsewhere at once.
async fn report_stopped(
    mut scheduler: SchedulerGrpcClient<Channel>,
    registration: ExecutorRegistration,
) {
    let executor_id = registration.id.clone();
    let terminating = HeartBeatParams {
        executor_id: executor_id.clone(),
        metrics: vec![],
        status: Some(ExecutorStatus {
            status: Some(Status::Terminating(String::new())),
        }),
        metadata: Some(registration),
    };
    if let Err(e) = scheduler.heart_beat_from_executor(terminating).await {
        log::warn!("the scheduler did not take the executor's last heartbeat: {e}");
    }
    let stopped = ExecutorStoppedParams {
        executor_id,
        reason: "the executor was stopped".into(),
    };
    if let Err(e) = scheduler.executor_stopped(stopped).await {
        log::warn!("the scheduler was not told the executor stopped: {e}");
    }
}
