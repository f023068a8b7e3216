//! One query's job on a Ballista cluster, driven by the client: submitted with the plan
//! and the session's settings, waited for, its result partitions fetched from the
//! executors holding them, and on request what the job did, stage by stage. Ballista's
//! own `execute_physical_plan` does the first three but keeps the job to itself, and
//! `EXPLAIN ANALYZE` needs it; it also polls every 50 ms, which a short query pays whole,
//! where this wait looks again after a twentieth of the time the job has run.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use ballista_core::client::BallistaClient;
use ballista_core::extension::{BallistaGrpcMetadataInterceptor, SessionConfigExt};
use ballista_core::serde::protobuf::execute_query_params::Query;
use ballista_core::serde::protobuf::get_job_status_result::FlightProxy;
use ballista_core::serde::protobuf::operator_metric::Metric;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_core::serde::protobuf::{
    CancelJobParams, ExecuteQueryParams, GetJobMetricsParams, GetJobMetricsResult,
    GetJobStatusParams, JobStageMetrics, KeyValuePair, NamedCount, PartitionLocation,
    execute_query_result, job_status,
};
use ballista_core::utils::{GrpcClientConfig, create_grpc_client_endpoint};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionConfig;
use datafusion_proto::physical_plan::AsExecutionPlan;
use datafusion_proto::protobuf::PhysicalPlanNode;
use futures::{Stream, StreamExt, TryStreamExt};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use super::codec::ClusterCodec;
use crate::rejects::{MAX_SAMPLES, Reject, RejectSummary};

type Scheduler = SchedulerGrpcClient<InterceptedService<Channel, BallistaGrpcMetadataInterceptor>>;

/// Longest a client waits for its job: a query still running then is cancelled.
pub const JOB_WAIT_S_MAX: u64 = 6 * 3600;

/// Shortest and longest pause between two looks at a running job's status.
const POLL_MS_MIN: u64 = 1;
const POLL_MS_MAX: u64 = 50;

/// Between the two, a running job is looked at again after this fraction of the time it
/// has run, so that noticing its end adds about 5% to a query at most: a doubling pause
/// can add nearly all of a short query again.
const POLL_FRACTION_INVERSE: u64 = 20;

/// A submitted job.
pub(crate) struct Job {
    scheduler: Scheduler,
    url: String,
    id: String,
    config: SessionConfig,
}

/// Where a finished job's result partitions are, and who serves them.
pub(crate) struct Finished {
    locations: Vec<PartitionLocation>,
    proxy: Option<FlightProxy>,
}

impl Job {
    /// Submits `plan` to the scheduler at `url` (`http://HOST:PORT`) for the session
    /// `session_id` with the settings of `config`.
    pub async fn submit(
        url: &str,
        plan: Arc<dyn ExecutionPlan>,
        session_id: String,
        config: SessionConfig,
    ) -> Result<Self> {
        let mut scheduler = connect(url, &config).await?;
        let node = PhysicalPlanNode::try_from_physical_plan(plan, &ClusterCodec::default())?;
        let mut plan_bytes = Vec::new();
        node.try_encode(&mut plan_bytes)?;
        let settings = config
            .options()
            .entries()
            .into_iter()
            .map(|entry| KeyValuePair {
                key: entry.key,
                value: entry.value,
            })
            .collect();
        let params = ExecuteQueryParams {
            session_id: session_id.clone(),
            settings,
            operation_id: operation_id(&session_id),
            query: Some(Query::PhysicalPlan(plan_bytes)),
        };
        let mut request = tonic::Request::new(params);
        ballista_core::version::insert_version_header(request.metadata_mut());
        let response = scheduler.execute_query(request).await.map_err(status)?;
        let answer = response.into_inner().result;
        let id = match answer {
            Some(execute_query_result::Result::Success(success)) => success.job_id,
            Some(execute_query_result::Result::Failure(failure)) => {
                return Err(DataFusionError::Execution(format!(
                    "the scheduler refused the job: {:?}",
                    failure.failure
                )));
            }
            None => {
                return Err(DataFusionError::Execution(
                    "the scheduler said nothing".into(),
                ));
            }
        };
        Ok(Self {
            scheduler,
            url: url.to_string(),
            id,
            config,
        })
    }

    /// Waits until the job succeeds (its result partitions) or fails (its error); a
    /// job still running after [`JOB_WAIT_S_MAX`] is cancelled.
    pub async fn finished(&mut self) -> Result<Finished> {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(JOB_WAIT_S_MAX) {
            let params = GetJobStatusParams {
                job_id: self.id.clone(),
            };
            let answer = self
                .scheduler
                .get_job_status(params)
                .await
                .map_err(status)?;
            let answer = answer.into_inner();
            match answer.status.and_then(|s| s.status) {
                Some(job_status::Status::Successful(done)) => {
                    return Ok(Finished {
                        locations: done.partition_location,
                        proxy: answer.flight_proxy,
                    });
                }
                Some(job_status::Status::Failed(failed)) => {
                    return Err(DataFusionError::Execution(failed.error));
                }
                None | Some(job_status::Status::Queued(_) | job_status::Status::Running(_)) => {
                    let run_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    let pause_ms = (run_ms / POLL_FRACTION_INVERSE).clamp(POLL_MS_MIN, POLL_MS_MAX);
                    tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                }
            }
        }
        let cancel = CancelJobParams {
            job_id: self.id.clone(),
        };
        // The job is abandoned either way; a failed cancel changes nothing here.
        let _ = self.scheduler.cancel_job(cancel).await;
        Err(DataFusionError::Execution(format!(
            "job {} did not finish within {JOB_WAIT_S_MAX} s and was cancelled",
            self.id
        )))
    }

    /// The rows of the finished job's result partitions, in order.
    pub fn rows(
        &self,
        finished: Finished,
    ) -> impl Stream<Item = Result<RecordBatch>> + Send + use<> {
        let url = self.url.clone();
        let config = self.config.clone();
        let proxy = finished.proxy;
        futures::stream::iter(finished.locations)
            .then(move |location| fetch(location, url.clone(), proxy.clone(), config.clone()))
            .try_flatten()
    }

    /// What the job did: its stages with their tasks and their operators' counters.
    pub async fn report(&mut self) -> Result<JobReport> {
        let params = GetJobMetricsParams {
            job_id: self.id.clone(),
        };
        let metrics = self
            .scheduler
            .get_job_metrics(params)
            .await
            .map_err(status)?;
        Ok(JobReport::of(&self.id, &metrics.into_inner()))
    }
}

async fn connect(url: &str, config: &SessionConfig) -> Result<Scheduler> {
    let ballista = config.ballista_config();
    let grpc = GrpcClientConfig::from(&ballista);
    let mut endpoint = create_grpc_client_endpoint(url.to_string(), Some(&grpc))
        .map_err(|e| DataFusionError::Execution(e.to_string()))?;
    if let Some(customize) = config.ballista_override_create_grpc_client_endpoint() {
        endpoint = customize
            .configure_endpoint(endpoint)
            .map_err(|e| DataFusionError::Execution(e.to_string()))?;
    }
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| DataFusionError::Execution(format!("cannot connect: {e}")))?;
    let size_max = ballista.grpc_client_max_message_size();
    let interceptor = config.ballista_grpc_interceptor().as_ref().clone();
    Ok(SchedulerGrpcClient::with_interceptor(channel, interceptor)
        .max_encoding_message_size(size_max)
        .max_decoding_message_size(size_max))
}

/// A request id the scheduler has not seen from this session.
fn operation_id(session_id: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{session_id}-{nanos}-{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn status(status: tonic::Status) -> DataFusionError {
    DataFusionError::Execution(status.message().to_string())
}

/// One result partition, from the executor holding it or the scheduler's proxy.
async fn fetch(
    location: PartitionLocation,
    url: String,
    proxy: Option<FlightProxy>,
    config: SessionConfig,
) -> Result<SendableRecordBatchStream> {
    let layout = location.layout();
    let (Some(executor), Some(partition)) = (location.executor_meta, location.partition_id) else {
        return Err(DataFusionError::Execution(
            "the scheduler named a result partition without its executor".into(),
        ));
    };
    let executor_port = u16::try_from(executor.port)
        .map_err(|_| DataFusionError::Execution(format!("executor port {}", executor.port)))?;
    let (host, port) = match &proxy {
        Some(FlightProxy::External(address)) => host_port(&format!("http://{address}"))?,
        Some(FlightProxy::Local(true)) => host_port(&url)?,
        Some(FlightProxy::Local(false)) | None => (executor.host.clone(), executor_port),
    };
    let ballista = config.ballista_config();
    let grpc = GrpcClientConfig::from(&ballista);
    let mut client = BallistaClient::try_new(
        &host,
        port,
        grpc.max_message_size,
        grpc.use_tls,
        config.ballista_override_create_grpc_client_endpoint(),
        grpc.io_retries_times,
        grpc.io_retry_wait_time_ms,
        0,
        0,
    )
    .await
    .map_err(|e| DataFusionError::Execution(format!("{host}:{port}: {e}")))?;
    client
        .fetch_partition_proxied(
            &executor.id,
            &partition.into(),
            location.file_id,
            layout,
            &executor.host,
            executor_port,
            true,
        )
        .await
        .map_err(|e| DataFusionError::Execution(e.to_string()))
}

fn host_port(address: &str) -> Result<(String, u16)> {
    let parsed = url::Url::parse(address)
        .map_err(|e| DataFusionError::Execution(format!("{address}: {e}")))?;
    match (parsed.host_str(), parsed.port()) {
        (Some(host), Some(port)) => Ok((host.to_string(), port)),
        _ => Err(DataFusionError::Execution(format!(
            "{address} names no HOST:PORT"
        ))),
    }
}

/// What a job did: tasks per stage, and Tessera's and Ballista's counters summed over
/// every task on every executor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobReport {
    /// The job's id at the scheduler.
    pub id: String,
    /// The job's stages, by id.
    pub stages: Vec<StageReport>,
    /// Counter totals by name, for the names in [`JobReport::SUMMED`].
    pub totals: BTreeMap<&'static str, u64>,
    /// The lines the job's scans skipped as malformed (`on_error = skip`), over every
    /// task: all counted, up to [`MAX_SAMPLES`] with their places.
    pub rejects: RejectSummary,
}

impl JobReport {
    /// The counters summed: object-store traffic and its price (table scans, S3
    /// Select), and the bytes stages read from other stages' shuffle files.
    pub const SUMMED: [&'static str; 8] = [
        REJECTED_LINES,
        "bytes_scanned",
        "requests",
        "retries",
        "request_cost_nanodollars",
        "select_requests",
        "select_cost_nanodollars",
        "decoded_bytes",
    ];

    fn of(id: &str, metrics: &GetJobMetricsResult) -> Self {
        let mut totals: BTreeMap<&'static str, u64> = BTreeMap::new();
        let mut samples = Vec::new();
        for count in metrics.stages.iter().flat_map(counts) {
            if let Some(name) = Self::SUMMED.iter().find(|&&n| n == count.name) {
                *totals.entry(name).or_default() += count.value;
            } else if let Some(sample) = decode_reject(&count.name) {
                // Two scans of one file (a self-join) skip the same line twice.
                let copies = usize::try_from(count.value).unwrap_or(MAX_SAMPLES);
                samples.extend(std::iter::repeat_n(sample, copies.min(MAX_SAMPLES)));
            }
        }
        samples.sort();
        samples.truncate(MAX_SAMPLES);
        let count = totals.get(REJECTED_LINES).copied().unwrap_or_default();
        let mut stages: Vec<StageReport> = metrics.stages.iter().map(StageReport::of).collect();
        stages.sort_unstable_by_key(|stage| stage.id);
        Self {
            id: id.to_string(),
            stages,
            totals,
            rejects: RejectSummary { count, samples },
        }
    }
}

/// The counter of lines a task's scans skipped as malformed.
pub const REJECTED_LINES: &str = "rejected_lines";

/// The prefix of the counters that carry a skipped line's place, one counter per line
/// followed by the [`Reject`] as JSON: Ballista's metrics carry names and numbers only.
const REJECTED_AT: &str = "rejected@";

/// The counters (name, value) that carry `rejects` from a task to the client: the count
/// under [`REJECTED_LINES`], and a counter of 1 per sample.
pub fn reject_counters(rejects: &RejectSummary) -> Vec<(String, u64)> {
    let samples = rejects.samples.iter().filter_map(|reject| {
        let json = serde_json::to_string(reject).ok()?;
        Some((format!("{REJECTED_AT}{json}"), 1))
    });
    std::iter::once((REJECTED_LINES.to_string(), rejects.count))
        .chain(samples)
        .collect()
}

fn decode_reject(name: &str) -> Option<Reject> {
    serde_json::from_str(name.strip_prefix(REJECTED_AT)?).ok()
}

/// The prefix of the counter each executor adds to every task it runs, followed by the
/// executor's address: `tasks@127.0.0.1:50051`.
pub const TASKS_ON: &str = "tasks@";

/// One stage of a job: how many tasks it had and which executors ran them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageReport {
    /// The stage's id at the scheduler.
    pub id: u32,
    /// Its tasks (one per partition).
    pub tasks: u32,
    /// Tasks run, by executor address, from the task attempts that succeeded (the
    /// scheduler keeps only their metrics), so they sum to `tasks`.
    pub tasks_by_executor: BTreeMap<String, u64>,
}

impl StageReport {
    fn of(stage: &JobStageMetrics) -> Self {
        let mut tasks_by_executor = BTreeMap::new();
        for count in counts(stage) {
            if let Some(executor) = count.name.strip_prefix(TASKS_ON) {
                *tasks_by_executor.entry(executor.to_string()).or_default() += count.value;
            }
        }
        Self {
            id: stage.stage_id,
            tasks: stage.partitions,
            tasks_by_executor,
        }
    }
}

impl fmt::Display for StageReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} tasks", self.id, self.tasks)?;
        let spread: Vec<String> = self
            .tasks_by_executor
            .iter()
            .map(|(executor, tasks)| format!("{executor} {tasks}"))
            .collect();
        if !spread.is_empty() {
            write!(f, " ({})", spread.join(", "))?;
        }
        Ok(())
    }
}

/// The counters of a stage's operators.
fn counts(stage: &JobStageMetrics) -> impl Iterator<Item = &NamedCount> {
    stage
        .operators
        .iter()
        .flat_map(|operator| &operator.metrics)
        .filter_map(|metric| match &metric.metric {
            Some(Metric::Count(count)) => Some(count),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use ballista_core::serde::protobuf::{OperatorMetric, OperatorWithMetrics};

    use super::*;

    fn reject(file: &str, line: u64) -> Reject {
        Reject {
            file: file.into(),
            line,
            offset: line * 7,
            reason: "expected ',' or '}' at byte 3".into(),
        }
    }

    /// A stage whose one operator carries `counters`.
    fn stage(id: u32, counters: Vec<(String, u64)>) -> JobStageMetrics {
        let metrics = counters
            .into_iter()
            .map(|(name, value)| OperatorMetric {
                partition: None,
                metric: Some(Metric::Count(NamedCount { name, value })),
            })
            .collect();
        JobStageMetrics {
            stage_id: id,
            partitions: 1,
            operators: vec![OperatorWithMetrics {
                metrics,
                ..OperatorWithMetrics::default()
            }],
        }
    }

    #[test]
    fn rejects_cross_from_tasks_to_the_report() {
        let first = RejectSummary {
            count: 3,
            samples: vec![reject("s3://b/a.json", 9), reject("s3://b/a.json", 2)],
        };
        let second = RejectSummary {
            count: 1,
            samples: vec![reject("s3://b/\"odd\" name\u{1f}.json", 1)],
        };
        let metrics = GetJobMetricsResult {
            stages: vec![
                stage(1, reject_counters(&first)),
                stage(2, reject_counters(&second)),
            ],
        };
        let report = JobReport::of("job", &metrics);
        assert_eq!(report.rejects.count, 4);
        assert_eq!(report.totals[REJECTED_LINES], 4);
        let mut expected = [first.samples, second.samples].concat();
        expected.sort();
        assert_eq!(report.rejects.samples, expected);
    }

    #[test]
    fn a_job_that_skipped_nothing_reports_nothing() {
        let metrics = GetJobMetricsResult {
            stages: vec![stage(1, reject_counters(&RejectSummary::default()))],
        };
        assert_eq!(
            JobReport::of("job", &metrics).rejects,
            RejectSummary::default()
        );
    }
}
