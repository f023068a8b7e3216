//! `tessera cluster scheduler`: Ballista's scheduler, decoding plans with Tessera's
//! codec and functions, and waking idle executors when there is work (see
//! [`crate::wake`]).

use std::sync::Arc;

use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::{create_scheduler, start_grpc_service_with_listener};
use datafusion::execution::SessionStateBuilder;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use tessera_engine::TesseraSession;
use tessera_engine::physical_plan::codec::ClusterCodec;
use tokio::net::{TcpListener, UdpSocket};

use crate::error::ClusterError;
use crate::{parts, wake};

/// How the scheduler watches its executors.
#[derive(Debug, Clone)]
pub struct SchedulerSettings {
    /// An executor silent for this long is lost, and its tasks run again elsewhere.
    pub executor_timeout_s: u64,
    /// `/readyz` answers 200 once this many executors have registered.
    pub ready_executors: usize,
}

impl Default for SchedulerSettings {
    fn default() -> Self {
        Self {
            executor_timeout_s: 30,
            ready_executors: 1,
        }
    }
}

/// Serves a scheduler on `listener` until the process stops; plans it receives are
/// decoded against `session`'s functions and run under its settings.
pub async fn run_scheduler(
    listener: TcpListener,
    settings: SchedulerSettings,
    session: &TesseraSession,
) -> Result<(), ClusterError> {
    let address = listener
        .local_addr()
        .map_err(|e| ClusterError::Settings(format!("the scheduler's address: {e}")))?;
    without_nagle(&listener)?;
    let state = session.context().state();
    let mut config = SchedulerConfig {
        bind_host: address.ip().to_string(),
        external_host: address.ip().to_string(),
        bind_port: address.port(),
        executor_timeout_seconds: settings.executor_timeout_s,
        expire_dead_executor_interval_seconds: (settings.executor_timeout_s / 2).clamp(1, 15),
        no_executors_grace_period_seconds: settings.executor_timeout_s,
        min_ready_executors: settings.ready_executors,
        scheduling_policy: crate::SCHEDULING,
        override_physical_codec: Some(Arc::new(ClusterCodec::default())),
        override_config_producer: Some(parts::settings(session)),
        override_session_builder: Some(Arc::new(move |config| {
            Ok(SessionStateBuilder::new_from_existing(state.clone())
                .with_config(config)
                .build())
        })),
        ..SchedulerConfig::default()
    };
    config
        .validate()
        .map_err(ClusterError::ballista("the scheduler's settings"))?;
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(ClusterError::ballista("the scheduler's state"))?;
    let waker = UdpSocket::bind((address.ip(), 0))
        .await
        .map_err(|e| ClusterError::Settings(format!("the scheduler's wake-up socket: {e}")))?;
    config.on_work_available = Some(wake::work_available(
        cluster.cluster_state(),
        Arc::new(waker),
    ));
    let config = Arc::new(config);
    let scheduler = create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, config)
        .await
        .map_err(ClusterError::ballista("starting the scheduler"))?;
    start_grpc_service_with_listener(listener, scheduler)
        .await
        .map_err(ClusterError::ballista("the scheduler"))
}

/// Turns Nagle's algorithm off for the connections `listener` accepts (they inherit the
/// option on Linux). Ballista serves the scheduler through axum, which leaves it on: the
/// last small frame of a reply then waits for the peer's delayed ACK (40 ms on Linux),
/// on every poll of every executor and client.
fn without_nagle(listener: &TcpListener) -> Result<(), ClusterError> {
    socket2::SockRef::from(listener)
        .set_tcp_nodelay(true)
        .map_err(|e| ClusterError::Settings(format!("the scheduler's socket: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_connections_send_small_frames_at_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        without_nagle(&listener).unwrap();
        let address = listener.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(address).await.unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        assert!(accepted.nodelay().unwrap());
    }
}
