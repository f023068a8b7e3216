//! The size of a sample's answer, measured where the sample runs.
//!
//! `tessera.pushdown = 'auto'` learns what share of its input a sub-plan returns by
//! running it over the first bytes of an object ([`crate::physical_optimizer::PushdownChoice`]).
//! Run on the storage-side worker, the sub-plan's rows would cross the link the sample
//! is meant to spare, and over a thin link they are most of what a sample costs. So the
//! sample runs under [`SampleSizeExec`], which counts the rows' bytes where they are
//! computed and returns only the count.

use std::fmt;
use std::sync::{Arc, LazyLock};

use arrow::array::{RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::ipc::writer::{DictionaryTracker, IpcDataGenerator, IpcWriteContext, IpcWriteOptions};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result, internal_err};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::{StreamExt, TryStreamExt};

use super::answer_format::answer_options;
use super::compact_views::compact_views;

/// The one column of a [`SampleSizeExec`]'s answer.
const BYTES_COLUMN: &str = "bytes";

static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![Field::new(
        BYTES_COLUMN,
        DataType::UInt64,
        false,
    )]))
});

/// Runs the first partition of its input and returns one row: the bytes that
/// partition's batches take as the worker sends them ([`SentBytes`]): each holding only
/// its values ([`compact_views`]), not the buffers it was cut from, and compressed.
#[derive(Debug)]
pub struct SampleSizeExec {
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl SampleSizeExec {
    /// Measures what the first partition of `input` returns.
    pub fn new(input: Arc<dyn ExecutionPlan>) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&SCHEMA)),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Self {
            input,
            properties: Arc::new(properties),
        }
    }

    /// The bytes counted in an answer of this plan: its one row.
    pub fn bytes_of(batches: &[RecordBatch]) -> Result<u64> {
        let counted = batches.iter().find(|b| b.num_rows() > 0);
        let column = counted.and_then(|b| b.column(0).as_any().downcast_ref::<UInt64Array>());
        match column {
            Some(bytes) if counted.is_some_and(|b| b.num_rows() == 1) => Ok(bytes.value(0)),
            _ => internal_err!("a sample's size is one row of one UInt64"),
        }
    }
}

impl DisplayAs for SampleSizeExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SampleSizeExec")
    }
}

impl ExecutionPlan for SampleSizeExec {
    fn name(&self) -> &str {
        "SampleSizeExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
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
        Ok(Arc::new(Self::new(input)))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "SampleSizeExec has one partition, asked for {partition}"
            )));
        }
        let input = self.input.execute(0, context)?;
        let counted = input.try_fold(
            SentBytes::new(),
            |sent, batch| async move { sent.add(&batch) },
        );
        let answer = futures::stream::once(async move {
            let bytes = counted.await?.bytes;
            Ok(RecordBatch::try_new(
                Arc::clone(&SCHEMA),
                vec![Arc::new(UInt64Array::from(vec![bytes]))],
            )?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&SCHEMA),
            answer.boxed(),
        )))
    }
}

/// Counts the bytes of batches as the worker sends them: views compacted, then written
/// as Arrow IPC with the worker's [`answer_options`] (zstd), dictionaries resent with
/// every batch, nothing for an empty one. Compression is counted because it decides
/// what crosses the link: lineitem's keys and prices shrink 2.6 times, short texts less.
struct SentBytes {
    bytes: u64,
    encoder: IpcDataGenerator,
    context: IpcWriteContext,
    options: IpcWriteOptions,
}

impl SentBytes {
    fn new() -> Self {
        Self {
            bytes: 0,
            encoder: IpcDataGenerator::default(),
            context: IpcWriteContext::default(),
            options: answer_options(),
        }
    }

    /// Adds the messages `batch` is sent in: its dictionaries and its record batch.
    fn add(mut self, batch: &RecordBatch) -> Result<Self> {
        // Arrow Flight's encoder sends no message for a batch without rows.
        if batch.num_rows() == 0 {
            return Ok(self);
        }
        let compacted = compact_views(batch)?;
        let mut dictionaries = DictionaryTracker::new(false);
        let (dictionary_messages, message) = self.encoder.encode(
            &compacted,
            &mut dictionaries,
            &self.options,
            &mut self.context,
        )?;
        for sent in dictionary_messages.iter().chain([&message]) {
            let message_bytes = sent.ipc_message.len() + sent.arrow_data.len();
            self.bytes = self.bytes.saturating_add(message_bytes as u64);
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{BooleanArray, Int64Array, StringViewArray};
    use arrow::compute::filter_record_batch;
    use datafusion::physical_plan::common::collect;
    use datafusion::physical_plan::test::TestMemoryExec;

    use super::*;

    /// A row per number: the number as a string of 40 digits, and the number.
    fn rows_of(numbers: impl Iterator<Item = usize> + Clone) -> RecordBatch {
        let strings =
            StringViewArray::from_iter_values(numbers.clone().map(|i| format!("{i:0>40}")));
        let numbers = Int64Array::from_iter_values(numbers.map(|i| i as i64));
        let schema = Schema::new(vec![
            Field::new("s", DataType::Utf8View, false),
            Field::new("n", DataType::Int64, false),
        ]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(strings), Arc::new(numbers)]).unwrap()
    }

    /// What `batches` take in the Flight messages a worker sends, the schema aside.
    async fn flight_bytes(batches: Vec<RecordBatch>) -> u64 {
        use arrow_flight::encode::{DictionaryHandling, FlightDataEncoderBuilder};
        let messages = FlightDataEncoderBuilder::new()
            .with_options(answer_options())
            .with_dictionary_handling(DictionaryHandling::Resend)
            .build(futures::stream::iter(batches.into_iter().map(Ok)));
        let sent: Vec<_> = messages.try_collect().await.unwrap();
        let batch_messages = sent.iter().skip(1);
        batch_messages
            .map(|m| (m.data_header.len() + m.data_body.len()) as u64)
            .sum()
    }

    async fn counted(batches: Vec<RecordBatch>) -> u64 {
        let schema = batches[0].schema();
        let exec = TestMemoryExec::try_new_exec(&[batches], schema, None).unwrap();
        let sized = Arc::new(SampleSizeExec::new(exec));
        let answer = collect(sized.execute(0, Arc::new(TaskContext::default())).unwrap())
            .await
            .unwrap();
        SampleSizeExec::bytes_of(&answer).unwrap()
    }

    #[tokio::test]
    async fn counts_what_the_worker_sends_of_the_rows_kept_compressed() {
        for (rows, every, batches) in [(0, 1, 1), (1, 1, 1), (5_000, 1, 3), (5_000, 97, 4)] {
            let all = rows_of(0..rows);
            let keep = BooleanArray::from_iter((0..rows).map(|i| Some(i % every == 0)));
            let cut = filter_record_batch(&all, &keep).unwrap();
            let fresh = rows_of((0..rows).filter(|i| i % every == 0));
            let case = format!("{rows} rows, 1 in {every}");
            let of_cut = counted(vec![cut; batches]).await;
            assert_eq!(
                of_cut,
                counted(vec![fresh.clone(); batches]).await,
                "{case}"
            );
            assert_eq!(of_cut, flight_bytes(vec![fresh; batches]).await, "{case}");
            // A row: its string's 16-byte view and 40 bytes out of line, and an Int64;
            // zero-padded numbers compress far below that.
            let kept = (0..rows).filter(|i| i % every == 0).count() as u64;
            let uncompressed = batches as u64 * kept * (16 + 40 + 8);
            if kept > 1_000 {
                assert!(
                    of_cut * 4 < uncompressed,
                    "{case}: {of_cut} of {uncompressed}"
                );
            }
        }
    }
}
