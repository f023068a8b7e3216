//! Tessera's query engine: Apache DataFusion plus JSON.
//!
//! The modules follow DataFusion's own vocabulary; dependencies point down this list:
//!
//! - [`session`]: a configured SQL session ([`TesseraSession`]), the crate's entry point;
//!   [`options`]: `SET tessera.*` settings; [`errors`]: one sentence per failure;
//!   `dialect`: what a statement means under `tessera.dialect = 'duckdb'`.
//! - `physical_optimizer`: rules that rewrite aggregates over Tessera table scans.
//! - `physical_plan`: Tessera's own operators (`CodeAggregateExec`).
//! - `datasource`: raw NDJSON files in place, Tessera tables (scan and write path),
//!   tables named by location.
//! - `access`: what a query reads of a JSON column (the extraction plan, the decoded
//!   batch layout, per-document filters), shared by both data sources.
//! - `functions`: the JSON SQL functions, `->`/`->>`, DuckDB/ClickHouse spellings.
//! - `json`: the parser's types and the Arrow builders of JSON values.
//! - [`rejects`]: what scans and ingests skipped, and where.
//!
//! See `docs/ARCHITECTURE.md` for where each step of a query and an ingest lives.

mod access;
mod accesses_below_unnest;
mod block_cache;
mod columns_star;
mod copy_from;
mod datasource;
mod describe;
mod dialect;
mod dot_access;
mod dot_names;
mod element_accesses;
pub mod errors;
mod functions;
mod group_keys;
mod hidden_columns;
mod insert_casts;
mod json;
mod json_each_rewrite;
mod json_each_subquery;
mod lambda_join_filter;
pub mod options;
mod order_by_all;
mod output_names;
mod physical_optimizer;
pub mod physical_plan;
mod region_cache;
pub mod rejects;
mod select_aliases;
pub mod session;
mod single_row_subqueries;
mod statement_walk;
mod stores;
mod struct_constructors;
mod table_function_names;
mod table_statements;
mod temporary_tables;
#[cfg(test)]
mod test_support;
mod try_call;
mod type_planner;
mod user_types;

pub use datasource::tessera::write::ingest::IngestOutcome;
pub use datasource::tessera::write::sink::WriteProgress;
pub use options::{OnError, default_cache_dir};
pub use physical_optimizer::pushdown_choice::SAMPLE_BYTES;
pub use physical_plan::worker_exec::{WorkerToken, default_worker_token};
pub use region_cache::{RegionCacheError, RegionDirStats, clear_regions};
pub use rejects::{Reject, RejectSummary};
pub use session::{SessionOptions, TesseraSession, returns_rows};
