//! DuckDB's `read_json` family: typed columns from JSON files.
//!
//! `read_json`, `read_json_auto`, `read_ndjson`, `read_ndjson_auto` infer columns from
//! the records (or take `columns={...}`); `read_json_objects`, `read_ndjson_objects`,
//! `read_json_objects_auto` give one `json` column per record. DataFusion plans no named
//! arguments in table functions, so calls are found in the parsed statement before
//! planning: each is read into a table registered under a fresh name that replaces the
//! call, and dropped once the statement is planned. Under the DuckDB dialect,
//! `FROM 'file.json'` reads as `read_json_auto('file.json')` too.

mod build;
mod geometry;
mod hive;
pub mod infer;
pub mod options;
pub mod records;

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::common::Result;
use datafusion::execution::context::SessionContext;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, ObjectNamePart, TableFactor, Value,
    VisitorMut,
};

pub(crate) use self::build::table as read_table;
use self::options::ReadJsonOptions;
use crate::statement_walk::walk;

/// The table functions, by DuckDB's names.
pub const FUNCTIONS: &[&str] = &[
    "read_json",
    "read_json_auto",
    "read_ndjson",
    "read_ndjson_auto",
    "read_json_objects",
    "read_ndjson_objects",
    "read_json_objects_auto",
];

/// Most calls one statement may hold.
const CALLS_MAX: usize = 1024;

/// Numbers the registered tables so that concurrent statements never share one.
static NEXT_TABLE: AtomicU64 = AtomicU64::new(0);

/// The tables registered for one statement's calls, to drop once it is planned.
#[derive(Debug, Default)]
pub struct ReadTables {
    names: Vec<String>,
}

impl ReadTables {
    /// Drops the registered tables (the planned statement holds them).
    pub fn release(self, ctx: &SessionContext) -> Result<()> {
        for name in self.names {
            ctx.deregister_table(name.as_str())?;
        }
        Ok(())
    }
}

/// Reads every `read_json`-family call of `statement` into a registered table and names
/// that table in its place; `duckdb` also reads `FROM 'file.json'` so.
pub async fn resolve(
    ctx: &SessionContext,
    statement: &mut Statement,
    duckdb: bool,
) -> Result<ReadTables> {
    let mut finder = Calls {
        duckdb,
        found: Vec::new(),
    };
    if let ControlFlow::Break(e) = walk(statement, &mut finder) {
        return Err(e);
    }
    let mut tables = ReadTables::default();
    let state = ctx.state();
    for (name, options) in finder.found {
        let table = build::table(&state, &options).await;
        let registered = table.and_then(|t| ctx.register_table(name.as_str(), t));
        if let Err(e) = registered {
            tables.release(ctx)?;
            return Err(e);
        }
        tables.names.push(name);
    }
    Ok(tables)
}

/// Finds the calls, replacing each by a fresh table name.
struct Calls {
    duckdb: bool,
    found: Vec<(String, ReadJsonOptions)>,
}

impl VisitorMut for Calls {
    type Break = datafusion::common::DataFusionError;

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<Self::Break> {
        let TableFactor::Table { name, args, .. } = factor else {
            return ControlFlow::Continue(());
        };
        let options = match self.call(name, args.as_ref().map(|a| a.args.as_slice())) {
            None => return ControlFlow::Continue(()),
            Some(Err(e)) => return ControlFlow::Break(e),
            Some(Ok(options)) => options,
        };
        if self.found.len() >= CALLS_MAX {
            return ControlFlow::Break(datafusion::common::DataFusionError::Plan(format!(
                "a statement may read at most {CALLS_MAX} JSON files by read_json"
            )));
        }
        let table = format!("__read_json_{}", NEXT_TABLE.fetch_add(1, Ordering::Relaxed));
        *name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(&table))]);
        *args = None;
        self.found.push((table, options));
        ControlFlow::Continue(())
    }
}

impl Calls {
    /// The options when `name(args)` is a call to read (or, under DuckDB's dialect, a
    /// quoted JSON file name); `None` for any other table.
    fn call(
        &self,
        name: &ObjectName,
        args: Option<&[FunctionArg]>,
    ) -> Option<Result<ReadJsonOptions>> {
        let [ObjectNamePart::Identifier(ident)] = name.0.as_slice() else {
            return None;
        };
        match args {
            Some(args) => {
                let function = ident.value.to_ascii_lowercase();
                FUNCTIONS
                    .contains(&function.as_str())
                    .then(|| ReadJsonOptions::parse(&function, args))
            }
            None if self.duckdb
                && ident.quote_style == Some('\'')
                && is_json_name(&ident.value) =>
            {
                let path = FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::value(
                    Value::SingleQuotedString(ident.value.clone()),
                )));
                Some(ReadJsonOptions::parse("read_json_auto", &[path]))
            }
            None => None,
        }
    }
}

/// Whether a file name says JSON (`.json`, `.ndjson`, `.jsonl`, or GeoJSON, compressed
/// or not).
fn is_json_name(name: &str) -> bool {
    let stem = uncompressed_name(name);
    is_geojson_name(&stem)
        || [".json", ".ndjson", ".jsonl"]
            .iter()
            .any(|e| stem.ends_with(e))
}

/// Whether a file name says GeoJSON (`.geojson`, `.geojsonl`, compressed or not): such
/// files are read as GeoJSON unless `geojson=false`.
pub(crate) fn is_geojson_name(name: &str) -> bool {
    let stem = uncompressed_name(name);
    [".geojson", ".geojsonl"].iter().any(|e| stem.ends_with(e))
}

/// The lower-case file name without its compression suffix.
fn uncompressed_name(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    [".gz", ".gzip", ".zst", ".zstd"]
        .iter()
        .find_map(|c| lower.strip_suffix(c))
        .unwrap_or(&lower)
        .to_string()
}

#[cfg(test)]
mod tests;
