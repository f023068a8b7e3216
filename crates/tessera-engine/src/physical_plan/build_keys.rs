//! The keys of a join's build side, handed to its probe side's scans: the Bloom join of
//! "PushdownDB: Accelerating a DBMS using S3 Computation" (ICDE 2020, §V-A).
//!
//! [`BuildKeysExec`] sits over the build side of a hash join and passes its rows on
//! unchanged, keeping each row's join key in [`BuildKeys`]. Once every partition of the
//! build side has ended, the probe side's scans take the keys as a Bloom filter (S3
//! Select then returns only the documents that may join). A hash join reads its build
//! side before its first probe row, so the wait costs little; a scan that asks before
//! the keys are sealed waits for them, as an operator waits for a repartition's other
//! partitions (DataFusion polls all partitions of a plan at once). A build side with
//! more keys than [`KEYS_MAX`], a key that is no integer of the filter's range, or a
//! partition that stopped before its end seals no filter: the probe side is read whole,
//! as without a Bloom join.

use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Int64Type};
use datafusion::common::Result;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties,
};
use futures::StreamExt;
use parking_lot::Mutex;
use tessera_pushdown::bloom::{BloomFilter, KEY_MAGNITUDE_MAX};
use tokio::sync::watch;

/// The most keys a build side hands on (a filter of them is about 10 bits each at the
/// 1% false-positive rate, and must fit in one S3 Select request).
pub const KEYS_MAX: usize = 1 << 20;
/// The most bytes of S3 Select request text a filter may take: the store's limit on an
/// expression (256 KiB), less room for the scan's own fields and conditions.
pub const FILTER_TEXT_BYTES_MAX: usize = 224 << 10;

/// What the build side handed on, once it ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Sealed {
    /// Still being read.
    Open,
    /// Ended: the probe side may be filtered by this (none: read it whole).
    Done(Option<Arc<BloomFilter>>),
}

/// The join keys one build side produced, shared with the probe side's scans.
#[derive(Debug)]
pub struct BuildKeys {
    run: Mutex<Run>,
    sealed: watch::Sender<Sealed>,
}

/// One run of the build side: its keys so far (none once no filter can be made) and
/// its partitions started and ended.
#[derive(Debug)]
struct Run {
    keys: Option<Vec<i64>>,
    partitions: usize,
    started: usize,
    ended: usize,
}

impl BuildKeys {
    /// The keys of a build side of `partitions` partitions.
    pub fn new(partitions: usize) -> Self {
        assert!(partitions > 0, "a build side has a partition");
        Self {
            run: Mutex::new(Run {
                keys: Some(Vec::new()),
                partitions,
                started: 0,
                ended: 0,
            }),
            sealed: watch::Sender::new(Sealed::Open),
        }
    }

    /// Keys sealed already as `filter`: a Bloom probe's, decoded in the process its
    /// sub-plan was sent to.
    pub fn sealed(filter: Option<Arc<BloomFilter>>) -> Self {
        Self {
            run: Mutex::new(Run {
                keys: None,
                partitions: 1,
                started: 0,
                ended: 1,
            }),
            sealed: watch::Sender::new(Sealed::Done(filter)),
        }
    }

    /// What the build side has handed on so far.
    pub fn sealed_now(&self) -> Sealed {
        self.sealed.borrow().clone()
    }

    /// A partition of the build side starts; the first of a run (a plan may run again)
    /// starts over, and the probe side waits for this run's keys.
    fn start(&self) {
        let mut run = self.run.lock();
        if run.started == run.partitions {
            run.keys = Some(Vec::new());
            run.started = 0;
            run.ended = 0;
            self.sealed.send_replace(Sealed::Open);
        }
        run.started += 1;
    }

    /// Keeps the keys of `column` (nulls join nothing and are left out); a value the
    /// filter cannot hold, or too many, and no filter will be made.
    fn record(&self, column: &dyn Array) {
        let mut run = self.run.lock();
        let Some(held) = run.keys.as_mut() else {
            return;
        };
        let fits = |k: i64| k.unsigned_abs() <= KEY_MAGNITUDE_MAX as u64;
        let kept = column.as_primitive_opt::<Int64Type>().filter(|values| {
            held.len() + values.len() - values.null_count() <= KEYS_MAX
                && values.iter().flatten().all(fits)
        });
        match kept {
            Some(values) => held.extend(values.iter().flatten()),
            None => run.keys = None,
        }
    }

    /// A partition ended, read to its end (`complete`) or not: once all have, the probe
    /// side's scans get a filter of every key, if they were all read and one can be
    /// made; a partition stopped early seals the run without one at once.
    fn end(&self, complete: bool) {
        let mut run = self.run.lock();
        run.ended += 1;
        if !complete {
            run.keys = None;
        }
        let filter = match (run.ended == run.partitions, &run.keys) {
            (true, Some(keys)) => BloomFilter::with_keys(keys, FILTER_TEXT_BYTES_MAX),
            (false, Some(_)) => return,
            (_, None) => None,
        };
        run.keys = None;
        self.sealed.send_replace(Sealed::Done(filter.map(Arc::new)));
    }

    /// The filter of the build side's keys, once it has ended (waits until then).
    pub async fn filter(&self) -> Option<Arc<BloomFilter>> {
        let mut sealed = self.sealed.subscribe();
        let done = sealed.wait_for(|s| *s != Sealed::Open).await;
        match done.as_deref() {
            Ok(Sealed::Done(filter)) => filter.clone(),
            _ => None,
        }
    }
}

/// Passes the build side's rows through and keeps their join keys, in every partition.
#[derive(Debug)]
pub struct BuildKeysExec {
    input: Arc<dyn ExecutionPlan>,
    /// The join key over the input's rows (an `Int64`).
    key: Arc<dyn PhysicalExpr>,
    keys: Arc<BuildKeys>,
    metrics: ExecutionPlanMetricsSet,
}

impl BuildKeysExec {
    /// Keeps `key` of each row of `input` (`key` an `Int64`) in `keys`, made for as
    /// many partitions as `input` has.
    pub fn try_new(
        input: Arc<dyn ExecutionPlan>,
        key: Arc<dyn PhysicalExpr>,
        keys: Arc<BuildKeys>,
    ) -> Result<Self> {
        assert_eq!(
            input.output_partitioning().partition_count(),
            keys.run.lock().partitions
        );
        assert_eq!(key.data_type(&input.schema())?, DataType::Int64);
        Ok(Self {
            input,
            key,
            keys,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for BuildKeysExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BuildKeysExec: key={}", self.key)
    }
}

impl ExecutionPlan for BuildKeysExec {
    super::over_one_input!("BuildKeysExec");

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
        self.keys.start();
        let input = self.input.execute(partition, context)?;
        let schema = input.schema();
        let state = KeyedStream {
            input,
            key: Arc::clone(&self.key),
            kept: MetricBuilder::new(&self.metrics).counter("build_keys", partition),
            seal: SealOnDrop {
                keys: Arc::clone(&self.keys),
                complete: false,
            },
        };
        let keyed = futures::stream::unfold(state, |mut state| async move {
            match state.input.next().await {
                Some(Ok(batch)) => {
                    let kept = state.keep(&batch).map(|()| batch);
                    Some((kept, state))
                }
                Some(Err(e)) => Some((Err(e), state)),
                // The state, and with it the seal, is dropped here: every key is in.
                None => {
                    state.seal.completed();
                    None
                }
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, keyed)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// The build side's stream and what keeps its keys.
struct KeyedStream {
    input: SendableRecordBatchStream,
    key: Arc<dyn PhysicalExpr>,
    kept: Count,
    seal: SealOnDrop,
}

impl KeyedStream {
    fn keep(&self, batch: &RecordBatch) -> Result<()> {
        let column = self.key.evaluate(batch)?.into_array(batch.num_rows())?;
        self.seal.keys.record(column.as_ref());
        self.kept.add(column.len() - column.null_count());
        Ok(())
    }
}

/// Ends its partition when dropped: read to its end once the stream ended, stopped
/// early if it was dropped before (an error, a cancelled query).
struct SealOnDrop {
    keys: Arc<BuildKeys>,
    complete: bool,
}

impl SealOnDrop {
    /// Marks the partition read to its end.
    fn completed(mut self) {
        self.complete = true;
    }
}

impl Drop for SealOnDrop {
    fn drop(&mut self) {
        self.keys.end(self.complete);
    }
}
