//! Where rows come from: DataFusion data sources for Tessera's two kinds of table.
//!
//! - [`ndjson`]: raw NDJSON files read in place, one JSON document per line.
//! - [`tessera`]: Tessera tables (JSON tiles with atomic commits): the table provider,
//!   its scan, and its write path (INSERT, ingest, DELETE).
//! - [`csv`]: CSV locations, read through S3 Select when the session says so.
//! - [`location`]: tables named by location (`FROM 's3://bucket/*.json.zst'`).
//! - [`parquet`]: raw Parquet files, their footers checked before DataFusion reads them.
//! - [`read_geojson`]: GeoJSON records as DuckDB's `read_json` reads them.
//! - [`read_json`]: DuckDB's `read_json` family, typed columns from JSON files.
//! - [`select`]: S3 Select requests as the NDJSON and CSV scans send them.

pub mod csv;
pub mod location;
pub mod ndjson;
pub mod parquet;
pub mod read_geojson;
pub mod read_json;
pub mod select;
pub mod tessera;

use datafusion::common::Statistics;
use datafusion::common::stats::Precision;
use object_store::ObjectMeta;

/// `statistics` of a raw file (NDJSON or CSV text) with the file's size standing in for
/// the bytes its rows take, where they do not say: inexact, but it orders tables by size.
/// DataFusion's join selection builds a hash join on the input of fewer bytes, which it
/// cannot tell without statistics, so a join listing the large table first would build
/// on it; built on the small one, the join's keys can filter the large one where it is
/// read ([`crate::physical_optimizer::BloomProbe`] on the storage-side worker).
pub fn with_file_size(mut statistics: Statistics, object: &ObjectMeta) -> Statistics {
    if statistics.total_byte_size == Precision::Absent {
        let size = usize::try_from(object.size).unwrap_or(usize::MAX);
        statistics.total_byte_size = Precision::Inexact(size);
    }
    statistics
}
