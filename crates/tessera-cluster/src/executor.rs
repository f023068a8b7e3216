//! `tessera cluster executor`: Ballista's executor, running tasks with Tessera's codec,
//! functions, settings and stores.

use std::sync::Arc;

use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use tessera_engine::TesseraSession;
use tessera_engine::physical_plan::codec::ClusterCodec;

use crate::error::ClusterError;
use crate::parts;
use crate::task_count::CountingEngine;

/// Where an executor listens and which scheduler it serves.
#[derive(Debug, Clone)]
pub struct ExecutorSettings {
    /// The scheduler's host.
    pub scheduler_host: String,
    /// The scheduler's port.
    pub scheduler_port: u16,
    /// The host the executor binds and advertises.
    pub host: String,
    /// The port other executors and clients fetch shuffled data from (Arrow Flight).
    pub flight_port: u16,
    /// The port the scheduler sends tasks to.
    pub grpc_port: u16,
    /// Tasks run at once.
    pub slots: usize,
    /// How often the executor tells the scheduler it is alive.
    pub heartbeat_s: u64,
}

/// Runs an executor until the process is told to stop (SIGTERM, Ctrl-C, or the
/// scheduler); tasks read files through `session`'s stores.
pub async fn run_executor(
    settings: ExecutorSettings,
    session: &TesseraSession,
) -> Result<(), ClusterError> {
    if settings.slots == 0 {
        return Err(ClusterError::Settings(
            "an executor needs at least one slot".into(),
        ));
    }
    let state = session.context().state();
    let runtime = state.runtime_env().clone();
    let address = format!("{}:{}", settings.host, settings.flight_port);
    let config = ExecutorProcessConfig {
        bind_host: settings.host.clone(),
        external_host: Some(settings.host),
        port: settings.flight_port,
        grpc_port: settings.grpc_port,
        scheduler_host: settings.scheduler_host,
        scheduler_port: settings.scheduler_port,
        scheduler_connect_timeout_seconds: 10,
        vcores: settings.slots,
        task_scheduling_policy: crate::SCHEDULING,
        executor_heartbeat_interval_seconds: settings.heartbeat_s.max(1),
        print_thread_info: false,
        override_function_registry: Some(Arc::new(parts::functions(&state))),
        override_config_producer: Some(parts::settings(session)),
        override_runtime_producer: Some(Arc::new(move |_| Ok(Arc::clone(&runtime)))),
        override_physical_codec: Some(Arc::new(ClusterCodec::default())),
        override_execution_engine: Some(Arc::new(CountingEngine::new(&address))),
        ..ExecutorProcessConfig::default()
    };
    start_executor_process(Arc::new(config))
        .await
        .map_err(ClusterError::ballista("the executor"))
}
