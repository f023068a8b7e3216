//! The scalar functions Tessera registers with DataFusion.
//!
//! - [`json`]: the JSON functions (`json_get*`, `->>`, ...), the reference semantics that
//!   scans reproduce when an access is pushed into them.
//! - [`json_each`]: `json_each`/`json_tree` and `CAST(x AS JSON[])`: JSON unnested into rows.
//! - [`operators`]: the `->` / `->>` operators, planned onto those functions.
//! - [`compat`]: DuckDB and ClickHouse spellings (`hour(ts)`, `date_diff`, ...).
//! - [`sum`]: `SUM` over integers widened so it cannot wrap around.

pub mod compat;
pub mod json;
pub mod json_each;
pub mod operators;
pub mod sum;

pub use json::access_output;
