//! Output column names as DuckDB gives them.
//!
//! An unaliased SELECT item that is an operator or a cast is named by its SQL text
//! (`j ->> 'n'`, `CAST(j ->> 'n' AS BIGINT)`), and items that would still share a name
//! (`SELECT x, x`) are told apart by a suffix (`x`, `x_1`). DataFusion names a cast like
//! the value it casts and refuses two columns of one name, so `SELECT j->>'n',
//! CAST(j->>'n' AS BIGINT)`, which DuckDB answers, failed to plan; its names of JSON
//! accesses (`json_get_text(t.j,Utf8("n"))`) also read worse than the SQL the user wrote.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr, Ident, Select, SelectItem, VisitorMut};

use crate::statement_walk;

/// Names the SELECT items of every query in `statement`, subqueries included.
pub(crate) fn name_outputs(statement: &mut Statement) {
    let _ = statement_walk::walk(statement, &mut Namer);
}

struct Namer;

impl VisitorMut for Namer {
    type Break = ();

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        name_items(&mut select.projection);
        ControlFlow::Continue(())
    }
}

/// Gives each item of one SELECT list a name no other item of the list has.
fn name_items(items: &mut [SelectItem]) {
    let mut taken: HashSet<String> = HashSet::with_capacity(items.len());
    for item in items.iter_mut() {
        let Some((name, aliased)) = output_name(item) else {
            continue;
        };
        let unique = unused(&name, &taken);
        if unique != name || !aliased {
            alias(item, &unique);
        }
        taken.insert(unique);
    }
}

/// The name `item` is known by here and whether it needs no alias to have it (a column
/// reference, a function call or an alias of the user's); `None` for wildcards, whose
/// names are unknown here.
fn output_name(item: &SelectItem) -> Option<(String, bool)> {
    match item {
        SelectItem::UnnamedExpr(Expr::Identifier(ident)) => Some((normalized(ident), true)),
        SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
            Some((normalized(parts.last()?), true))
        }
        // DataFusion names a call as written (`count(*)`, `sum(x)`), but for its
        // arguments' forms: an alias only where a repeat needs one.
        SelectItem::UnnamedExpr(expr @ Expr::Function(_)) => Some((expr.to_string(), true)),
        SelectItem::UnnamedExpr(expr) => Some((expr.to_string(), false)),
        SelectItem::ExprWithAlias { alias, .. } => Some((normalized(alias), true)),
        SelectItem::ExprWithAliases { .. }
        | SelectItem::QualifiedWildcard(..)
        | SelectItem::Wildcard(_) => None,
    }
}

/// An identifier as the planner resolves it: unquoted ones are folded to lower case.
pub(crate) fn normalized(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

/// `name`, or the first of `name_1`, `name_2`, ... not in `taken`.
fn unused(name: &str, taken: &HashSet<String>) -> String {
    if !taken.contains(name) {
        return name.to_string();
    }
    (1..=taken.len())
        .map(|n| format!("{name}_{n}"))
        .find(|candidate| !taken.contains(candidate))
        .expect("of len + 1 candidates, one is not among len names")
}

/// Replaces `item` with its expression under the (quoted, so kept as is) alias `name`.
fn alias(item: &mut SelectItem, name: &str) {
    let expr = match item {
        SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => expr.clone(),
        _ => return,
    };
    *item = SelectItem::ExprWithAlias {
        expr,
        alias: Ident::with_quote('"', name),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;

    fn named(sql: &str) -> String {
        let mut statement = DFParser::parse_sql_with_dialect(sql, &PostgreSqlDialect {})
            .unwrap()
            .pop_front()
            .unwrap();
        name_outputs(&mut statement);
        statement.to_string()
    }

    #[test]
    fn expressions_are_named_by_their_text_and_duplicates_numbered() {
        assert_eq!(
            named("SELECT j->>'n', CAST(j->>'n' AS BIGINT) FROM t"),
            r#"SELECT j ->> 'n' AS "j ->> 'n'", CAST(j ->> 'n' AS BIGINT) AS "CAST(j ->> 'n' AS BIGINT)" FROM t"#
        );
        assert_eq!(
            named("SELECT x, X, t.x, 1 AS x, \"X\", count(*), count(*) FROM t"),
            r#"SELECT x, X AS "x_1", t.x AS "x_2", 1 AS "x_3", "X", count(*), count(*) AS "count(*)_1" FROM t"#
        );
        assert_eq!(
            named("SELECT * FROM (SELECT a + 1, a + 1 FROM t) s"),
            r#"SELECT * FROM (SELECT a + 1 AS "a + 1", a + 1 AS "a + 1_1" FROM t) s"#
        );
    }
}
