//! DuckDB's `read_json` family: typed columns from JSON files.
//!
//! `read_json`, `read_json_auto`, `read_ndjson`, `read_ndjson_auto` infer columns from
//! the records (or take `columns={...}`); `read_json_objects`, `read_ndjson_objects`,
//! `read_json_objects_auto` give one `json` column per record. DataFusion plans no named
//! arguments in table functions, so calls are found in the parsed statement before
//! planning: each is read into a table registered under a fresh name that replaces the
//! call, and dropped once the statement is planned. Under the DuckDB dialect,
//! `FROM 'file.json'` reads as `read_json_auto('file.json')` too.
//!
//! As DuckDB's, the tables have a virtual column `filename`: when a statement names
//! `filename` and a call does not ask for the column, it is added all the same
//! (marked by [`virtual_marker`]) and left out of the wildcards of the SELECTs reading it.

mod build;
mod geometry;
mod hive;
pub mod infer;
pub mod options;
pub mod records;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::datatypes::Field;

use datafusion::common::Result;
use datafusion::execution::context::SessionContext;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    ExcludeSelectItem, Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, ObjectNamePart,
    Query, Select, SelectFlavor, SelectItem, SetExpr, TableFactor, Value, VisitorMut,
    WildcardAdditionalOptions,
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

/// DuckDB's virtual column of the file each row comes from.
const VIRTUAL_FILENAME: &str = "filename";
/// The field metadata key marking a virtual column.
const VIRTUAL_KEY: &str = "tessera.virtual_column";

/// The field metadata of the virtual `filename` column.
pub(crate) fn virtual_marker() -> HashMap<String, String> {
    HashMap::from([(VIRTUAL_KEY.to_string(), VIRTUAL_FILENAME.to_string())])
}

/// Whether `field` is a virtual column (left out of wildcards, as in DuckDB).
pub(crate) fn is_virtual(field: &Field) -> bool {
    field.metadata().contains_key(VIRTUAL_KEY)
}

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
    let mut mentions = Mentions(false);
    let _ = walk(statement, &mut mentions);
    let mut finder = Calls {
        duckdb,
        virtual_filename: mentions.0,
        found: Vec::new(),
    };
    if let ControlFlow::Break(e) = walk(statement, &mut finder) {
        return Err(e);
    }
    let mut tables = ReadTables::default();
    let mut hidden = Vec::new();
    let state = ctx.state();
    for (name, options) in finder.found {
        let table = build::table(&state, &options).await;
        if let Ok(table) = &table
            && table.schema().fields().iter().any(|f| is_virtual(f))
        {
            hidden.push(name.clone());
        }
        let registered = table.and_then(|t| ctx.register_table(name.as_str(), t));
        if let Err(e) = registered {
            tables.release(ctx)?;
            return Err(e);
        }
        tables.names.push(name);
    }
    if !hidden.is_empty() {
        let _ = walk(statement, &mut HideVirtual { tables: hidden });
    }
    Ok(tables)
}

/// Whether a statement names a column `filename`.
struct Mentions(bool);

impl VisitorMut for Mentions {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let ident = match &*expr {
            Expr::Identifier(ident) => Some(ident),
            Expr::CompoundIdentifier(parts) => parts.last(),
            _ => None,
        };
        if ident.is_some_and(|i| i.value.eq_ignore_ascii_case(VIRTUAL_FILENAME)) {
            self.0 = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

/// Leaves the virtual `filename` out of the wildcards of SELECTs reading `tables`.
struct HideVirtual {
    tables: Vec<String>,
}

impl HideVirtual {
    fn reads_one(&self, select: &Select) -> bool {
        let factors = select
            .from
            .iter()
            .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)));
        factors.into_iter().any(|factor| match factor {
            TableFactor::Table { name, .. } => self.tables.contains(&name.to_string()),
            _ => false,
        })
    }
}

impl VisitorMut for HideVirtual {
    type Break = ();

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        if !self.reads_one(select) {
            return ControlFlow::Continue(());
        }
        let column = ObjectName::from(vec![Ident::new(VIRTUAL_FILENAME)]);
        for item in &mut select.projection {
            let SelectItem::Wildcard(options) = item else {
                continue;
            };
            options.opt_exclude = Some(match options.opt_exclude.take() {
                None => ExcludeSelectItem::Single(column.clone()),
                Some(ExcludeSelectItem::Single(one)) => {
                    ExcludeSelectItem::Multiple(vec![one, column.clone()])
                }
                Some(ExcludeSelectItem::Multiple(mut many)) => {
                    many.push(column.clone());
                    ExcludeSelectItem::Multiple(many)
                }
            });
        }
        ControlFlow::Continue(())
    }
}

/// Finds the calls, replacing each by a fresh table name.
struct Calls {
    duckdb: bool,
    /// Whether the statement names `filename` (each call gets the virtual column).
    virtual_filename: bool,
    found: Vec<(String, ReadJsonOptions)>,
}

impl VisitorMut for Calls {
    type Break = datafusion::common::DataFusionError;

    /// DuckDB's bare `FROM x` (`FROM 'file.json'` above all) selects every column; the
    /// parser leaves it with no SELECT list.
    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<Self::Break> {
        if let SetExpr::Select(select) = query.body.as_mut()
            && self.duckdb
            && select.flavor == SelectFlavor::FromFirstNoSelect
            && select.projection.is_empty()
        {
            let all = WildcardAdditionalOptions::default();
            select.projection.push(SelectItem::Wildcard(all));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<Self::Break> {
        let TableFactor::Table { name, args, .. } = factor else {
            return ControlFlow::Continue(());
        };
        let mut options = match self.call(name, args.as_ref().map(|a| a.args.as_slice())) {
            None => return ControlFlow::Continue(()),
            Some(Err(e)) => return ControlFlow::Break(e),
            Some(Ok(options)) => options,
        };
        if self.virtual_filename && options.filename.is_none() {
            options.filename = Some(VIRTUAL_FILENAME.to_string());
            options.filename_virtual = true;
        }
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
