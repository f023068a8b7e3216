//! The scalar functions Tessera registers with DataFusion.
//!
//! - [`json`]: the JSON functions (`json_get*`, `->>`, ...), the reference semantics that
//!   scans reproduce when an access is pushed into them.
//! - [`json_path`], [`json_path_contains`], [`json_clickhouse`]: DuckDB's and ClickHouse's
//!   JSON functions (paths with wildcards, containment, defaults instead of NULL).
//! - [`operators`]: the `->` / `->>` operators, planned onto those functions.
//! - [`compat`]: DuckDB and ClickHouse spellings (`hour(ts)`, `date_diff`, ...).
//! - [`sum`]: `SUM` over integers widened so it cannot wrap around.

pub mod compat;
pub mod json;
pub mod json_clickhouse;
pub mod json_path;
pub mod json_path_contains;
pub mod operators;
pub mod sum;

pub use json::access_output;
