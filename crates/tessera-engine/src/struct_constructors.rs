//! DuckDB's struct constructors, rewritten before planning (under
//! `tessera.dialect = 'duckdb'`) onto DataFusion's `named_struct`:
//!
//! - `struct_pack(a := x, b := y)`, DuckDB's named struct, is `named_struct('a', x, 'b', y)`;
//! - `row(x, y)` and a tuple `(x, y)`, DuckDB's unnamed struct, are a tuple: a struct
//!   whose members are named `v1`, `v2`, ... (`crate::json::sql_types::is_tuple`), which
//!   `to_json` writes as an array and `typeof` names `TUPLE(...)`. DataFusion would
//!   name them `c0`, `c1`, ..., and refuses a tuple whose first member is neither a
//!   literal nor a name (`(MAP(...), 2)`).

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    ObjectName, Value, VisitorMut,
};

use crate::json::sql_types::tuple_member_name;

/// Rewrites the struct constructors of `statement` (see the module documentation).
pub(crate) fn rewrite(statement: &mut Statement) {
    let _ = crate::statement_walk::walk(statement, &mut Constructors);
}

struct Constructors;

impl VisitorMut for Constructors {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let members = match expr {
            Expr::Tuple(values) => unnamed(std::mem::take(values)),
            Expr::Function(function) => match constructor_members(function) {
                Some(members) => members,
                None => return ControlFlow::Continue(()),
            },
            _ => return ControlFlow::Continue(()),
        };
        *expr = named_struct(members);
        ControlFlow::Continue(())
    }
}

/// The members of a call to `row` (named `v1`, `v2`, ...) or `struct_pack` (named by
/// its arguments); `None` for any other call, or one these do not take (a `row()`
/// without members, a `struct_pack` with an unnamed argument).
fn constructor_members(function: &mut Function) -> Option<Vec<(String, Expr)>> {
    let name = function.name.to_string().to_ascii_lowercase();
    let FunctionArguments::List(list) = &mut function.args else {
        return None;
    };
    let plain = list.duplicate_treatment.is_none() && list.clauses.is_empty();
    if !plain || list.args.is_empty() {
        return None;
    }
    match name.as_str() {
        "row" => taken(&mut list.args, |arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .map(unnamed),
        "struct_pack" => taken(&mut list.args, |arg| match arg {
            FunctionArg::Named {
                name,
                arg: FunctionArgExpr::Expr(e),
                ..
            } => Some((name.value.clone(), e.clone())),
            _ => None,
        }),
        _ => None,
    }
}

/// Each of `args` as `member` reads it, the arguments then taken; `None` (and the
/// arguments left) when `member` reads one of them as nothing.
fn taken<T>(
    args: &mut Vec<FunctionArg>,
    member: impl Fn(&FunctionArg) -> Option<T>,
) -> Option<Vec<T>> {
    let members = args.iter().map(member).collect::<Option<Vec<T>>>()?;
    args.clear();
    Some(members)
}

/// Tuple members: `v1`, `v2`, ... in order.
fn unnamed(values: Vec<Expr>) -> Vec<(String, Expr)> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, e)| (tuple_member_name(i), e))
        .collect()
}

/// `named_struct('name', value, ...)`.
fn named_struct(members: Vec<(String, Expr)>) -> Expr {
    let args = members
        .into_iter()
        .flat_map(|(name, value)| {
            let name = Expr::value(Value::SingleQuotedString(name));
            [name, value].map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
        })
        .collect();
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new("named_struct")]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args,
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

#[cfg(test)]
mod tests {
    use datafusion::sql::parser::DFParser;
    use datafusion::sql::sqlparser::dialect::DuckDbDialect;

    use super::*;

    fn rewritten(sql: &str) -> String {
        let mut statements = DFParser::parse_sql_with_dialect(sql, &DuckDbDialect {}).unwrap();
        let mut statement = statements.pop_front().unwrap();
        rewrite(&mut statement);
        statement.to_string()
    }

    /// Members of every kind DataFusion refuses first in a tuple, in growing numbers.
    fn generated_members(count: usize) -> Vec<String> {
        let kinds = ["MAP([1], ['a'])", "1", "'x'", "[2, 3]", "t.c", "row(4)"];
        (0..count)
            .map(|i| kinds[i % kinds.len()].to_string())
            .collect()
    }

    #[test]
    fn rows_and_tuples_are_structs_of_members_v1_v2() {
        for count in 1..8 {
            let members = generated_members(count);
            let expected: Vec<String> = members
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let m = m.replace("row(4)", "named_struct('v1', 4)");
                    format!("'{}', {m}", tuple_member_name(i))
                })
                .collect();
            let expected = format!("SELECT named_struct({})", expected.join(", "));
            let list = members.join(", ");
            assert_eq!(rewritten(&format!("SELECT row({list})")), expected);
            if count > 1 {
                assert_eq!(rewritten(&format!("SELECT ({list})")), expected);
            }
        }
    }

    #[test]
    fn struct_pack_names_its_members_and_other_calls_stay() {
        assert_eq!(
            rewritten("SELECT struct_pack(a := 1, \"B c\" := [x])"),
            "SELECT named_struct('a', 1, 'B c', [x])"
        );
        for sql in [
            "SELECT struct_pack(1, 2)",
            "SELECT struct_pack(a := 1, 2)",
            "SELECT row()",
            "SELECT other(1, 2)",
            "SELECT (1)",
        ] {
            assert_eq!(rewritten(sql), sql);
        }
    }
}
