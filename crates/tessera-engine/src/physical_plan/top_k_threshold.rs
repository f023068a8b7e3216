//! Top-K by sampling over S3 Select ("PushdownDB: Accelerating a DBMS using S3
//! Computation", ICDE 2020, §VII-A): before a top-K sort reads its input, a sample of
//! that input sets a threshold the K best rows cannot fall short of, and the S3 Select
//! requests of the input's scan return only the documents at or beyond it.
//!
//! [`TopKThresholdExec`] sits over the sort. Its first partition to run computes the
//! threshold once for all: it runs the sort's input over a sample (the first
//! [`TopKThreshold`]'s `sample_rows` documents of the scan's first object, the rows the
//! store keeps under the scan's own conditions), evaluates the sort's first key on the
//! rows that come out, and takes the K-th best value. Those rows are rows of the sort's
//! input, so at least K of its rows reach the threshold, and every row of the top K is
//! at or beyond it (or has no value, which the requests let through). With fewer than K
//! sampled values there is no threshold and the scan asks as it would without one.

use std::fmt;
use std::sync::Arc;

use arrow::array::AsArray;
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type};
use datafusion::common::Result;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, collect};
use futures::TryStreamExt;
use tessera_pushdown::select_sql::{NUMBER_MAGNITUDE_MAX, Ordering};
use tokio::sync::OnceCell;

/// How far a threshold is moved towards the rows it leaves out, relative to its
/// magnitude (and at least this much absolutely): the store compares the number as it
/// renders it, which may differ from the sampled value in its last digits.
const THRESHOLD_SLACK: f64 = 1e-9;

/// A top-K sort's threshold, computed once from a sample and read by its input's scan.
#[derive(Debug)]
pub struct TopKThreshold {
    /// The sort's input over the sample.
    sample: Arc<dyn ExecutionPlan>,
    /// The sort's first key, over its input's rows.
    key: PhysicalSortExpr,
    /// The rows the sort keeps.
    k: usize,
    /// The threshold, once computed (`None`: the sample had fewer than K values).
    value: OnceCell<Option<f64>>,
}

impl TopKThreshold {
    /// The threshold of the `k` best rows by `key` of a sort whose input, run over a
    /// sample, is `sample`.
    pub fn new(sample: Arc<dyn ExecutionPlan>, key: PhysicalSortExpr, k: usize) -> Self {
        assert!(k > 0, "a top-K keeps a row");
        Self {
            sample,
            key,
            k,
            value: OnceCell::new(),
        }
    }

    /// The condition a document's number must meet to be among the K best: the order
    /// it is compared in and the (slightly loosened) threshold; `None` before the
    /// threshold is computed or when there is none.
    pub fn condition(&self) -> Option<(Ordering, f64)> {
        let threshold = (*self.value.get()?)?;
        let slack = (threshold.abs() * THRESHOLD_SLACK).max(THRESHOLD_SLACK);
        let (ordering, bound) = match self.key.options.descending {
            true => (Ordering::GreaterOrEqual, threshold - slack),
            false => (Ordering::LessOrEqual, threshold + slack),
        };
        (bound.abs() <= NUMBER_MAGNITUDE_MAX).then_some((ordering, bound))
    }

    /// Runs the sample (once for all partitions) and keeps the threshold it gives.
    async fn compute(&self, context: Arc<TaskContext>) -> Result<Option<f64>> {
        let value = self
            .value
            .get_or_try_init(|| async {
                let batches = collect(Arc::clone(&self.sample), context).await?;
                let mut values = Vec::new();
                for batch in &batches {
                    let column = self
                        .key
                        .expr
                        .evaluate(batch)?
                        .into_array(batch.num_rows())?;
                    let numbers = cast(&column, &DataType::Float64)?;
                    let numbers = numbers.as_primitive::<Float64Type>();
                    values.extend(numbers.iter().flatten().filter(|v| v.is_finite()));
                }
                Ok::<_, datafusion::error::DataFusionError>(self.kth_best(values))
            })
            .await?;
        Ok(*value)
    }

    /// The K-th best of `values` in the sort's order, if there are K.
    fn kth_best(&self, mut values: Vec<f64>) -> Option<f64> {
        if values.len() < self.k {
            return None;
        }
        let descending = self.key.options.descending;
        let (_, kth, _) = values.select_nth_unstable_by(self.k - 1, |a, b| match descending {
            true => b.total_cmp(a),
            false => a.total_cmp(b),
        });
        Some(*kth)
    }
}

/// A top-K sort whose input's scan asks S3 Select only for the documents at or beyond
/// its [`TopKThreshold`], computed before the sort runs.
#[derive(Debug)]
pub struct TopKThresholdExec {
    input: Arc<dyn ExecutionPlan>,
    threshold: Arc<TopKThreshold>,
    metrics: ExecutionPlanMetricsSet,
}

impl TopKThresholdExec {
    /// `input` (the sort) run once `threshold` is known.
    pub fn new(input: Arc<dyn ExecutionPlan>, threshold: Arc<TopKThreshold>) -> Self {
        Self {
            input,
            threshold,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for TopKThresholdExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TopKThresholdExec: k={}, key={}",
            self.threshold.k, self.threshold.key
        )
    }
}

impl ExecutionPlan for TopKThresholdExec {
    super::over_one_input!("TopKThresholdExec");

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        f(&self.threshold.key.expr)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::only_child(children, self.name())?;
        Ok(Arc::new(Self::new(input, Arc::clone(&self.threshold))))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let (input, threshold) = (Arc::clone(&self.input), Arc::clone(&self.threshold));
        let found = MetricBuilder::new(&self.metrics).counter("top_k_thresholds", partition);
        let stream = futures::stream::once(async move {
            if threshold.compute(Arc::clone(&context)).await?.is_some() {
                found.add(1);
            }
            input.execute(partition, context)
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::compute::SortOptions;
    use datafusion::physical_expr::expressions::Column;
    use datafusion::physical_plan::empty::EmptyExec;

    fn threshold(k: usize, descending: bool) -> TopKThreshold {
        let schema = Arc::new(arrow::datatypes::Schema::empty());
        let key = PhysicalSortExpr {
            expr: Arc::new(Column::new("p", 0)),
            options: SortOptions {
                descending,
                nulls_first: descending,
            },
        };
        TopKThreshold::new(Arc::new(EmptyExec::new(schema)), key, k)
    }

    #[test]
    fn the_kth_best_value_bounds_the_top_k() {
        let values = vec![5.0, -1.0, 9.0, 3.0, 7.0];
        assert_eq!(threshold(2, true).kth_best(values.clone()), Some(7.0));
        assert_eq!(threshold(2, false).kth_best(values.clone()), Some(3.0));
        assert_eq!(threshold(5, true).kth_best(values.clone()), Some(-1.0));
        assert_eq!(threshold(6, true).kth_best(values), None);
    }

    #[test]
    fn the_condition_lets_the_threshold_itself_through() {
        let descending = threshold(1, true);
        descending.value.set(Some(100.0)).unwrap();
        let (ordering, bound) = descending.condition().unwrap();
        assert_eq!(ordering, Ordering::GreaterOrEqual);
        assert!(bound < 100.0 && bound > 99.99);
        let ascending = threshold(1, false);
        ascending.value.set(Some(0.0)).unwrap();
        let (ordering, bound) = ascending.condition().unwrap();
        assert_eq!(ordering, Ordering::LessOrEqual);
        assert!(bound > 0.0);
        let none = threshold(1, true);
        none.value.set(None).unwrap();
        assert_eq!(none.condition(), None);
        let huge = threshold(1, true);
        huge.value.set(Some(1e300)).unwrap();
        assert_eq!(huge.condition(), None);
    }
}
