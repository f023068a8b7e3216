//! The predicate cache (`tessera-cache`'s `predicate`) in the table scan, after Redshift's
//! predicate caching ("Predicate Caching: Query-Driven Secondary Indexing for Cloud Data
//! Warehouses", SIGMOD 2024) and ClickHouse's query condition cache.
//!
//! Before a file is read, each row group that statistics kept is looked up under the
//! scan's translated filters (the region cache's translator, normalized to a canonical
//! DNF): a row group where no row qualified for a predicate containing them is skipped,
//! one with cached rows is read through a [`RowSelection`] of those rows, intersected with
//! the selection the scan already makes (pages, a partition's share of rows). After the
//! file was read to its end, the rows that passed the filters in each row group read
//! whole are recorded, when every filter is deterministic and translated (so the rows
//! are exactly the predicate's).

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow::array::Int64Array;
use datafusion::catalog::Session;
use datafusion::datasource::object_store::ObjectStoreUrl;
use datafusion::physical_expr::PhysicalExpr;
use parking_lot::Mutex;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::file::metadata::ParquetMetaData;
use tessera_cache::predicate::{
    self, FileId, Fingerprint, Hit, PredicateCache, PredicateLimits, RowRanges,
};
use tessera_cache::semantic::normalize::NormalizeLimits;
use tessera_cache::semantic::predicate::Predicate;
use tessera_table::DeletionVector;

use super::metrics::TesseraScanMetrics;
use crate::block_cache::store_id;
use crate::options::TesseraOptions;
use crate::region_cache::predicates::{is_deterministic, translate_filters};

/// The bounds of the process's predicate cache: small, as it is the cheap end of the
/// caches (runs of row offsets and a few predicates per row group).
const LIMITS: PredicateLimits = PredicateLimits {
    entries_max: 100_000,
    bytes_max: 4 << 20,
    predicates_per_group_max: 8,
    runs_per_entry_max: 256,
};

/// The predicate cache a scan uses, and how its entries name the scan's store.
#[derive(Debug, Clone)]
pub(crate) struct ScanPredicateCache {
    cache: Arc<PredicateCache>,
    store: String,
}

impl ScanPredicateCache {
    /// The cache for a scan of the store at `url`: `None` when `tessera.cache_dir` is
    /// unset, `tessera.predicate_cache` is 'off', the table is local and
    /// `tessera.cache_local_tables` 'off', or the directory is unusable (warned once).
    pub(crate) fn for_scan(state: &dyn Session, url: &ObjectStoreUrl) -> Option<Self> {
        let options = state.config_options().extensions.get::<TesseraOptions>()?;
        if !options.caches_table_at(url.as_str()) || !options.predicate_cache.0 {
            return None;
        }
        let cache = predicate::shared(Path::new(&options.cache_dir), LIMITS)?;
        Some(Self {
            cache,
            store: store_id(state, url),
        })
    }

    /// What a scan with `filters` (over the table schema) asks of the cache; `None` when
    /// no deterministic filter translates.
    pub(super) fn for_filters(&self, filters: &[Arc<dyn PhysicalExpr>]) -> Option<ScanPredicates> {
        let deterministic: Vec<Arc<dyn PhysicalExpr>> = filters
            .iter()
            .filter(|f| is_deterministic(f))
            .cloned()
            .collect();
        let translated = translate_filters(&deterministic);
        if translated.predicates.is_empty() {
            return None;
        }
        let records = translated.residual.is_empty() && deterministic.len() == filters.len();
        let predicate = Predicate::And(translated.predicates);
        Some(ScanPredicates {
            cache: Arc::clone(&self.cache),
            store: self.store.clone(),
            predicate: Fingerprint::new(&predicate, &NormalizeLimits::default())?,
            records,
        })
    }
}

/// One scan partition's use of the predicate cache.
#[derive(Debug)]
pub(super) struct ScanPredicates {
    cache: Arc<PredicateCache>,
    store: String,
    /// The translated filters' AND, normalized.
    predicate: Arc<Fingerprint>,
    /// Whether the filters are exactly `predicate` (all deterministic and translated):
    /// only then do the rows that pass them qualify for it and get recorded. Otherwise
    /// cached rows still bound the scan's rows (they qualify for less), but its own
    /// rows are not the predicate's.
    records: bool,
}

/// What the cache made of one file's read.
pub(super) struct Consulted {
    /// The row groups to read, ascending (those with no row left to read dropped).
    pub(super) row_groups: Vec<usize>,
    /// The rows of those row groups to read (`None`: all).
    pub(super) rows: Option<RowSelection>,
    /// Where the rows that pass the filters are recorded, when any row group is.
    pub(super) recorder: Option<Arc<Recorder>>,
}

/// A read of one file as the scan planned it before asking the cache.
pub(super) struct PlannedRead<'a> {
    pub(super) location: &'a str,
    pub(super) size: u64,
    pub(super) metadata: &'a ParquetMetaData,
    pub(super) deleted: &'a DeletionVector,
    /// The row groups statistics kept, ascending.
    pub(super) row_groups: Vec<usize>,
    /// The rows of those row groups to read (pages, a share), `None` for all.
    pub(super) rows: Option<RowSelection>,
    /// The rows of the share this partition reads, over those row groups' rows; `None`
    /// when it reads the whole file.
    pub(super) share: Option<Range<usize>>,
}

impl ScanPredicates {
    /// `read` narrowed by what the cache knows of its row groups (never widened: the
    /// cache's rows are intersected with the planned ones), with the recorder of the
    /// row groups it will read whole and has no exact entry for.
    pub(super) fn consult(&self, read: PlannedRead<'_>, metrics: &TesseraScanMetrics) -> Consulted {
        let file = FileId {
            store: self.store.clone(),
            path: read.location.to_string(),
            size: read.size,
        };
        let groups = &read.row_groups;
        let rows: Vec<usize> = groups
            .iter()
            .map(|&g| usize::try_from(read.metadata.row_group(g).num_rows()).unwrap_or(0))
            .collect();
        let hits = self.cache.lookup(&file, groups, &self.predicate);
        let planned = split(read.rows.as_ref(), &rows);
        let selection = match cached_selection(&hits, &rows) {
            Some(cached) => Some(match &read.rows {
                Some(rows) => rows.intersection(&cached),
                None => cached,
            }),
            None => read.rows.clone(),
        };
        let parts = split(selection.as_ref(), &rows);
        for ((hit, before), after) in hits.iter().zip(&planned).zip(&parts) {
            let Some(hit) = hit else { continue };
            match hit.ranges.is_empty() {
                true if before.row_count() > 0 => {
                    metrics.row_groups_skipped_by_predicate_cache.add(1)
                }
                true => {}
                false => metrics
                    .rows_selected_by_predicate_cache
                    .add(after.row_count()),
            }
        }
        let recorded = self.recorded_groups(&read, &hits, &rows);
        let keep: Vec<bool> = parts.iter().map(|p| p.row_count() > 0).collect();
        let recorded: Vec<RecordedGroup> = recorded.into_iter().filter(|r| keep[r.at]).collect();
        let recorder = (!recorded.is_empty()).then(|| {
            Arc::new(Recorder {
                cache: Arc::clone(&self.cache),
                predicate: Arc::clone(&self.predicate),
                file,
                groups: recorded,
                passed: Mutex::default(),
            })
        });
        let row_groups = groups
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(g, _)| *g);
        Consulted {
            row_groups: row_groups.collect(),
            rows: selection.map(|_| {
                parts
                    .into_iter()
                    .zip(&keep)
                    .filter(|(_, k)| **k)
                    .map(|(p, _)| p)
                    .collect()
            }),
            recorder,
        }
    }

    /// The row groups whose passing rows the read will record: read whole (not cut by
    /// the partition's share), no exact entry yet, and small enough for the cache's row
    /// offsets.
    fn recorded_groups(
        &self,
        read: &PlannedRead<'_>,
        hits: &[Option<Hit>],
        rows: &[usize],
    ) -> Vec<RecordedGroup> {
        if !self.records {
            return Vec::new();
        }
        let starts = file_row_starts(read.metadata);
        let mut at = 0;
        let mut out = Vec::new();
        for (i, (&g, &n)) in read.row_groups.iter().zip(rows).enumerate() {
            let whole = read
                .share
                .as_ref()
                .is_none_or(|s| s.start <= at && at + n <= s.end);
            let exact = hits[i].as_ref().is_some_and(|h| h.exact);
            at += n;
            let (Ok(group), Ok(count)) = (u32::try_from(g), u32::try_from(n)) else {
                continue;
            };
            if !whole || exact {
                continue;
            }
            let start = starts[g];
            out.push(RecordedGroup {
                at: i,
                group,
                start,
                rows: count,
                deleted: deleted_runs(read.deleted, start, count),
            });
        }
        out
    }
}

impl Drop for ScanPredicates {
    /// A partition's scan is over: what it recorded is written to the cache directory,
    /// for the next process (at most once per partition, and only when something
    /// changed).
    fn drop(&mut self) {
        self.cache.persist_or_warn();
    }
}

/// The cache's rows of every row group as one selection over their rows concatenated
/// (every row of a row group it knows nothing of); `None` when it knows none of them.
fn cached_selection(hits: &[Option<Hit>], rows: &[usize]) -> Option<RowSelection> {
    if hits.iter().all(Option::is_none) {
        return None;
    }
    let mut runs: Vec<Range<usize>> = Vec::new();
    let mut at = 0;
    for (hit, &n) in hits.iter().zip(rows) {
        match hit {
            // Clamped, so that an entry never reaches past its row group.
            Some(hit) => runs.extend(
                hit.ranges
                    .runs()
                    .map(|r| at + (r.start as usize).min(n)..at + (r.end as usize).min(n)),
            ),
            None => runs.push(at..at + n),
        }
        at += n;
    }
    Some(RowSelection::from_consecutive_ranges(runs.into_iter(), at))
}

/// `selection` (over row groups of `rows` rows, concatenated; `None` for all) cut into
/// one selection per row group.
fn split(selection: Option<&RowSelection>, rows: &[usize]) -> Vec<RowSelection> {
    let mut rest = selection.cloned();
    rows.iter()
        .map(|&n| match rest.as_mut() {
            Some(rest) => rest.split_off(n),
            None => RowSelection::from_consecutive_ranges(std::iter::once(0..n), n),
        })
        .collect()
}

/// The position in the file of each row group's first row.
fn file_row_starts(metadata: &ParquetMetaData) -> Vec<u64> {
    let mut at = 0u64;
    metadata
        .row_groups()
        .iter()
        .map(|g| {
            let start = at;
            at += u64::try_from(g.num_rows()).unwrap_or(0);
            start
        })
        .collect()
}

/// The rows of `rows` rows from file row `start` that `deleted` names, as offsets.
fn deleted_runs(deleted: &DeletionVector, start: u64, rows: u32) -> Vec<Range<u32>> {
    let mut at = 0u32;
    let mut out = Vec::new();
    for (is_deleted, n) in deleted.selection_in(start, u64::from(rows)) {
        let n = u32::try_from(n).expect("a run within a row group fits its row count");
        if is_deleted {
            out.push(at..at + n);
        }
        at += n;
    }
    out
}

/// A row group whose passing rows a read records.
#[derive(Debug)]
struct RecordedGroup {
    /// Its position among the row groups statistics kept.
    at: usize,
    group: u32,
    /// Its first row's position in the file.
    start: u64,
    rows: u32,
    /// Its rows the file's deletion vector names, as offsets within it.
    deleted: Vec<Range<u32>>,
}

/// The rows that passed the filters in one file's read (by their positions in the file,
/// the reader's row numbers), recorded in the cache when the read ends.
#[derive(Debug)]
pub(super) struct Recorder {
    cache: Arc<PredicateCache>,
    predicate: Arc<Fingerprint>,
    file: FileId,
    groups: Vec<RecordedGroup>,
    passed: Mutex<Passed>,
}

/// What a read has shown so far.
#[derive(Debug, Default)]
struct Passed {
    /// Positions of passing rows as runs, in the order read (ascending).
    runs: Vec<Range<u64>>,
    /// A batch failed: nothing is recorded.
    failed: bool,
}

impl Recorder {
    /// Notes rows that passed every filter, by their positions in the file.
    pub(super) fn passed(&self, positions: &Int64Array) {
        let mut passed = self.passed.lock();
        for position in positions.iter() {
            let Some(row) = position.and_then(|p| u64::try_from(p).ok()) else {
                passed.failed = true;
                return;
            };
            match passed.runs.last_mut() {
                Some(last) if last.end == row => last.end += 1,
                _ => passed.runs.push(row..row + 1),
            }
        }
    }

    /// Notes that the read failed, or could not tell which rows passed.
    pub(super) fn fail(&self) {
        self.passed.lock().failed = true;
    }

    /// The read reached its end: each recorded row group's passing rows go to the cache.
    ///
    /// Deleted rows were never read, so whether they pass is unknown; they are added to
    /// the recorded rows, which stay a superset of the qualifying rows whatever the
    /// deletion vector of the version a later scan reads (a later version deletes more
    /// rows of the same file, an older one fewer), while that scan's own deletion vector
    /// still removes its deleted rows. Rows that statistics or the cache excluded
    /// before the read do not qualify, so leaving them out is exact.
    pub(super) fn finish(&self) {
        let passed = self.passed.lock();
        if passed.failed {
            return;
        }
        let mut runs = passed.runs.clone();
        runs.sort_unstable_by_key(|r| r.start);
        for group in &self.groups {
            let (start, end) = (group.start, group.start + u64::from(group.rows));
            let first = runs.partition_point(|r| r.end <= start);
            let within = runs[first..]
                .iter()
                .take_while(|r| r.start < end)
                .map(|r| (r.start.max(start) - start) as u32..(r.end.min(end) - start) as u32);
            let ranges = RowRanges::from_runs(within.chain(group.deleted.iter().cloned()));
            if !ranges.covers(group.rows) {
                self.cache
                    .record(&self.file, group.group, &self.predicate, ranges);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Range;
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use bytes::Bytes;
    use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::RowSelection;
    use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
    use parquet::file::properties::WriterProperties;
    use tessera_cache::predicate::{
        FileId, Fingerprint, PredicateCache, PredicateLimits, RowRanges,
    };
    use tessera_cache::semantic::normalize::NormalizeLimits;
    use tessera_cache::semantic::predicate::{CmpOp, ColumnId, Predicate, Value};
    use tessera_table::DeletionVector;

    use super::{PlannedRead, ScanPredicates};
    use crate::datasource::tessera::scan::metrics::TesseraScanMetrics;

    const STORE: &str = "s3://b";
    const PATH: &str = "t/data/f.parquet";

    /// The footer of a file of `groups` row groups of `rows` rows each.
    fn metadata(groups: usize, rows: usize) -> ParquetMetaData {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let properties = WriterProperties::builder()
            .set_max_row_group_row_count(Some(rows))
            .build();
        let mut out = Vec::new();
        let mut writer =
            ArrowWriter::try_new(&mut out, Arc::clone(&schema), Some(properties)).unwrap();
        let values = Int64Array::from_iter_values(0..(groups * rows) as i64);
        writer
            .write(&RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap())
            .unwrap();
        writer.close().unwrap();
        ParquetMetaDataReader::new()
            .parse_and_finish(&Bytes::from(out))
            .unwrap()
    }

    fn scan(cache: &Arc<PredicateCache>) -> ScanPredicates {
        let predicate = Predicate::Compare {
            column: ColumnId::new("x@0"),
            op: CmpOp::Gt,
            value: Value::Int(5),
        };
        ScanPredicates {
            cache: Arc::clone(cache),
            store: STORE.into(),
            predicate: Fingerprint::new(&predicate, &NormalizeLimits::default()).unwrap(),
            records: true,
        }
    }

    fn file() -> FileId {
        FileId {
            store: STORE.into(),
            path: PATH.into(),
            size: 100,
        }
    }

    fn selection(ranges: &[Range<usize>], total: usize) -> RowSelection {
        RowSelection::from_consecutive_ranges(ranges.iter().cloned(), total)
    }

    fn read<'a>(
        metadata: &'a ParquetMetaData,
        deleted: &'a DeletionVector,
        rows: Option<RowSelection>,
        share: Option<Range<usize>>,
    ) -> PlannedRead<'a> {
        PlannedRead {
            location: PATH,
            size: 100,
            metadata,
            deleted,
            row_groups: (0..metadata.num_row_groups()).collect(),
            rows,
            share,
        }
    }

    fn pairs(ranges: &RowRanges) -> Vec<(u32, u32)> {
        ranges.runs().map(|r| (r.start, r.end)).collect()
    }

    #[test]
    fn cached_rows_narrow_the_planned_read_and_empty_groups_are_dropped() {
        let cache = Arc::new(PredicateCache::in_memory(PredicateLimits::default()));
        let scan = scan(&cache);
        cache.record(&file(), 0, &scan.predicate, RowRanges::none());
        cache.record(
            &file(),
            1,
            &scan.predicate,
            RowRanges::from_runs(std::iter::once(10..20)),
        );
        let metadata = metadata(3, 100);
        let deleted = DeletionVector::default();
        // Pages already leave out rows 115..118 (offsets 15..18 of group 1).
        let pages = selection(&[0..115, 118..300], 300);
        let set = ExecutionPlanMetricsSet::new();
        let metrics = TesseraScanMetrics::new(&set, 0);
        let consulted = scan.consult(read(&metadata, &deleted, Some(pages), None), &metrics);
        assert_eq!(consulted.row_groups, [1, 2]);
        let expected = selection(&[10..15, 18..20, 100..200], 200);
        assert_eq!(consulted.rows, Some(expected));
        assert_eq!(metrics.row_groups_skipped_by_predicate_cache.value(), 1);
        assert_eq!(metrics.rows_selected_by_predicate_cache.value(), 7);
        // Group 1 has its exact entry; group 2 is recorded.
        let recorder = consulted.recorder.unwrap();
        let groups: Vec<u32> = recorder.groups.iter().map(|g| g.group).collect();
        assert_eq!(groups, [2]);
    }

    #[test]
    fn a_partial_share_records_only_the_row_groups_it_reads_whole() {
        let cache = Arc::new(PredicateCache::in_memory(PredicateLimits::default()));
        let scan = scan(&cache);
        let metadata = metadata(3, 100);
        let deleted = DeletionVector::default();
        let share = RowSelection::from_consecutive_ranges(std::iter::once(0..150), 300);
        let set = ExecutionPlanMetricsSet::new();
        let metrics = TesseraScanMetrics::new(&set, 0);
        let planned = read(&metadata, &deleted, Some(share), Some(0..150));
        let consulted = scan.consult(planned, &metrics);
        // Group 2 is outside the share, group 1 cut by it: only group 0 is recorded.
        assert_eq!(consulted.row_groups, [0, 1]);
        let recorder = consulted.recorder.unwrap();
        let groups: Vec<u32> = recorder.groups.iter().map(|g| g.group).collect();
        assert_eq!(groups, [0]);
    }

    #[test]
    fn recorded_rows_keep_the_deleted_rows_and_a_failed_read_records_nothing() {
        let metadata = metadata(2, 100);
        let deleted = DeletionVector::from_rows((110..120).chain([150]));
        for fails in [false, true] {
            let cache = Arc::new(PredicateCache::in_memory(PredicateLimits::default()));
            let scan = scan(&cache);
            let set = ExecutionPlanMetricsSet::new();
            let metrics = TesseraScanMetrics::new(&set, 0);
            let consulted = scan.consult(read(&metadata, &deleted, None, None), &metrics);
            let recorder = consulted.recorder.unwrap();
            recorder.passed(&Int64Array::from_iter_values([1, 2, 3, 130, 131]));
            recorder.passed(&Int64Array::from_iter_values([132, 199]));
            if fails {
                recorder.fail();
            }
            recorder.finish();
            let hits = cache.lookup(&file(), &[0, 1], &scan.predicate);
            if fails {
                assert_eq!(hits, [None, None]);
                continue;
            }
            let (first, second) = (hits[0].clone().unwrap(), hits[1].clone().unwrap());
            assert_eq!(pairs(&first.ranges), [(1, 4)]);
            // Rows 110..120 and 150 were deleted, so never judged: kept, since an older
            // version of the table still has them.
            assert_eq!(
                pairs(&second.ranges),
                [(10, 20), (30, 33), (50, 51), (99, 100)]
            );
        }
    }
}
