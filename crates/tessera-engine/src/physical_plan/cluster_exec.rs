//! `ClusterExec`: a whole physical plan run on a Ballista cluster
//! (`SET tessera.cluster = 'df://HOST:PORT'`).
//!
//! Modularis ("Modularis: Modular Relational Analytics over Heterogeneous Distributed
//! Platforms") keeps one plan and swaps only what is platform-specific: here the plan
//! Tessera optimized for this session is sent as it is, with [`ClusterCodec`], and the
//! scheduler cuts it into stages at its exchanges. Only the plan and the session's
//! settings travel; each executor reads the files with its own stores and credentials.

use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan};
use futures::{StreamExt, TryStreamExt};
use parking_lot::Mutex;

use super::cluster_job::{Job, JobReport};
use crate::rejects::RejectLog;

/// Runs its single-partition input on the Ballista cluster whose scheduler is at
/// `scheduler` (`http://host:port`), and streams back the rows.
#[derive(Debug)]
pub struct ClusterExec {
    input: Arc<dyn ExecutionPlan>,
    scheduler: String,
    /// The last job's report, fetched after its rows (one more request to the
    /// scheduler), for `EXPLAIN ANALYZE` and progress counters.
    report: Arc<Mutex<Option<JobReport>>>,
    metrics: ExecutionPlanMetricsSet,
}

impl ClusterExec {
    /// `input`, which has one output partition, run by the cluster at `scheduler`.
    pub fn new(input: Arc<dyn ExecutionPlan>, scheduler: String) -> Self {
        assert_eq!(
            input.properties().partitioning.partition_count(),
            1,
            "a cluster returns one stream"
        );
        Self {
            input,
            scheduler,
            report: Arc::default(),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The scheduler's address.
    pub fn scheduler(&self) -> &str {
        &self.scheduler
    }
}

/// The scheduler's `http://HOST:PORT` for a `tessera.cluster` of `df://HOST:PORT` or
/// `http://HOST:PORT`.
pub fn scheduler_url(cluster: &str) -> Result<String> {
    let cluster = cluster.trim();
    let address = cluster
        .strip_prefix("df://")
        .or_else(|| cluster.strip_prefix("http://"))
        .filter(|a| !a.is_empty() && !a.contains('/'));
    let valid = address
        .and_then(|a| a.rsplit_once(':'))
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    match (address, valid) {
        (Some(address), true) => Ok(format!("http://{address}")),
        _ => Err(DataFusionError::Configuration(format!(
            "tessera.cluster must be df://HOST:PORT (a `tessera cluster scheduler`), not '{cluster}'"
        ))),
    }
}

impl DisplayAs for ClusterExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ClusterExec: scheduler={}", self.scheduler)?;
        if let Some(report) = self.report.lock().as_ref() {
            let stages: Vec<String> = report.stages.iter().map(ToString::to_string).collect();
            write!(f, ", job={}, stages=[{}]", report.id, stages.join(", "))?;
        }
        Ok(())
    }
}

impl ExecutionPlan for ClusterExec {
    super::over_one_input!("ClusterExec");

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
        Ok(Arc::new(Self::new(input, self.scheduler.clone())))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "ClusterExec has one partition, not {partition}"
            )));
        }
        let config = context.session_config().clone();
        let input = Arc::clone(&self.input);
        let scheduler = self.scheduler.clone();
        let session_id = context.session_id();
        let rows = MetricBuilder::new(&self.metrics).output_rows(partition);
        let named = self.scheduler.clone();
        let (shown, metrics) = (Arc::clone(&self.report), self.metrics.clone());
        let rejects = context.session_config().get_extension::<RejectLog>();
        let stream = futures::stream::once(async move {
            let mut job = Job::submit(&scheduler, input, session_id, config).await?;
            let finished = job.finished().await?;
            let results = job.rows(finished).map_ok(Some);
            let report = futures::stream::once(async move {
                let report = job.report().await?;
                if let Some(rejects) = &rejects {
                    rejects.absorb(report.rejects.clone());
                }
                record(report, &shown, &metrics);
                Ok(None)
            });
            Ok::<_, DataFusionError>(results.chain(report))
        })
        .try_flatten()
        .try_filter_map(|batch| futures::future::ready(Ok(batch)))
        .map_err(move |e| cluster_error(&named, e))
        .inspect_ok(move |batch| rows.add(batch.num_rows()));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            stream,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// Keeps `report` for the display and adds its totals to `metrics`.
fn record(report: JobReport, shown: &Mutex<Option<JobReport>>, metrics: &ExecutionPlanMetricsSet) {
    let counter = |name: &'static str| MetricBuilder::new(metrics).counter(name, 0);
    counter("stages").add(report.stages.len());
    let tasks: u64 = report
        .stages
        .iter()
        .map(|stage| u64::from(stage.tasks))
        .sum();
    counter("tasks").add(usize::try_from(tasks).unwrap_or(usize::MAX));
    for (&name, &total) in &report.totals {
        counter(name).add(usize::try_from(total).unwrap_or(usize::MAX));
    }
    *shown.lock() = Some(report);
}

/// `error` from the cluster at `scheduler`, said as one sentence naming the cluster.
fn cluster_error(scheduler: &str, error: DataFusionError) -> DataFusionError {
    DataFusionError::Execution(format!(
        "the cluster at {scheduler} could not run the query: {}",
        error.strip_backtrace()
    ))
}

#[cfg(test)]
mod tests {
    use super::scheduler_url;

    #[test]
    fn cluster_settings_name_a_scheduler() {
        for (setting, url) in [
            ("df://127.0.0.1:50050", "http://127.0.0.1:50050"),
            (
                " http://scheduler.internal:7000 ",
                "http://scheduler.internal:7000",
            ),
        ] {
            assert_eq!(scheduler_url(setting).unwrap(), url);
        }
        for bad in [
            "127.0.0.1:50050",
            "df://",
            "df://host",
            "df://host:port",
            "df://h:1/x",
        ] {
            let error = scheduler_url(bad).unwrap_err().to_string();
            assert!(error.contains("df://HOST:PORT"), "{bad}: {error}");
        }
    }
}
