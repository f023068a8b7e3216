//! String and binary views that hold only their values before they leave the process.
//!
//! A view array (`Utf8View`, `BinaryView`) cut from a larger one (a filter's, a join's
//! or a top-K's output) keeps the data buffers of every row it dropped. In memory that
//! is free; written to Arrow IPC, every buffer goes along whole. So a sub-plan's answer
//! sent over the link, or a cluster stage's output written to its shuffle files, is
//! compacted first: twenty rows of a top-K over a scan are twenty rows, not the scan's
//! buffers.

use std::fmt;
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, GenericByteViewArray, RecordBatch};
use arrow::datatypes::{ByteViewType, DataType, Schema};
use datafusion::common::Result;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan};
use futures::StreamExt;

/// View arrays hold more than this many times the bytes of their values before they are
/// copied compactly.
const VIEW_SLACK_MAX: usize = 2;

/// `batch` with each string or binary view column that references much more than its
/// values copied to hold only them.
pub fn compact_views(batch: &RecordBatch) -> Result<RecordBatch> {
    let columns: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|column| {
            let compacted = match column.as_string_view_opt() {
                Some(views) => compacted(views),
                None => column.as_binary_view_opt().and_then(compacted),
            };
            compacted.unwrap_or_else(|| Arc::clone(column))
        })
        .collect();
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

fn compacted<T: ByteViewType + ?Sized>(views: &GenericByteViewArray<T>) -> Option<ArrayRef> {
    let held: usize = views.data_buffers().iter().map(|b| b.len()).sum();
    let used: usize = views.lengths().map(|l| l as usize).sum();
    (held > VIEW_SLACK_MAX * used.max(1)).then(|| Arc::new(views.gc()) as ArrayRef)
}

/// Whether `schema` has a view column [`compact_views`] may compact.
pub fn has_views(schema: &Schema) -> bool {
    schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Utf8View | DataType::BinaryView))
}

/// Passes its input's batches through [`compact_views`]. It keeps no metrics of its own,
/// so that the operators' metric sets of a plan it was added to still match, one for
/// one, those of the plan without it (Ballista's scheduler pairs them by position).
#[derive(Debug)]
pub struct CompactViewsExec {
    input: Arc<dyn ExecutionPlan>,
}

impl CompactViewsExec {
    /// Compacts the views of `input`'s batches.
    pub fn new(input: Arc<dyn ExecutionPlan>) -> Self {
        Self { input }
    }
}

impl DisplayAs for CompactViewsExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CompactViewsExec")
    }
}

impl ExecutionPlan for CompactViewsExec {
    super::over_one_input!("CompactViewsExec");

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
        Ok(Arc::new(Self::new(input)))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let schema = input.schema();
        let compacted = input.map(|batch| compact_views(&batch?));
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, compacted)))
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::StringViewArray;
    use arrow::compute::filter_record_batch;
    use arrow::datatypes::Field;
    use datafusion::physical_plan::test::TestMemoryExec;

    use super::*;

    fn long_strings(rows: usize) -> RecordBatch {
        let values: Vec<String> = (0..rows).map(|i| format!("{i:0>64}")).collect();
        let column = Arc::new(StringViewArray::from_iter_values(values));
        let schema = Schema::new(vec![Field::new("s", DataType::Utf8View, false)]);
        RecordBatch::try_new(Arc::new(schema), vec![column]).unwrap()
    }

    fn held_bytes(batch: &RecordBatch) -> usize {
        let views = batch.column(0).as_string_view();
        views.data_buffers().iter().map(|b| b.len()).sum()
    }

    #[tokio::test]
    async fn a_few_rows_cut_from_many_hold_only_their_values() {
        let all = long_strings(10_000);
        let keep = arrow::array::BooleanArray::from_iter((0..10_000).map(|i| Some(i % 1000 == 0)));
        let few = filter_record_batch(&all, &keep).unwrap();
        assert!(
            held_bytes(&few) >= 10_000 * 64,
            "the filter kept the buffers"
        );
        let schema = few.schema();
        let input = TestMemoryExec::try_new_exec(&[vec![few.clone()]], schema, None).unwrap();
        let plan = CompactViewsExec::new(input);
        assert!(plan.metrics().is_none());
        let out = datafusion::physical_plan::collect(Arc::new(plan), Arc::default())
            .await
            .unwrap();
        assert_eq!(out, vec![few]);
        assert!(
            held_bytes(&out[0]) <= 10 * 64,
            "{} bytes held",
            held_bytes(&out[0])
        );
    }
}
