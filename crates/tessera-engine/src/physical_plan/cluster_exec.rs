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

use ballista_core::execution_plans::execute_physical_plan;
use ballista_core::extension::SessionConfigExt;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion_proto::protobuf::PhysicalPlanNode;
use futures::TryStreamExt;

use super::codec::ClusterCodec;

/// Runs its single-partition input on the Ballista cluster whose scheduler is at
/// `scheduler` (`http://host:port`), and streams back the rows.
#[derive(Debug)]
pub struct ClusterExec {
    input: Arc<dyn ExecutionPlan>,
    scheduler: String,
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
        write!(f, "ClusterExec: scheduler={}", self.scheduler)
    }
}

impl ExecutionPlan for ClusterExec {
    fn name(&self) -> &str {
        "ClusterExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

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
        let ballista = config.ballista_config();
        let input = Arc::clone(&self.input);
        let scheduler = self.scheduler.clone();
        let session_id = context.session_id();
        let rows = MetricBuilder::new(&self.metrics).output_rows(partition);
        let named = self.scheduler.clone();
        let stream = futures::stream::once(async move {
            let codec = ClusterCodec::default();
            execute_physical_plan::<PhysicalPlanNode>(
                scheduler, &ballista, input, &codec, session_id, config,
            )
            .await
        })
        .try_flatten()
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
