//! DuckDB's star expression `COLUMNS(*)` / `COLUMNS('regex')` (under `SET
//! tessera.dialect = 'duckdb'`): a SELECT item holding it stands for one item per
//! column of the input (all of them, or those whose names the regular expression
//! matches anywhere), named by the column, as in `SELECT typeof(COLUMNS(*)) FROM t`.
//!
//! The columns must be known before planning, so this runs after `read_json`'s tables
//! are registered and only where the SELECT reads one table (or view) by name; any
//! other input is a clear error. Matching uses Arrow's regular expressions (Rust's
//! `regex` syntax, close to DuckDB's RE2).

use std::collections::HashMap;
use std::ops::ControlFlow;

use arrow::array::StringArray;
use arrow::compute::kernels::regexp::regexp_is_match_scalar;
use datafusion::common::{DataFusionError, Result, plan_err};
use datafusion::execution::context::SessionContext;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, Select, SelectItem,
    TableFactor, Value, VisitMut, VisitorMut,
};

use crate::statement_walk::walk;

/// Most items one `COLUMNS(...)` item may expand to.
const ITEMS_MAX: usize = 10_000;

/// Expands every `COLUMNS(...)` of `statement` into the columns it names.
pub async fn expand(ctx: &SessionContext, statement: &mut Statement) -> Result<()> {
    let mut finder = Inputs::default();
    if let ControlFlow::Break(e) = walk(statement, &mut finder) {
        return Err(e);
    }
    if finder.tables.is_empty() {
        return Ok(());
    }
    let mut columns = HashMap::new();
    for table in finder.tables {
        let provider = ctx.table_provider(table.to_string()).await?;
        let names: Vec<String> = provider
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        columns.insert(table.to_string(), names);
    }
    match walk(statement, &mut Expander { columns }) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Whether `expr` is a `COLUMNS(...)` call.
fn is_columns(expr: &Expr) -> bool {
    matches!(expr, Expr::Function(f) if f.name.0.len() == 1
        && f.name.to_string().eq_ignore_ascii_case("columns"))
}

/// Whether a SELECT item holds a `COLUMNS(...)` call.
fn holds_columns(item: &SelectItem) -> bool {
    let mut expr = match item {
        SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => expr.clone(),
        _ => return false,
    };
    let found = expr.visit(&mut FindColumns);
    found.is_break()
}

struct FindColumns;

impl VisitorMut for FindColumns {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match is_columns(expr) {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    }
}

/// The one table a SELECT reads, by name.
fn single_table(select: &Select) -> Result<&ObjectName> {
    match select.from.as_slice() {
        [from] if from.joins.is_empty() => match &from.relation {
            TableFactor::Table {
                name, args: None, ..
            } => Ok(name),
            _ => plan_err!("COLUMNS(...) needs a SELECT reading one table by name"),
        },
        _ => plan_err!("COLUMNS(...) needs a SELECT reading one table by name, without joins"),
    }
}

/// The tables of the SELECTs that hold `COLUMNS(...)`.
#[derive(Default)]
struct Inputs {
    tables: Vec<ObjectName>,
}

impl VisitorMut for Inputs {
    type Break = DataFusionError;

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<DataFusionError> {
        if !select.projection.iter().any(holds_columns) {
            return ControlFlow::Continue(());
        }
        match single_table(select) {
            Ok(name) => self.tables.push(name.clone()),
            Err(e) => return ControlFlow::Break(e),
        }
        ControlFlow::Continue(())
    }
}

/// Replaces each item holding `COLUMNS(...)` by its expansions.
struct Expander {
    columns: HashMap<String, Vec<String>>,
}

impl VisitorMut for Expander {
    type Break = DataFusionError;

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<DataFusionError> {
        if !select.projection.iter().any(holds_columns) {
            return ControlFlow::Continue(());
        }
        let names = match single_table(select).map(|t| self.columns.get(&t.to_string())) {
            Ok(Some(names)) => names,
            Ok(None) => return ControlFlow::Continue(()),
            Err(e) => return ControlFlow::Break(e),
        };
        let mut items = Vec::with_capacity(select.projection.len());
        for item in select.projection.drain(..) {
            if !holds_columns(&item) {
                items.push(item);
                continue;
            }
            match expand_item(&item, names) {
                Ok(expanded) => items.extend(expanded),
                Err(e) => return ControlFlow::Break(e),
            }
        }
        select.projection = items;
        ControlFlow::Continue(())
    }
}

/// One item per column its `COLUMNS(...)` names, each named by the column (or by the
/// user's alias, numbered from the second on).
fn expand_item(item: &SelectItem, names: &[String]) -> Result<Vec<SelectItem>> {
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(expr) => (expr, None),
        // An alias `output_names` gave from the SQL text is no name of the user's.
        SelectItem::ExprWithAlias { expr, alias } if alias.value == expr.to_string() => {
            (expr, None)
        }
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
        _ => return plan_err!("COLUMNS(...) in an unsupported SELECT item"),
    };
    let chosen = chosen_columns(expr, names)?;
    if chosen.len() > ITEMS_MAX {
        return plan_err!("COLUMNS(...) names more than {ITEMS_MAX} columns");
    }
    let mut out = Vec::with_capacity(chosen.len());
    for (n, column) in chosen.iter().enumerate() {
        let mut one = expr.clone();
        let _ = one.visit(&mut Substitute(Ident::with_quote('"', column.as_str())));
        let name = match (alias, n) {
            (Some(alias), 0) => alias.clone(),
            (Some(alias), n) => Ident::with_quote('"', format!("{}_{n}", alias.value)),
            (None, _) => Ident::with_quote('"', column.as_str()),
        };
        out.push(SelectItem::ExprWithAlias {
            expr: one,
            alias: name,
        });
    }
    Ok(out)
}

/// The columns the (first) `COLUMNS(...)` of `expr` names: `*` all, a string those whose
/// names its regular expression matches; none is an error, as in DuckDB.
fn chosen_columns(expr: &Expr, names: &[String]) -> Result<Vec<String>> {
    let mut found = CallArgs(None);
    let _ = expr.clone().visit(&mut found);
    let pattern = match found.0 {
        Some(FunctionArguments::List(list)) => match list.args.as_slice() {
            [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] => None,
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))] => match &v.value {
                Value::SingleQuotedString(p) => Some(p.clone()),
                _ => return plan_err!("COLUMNS takes * or a regular expression, not {v}"),
            },
            _ => return plan_err!("COLUMNS takes * or a regular expression"),
        },
        _ => return plan_err!("COLUMNS takes * or a regular expression"),
    };
    let Some(pattern) = pattern else {
        return Ok(names.to_vec());
    };
    let array = StringArray::from_iter_values(names);
    let matched = regexp_is_match_scalar(&array, &pattern, None)
        .map_err(|e| DataFusionError::Plan(format!("COLUMNS('{pattern}'): {e}")))?;
    let chosen: Vec<String> = names
        .iter()
        .zip(matched.iter())
        .filter(|(_, m)| *m == Some(true))
        .map(|(n, _)| n.clone())
        .collect();
    if chosen.is_empty() {
        return plan_err!(
            "No matching columns found that match regex \"{pattern}\" (columns: {})",
            names.join(", ")
        );
    }
    Ok(chosen)
}

/// Finds the arguments of the first `COLUMNS(...)` call.
struct CallArgs(Option<FunctionArguments>);

impl VisitorMut for CallArgs {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::Function(f) if is_columns(&Expr::Function(f.clone())) => {
                self.0 = Some(f.args.clone());
                ControlFlow::Break(())
            }
            _ => ControlFlow::Continue(()),
        }
    }
}

/// Replaces every `COLUMNS(...)` call by one column.
struct Substitute(Ident);

impl VisitorMut for Substitute {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if is_columns(expr) {
            *expr = Expr::Identifier(self.0.clone());
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;
    use datafusion::sql::sqlparser::dialect::DuckDbDialect;

    fn expanded(sql: &str, names: &[&str]) -> Result<String> {
        let mut statement = DFParser::parse_sql_with_dialect(sql, &DuckDbDialect {})?
            .pop_front()
            .unwrap();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let columns = HashMap::from([("t".to_string(), names)]);
        match walk(&mut statement, &mut Expander { columns }) {
            ControlFlow::Break(e) => Err(e),
            ControlFlow::Continue(()) => Ok(statement.to_string()),
        }
    }

    /// Generated column lists: `COLUMNS(*)` gives one item per column in order,
    /// `COLUMNS('re')` those the expression matches, other items untouched.
    #[test]
    fn items_expand_to_the_columns_named() {
        let pool = ["id", "name", "Id2", "x_y", "z"];
        for width in 1..=pool.len() {
            let names = &pool[..width];
            let all = expanded("SELECT 1, typeof(COLUMNS(*)) FROM t", names).unwrap();
            let items: Vec<String> = names
                .iter()
                .map(|n| format!("typeof(\"{n}\") AS \"{n}\""))
                .collect();
            assert_eq!(all, format!("SELECT 1, {} FROM t", items.join(", ")));
            let some = expanded("SELECT COLUMNS('^i') + 1 FROM t", names).unwrap();
            assert_eq!(some, "SELECT \"id\" + 1 AS \"id\" FROM t");
        }
        let none = expanded("SELECT COLUMNS('nothing') FROM t", &pool).unwrap_err();
        assert!(none.to_string().contains("No matching columns"), "{none}");
        let join = expanded("SELECT COLUMNS(*) FROM t, u", &pool).unwrap_err();
        assert!(join.to_string().contains("one table"), "{join}");
    }
}
