//! JSON values as the engine sees them: the parser's types (paths, the scanner, spans;
//! parsing itself lives in `tessera-json`) and the Arrow builders that turn located
//! values into columns. The SQL functions ([`crate::functions`]) and both scans build
//! their results with the same builders, so a path pushed into a scan answers exactly as
//! the function would.
//!
//! It also defines the SQL types that JSON converts to and from beyond Arrow's own
//! (`JSON`, `VARIANT`, `UNION`, `ENUM`, `GEOMETRY`, and DuckDB's type names in
//! `sql_types`): how each is marked on an Arrow field and recognized. Their casts are
//! functions (`functions::json_cast`, `variant_cast`, `union_cast`, `enum_cast`,
//! `geometry`), so types sit below the functions that use them.

pub mod cast_text;
pub mod duckdb_keywords;
pub mod enum_type;
pub mod geometry_type;
pub mod json_type;
pub mod output;
pub mod sql_types;
pub mod union_type;
pub mod variant_path;
pub mod variant_type;

/// What `sql_types` uses of Arrow and the SQL parser, named here once so that the fuzz
/// target `sql_types` compiles that module against the plain crates.
mod sql_deps {
    pub use arrow::datatypes::{
        DataType, Field, FieldRef, Fields, TimeUnit, UnionFields, UnionMode,
    };
    pub use datafusion::sql::sqlparser::{ast, dialect::DuckDbDialect, parser::Parser};
}

pub use tessera_json::{Kind, Output, Scanner, Span, path, scanner, value};

use std::sync::Arc;

use tessera_json::path::PathTrie;
use tessera_json::tape::Tape;

/// A tape that parses JSON as the SQL functions read it: DuckDB's reader, which takes
/// `NaN` and `Infinity` as numbers and a trailing comma in a container (`[1,2,]`).
/// Ingest and raw scans keep the strict tape, since a table stores only what JSON spells.
pub fn function_tape() -> Tape {
    Tape::default()
        .with_non_finite_numbers(true)
        .with_trailing_commas(true)
}

/// A scanner for `trie` that reads JSON as the SQL functions do (see [`function_tape`]).
pub fn function_scanner(trie: Arc<PathTrie>) -> Scanner {
    Scanner::new(trie)
        .with_non_finite_numbers(true)
        .with_trailing_commas(true)
}
