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
