//! GROUP BY keys that are casts of other keys, dropped before planning.
//!
//! DataFusion names a cast like the value it casts (apache/datafusion#18975), so
//! `SELECT x, CAST(x AS BIGINT) ... GROUP BY 1, 2`, which DuckDB answers, fails to plan
//! with "duplicate unqualified field name". Grouping by `x` and a cast of `x` groups
//! exactly as grouping by `x` alone (the cast is a function of `x`), and the SELECT item
//! is then computed from the key `x`: the rewrite changes no answer. Casts of a value that
//! is not itself a key are kept: grouping by them differs from grouping by the value.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr, GroupByExpr, Select, SelectItem, Value, VisitorMut};

use crate::statement_walk;

/// Drops the redundant cast keys of every GROUP BY in `statement`, subqueries included.
pub(crate) fn drop_cast_keys(statement: &mut Statement) {
    let _ = statement_walk::walk(statement, &mut Dropper);
}

struct Dropper;

impl VisitorMut for Dropper {
    type Break = ();

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        let GroupByExpr::Expressions(keys, modifiers) = &mut select.group_by else {
            return ControlFlow::Continue(());
        };
        if !modifiers.is_empty() {
            return ControlFlow::Continue(());
        }
        let resolved: Vec<Option<Expr>> = keys
            .iter()
            .map(|key| resolve(key, &select.projection))
            .collect();
        let redundant: Vec<bool> = resolved
            .iter()
            .map(|key| {
                key.as_ref()
                    .and_then(cast_operand)
                    .is_some_and(|operand| resolved.iter().flatten().any(|other| other == operand))
            })
            .collect();
        let mut flags = redundant.into_iter();
        keys.retain(|_| !flags.next().expect("one flag per key"));
        ControlFlow::Continue(())
    }
}

/// The expression a GROUP BY key stands for: a SELECT item for a position (`GROUP BY 2`)
/// or an item's alias, else the key itself; `None` for a position out of range.
fn resolve(key: &Expr, projection: &[SelectItem]) -> Option<Expr> {
    let item_expr = |item: &SelectItem| match item {
        SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
            Some(expr.clone())
        }
        _ => None,
    };
    match key {
        Expr::Value(value) => match &value.value {
            Value::Number(n, _) => {
                let position: usize = n.parse().ok()?;
                item_expr(projection.get(position.checked_sub(1)?)?)
            }
            _ => Some(key.clone()),
        },
        Expr::Identifier(ident) => projection
            .iter()
            .find_map(|item| match item {
                SelectItem::ExprWithAlias { expr, alias } if alias.value == ident.value => {
                    Some(expr.clone())
                }
                _ => None,
            })
            .or_else(|| Some(key.clone())),
        _ => Some(key.clone()),
    }
}

/// The value under the casts (and parentheses) of `expr`, if `expr` is a cast.
fn cast_operand(expr: &Expr) -> Option<&Expr> {
    let mut inner = expr;
    let mut casts = 0;
    loop {
        match inner {
            Expr::Cast { expr, .. } => {
                inner = expr;
                casts += 1;
            }
            Expr::Nested(expr) => inner = expr,
            _ => return (casts > 0).then_some(inner),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;

    fn rewritten(sql: &str) -> String {
        let mut statement = DFParser::parse_sql_with_dialect(sql, &PostgreSqlDialect {})
            .unwrap()
            .pop_front()
            .unwrap();
        drop_cast_keys(&mut statement);
        statement.to_string()
    }

    #[test]
    fn casts_of_other_keys_are_dropped() {
        for (sql, group_by) in [
            (
                "SELECT a, CAST(a AS INT) FROM t GROUP BY 1, 2",
                "GROUP BY 1",
            ),
            ("SELECT a, a::INT AS b FROM t GROUP BY a, b", "GROUP BY a"),
            (
                "SELECT j->>'x', CAST((j->>'x') AS INT) FROM t GROUP BY 1, 2",
                "GROUP BY 1",
            ),
            (
                "SELECT CAST(a AS INT), a FROM t GROUP BY 1, 2",
                "GROUP BY 2",
            ),
            // Not a key itself: grouping by the cast is kept.
            (
                "SELECT CAST(a AS INT), b FROM t GROUP BY 1, 2",
                "GROUP BY 1, 2",
            ),
            (
                "SELECT CAST(a AS INT), CAST(a AS BIGINT) FROM t GROUP BY 1, 2",
                "GROUP BY 1, 2",
            ),
            (
                "SELECT a FROM t GROUP BY ROLLUP (a, CAST(a AS INT))",
                "GROUP BY ROLLUP (a, CAST(a AS INT))",
            ),
        ] {
            let out = rewritten(sql);
            assert!(out.ends_with(group_by), "{sql} -> {out}");
        }
    }
}
