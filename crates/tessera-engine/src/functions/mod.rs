//! The scalar functions Tessera registers with DataFusion.
//!
//! - [`json`]: the JSON functions (`json_get*`, `->>`, ...), the reference semantics that
//!   scans reproduce when an access is pushed into them.
//! - [`json_path`], [`json_path_contains`], [`json_clickhouse`]: DuckDB's and ClickHouse's
//!   JSON functions (paths with wildcards, containment, defaults instead of NULL).
//! - [`json_each`]: `json_each`/`json_tree` and `CAST(x AS JSON[])`: JSON unnested into rows.
//! - [`operators`]: the `->` / `->>` operators, planned onto those functions.
//! - [`compat`]: DuckDB and ClickHouse spellings (`hour(ts)`, `date_diff`, ...).
//! - [`sum`]: `SUM` over integers widened so it cannot wrap around.
//! - [`min_max`]: `MAX`/`MIN` whose grouped answers over floats are DataFusion's ungrouped
//!   ones (NaN greatest, infinities kept), and the rule that gives them the aggregates
//!   DataFusion's simplifier writes itself (`percentile_cont(1.0)`).
//! - [`json_build`], [`json_modify`], [`json_merge`], [`json_structure`], [`json_transform`],
//!   [`json_aggregate`]: DuckDB's functions that build, change, describe and aggregate JSON.
//! - [`geometry`]: the `GEOMETRY` type, its casts and `ST_*` functions; [`settings`]:
//!   DuckDB's setting names and `current_setting`; [`file_names`]: `parse_filename`.

pub mod cast_rewrite;
pub mod compat;
pub mod enum_cast;
pub mod file_names;
pub mod geometry;
pub mod integer_128;
pub mod json;
pub mod json_aggregate;
pub mod json_build;
pub mod json_cast;
pub mod json_clickhouse;
pub mod json_each;
pub mod json_merge;
pub mod json_modify;
pub mod json_path;
pub mod json_path_contains;
pub mod json_structure;
pub mod json_transform;
pub mod min_max;
pub mod operators;
pub mod settings;
pub mod sum;
pub mod type_of;
pub mod union_cast;
pub mod variant_cast;

pub use json::access_output;

/// DuckDB's functions that build, change and describe JSON documents, ready to register.
pub fn json_document_functions() -> Vec<std::sync::Arc<datafusion::logical_expr::ScalarUDF>> {
    let mut out = json_build::all_functions();
    out.extend(json_modify::all_functions());
    out.extend(json_structure::all_functions());
    out.extend(json_transform::all_functions());
    out.extend(geometry::all_functions());
    out.extend(settings::all_functions());
    out.extend(file_names::all_functions());
    out
}

/// Every JSON scalar function: Tessera's own ([`json`]), DuckDB's reading functions and
/// containment ([`json_path`], [`json_path_contains`]) and ClickHouse's spellings
/// ([`json_clickhouse`]), ready to register with a session.
pub fn json_scalar_functions() -> Vec<std::sync::Arc<datafusion::logical_expr::ScalarUDF>> {
    let mut out = json::all_functions();
    out.extend(json_path::all_functions());
    out.extend(json_path_contains::all_functions());
    out.extend(json_clickhouse::all_functions());
    out.extend(json_merge::all_functions());
    out
}
