//! Size estimates for the oracle from a sample of the table, as the paper's
//! `computeStatisticsWithSample` ("Crystal: A Unified Cache Storage System for Analytical
//! Databases", Section 4.3): every k-th row of the table, about [`SAMPLE_ROWS_MAX`] rows,
//! over every column the requests read. Runs of neighbouring rows would not do: the
//! writer clusters a file's rows by a few columns, so a run sees one value of those and
//! one narrow range of the columns that follow them. The scan reads those columns of the
//! whole table once per table version, in the background.
//!
//! A shape's rows are the sample's matching share of the table's rows; its bytes are
//! those rows times the sample's Arrow bytes per row of its columns, scaled by what the
//! regions already written weigh on disk against that (their compression), 1 before
//! any exists.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use arrow::compute::take_record_batch;
use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use futures::{StreamExt, TryStreamExt};
use tessera_cache::semantic::oracle::{SizeEstimate, SizeEstimator};
use tessera_cache::semantic::predicate::ColumnId;
use tessera_cache::semantic::region::Request;

use super::{RegionOracle, Template};
use crate::region_cache::filters::physical_filter;
use crate::region_cache::rewrite::RegionColumns;
use crate::region_cache::store::RegionStore;

/// Rows a sample keeps, about.
const SAMPLE_ROWS_MAX: u64 = 16_384;
/// Partitions of the sample's scan read at once.
const SAMPLE_READS_CONCURRENT: usize = 4;
/// Bounds of the on-disk to Arrow size ratio learned from written regions.
const DISK_RATIO_MIN: f64 = 0.02;
const DISK_RATIO_MAX: f64 = 4.0;

/// Rows of one table version over the columns `ids` (`c0..cn`).
#[derive(Debug)]
pub(crate) struct Sample {
    version: u64,
    ids: Vec<ColumnId>,
    batches: Vec<RecordBatch>,
    rows: u64,
    /// Live rows of the table version.
    table_rows: u64,
    /// Arrow bytes per row of each column.
    bytes_per_row: BTreeMap<ColumnId, f64>,
}

impl Sample {
    /// Whether the sample still serves `template` (same version, every column).
    fn serves(&self, template: &Template) -> bool {
        self.version == template.snapshot.version()
            && template.columns.keys().all(|id| self.ids.contains(id))
    }

    /// Sampled rows matching `shape`'s predicate; `None` when it cannot be evaluated.
    fn matching(&self, shape: &Request, template: &Template) -> Option<u64> {
        let predicate = shape.predicate.to_predicate();
        let filter = physical_filter(&predicate, &template.columns, &template.schema())?;
        let filter = RegionColumns::new(&self.ids).rewrite(&filter)?;
        let mut matched = 0;
        for batch in &self.batches {
            let values = filter
                .evaluate(batch)
                .ok()?
                .into_array(batch.num_rows())
                .ok()?;
            matched += values.as_boolean_opt()?.true_count() as u64;
        }
        Some(matched)
    }

    /// Arrow bytes per row of `columns`, when the sample has them all.
    fn row_bytes<'a>(&self, mut columns: impl Iterator<Item = &'a ColumnId>) -> Option<f64> {
        columns.try_fold(0.0, |sum, id| Some(sum + self.bytes_per_row.get(id)?))
    }
}

/// Each template's sample: the one of the last run when it still serves, else a new one
/// (kept for the next run).
pub(super) async fn refresh(
    oracle: &RegionOracle,
    tables: &HashMap<String, Arc<Template>>,
    context: &Arc<TaskContext>,
) -> Result<HashMap<String, Arc<Sample>>> {
    let mut out = HashMap::new();
    for (table, template) in tables {
        let known = oracle.state.lock().samples.get(table).cloned();
        let sample = match known.filter(|s| s.serves(template)) {
            Some(sample) => sample,
            None => {
                let sample = Arc::new(take(template, context).await?);
                let mut state = oracle.state.lock();
                state.samples.insert(table.clone(), Arc::clone(&sample));
                sample
            }
        };
        out.insert(table.clone(), sample);
    }
    Ok(out)
}

/// Reads a sample of `template`'s table: every `stride`-th row of each partition.
async fn take(template: &Template, context: &Arc<TaskContext>) -> Result<Sample> {
    let stride = (live_rows(template) / SAMPLE_ROWS_MAX).max(1);
    let ids: Vec<ColumnId> = template.columns.keys().cloned().collect();
    let exprs = template.columns.values().cloned();
    let scan = RegionColumns::scan(&template.config, template.source(), exprs, Vec::new());
    let partitions = scan.output_partitioning().partition_count();
    let runs = futures::stream::iter(0..partitions)
        .map(|partition| every_nth_row(&scan, partition, stride, context))
        .buffer_unordered(SAMPLE_READS_CONCURRENT);
    let batches: Vec<Vec<RecordBatch>> = runs.try_collect().await?;
    Ok(summarize(template, ids, batches.concat()))
}

/// Every `stride`-th row of `partition`, copied out of its batches.
async fn every_nth_row(
    scan: &Arc<dyn ExecutionPlan>,
    partition: usize,
    stride: u64,
    context: &Arc<TaskContext>,
) -> Result<Vec<RecordBatch>> {
    let mut stream = scan.execute(partition, Arc::clone(context))?;
    let (mut kept, mut next) = (Vec::new(), 0_u64);
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let rows = batch.num_rows() as u64;
        let picked: Vec<u32> = (next..rows)
            .step_by(stride as usize)
            .map(|i| i as u32)
            .collect();
        next = (next + stride * picked.len() as u64).saturating_sub(rows);
        if !picked.is_empty() {
            let taken = take_record_batch(&batch, &UInt32Array::from(picked))?;
            kept.push(compacted(&taken)?);
        }
    }
    Ok(kept)
}

/// `batch` with its string and binary views copied out of the buffers they share with
/// the scanned batch: the sample would otherwise keep (and its sizes count) every byte
/// of every batch it took a row from.
fn compacted(batch: &RecordBatch) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .map(|column| -> ArrayRef {
            match column.data_type() {
                DataType::Utf8View => Arc::new(column.as_string_view().gc()),
                DataType::BinaryView => Arc::new(column.as_binary_view().gc()),
                _ => Arc::clone(column),
            }
        })
        .collect();
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// The live rows of the template's version.
fn live_rows(template: &Template) -> u64 {
    let files = template.snapshot.files();
    files
        .iter()
        .map(|f| f.summary.rows.saturating_sub(f.deleted.len()))
        .sum()
}

/// The sample of `batches` (columns `ids`) with its per-column sizes.
fn summarize(template: &Template, ids: Vec<ColumnId>, batches: Vec<RecordBatch>) -> Sample {
    let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
    let bytes_per_row = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let bytes: usize = batches
                .iter()
                .map(|b| b.column(i).get_array_memory_size())
                .sum();
            (id.clone(), bytes as f64 / rows.max(1) as f64)
        })
        .collect();
    let table_rows = live_rows(template);
    Sample {
        version: template.snapshot.version(),
        ids,
        batches,
        rows,
        table_rows,
        bytes_per_row,
    }
}

/// The oracle's sizes of region shapes, from the samples.
pub(super) struct Estimator<'a> {
    tables: &'a HashMap<String, Arc<Template>>,
    samples: &'a HashMap<String, Arc<Sample>>,
    /// Per table, the on-disk bytes of its regions per Arrow byte of the sample.
    disk_ratio: HashMap<String, f64>,
}

impl<'a> Estimator<'a> {
    pub(super) fn new(
        store: &RegionStore,
        tables: &'a HashMap<String, Arc<Template>>,
        samples: &'a HashMap<String, Arc<Sample>>,
    ) -> Self {
        let disk_ratio = samples
            .iter()
            .map(|(table, sample)| (table.clone(), disk_ratio(store, table, sample)))
            .collect();
        Self {
            tables,
            samples,
            disk_ratio,
        }
    }

    /// The size of a request's region (its materialized shape).
    pub(super) fn estimate_request(&self, request: &Request) -> Option<SizeEstimate> {
        self.estimate(&request.materialized_shape())
    }
}

impl SizeEstimator for Estimator<'_> {
    fn estimate(&self, shape: &Request) -> Option<SizeEstimate> {
        let template = self.tables.get(&shape.table)?;
        let sample = self.samples.get(&shape.table)?;
        if sample.rows == 0 || shape.version != sample.version {
            return None;
        }
        let matched = sample.matching(shape, template)?;
        let rows = u128::from(matched) * u128::from(sample.table_rows) / u128::from(sample.rows);
        let rows = u64::try_from(rows).unwrap_or(u64::MAX);
        let ratio = self.disk_ratio.get(&shape.table).copied().unwrap_or(1.0);
        let bytes = rows as f64 * sample.row_bytes(shape.columns.iter())? * ratio;
        Some(SizeEstimate {
            rows,
            bytes: bytes.ceil() as u64,
        })
    }
}

/// The on-disk bytes of `table`'s stored regions per Arrow byte the sample predicts for
/// them, bounded; 1 when no region's columns are all in the sample.
fn disk_ratio(store: &RegionStore, table: &str, sample: &Sample) -> f64 {
    let (mut disk, mut arrow) = (0.0, 0.0);
    for region in store.table_regions(table) {
        let sidecar = &region.sidecar;
        if let Some(per_row) = sample.row_bytes(sidecar.columns.iter()) {
            disk += sidecar.bytes as f64;
            arrow += sidecar.rows as f64 * per_row;
        }
    }
    if arrow <= 0.0 {
        return 1.0;
    }
    (disk / arrow).clamp(DISK_RATIO_MIN, DISK_RATIO_MAX)
}
