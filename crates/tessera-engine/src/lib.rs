//! Tessera's query engine: Apache DataFusion plus JSON.
//!
//! - [`json`]: JSON paths, a validating scanner that extracts only the paths a query
//!   needs, the JSON SQL functions and the `->` / `->>` operators.
//! - [`ndjson`]: raw NDJSON files in place as tables of JSON documents.
//! - [`managed`]: Tessera tables (JSON tiles with atomic commits): scan, INSERT,
//!   DELETE, DESCRIBE, ingest.
//! - [`session`]: a configured SQL session ([`TesseraSession`]).
//! - [`tables`]: tables named by location (`FROM 's3://bucket/*.json.zst'`).
//! - [`options`]: `SET tessera.*` settings; [`rejects`]: what scans skipped.

pub mod compat;
pub mod errors;
pub mod json;
pub mod managed;
pub mod ndjson;
pub mod options;
pub mod rejects;
pub mod session;
pub mod stores;
pub mod tables;

pub use options::OnError;
pub use rejects::{Reject, RejectSummary};
pub use session::{SessionOptions, TesseraSession};
