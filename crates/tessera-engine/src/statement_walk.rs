//! One walk over a parsed statement for the rewrites that run before planning
//! (`output_names`, `group_keys`, `dialect`, `json_each_rewrite`): each is a sqlparser
//! `VisitorMut`, and this is where the SQL inside DataFusion's own statements (EXPLAIN)
//! is found, once.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr, FunctionArg, VisitMut, VisitorMut};

/// Visits the SQL of `statement` with `visitor`: the statement itself, or the one an
/// EXPLAIN explains; DataFusion's COPY, CREATE EXTERNAL TABLE and RESET hold no query
/// to rewrite.
pub(crate) fn walk<V: VisitorMut>(
    statement: &mut Statement,
    visitor: &mut V,
) -> ControlFlow<V::Break> {
    match statement {
        Statement::Statement(inner) => inner.visit(visitor),
        Statement::Explain(explain) => walk(&mut explain.statement, visitor),
        Statement::CopyTo(_) | Statement::CreateExternalTable(_) | Statement::Reset(_) => {
            ControlFlow::Continue(())
        }
    }
}

/// Whether a table function argument names a column: a call over constants only is
/// DataFusion's own table function, joined in any way (`LEFT JOIN json_each('[1]') AS
/// a ON ...`), not a lateral walk.
pub(crate) fn reads_columns(arg: &FunctionArg) -> bool {
    let mut arg = arg.clone();
    let mut finder = ColumnFinder(false);
    let _ = arg.visit(&mut finder);
    finder.0
}

struct ColumnFinder(bool);

impl VisitorMut for ColumnFinder {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
            self.0 = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}
