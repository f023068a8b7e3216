//! DuckDB's `DESCRIBE` and `SUMMARIZE` as relations (under 'duckdb'): `DESCRIBE q`,
//! `FROM (DESCRIBE q)`, `SUMMARIZE t`, `FROM (SUMMARIZE q)`.
//!
//! DuckDB answers both with rows a query can read further, which DataFusion's DESCRIBE
//! (its own columns, Arrow's type names) and sqlparser (no DESCRIBE in a FROM, no
//! SUMMARIZE) do not give. So the text is rewritten before parsing into calls of two
//! table functions ([`text`]), a top-level DESCRIBE statement likewise after parsing
//! ([`describe_statement`]), and before planning each call's query is planned (and, for
//! SUMMARIZE, run), its answer registered as a table under a fresh name that replaces
//! the call, dropped once the statement is planned (as `read_json` calls are).
//!
//! - `__tessera_describe(q)`: DuckDB's `column_name, column_type, null, key, default,
//!   extra`, types named as DuckDB names them (`JSON`, `GEOMETRY`, `STRUCT(...)`).
//! - `__tessera_summarize(q)`: DuckDB's `column_name, column_type, min, max,
//!   approx_unique, avg, std, q25, q50, q75, count, null_percentage` ([`summarize`]).
//!
//! The argument is a subquery, or a table's name as a string (DESCRIBE then shows the
//! table's NOT NULL columns and primary key as DuckDB does).

mod summarize;
pub(crate) mod text;

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::{ArrayRef, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::common::{Constraint, DataFusionError, Result, TableReference, plan_err};
use datafusion::dataframe::DataFrame;
use datafusion::execution::context::SessionContext;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    self, DescribeAlias, Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, ObjectNamePart,
    Query, SetExpr, TableFactor, TableFunctionArgs, Value, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use futures::future::BoxFuture;

use crate::functions::type_of::sql_type_name;
use crate::options::SqlDialect;
use crate::statement_walk::walk;

/// The table function DESCRIBE becomes.
pub(crate) const DESCRIBE_FUNCTION: &str = "__tessera_describe";
/// The table function SUMMARIZE becomes.
pub(crate) const SUMMARIZE_FUNCTION: &str = "__tessera_summarize";

/// Most calls one statement may hold, nested ones included.
const CALLS_MAX: usize = 256;
/// Deepest nesting of calls in calls (`DESCRIBE SELECT * FROM (DESCRIBE ...)`).
const NESTING_MAX: usize = 8;

/// Numbers the registered tables so that concurrent statements never share one.
static NEXT_TABLE: AtomicU64 = AtomicU64::new(0);

/// The tables registered for one statement's calls, to drop once it is planned.
#[derive(Debug, Default)]
pub(crate) struct Relations {
    names: Vec<String>,
}

impl Relations {
    /// Drops the registered tables (the planned statement holds them).
    pub(crate) fn release(self, ctx: &SessionContext) -> Result<()> {
        for name in self.names {
            ctx.deregister_table(name.as_str())?;
        }
        Ok(())
    }
}

/// Makes a top-level `DESCRIBE q` / `DESCRIBE t` the query `SELECT * FROM
/// __tessera_describe(...)`; other statements are left alone.
pub(crate) fn describe_statement(statement: &mut Statement) -> Result<()> {
    let Statement::Statement(inner) = statement else {
        return Ok(());
    };
    let describes =
        |alias: &DescribeAlias| matches!(alias, DescribeAlias::Describe | DescribeAlias::Desc);
    let arg = match inner.as_ref() {
        ast::Statement::Explain {
            describe_alias,
            statement: explained,
            ..
        } if describes(describe_alias) => match explained.as_ref() {
            ast::Statement::Query(query) => subquery(query.clone()),
            _ => return Ok(()),
        },
        ast::Statement::ExplainTable {
            describe_alias,
            table_name,
            ..
        } if describes(describe_alias) => table_arg(table_name)?,
        _ => return Ok(()),
    };
    **inner = ast::Statement::Query(call_query(DESCRIBE_FUNCTION, arg)?);
    Ok(())
}

/// The argument describing the table `name`: its name as a string, or, for a quoted
/// location (`DESCRIBE 'file.json'`), the query reading it.
fn table_arg(name: &ObjectName) -> Result<Expr> {
    let location = matches!(
        name.0.as_slice(),
        [ObjectNamePart::Identifier(Ident {
            quote_style: Some('\''),
            ..
        })]
    );
    if !location {
        return Ok(Expr::value(Value::SingleQuotedString(name.to_string())));
    }
    let mut query = parse_query("SELECT * FROM x")?;
    if let SetExpr::Select(select) = query.body.as_mut()
        && let Some(TableFactor::Table { name: from, .. }) =
            select.from.first_mut().map(|t| &mut t.relation)
    {
        *from = name.clone();
    }
    Ok(subquery(query))
}

fn subquery(query: Box<Query>) -> Expr {
    Expr::Subquery(query)
}

/// `SELECT * FROM function(arg)`.
fn call_query(function: &str, arg: Expr) -> Result<Box<Query>> {
    let mut query = parse_query(&format!("SELECT * FROM {function}(x)"))?;
    if let SetExpr::Select(select) = query.body.as_mut()
        && let Some(TableFactor::Table { args, .. }) =
            select.from.first_mut().map(|t| &mut t.relation)
    {
        *args = Some(TableFunctionArgs {
            args: vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))],
            settings: None,
        });
    }
    Ok(query)
}

fn parse_query(sql: &str) -> Result<Box<Query>> {
    match Parser::parse_sql(&GenericDialect {}, sql)?.pop() {
        Some(ast::Statement::Query(query)) => Ok(query),
        _ => Err(DataFusionError::Internal(format!("{sql} is a query"))),
    }
}

/// What a call describes or summarizes, or copies from.
enum Target {
    /// A table, by name.
    Table(TableReference),
    /// A query's answer.
    Query(Box<Query>),
    /// `copy_from`'s file and options, read for the table an INSERT appends to.
    Copy(TableReference, Vec<FunctionArg>),
}

/// One call found in a statement.
struct Call {
    /// The table that takes its place.
    name: String,
    summarize: bool,
    target: Target,
}

/// Replaces every DESCRIBE and SUMMARIZE call of `statement` by a table holding its
/// answer, registered in `ctx` until the returned tables are released.
pub(crate) async fn resolve(
    ctx: &SessionContext,
    statement: &mut Statement,
    dialect: SqlDialect,
) -> Result<Relations> {
    let mut relations = Relations::default();
    match resolve_into(ctx, statement, dialect, 0, &mut relations).await {
        Ok(()) => Ok(relations),
        Err(e) => {
            relations.release(ctx)?;
            Err(e)
        }
    }
}

fn resolve_into<'a>(
    ctx: &'a SessionContext,
    statement: &'a mut Statement,
    dialect: SqlDialect,
    depth: usize,
    relations: &'a mut Relations,
) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        let mut finder = Calls {
            found: Vec::new(),
            inserts_into: None,
        };
        if let ControlFlow::Break(e) = walk(statement, &mut finder) {
            return Err(e);
        }
        if !finder.found.is_empty() && depth >= NESTING_MAX {
            return plan_err!("DESCRIBE and SUMMARIZE nest at most {NESTING_MAX} deep");
        }
        for call in finder.found {
            if relations.names.len() >= CALLS_MAX {
                return plan_err!("a statement may hold at most {CALLS_MAX} DESCRIBE or SUMMARIZE");
            }
            let batch = match call.target {
                Target::Table(table) if !call.summarize => describe_table(ctx, table).await?,
                Target::Table(table) => summarize::batch(ctx.table(table).await?).await?,
                Target::Query(query) => {
                    let mut inner = Statement::Statement(Box::new(ast::Statement::Query(query)));
                    resolve_into(ctx, &mut inner, dialect, depth + 1, relations).await?;
                    let frame = plan_query(ctx, inner, dialect).await?;
                    match call.summarize {
                        true => summarize::batch(frame).await?,
                        false => describe_query(frame.schema().fields())?,
                    }
                }
                Target::Copy(table, args) => {
                    let records = crate::copy_from::table(ctx, table, &args).await?;
                    ctx.register_table(call.name.as_str(), records)?;
                    relations.names.push(call.name);
                    continue;
                }
            };
            ctx.register_batch(call.name.as_str(), batch)?;
            relations.names.push(call.name);
        }
        Ok(())
    })
}

/// The frame of a described query, planned as the session plans statements.
async fn plan_query(
    ctx: &SessionContext,
    statement: Statement,
    dialect: SqlDialect,
) -> Result<DataFrame> {
    let state = ctx.state();
    let plan = crate::select_aliases::plan(&state, statement, dialect).await?;
    let plan = crate::json_each_rewrite::plan_laterals(plan)?;
    Ok(DataFrame::new(state, plan))
}

/// Finds the calls, replacing each by a fresh table name.
struct Calls {
    found: Vec<Call>,
    /// The table the statement inserts into, for a COPY's call.
    inserts_into: Option<TableReference>,
}

impl VisitorMut for Calls {
    type Break = DataFusionError;

    fn pre_visit_statement(&mut self, statement: &mut ast::Statement) -> ControlFlow<Self::Break> {
        if let ast::Statement::Insert(insert) = statement
            && let ast::TableObject::TableName(name) = &insert.table
        {
            self.inserts_into = Some(TableReference::from(name.to_string().as_str()));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<Self::Break> {
        let TableFactor::Table { name, args, .. } = factor else {
            return ControlFlow::Continue(());
        };
        let function = name.to_string().to_ascii_lowercase();
        let Some(summarize) = is_call(&function) else {
            return ControlFlow::Continue(());
        };
        let args = args.take().map(|a| a.args).unwrap_or_default();
        let target = match self.target(&function, args) {
            Ok(target) => target,
            Err(e) => return ControlFlow::Break(e),
        };
        let table = format!("__relation_{}", NEXT_TABLE.fetch_add(1, Ordering::Relaxed));
        *name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(&table))]);
        self.found.push(Call {
            name: table,
            summarize,
            target,
        });
        ControlFlow::Continue(())
    }
}

/// Whether a table function's name is a call to resolve, and if so whether it
/// summarizes.
fn is_call(function: &str) -> Option<bool> {
    match function {
        DESCRIBE_FUNCTION | crate::copy_from::COPY_FUNCTION => Some(false),
        SUMMARIZE_FUNCTION => Some(true),
        _ => None,
    }
}

impl Calls {
    fn target(&self, function: &str, mut args: Vec<FunctionArg>) -> Result<Target> {
        if function == crate::copy_from::COPY_FUNCTION {
            return match &self.inserts_into {
                Some(table) => Ok(Target::Copy(table.clone(), args)),
                None => plan_err!("{function} is COPY's, in an INSERT only"),
            };
        }
        match args.as_mut_slice() {
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Subquery(query)))] => {
                Ok(Target::Query(query.clone()))
            }
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(value)))] => {
                match &value.value {
                    Value::SingleQuotedString(table) => {
                        Ok(Target::Table(TableReference::from(table.as_str())))
                    }
                    _ => Err(bad_call(function)),
                }
            }
            _ => Err(bad_call(function)),
        }
    }
}

fn bad_call(name: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "{name} takes one query in parentheses or one table name as a string"
    ))
}

/// DuckDB's DESCRIBE of a query: every column may be NULL, none is a key.
fn describe_query(fields: &[Arc<Field>]) -> Result<RecordBatch> {
    let rows = fields.iter().map(|f| (f.as_ref(), "YES", None));
    describe_batch(rows)
}

/// DuckDB's DESCRIBE of a table: NOT NULL columns say `NO`, primary key columns `PRI`.
async fn describe_table(ctx: &SessionContext, table: TableReference) -> Result<RecordBatch> {
    let provider = ctx.table_provider(table).await?;
    let schema = provider.schema();
    let primary: Vec<usize> = provider
        .constraints()
        .into_iter()
        .flat_map(|c| c.iter())
        .filter_map(|c| match c {
            Constraint::PrimaryKey(columns) => Some(columns.clone()),
            Constraint::Unique(_) => None,
        })
        .flatten()
        .collect();
    let rows = schema.fields().iter().enumerate().map(|(i, f)| {
        let null = if f.is_nullable() { "YES" } else { "NO" };
        (f.as_ref(), null, primary.contains(&i).then_some("PRI"))
    });
    describe_batch(rows)
}

/// The rows of a DESCRIBE: each column's name, DuckDB type name, nullability and key.
fn describe_batch<'a>(
    rows: impl Iterator<Item = (&'a Field, &'static str, Option<&'static str>)>,
) -> Result<RecordBatch> {
    let (mut names, mut types, mut nulls, mut keys) = (vec![], vec![], vec![], vec![]);
    for (field, null, key) in rows {
        names.push(field.name().clone());
        types.push(sql_type_name(field));
        nulls.push(null);
        keys.push(key);
    }
    let empty = vec![None::<&str>; names.len()];
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(names)),
        Arc::new(StringArray::from(types)),
        Arc::new(StringArray::from(nulls)),
        Arc::new(StringArray::from(keys)),
        Arc::new(StringArray::from(empty.clone())),
        Arc::new(StringArray::from(empty)),
    ];
    let names = [
        "column_name",
        "column_type",
        "null",
        "key",
        "default",
        "extra",
    ];
    let schema = Schema::new(
        names
            .iter()
            .map(|n| Field::new(*n, DataType::Utf8, true))
            .collect::<Vec<_>>(),
    );
    Ok(RecordBatch::try_new(Arc::new(schema), columns)?)
}

#[cfg(test)]
mod tests;
