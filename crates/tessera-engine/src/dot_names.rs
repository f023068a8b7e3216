//! The names after a dot, prepared for planning (see `dot_access`): the identifiers
//! after a non-column expression (`json(x).a`) become the quoted names DataFusion plans
//! as field accesses (it refuses identifiers there, and would fold their case), and
//! `user.name` (sqlparser parses `user` as a function) is a column. In every dialect:
//! it changes only accesses DataFusion refuses. Runs after `json_each_rewrite`, whose
//! SQL around the arguments of a lateral `json_each` it then prepares too.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{self, AccessExpr, FunctionArguments, VisitorMut};

use crate::statement_walk;

/// Prepares the dot accesses of `statement` for planning (see the module documentation).
pub(crate) fn rewrite(statement: &mut Statement) {
    let _ = statement_walk::walk(statement, &mut DotNames);
}

struct DotNames;

impl VisitorMut for DotNames {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if let ast::Expr::CompoundFieldAccess { root, access_chain } = expr {
            if let Some(name) = bare_function_name(root)
                && matches!(
                    access_chain.first(),
                    Some(AccessExpr::Dot(ast::Expr::Identifier(_)))
                )
            {
                **root = ast::Expr::Identifier(name);
            }
            // DataFusion reads the identifiers right after a column as the column's
            // (qualified) name and nested fields; every later one is a field name.
            let skip = match root.as_ref() {
                ast::Expr::Identifier(_) => access_chain
                    .iter()
                    .take_while(|a| matches!(a, AccessExpr::Dot(ast::Expr::Identifier(_))))
                    .count(),
                _ => 0,
            };
            for access in access_chain.iter_mut().skip(skip) {
                if let AccessExpr::Dot(ast::Expr::Identifier(ident)) = access {
                    *access = AccessExpr::Dot(ast::Expr::value(ast::Value::SingleQuotedString(
                        ident.value.clone(),
                    )));
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// The name of a call without parentheses or arguments (`user`, `current_user`), which
/// before a dot is a table or column name.
fn bare_function_name(expr: &ast::Expr) -> Option<ast::Ident> {
    let ast::Expr::Function(function) = expr else {
        return None;
    };
    let plain = matches!(function.args, FunctionArguments::None)
        && matches!(function.parameters, FunctionArguments::None)
        && function.over.is_none()
        && function.filter.is_none();
    match function.name.0.as_slice() {
        [part] if plain => part.as_ident().cloned(),
        _ => None,
    }
}
