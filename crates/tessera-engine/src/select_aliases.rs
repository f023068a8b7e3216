//! DuckDB's reuse of a SELECT-list alias later in the same SELECT (under 'duckdb'):
//! `SELECT json_extract(j, '$.b') a, a = '1' FROM t` and `... WHERE a = '1'` read `a` as
//! the aliased expression when no column of that name exists.
//!
//! Which names are columns is known only while planning, and a column always wins over
//! an alias, so the statement is planned as written first; only when planning fails
//! because an unqualified name is no column, and an earlier item of a SELECT is aliased
//! so, is that alias's expression put in the name's place and the statement planned
//! again. Queries that plan as written are never changed.

use std::ops::ControlFlow;

use datafusion::common::{DataFusionError, Result, SchemaError};
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{self, Select, SelectItem, VisitMut, VisitorMut};

use crate::options::SqlDialect;
use crate::output_names::normalized;
use crate::statement_walk;

/// Most aliases put in place in one statement: each costs one more planning attempt.
const ALIAS_REUSES_MAX: usize = 16;

/// Plans `statement`, under 'duckdb' reusing SELECT-list aliases where a name is no
/// column (see the module documentation).
pub(crate) async fn plan(
    state: &SessionState,
    mut statement: Statement,
    dialect: SqlDialect,
) -> Result<LogicalPlan> {
    if dialect != SqlDialect::DuckDb {
        return state.statement_to_plan(statement).await;
    }
    for _ in 0..ALIAS_REUSES_MAX {
        let error = match state.statement_to_plan(statement.clone()).await {
            Ok(plan) => return Ok(plan),
            Err(error) => error,
        };
        let Some(name) = missing_column(&error) else {
            return Err(error);
        };
        let mut reuse = AliasReuse {
            name,
            replaced: false,
        };
        let _ = statement_walk::walk(&mut statement, &mut reuse);
        if !reuse.replaced {
            return Err(error);
        }
    }
    state.statement_to_plan(statement).await
}

/// The unqualified name planning found no column for, if that is why it failed.
fn missing_column(error: &DataFusionError) -> Option<String> {
    match error.find_root() {
        DataFusionError::SchemaError(schema_error, _) => match schema_error.as_ref() {
            SchemaError::FieldNotFound { field, .. } if field.relation.is_none() => {
                Some(field.name.clone())
            }
            _ => None,
        },
        _ => None,
    }
}

/// Puts the expression aliased `name` in place of `name` in the later items and the
/// WHERE clause of each SELECT that has such an alias.
struct AliasReuse {
    name: String,
    replaced: bool,
}

impl VisitorMut for AliasReuse {
    type Break = ();

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        let Some(at) = select.projection.iter().position(|item| {
            matches!(item, SelectItem::ExprWithAlias { alias, .. } if normalized(alias) == self.name)
        }) else {
            return ControlFlow::Continue(());
        };
        let SelectItem::ExprWithAlias { expr: aliased, .. } = &select.projection[at] else {
            return ControlFlow::Continue(());
        };
        let mut replacer = Replacer {
            name: &self.name,
            with: ast::Expr::Nested(Box::new(aliased.clone())),
            depth: 0,
            replaced: false,
        };
        for item in &mut select.projection[at + 1..] {
            if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item {
                let _ = expr.visit(&mut replacer);
            }
        }
        if let Some(selection) = &mut select.selection {
            let _ = selection.visit(&mut replacer);
        }
        self.replaced |= replacer.replaced;
        ControlFlow::Continue(())
    }
}

/// Replaces the bare identifier `name` outside subqueries (which have names of their
/// own) with `with`.
struct Replacer<'a> {
    name: &'a str,
    with: ast::Expr,
    depth: usize,
    replaced: bool,
}

impl VisitorMut for Replacer<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut ast::Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut ast::Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if self.depth == 0
            && let ast::Expr::Identifier(ident) = expr
            && normalized(ident) == self.name
        {
            *expr = self.with.clone();
            self.replaced = true;
        }
        ControlFlow::Continue(())
    }
}
