//! DuckDB's `ORDER BY ALL` over any SELECT list: the output columns left to right, as
//! positions (`ORDER BY 1, 2, ...`), which DataFusion orders by whatever the items are;
//! its own `ORDER BY ALL` takes plain columns only. A list with a wildcard, whose
//! length is unknown before planning, keeps DataFusion's reading.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    self, OrderByExpr, OrderByKind, Query, SelectItem, SetExpr, VisitorMut,
};

use crate::statement_walk;

/// Spells out each `ORDER BY ALL` of `statement` (see the module documentation).
pub(crate) fn rewrite(statement: &mut Statement) {
    let _ = statement_walk::walk(statement, &mut OrderByAll);
}

struct OrderByAll;

impl VisitorMut for OrderByAll {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let Some(order_by) = &mut query.order_by else {
            return ControlFlow::Continue(());
        };
        let OrderByKind::All(options) = &order_by.kind else {
            return ControlFlow::Continue(());
        };
        let Some(columns) = output_columns(&query.body) else {
            return ControlFlow::Continue(());
        };
        let options = *options;
        order_by.kind = OrderByKind::Expressions(
            (1..=columns)
                .map(|position| OrderByExpr {
                    expr: ast::Expr::value(ast::Value::Number(position.to_string(), false)),
                    options,
                    with_fill: None,
                })
                .collect(),
        );
        ControlFlow::Continue(())
    }
}

/// How many columns `body` outputs, if its (leftmost) SELECT list has no wildcard.
fn output_columns(body: &SetExpr) -> Option<usize> {
    match body {
        SetExpr::Select(select) => select
            .projection
            .iter()
            .all(|item| {
                matches!(
                    item,
                    SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. }
                )
            })
            .then_some(select.projection.len()),
        SetExpr::SetOperation { left, .. } => output_columns(left),
        SetExpr::Query(query) => output_columns(&query.body),
        _ => None,
    }
}
