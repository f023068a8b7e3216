//! `json_each`/`json_tree` of an outer column in an `EXISTS` or `IN` subquery:
//! `WHERE EXISTS (SELECT 1 FROM json_each(t.j) AS e WHERE e.value = '1')` and
//! `WHERE 1 IN (SELECT value FROM json_each(t.j))`.
//!
//! DataFusion decorrelates a subquery whose outer references sit in filters, not one
//! whose table function reads them, so before planning such a subquery becomes a test
//! over the document's rows as a list: `array_any_match(__tessera_json_each(t.j),
//! row -> row['value'] = '1')`, the subquery's references to its entry columns turned
//! into fields of `row`. `EXISTS` is true when some row passes the WHERE clause (a NULL
//! condition does not pass); `x IN (SELECT e ...)` keeps SQL's three-valued answer (NULL
//! when no row equals `x` but some comparison is NULL). Subqueries with more than the one
//! relation, grouping, ordering, limits or calls in the IN item keep DataFusion's
//! planning.

use datafusion::sql::sqlparser::ast::{
    self, AccessExpr, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments,
    GroupByExpr, Ident, LambdaFunction, LambdaFunctionParameter, LambdaSyntax, ObjectName,
    OneOrManyWithParens, Query, SelectItem, SetExpr, Subscript, TableFactor, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

use crate::functions::json_each::{ENTRY_COLUMNS, Walk};
use crate::output_names::normalized;

/// The lambda parameter standing for one row of the walk.
const ROW: &str = "__tessera_row";

/// Replaces `expr`, if it is an `EXISTS` or `IN` subquery over a `json_each`/`json_tree`
/// of outer columns, with its test over the walk's rows (see the module documentation).
pub(crate) fn rewrite(expr: &mut ast::Expr) {
    let replacement = match expr {
        ast::Expr::Exists { subquery, negated } => exists(subquery).map(|test| (test, *negated)),
        ast::Expr::InSubquery {
            expr: needle,
            subquery,
            negated,
        } => member(subquery, needle).map(|test| (test, *negated)),
        _ => None,
    };
    if let Some((test, negated)) = replacement {
        *expr = match negated {
            true => ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Not,
                expr: Box::new(ast::Expr::Nested(Box::new(test))),
            },
            false => test,
        };
    }
}

/// `EXISTS (subquery)` as `array_any_match(rows, row -> condition IS TRUE) IS TRUE`: a
/// NULL document has no rows.
fn exists(subquery: &Query) -> Option<ast::Expr> {
    let walk = walk_of(subquery)?;
    let condition = match walk.condition {
        Some(condition) => ast::Expr::IsTrue(Box::new(ast::Expr::Nested(Box::new(condition)))),
        None => ast::Expr::value(ast::Value::Boolean(true)),
    };
    // Not `coalesce(any, false)`, which simplification turns into two evaluations.
    let any = any_match(walk.rows, condition);
    Some(ast::Expr::IsTrue(Box::new(ast::Expr::Nested(Box::new(
        any,
    )))))
}

/// `needle IN (SELECT item ...)` as `array_any_match(rows, row -> condition IS TRUE AND
/// item = needle)`.
fn member(subquery: &Query, needle: &ast::Expr) -> Option<ast::Expr> {
    let walk = walk_of(subquery)?;
    let mut item = walk.item?;
    let mut calls = CallFinder(false);
    let _ = item.visit(&mut calls);
    if calls.0 {
        return None;
    }
    let _ = item.visit(&mut walk.columns.clone());
    let equal = ast::Expr::BinaryOp {
        left: Box::new(ast::Expr::Nested(Box::new(item))),
        op: ast::BinaryOperator::Eq,
        right: Box::new(ast::Expr::Nested(Box::new(needle.clone()))),
    };
    let test = match walk.condition {
        Some(condition) => ast::Expr::BinaryOp {
            left: Box::new(ast::Expr::IsTrue(Box::new(ast::Expr::Nested(Box::new(
                condition,
            ))))),
            op: ast::BinaryOperator::And,
            right: Box::new(equal),
        },
        None => equal,
    };
    Some(any_match(walk.rows, test))
}

/// A subquery over one walk, its parts rewritten over [`ROW`].
struct WalkQuery {
    /// `__tessera_json_each(args)`: the rows as a list.
    rows: ast::Expr,
    /// The WHERE clause.
    condition: Option<ast::Expr>,
    /// The only SELECT item, if there is one (not yet rewritten).
    item: Option<ast::Expr>,
    /// Rewrites references to the walk's columns.
    columns: EntryColumns,
}

/// The parts of `subquery` if it is a plain `SELECT ... FROM json_each(args) [AS a]
/// [WHERE ...]` whose arguments read columns (of an outer query: the walk is its only
/// relation).
fn walk_of(subquery: &Query) -> Option<WalkQuery> {
    let plain = subquery.with.is_none()
        && subquery.order_by.is_none()
        && subquery.limit_clause.is_none()
        && subquery.fetch.is_none();
    let SetExpr::Select(select) = subquery.body.as_ref() else {
        return None;
    };
    let ungrouped = matches!(&select.group_by, GroupByExpr::Expressions(keys, _) if keys.is_empty())
        && select.having.is_none()
        && select.qualify.is_none();
    let [from] = select.from.as_slice() else {
        return None;
    };
    if !plain || !ungrouped || !from.joins.is_empty() {
        return None;
    }
    let (name, args, alias) = match &from.relation {
        TableFactor::Table {
            name,
            args: Some(args),
            alias,
            ..
        } => (name, &args.args, alias),
        _ => return None,
    };
    let [part] = name.0.as_slice() else {
        return None;
    };
    let walk = Walk::from_name(&normalized(part.as_ident()?))?;
    if !args.iter().any(crate::statement_walk::reads_columns) {
        return None;
    }
    let qualifier = match alias {
        Some(alias) => normalized(&alias.name),
        None => walk.name().to_string(),
    };
    let mut columns = EntryColumns {
        qualifier,
        depth: 0,
    };
    let mut condition = select.selection.clone();
    if let Some(condition) = &mut condition {
        let _ = condition.visit(&mut columns);
    }
    let item = match select.projection.as_slice() {
        [SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }] => Some(e.clone()),
        _ => None,
    };
    let rows = ast::Expr::Function(ast::Function {
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args.clone(),
            clauses: Vec::new(),
        }),
        ..function(&format!("__tessera_{}", walk.name()))
    });
    Some(WalkQuery {
        rows,
        condition,
        item,
        columns,
    })
}

/// `array_any_match(rows, ROW -> body)`.
fn any_match(rows: ast::Expr, body: ast::Expr) -> ast::Expr {
    let lambda = ast::Expr::Lambda(LambdaFunction {
        params: OneOrManyWithParens::One(LambdaFunctionParameter {
            name: Ident::new(ROW),
            data_type: None,
        }),
        body: Box::new(body),
        syntax: LambdaSyntax::Arrow,
    });
    call("array_any_match", vec![rows, lambda])
}

/// The call `name(args)`.
fn call(name: &str, args: Vec<ast::Expr>) -> ast::Expr {
    ast::Expr::Function(ast::Function {
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
                .collect(),
            clauses: Vec::new(),
        }),
        ..function(name)
    })
}

/// A call of `name` without arguments, to fill in.
fn function(name: &str) -> ast::Function {
    ast::Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::None,
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    }
}

/// Turns `a.value` (`a` the walk's alias or name) and a bare `value` (the walk's columns
/// hide the outer query's) into `ROW['value']`, outside nested subqueries.
#[derive(Clone)]
struct EntryColumns {
    qualifier: String,
    depth: usize,
}

impl EntryColumns {
    fn column(&self, expr: &ast::Expr) -> Option<&'static str> {
        let (qualifier, name) = match expr {
            ast::Expr::Identifier(name) => (None, name),
            ast::Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [qualifier, name] => (Some(qualifier), name),
                _ => return None,
            },
            _ => return None,
        };
        if qualifier.is_some_and(|q| normalized(q) != self.qualifier) {
            return None;
        }
        let name = normalized(name);
        ENTRY_COLUMNS.iter().copied().find(|c| *c == name)
    }
}

impl VisitorMut for EntryColumns {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if self.depth > 0 {
            return ControlFlow::Continue(());
        }
        if let Some(column) = self.column(expr) {
            *expr = ast::Expr::CompoundFieldAccess {
                root: Box::new(ast::Expr::Identifier(Ident::new(ROW))),
                access_chain: vec![AccessExpr::Subscript(Subscript::Index {
                    index: ast::Expr::value(ast::Value::SingleQuotedString(column.to_string())),
                })],
            };
        }
        ControlFlow::Continue(())
    }
}

/// Whether an expression calls a function (which could aggregate).
struct CallFinder(bool);

impl VisitorMut for CallFinder {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if matches!(expr, ast::Expr::Function(_)) {
            self.0 = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}
