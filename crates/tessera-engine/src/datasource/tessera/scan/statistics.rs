//! How many rows a Tessera scan expects to return, from the manifest alone, for the
//! planners that place joins by size: DataFusion's join selection builds a hash join on
//! the side expected smaller, and Ballista's scheduler makes a join whose build side it
//! cannot size a partitioned one, which shuffles the whole probe side, where a
//! broadcast of a small build side would have let the probe side stream.
//!
//! A file's rows (less its deleted rows, times the share of them the scan reads) are
//! scaled by the share of its documents that hold every path the scan's filters test
//! (a null-rejecting test drops the others): the manifest counts, per shredded path,
//! the documents whose value is typed or an outlier. A file whose statistics exclude a
//! filter counts nothing, and so does a file where a tested path is neither shredded nor
//! held as a scalar (it is absent, or an object). Tests of values are not estimated
//! (their share of the documents with the path is taken as all), nor the share of a
//! path held only in the Variant binary (taken as all its documents).

use std::sync::Arc;

use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, Statistics};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::physical_expr::PhysicalExpr;
use tessera_table::DataFile;

use super::pinned::SnapshotFile;
use super::prune::{Constraint, constraints};

/// The statistics of the scan of `config` with `filters` (over the table schema): its
/// estimated rows, nothing about its columns; `None` when a file's manifest entry is
/// not at hand (a scan decoded in another process).
pub(crate) fn scan_statistics(
    config: &FileScanConfig,
    filters: &[Arc<dyn PhysicalExpr>],
) -> Option<Statistics> {
    let tests = constraints(filters);
    let mut rows = 0.0;
    for file in config.file_groups.iter().flat_map(|group| group.iter()) {
        let entry = file.extensions.get::<SnapshotFile>()?;
        rows += share(file, &entry.file) * present(&entry.file, &tests);
    }
    let columns = config
        .file_source()
        .table_schema()
        .table_schema()
        .fields()
        .len();
    Some(Statistics {
        num_rows: Precision::Inexact(rows.round() as usize),
        total_byte_size: Precision::Absent,
        column_statistics: vec![ColumnStatistics::new_unknown(); columns],
    })
}

/// The live rows of `data` that `file` (the whole file, or a byte range standing for a
/// share of its rows) reads.
fn share(file: &PartitionedFile, data: &DataFile) -> f64 {
    let live = data.summary.rows.saturating_sub(data.deleted.len()) as f64;
    match &file.range {
        Some(range) if data.size > 0 => live * (range.end - range.start) as f64 / data.size as f64,
        _ => live,
    }
}

/// The share of `data`'s documents holding every path `tests` test, as far as its
/// manifest entry tells.
fn present(data: &DataFile, tests: &[Constraint]) -> f64 {
    let summary = &data.summary;
    let mut share: f64 = 1.0;
    for test in tests {
        if !test.may_match_file(summary) {
            return 0.0;
        }
        let path = test.path();
        match summary.stats.iter().find(|s| s.path == path) {
            Some(stats) if summary.rows > 0 => {
                let holding = (stats.typed_count + stats.binary_count) as f64 / summary.rows as f64;
                share = share.min(holding);
            }
            Some(_) => {}
            // Neither shredded nor held as a scalar, an array or a null: absent, or an
            // object there. Pruning must keep such a file for a test of the object's
            // text; an estimate need not be a bound, and counting all its rows made a
            // table of several record kinds expect every file's rows of each kind.
            None if !summary.unshredded_paths.may_contain(&path) => return 0.0,
            None => {}
        }
    }
    share
}
