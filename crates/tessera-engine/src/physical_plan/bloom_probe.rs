//! The probe side of a Bloom join on the storage-side worker ("PushdownDB: Accelerating
//! a DBMS using S3 Computation", ICDE 2020, §V-A): a hash join's build keys, as a Bloom
//! filter, drop the probe rows that cannot join where the rows are read, so that only
//! the rows that may join cross the link.
//!
//! [`BloomProbeExec`] sits at the top of the sub-plan sent to the worker and waits for
//! its join's [`BuildKeys`], as S3 Select's Bloom join does; a hash join reads its
//! build side before its first probe row, so the wait costs little. The worker's
//! ticket is written once the keys are sealed and carries the filter's bits, so the
//! worker's copy of the node is sealed from the start. A build side that sealed no
//! filter (too many keys, a key the filter cannot hold) drops nothing. Rows whose key
//! is null are dropped: the joins this serves match them with nothing.

use std::fmt;
use std::sync::Arc;

use arrow::array::{AsArray, BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{DataType, Int64Type};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{Result, internal_err};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan};
use futures::StreamExt;
use tessera_pushdown::bloom::BloomFilter;

use super::build_keys::{BuildKeys, Sealed};

/// Passes on the rows of its input whose key the build side's filter may hold.
#[derive(Debug)]
pub struct BloomProbeExec {
    input: Arc<dyn ExecutionPlan>,
    /// The probe side's join key over the input's rows (an `Int64`).
    key: Arc<dyn PhysicalExpr>,
    keys: Arc<BuildKeys>,
    metrics: ExecutionPlanMetricsSet,
}

impl BloomProbeExec {
    /// Filters `input` by `key` (an `Int64` over its rows) once `keys` are sealed.
    pub fn try_new(
        input: Arc<dyn ExecutionPlan>,
        key: Arc<dyn PhysicalExpr>,
        keys: Arc<BuildKeys>,
    ) -> Result<Self> {
        if key.data_type(&input.schema())? != DataType::Int64 {
            return internal_err!("a Bloom probe's key is an Int64, got {key}");
        }
        Ok(Self {
            input,
            key,
            keys,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The probe key.
    pub fn key(&self) -> &Arc<dyn PhysicalExpr> {
        &self.key
    }

    /// The build keys it filters by, as sealed now.
    pub fn sealed(&self) -> Sealed {
        self.keys.sealed_now()
    }

    /// Waits until the build keys of every Bloom probe in `plan` are sealed, so that
    /// `plan` can be sent to another process.
    pub async fn seal_all(plan: &Arc<dyn ExecutionPlan>) {
        let mut keys = Vec::new();
        let walked = plan.apply(|node| {
            if let Some(probe) = node.downcast_ref::<BloomProbeExec>() {
                keys.push(Arc::clone(&probe.keys));
            }
            Ok(TreeNodeRecursion::Continue)
        });
        debug_assert!(walked.is_ok(), "the walk itself never fails");
        for keys in keys {
            keys.filter().await;
        }
    }
}

impl DisplayAs for BloomProbeExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BloomProbeExec: key={}", self.key)
    }
}

impl ExecutionPlan for BloomProbeExec {
    super::over_one_input!("BloomProbeExec");

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        f(&self.key)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::only_child(children, self.name())?;
        Ok(Arc::new(Self::try_new(
            input,
            Arc::clone(&self.key),
            Arc::clone(&self.keys),
        )?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let schema = input.schema();
        let (keys, key) = (Arc::clone(&self.keys), Arc::clone(&self.key));
        let dropped = MetricBuilder::new(&self.metrics).counter("bloom_rows_dropped", partition);
        let filtered = futures::stream::once(async move {
            let filter = keys.filter().await;
            input.map(move |batch| probe(batch?, &key, filter.as_deref(), &dropped))
        })
        .flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, filtered)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// The rows of `batch` whose `key` is not null and, with a filter, may be one of its.
fn probe(
    batch: RecordBatch,
    key: &Arc<dyn PhysicalExpr>,
    filter: Option<&BloomFilter>,
    dropped: &Count,
) -> Result<RecordBatch> {
    let column = key.evaluate(&batch)?.into_array(batch.num_rows())?;
    let values = column.as_primitive::<Int64Type>();
    let kept: BooleanArray = values
        .iter()
        .map(|v| Some(v.is_some_and(|k| filter.is_none_or(|f| f.contains(k)))))
        .collect();
    let out = filter_record_batch(&batch, &kept)?;
    dropped.add(batch.num_rows() - out.num_rows());
    Ok(out)
}
