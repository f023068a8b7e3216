//! `WorkerExec`: a sub-plan that runs on Tessera's storage-side worker (`tessera serve
//! --storage-side`, beside the object store) instead of here, so that only its output
//! crosses the link between compute and storage.
//!
//! After "FlexPushdownDB: Hybrid Pushdown and Caching in a Cloud DBMS": a partition
//! whose worker cannot take it (unreachable, or saturated and refusing new streams) is
//! computed locally from the same sub-plan, so the answer never depends on the worker
//! being up. Once the worker has started answering, a failure ends the query with one
//! sentence instead: rows already passed up cannot be taken back, and a partial answer
//! is never returned.
//!
//! Each partition is one Arrow Flight `DoGet` whose ticket is the sub-plan encoded with
//! `datafusion-proto` and [`TesseraCodec`] plus the partition's number, on its own
//! connection (a capped link caps each connection, as it does each S3 read). The plan
//! carries no credentials: the worker reads the files with its own, and the client
//! proves itself with the shared token in the `authorization` header.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use arrow::datatypes::SchemaRef;
use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_client::FlightServiceClient;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan};
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use futures::{StreamExt, TryStreamExt};
use prost::Message;
use tonic::transport::{Channel, Endpoint};

use super::bloom_probe::BloomProbeExec;
use super::codec::TesseraCodec;
use super::worker_spend::{SpendCounters, WorkerSpend};
use crate::datasource::csv::source::with_csv_reads_counted;

/// How long connecting to the worker may take before the partition is computed here.
pub const CONNECT_TIMEOUT_MS: u64 = 2_000;
/// Idle time after which the connection is probed, so that a worker that vanished
/// without closing it is noticed.
const KEEPALIVE_INTERVAL_MS: u64 = 10_000;
/// How long a probe may go unanswered before the connection counts as lost.
const KEEPALIVE_TIMEOUT_MS: u64 = 20_000;
/// The largest Flight message accepted from the worker (it sends batches in messages
/// of at most 2 MiB, DataFusion's default, unless one row is larger).
pub const MESSAGE_BYTES_MAX: usize = 256 << 20;

/// The secret a client presents to the storage-side worker; never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct WorkerToken(Arc<str>);

impl WorkerToken {
    /// The token `text`.
    pub fn new(text: &str) -> Self {
        Self(Arc::from(text))
    }

    /// Whether `presented` (an `authorization` header's value) is `Bearer <token>`,
    /// compared in time independent of where they differ.
    pub fn admits(&self, presented: &str) -> bool {
        let Some(token) = presented.strip_prefix("Bearer ") else {
            return false;
        };
        let (a, b) = (token.as_bytes(), self.0.as_bytes());
        let differences = a
            .iter()
            .zip(b)
            .fold(a.len() ^ b.len(), |d, (x, y)| d | usize::from(x ^ y));
        differences == 0
    }

    fn header(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

/// The environment variable holding the worker token, on both sides of the link.
pub const WORKER_TOKEN_VARIABLE: &str = "TESSERA_WORKER_TOKEN";

/// The worker token the front ends pass (`TESSERA_WORKER_TOKEN`, looked up by
/// `lookup`), if set.
pub fn default_worker_token(lookup: &dyn Fn(&str) -> Option<String>) -> Option<WorkerToken> {
    lookup(WORKER_TOKEN_VARIABLE)
        .filter(|token| !token.is_empty())
        .map(|token| WorkerToken::new(&token))
}

impl fmt::Debug for WorkerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WorkerToken(<redacted>)")
    }
}

/// Why a sub-plan could not run on the worker.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The worker answered the request with an error before sending any rows.
    #[error("the storage-side worker at {endpoint} refused the plan: {message}")]
    Refused {
        /// The worker's address.
        endpoint: String,
        /// What it said.
        message: String,
    },
    /// The worker's answer broke off after it began; the query fails instead of
    /// returning part of the answer.
    #[error(
        "the storage-side worker at {endpoint} stopped mid-answer ({message}); no partial answer is returned"
    )]
    Stopped {
        /// The worker's address.
        endpoint: String,
        /// What went wrong.
        message: String,
    },
}

/// A Flight ticket: the sub-plan and which of its partitions to run.
#[derive(Clone, PartialEq, Message)]
struct Ticket {
    #[prost(bytes = "vec", tag = "1")]
    plan: Vec<u8>,
    #[prost(uint32, tag = "2")]
    partition: u32,
}

/// The ticket asking for `partition` of `plan`.
pub fn encode_ticket(plan: &Arc<dyn ExecutionPlan>, partition: usize) -> Result<Vec<u8>> {
    let plan = physical_plan_to_bytes_with_extension_codec(Arc::clone(plan), &TesseraCodec)?;
    let partition = u32::try_from(partition)
        .map_err(|_| DataFusionError::Internal(format!("partition {partition} of a plan")))?;
    Ok(Ticket {
        plan: plan.to_vec(),
        partition,
    }
    .encode_to_vec())
}

/// The plan and partition a ticket asks for, the plan's functions resolved in `ctx`;
/// its CSV scans (DataFusion's on the wire) count what they read, as the client's do,
/// so that the partition's [`WorkerSpend`] includes them.
pub fn decode_ticket(bytes: &[u8], ctx: &TaskContext) -> Result<(Arc<dyn ExecutionPlan>, usize)> {
    let ticket = Ticket::decode(bytes)
        .map_err(|e| DataFusionError::Plan(format!("not a Tessera worker ticket: {e}")))?;
    let plan = physical_plan_from_bytes_with_extension_codec(&ticket.plan, ctx, &TesseraCodec)?;
    let plan = with_csv_reads_counted(plan)?;
    let partition = ticket.partition as usize;
    let partitions = plan.properties().partitioning.partition_count();
    if partition >= partitions {
        return Err(DataFusionError::Plan(format!(
            "partition {partition} of a plan with {partitions}"
        )));
    }
    Ok((plan, partition))
}

/// `ctx` with each partition of a file scan reading only its own files.
///
/// DataFusion lets the partitions of one scan take files from each other as they run
/// ("work stealing"); a sub-plan whose partitions run in different processes, or some
/// here and some on the worker, must keep the files each was planned with, or a file
/// would be read twice and another not at all.
pub fn partitions_kept(ctx: &TaskContext) -> Arc<TaskContext> {
    let mut config = ctx.session_config().clone();
    config
        .options_mut()
        .execution
        .enable_file_stream_work_stealing = false;
    Arc::new(TaskContext::new(
        ctx.task_id(),
        ctx.session_id(),
        config,
        ctx.scalar_functions().clone(),
        ctx.higher_order_functions().clone(),
        ctx.aggregate_functions().clone(),
        ctx.window_functions().clone(),
        ctx.runtime_env(),
    ))
}

/// Runs its input on the storage-side worker at `endpoint`, partition by partition,
/// opening it with the session's [`WorkerToken`] (which the plan never holds).
#[derive(Debug)]
pub struct WorkerExec {
    input: Arc<dyn ExecutionPlan>,
    endpoint: String,
    metrics: ExecutionPlanMetricsSet,
}

impl WorkerExec {
    /// `input` run by the worker at `endpoint` (`http://host:port`).
    pub fn new(input: Arc<dyn ExecutionPlan>, endpoint: String) -> Self {
        Self {
            input,
            endpoint,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The worker's address.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl DisplayAs for WorkerExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "WorkerExec: endpoint={}", self.endpoint)
    }
}

impl ExecutionPlan for WorkerExec {
    super::over_one_input!("WorkerExec");

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::only_child(children, self.name())?;
        Ok(Arc::new(Self::new(input, self.endpoint.clone())))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let Some(token) = context.session_config().get_extension::<WorkerToken>() else {
            return Err(DataFusionError::Configuration(
                "the storage-side worker needs its token: set TESSERA_WORKER_TOKEN".into(),
            ));
        };
        let counters = Counters::new(&self.metrics, partition);
        let (endpoint, schema) = (self.endpoint.clone(), self.schema());
        let input = Arc::clone(&self.input);
        let stream = futures::stream::once(async move {
            // A Bloom probe travels with its build side's filter, once there is one.
            BloomProbeExec::seal_all(&input).await;
            let request = Request {
                endpoint,
                token: WorkerToken::clone(&token),
                ticket: encode_ticket(&input, partition)?,
                schema,
                received_bytes: counters.received_bytes.clone(),
                spend: counters.spend.clone(),
            };
            counters.requests.add(1);
            match request.send().await? {
                Some(remote) => Ok(remote),
                None => {
                    counters.fallbacks.add(1);
                    input.execute(partition, partitions_kept(&context))
                }
            }
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            stream,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// The counters of one partition.
struct Counters {
    /// `DoGet` requests sent.
    requests: Count,
    /// Partitions computed here because the worker could not take them.
    fallbacks: Count,
    /// Bytes of Flight messages received: what crossed the link.
    received_bytes: Count,
    /// What the partitions the worker ran spent there.
    spend: SpendCounters,
}

impl Counters {
    fn new(metrics: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        let counter = |name| MetricBuilder::new(metrics).counter(name, partition);
        Self {
            requests: counter("worker_requests"),
            fallbacks: counter("worker_fallbacks"),
            received_bytes: counter("worker_bytes"),
            spend: SpendCounters {
                store_bytes: counter("worker_store_bytes"),
                footer_bytes: counter("worker_footer_bytes"),
                store_requests: counter("worker_store_requests"),
                footer_requests: counter("worker_footer_requests"),
                cost_nanodollars: counter("worker_cost_nanodollars"),
            },
        }
    }
}

/// One partition's request to the worker.
struct Request {
    endpoint: String,
    token: WorkerToken,
    ticket: Vec<u8>,
    schema: SchemaRef,
    received_bytes: Count,
    spend: SpendCounters,
}

impl Request {
    /// The worker's answer, or `None` when the partition is better computed here: the
    /// worker is unreachable or saturated.
    async fn send(self) -> Result<Option<SendableRecordBatchStream>> {
        let Some(mut client) = self.connect().await? else {
            return Ok(None);
        };
        let mut request = tonic::Request::new(arrow_flight::Ticket {
            ticket: self.ticket.into(),
        });
        let header = self.token.header().parse().map_err(|_| {
            DataFusionError::Configuration("the worker token is not a valid header value".into())
        })?;
        request.metadata_mut().insert("authorization", header);
        let answer = match client.do_get(request).await {
            Ok(answer) => answer.into_inner(),
            Err(status) if local_instead(&status) => return Ok(None),
            Err(status) => {
                return Err(external(WorkerError::Refused {
                    endpoint: self.endpoint,
                    message: status.message().to_string(),
                }));
            }
        };
        let (received, spend) = (self.received_bytes, self.spend);
        let flight = answer.filter_map(move |data| {
            let data = data.map_err(|status| FlightError::Tonic(Box::new(status)));
            if let Ok(data) = &data {
                received
                    .add(data.data_header.len() + data.data_body.len() + data.app_metadata.len());
            }
            // The spend follows the last batch; it is counted, not decoded as rows.
            let spent = data.as_ref().ok().and_then(WorkerSpend::carried_by);
            if let Some(spent) = &spent {
                spent.iter().for_each(|s| spend.add(s));
            }
            futures::future::ready(spent.is_none().then_some(data))
        });
        let (endpoint, schema) = (self.endpoint, Arc::clone(&self.schema));
        let batches = FlightRecordBatchStream::new_from_flight_data(flight).map(move |batch| {
            let stopped = |message: String| {
                external(WorkerError::Stopped {
                    endpoint: endpoint.clone(),
                    message,
                })
            };
            batch
                .map_err(|e| stopped(flight_message(e)))?
                .with_schema(Arc::clone(&schema))
                .map_err(|e| stopped(format!("its rows do not fit the plan: {e}")))
        });
        Ok(Some(Box::pin(RecordBatchStreamAdapter::new(
            self.schema,
            batches,
        ))))
    }

    /// A client of the worker, or `None` when it cannot be reached in time.
    async fn connect(&self) -> Result<Option<FlightServiceClient<Channel>>> {
        let endpoint = Endpoint::from_shared(self.endpoint.clone())
            .map_err(|e| {
                DataFusionError::Configuration(format!(
                    "tessera.worker: '{}' is not an address ({e}); expected http://HOST:PORT",
                    self.endpoint
                ))
            })?
            .connect_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
            .http2_keep_alive_interval(Duration::from_millis(KEEPALIVE_INTERVAL_MS))
            .keep_alive_timeout(Duration::from_millis(KEEPALIVE_TIMEOUT_MS));
        Ok(endpoint.connect().await.ok().map(|channel| {
            FlightServiceClient::new(channel).max_decoding_message_size(MESSAGE_BYTES_MAX)
        }))
    }
}

/// Whether the worker's refusal means "compute it yourself": it is going away or has
/// no stream to spare (FlexPushdownDB's fallback), not that the plan is wrong.
fn local_instead(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::Unavailable | tonic::Code::ResourceExhausted
    )
}

/// What a Flight error says, without tonic's debug dump of the status.
fn flight_message(error: FlightError) -> String {
    match error {
        FlightError::Tonic(status) => status.message().to_string(),
        other => other.to_string(),
    }
}

fn external(error: WorkerError) -> DataFusionError {
    DataFusionError::External(Box::new(error))
}
