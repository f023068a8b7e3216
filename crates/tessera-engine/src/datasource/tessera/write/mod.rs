//! The write path of Tessera tables: documents shredded into JSON tiles files and
//! committed atomically.
//!
//! - [`sink`]: `INSERT INTO` / `CREATE TABLE AS` (a DataFusion `DataSink`).
//! - [`distributed`]: the same write on a cluster: files written on the executors, one
//!   commit here.
//! - [`ingest`]: `tessera ingest`: NDJSON files (or stdin) into a table, with rejects.
//! - [`reject_file`]: the lines a write skipped, in full, gathered from every task.
//! - [`delete`]: `DELETE FROM`, as deletion vectors.

pub mod delete;
pub mod distributed;
pub mod ingest;
mod reject_file;
pub mod sink;
