//! DuckDB's star expression `COLUMNS(*)` / `COLUMNS('regex')` (under `SET
//! tessera.dialect = 'duckdb'`): a SELECT item holding it stands for one item per
//! column of the input (all of them, or those whose names the regular expression
//! matches anywhere), named by the column, as in `SELECT typeof(COLUMNS(*)) FROM t`.
//!
//! The columns must be known before planning, so this runs after `read_json`'s tables
//! are registered and only where the SELECT reads one table (or view) by name; any
//! other input is a clear error. Matching uses Arrow's regular expressions (Rust's
//! `regex` syntax, close to DuckDB's RE2).
//!
//! The same knowledge serves `ORDER BY ALL` over a SELECT list with a wildcard
//! (`SELECT * EXCLUDE (f), g(f) ... ORDER BY ALL`), whose length `order_by_all` cannot
//! know: over one table by name, the wildcard is spelled out as its columns (less those
//! excluded) and `order_by_all` then orders by every output position.

use std::collections::HashMap;
use std::ops::ControlFlow;

use arrow::array::StringArray;
use arrow::compute::kernels::regexp::regexp_is_match_scalar;
use datafusion::common::{DataFusionError, Result, plan_err};
use datafusion::execution::context::SessionContext;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    ExcludeSelectItem, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName,
    ObjectNamePart, OrderByKind, Query, Select, SelectItem, SetExpr, TableFactor, Value, VisitMut,
    VisitorMut, WildcardAdditionalOptions,
};

use crate::datasource::read_json::is_virtual;
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
            .filter(|f| !is_virtual(f))
            .map(|f| f.name().clone())
            .collect();
        columns.insert(table.to_string(), names);
    }
    if let ControlFlow::Break(e) = walk(statement, &mut Expander { columns }) {
        return Err(e);
    }
    crate::order_by_all::rewrite(statement);
    Ok(())
}

/// The SELECT of a query ordered `BY ALL` whose list holds a wildcard this module
/// spells out (one with at most `EXCLUDE`), and the table it reads.
fn ordered_wildcard(query: &mut Query) -> Option<(&mut Select, ObjectName)> {
    let all = matches!(&query.order_by, Some(o) if matches!(o.kind, OrderByKind::All(_)));
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    let plain = |w: &WildcardAdditionalOptions| {
        w.opt_ilike.is_none()
            && w.opt_except.is_none()
            && w.opt_replace.is_none()
            && w.opt_rename.is_none()
            && w.opt_alias.is_none()
    };
    let wildcard = select
        .projection
        .iter()
        .any(|i| matches!(i, SelectItem::Wildcard(_)));
    let spelled = select.projection.iter().all(|i| match i {
        SelectItem::Wildcard(w) => plain(w),
        SelectItem::QualifiedWildcard(..) => false,
        _ => true,
    });
    let table = single_table(select).ok()?.clone();
    (all && wildcard && spelled).then_some((select.as_mut(), table))
}

/// The wildcards of `select` as the columns `names` less those each excludes.
fn spell_wildcards(select: &mut Select, names: &[String]) {
    let mut items = Vec::with_capacity(select.projection.len() + names.len());
    for item in select.projection.drain(..) {
        let SelectItem::Wildcard(options) = item else {
            items.push(item);
            continue;
        };
        let excluded: Vec<&ObjectName> = match &options.opt_exclude {
            Some(ExcludeSelectItem::Single(one)) => vec![one],
            Some(ExcludeSelectItem::Multiple(many)) => many.iter().collect(),
            None => Vec::new(),
        };
        let excluded: Vec<&str> = excluded
            .iter()
            .filter_map(|name| match name.0.last() {
                Some(ObjectNamePart::Identifier(ident)) => Some(ident.value.as_str()),
                _ => None,
            })
            .collect();
        let kept = names
            .iter()
            .filter(|name| !excluded.iter().any(|e| e.eq_ignore_ascii_case(name)));
        items.extend(kept.map(|name| {
            SelectItem::UnnamedExpr(Expr::Identifier(Ident::with_quote('"', name.as_str())))
        }));
    }
    select.projection = items;
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

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        if let Some((_, table)) = ordered_wildcard(query) {
            self.tables.push(table);
        }
        ControlFlow::Continue(())
    }

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

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        if let Some((select, table)) = ordered_wildcard(query)
            && let Some(names) = self.columns.get(&table.to_string())
        {
            spell_wildcards(select, names);
        }
        ControlFlow::Continue(())
    }

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
        if let ControlFlow::Break(e) = walk(&mut statement, &mut Expander { columns }) {
            return Err(e);
        }
        crate::order_by_all::rewrite(&mut statement);
        Ok(statement.to_string())
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

    /// `ORDER BY ALL` over a wildcard less some columns: the wildcard spelled out, then
    /// ordered by every position; other wildcard forms are left to DataFusion.
    #[test]
    fn wildcards_ordered_by_all_are_spelled_out() {
        let sql = "SELECT * EXCLUDE (f), g(f) AS f FROM t ORDER BY ALL";
        assert_eq!(
            expanded(sql, &["a", "f", "B"]).unwrap(),
            "SELECT \"a\", \"B\", g(f) AS f FROM t ORDER BY 1, 2, 3"
        );
        let unordered = "SELECT * EXCLUDE (f) FROM t";
        assert_eq!(expanded(unordered, &["a", "f"]).unwrap(), unordered);
        let renamed = "SELECT * REPLACE (a + 1 AS a) FROM t ORDER BY ALL";
        assert_eq!(expanded(renamed, &["a"]).unwrap(), renamed);
    }
}
