//! What a statement means under `SET tessera.dialect = 'duckdb'`: DuckDB's query text
//! (JSONBench's, users' own) run unchanged with DuckDB's answers.
//!
//! Under the default dialect ('postgres') nothing here changes anything. Under 'duckdb':
//!
//! - statements are parsed with DuckDB's grammar (sqlparser's `DuckDbDialect`), and
//!   DataFusion's own `datafusion.sql_parser.dialect` follows;
//! - `a // b` is DuckDB's `divide(a, b)`: integer division between integers (truncating,
//!   as DuckDB does), an ordinary quotient otherwise (DataFusion plans no `//`);
//! - `x IN [a, b]` (DuckDB's list literal after IN) means `x IN (a, b)`: the brackets
//!   are replaced before parsing, since sqlparser only parses a parenthesized list there;
//! - `/` between integers or decimals divides with a fractional result (`DOUBLE`), as
//!   in DuckDB, instead of PostgreSQL's integer division;
//! - `1.2` is a decimal (`DECIMAL(2,1)`), `1e2` a `DOUBLE`, `5_000` is 5000;
//! - NULLs sort last in both directions unless `NULLS FIRST` says otherwise
//!   (`datafusion.sql_parser.default_null_ordering = 'nulls_last'`).

use std::any::TypeId;
use std::borrow::Cow;
use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::{ConfigOptions, Dialect};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, plan_err};
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::type_coercion::binary::BinaryTypeCoercer;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility, cast,
};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    self, BinaryOperator, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments,
    Ident, ObjectName, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::{
    Dialect as ParserDialect, DuckDbDialect, PostgreSqlDialect, Precedence,
};

mod number_literals;
pub(crate) mod prepare;

use crate::options::{SqlDialect, TesseraOptions};
use crate::statement_walk;

/// The sqlparser grammar of `dialect`.
pub(crate) fn parser_dialect(dialect: SqlDialect) -> &'static dyn ParserDialect {
    match dialect {
        SqlDialect::Postgres => &PostgreSqlDialect {},
        SqlDialect::DuckDb => &DuckDbGrammar,
    }
}

/// DuckDB's grammar: sqlparser's `DuckDbDialect` (which the parser also recognizes it
/// as), except that `->` and `->>` bind tighter than comparisons, `IN` and `LIKE`, as in
/// DuckDB itself (sqlparser's generic precedence parses `j->>'kind' IN ('a')` as
/// `j->>('kind' IN ('a'))`), and `x -> ...` is JSON access, never a lambda (DuckDB 2.0
/// deprecates the arrow lambda for `lambda x: ...`).
#[derive(Debug)]
struct DuckDbGrammar;

/// Forwards the listed `Dialect` methods taking no arguments to `DuckDbDialect`.
macro_rules! as_duckdb {
    ($($method:ident),* $(,)?) => {$(
        fn $method(&self) -> bool {
            DuckDbDialect {}.$method()
        }
    )*};
}

impl ParserDialect for DuckDbGrammar {
    fn dialect(&self) -> TypeId {
        TypeId::of::<DuckDbDialect>()
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        DuckDbDialect {}.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        DuckDbDialect {}.is_identifier_part(ch)
    }

    fn prec_value(&self, prec: Precedence) -> u8 {
        match prec {
            // Above `Between` and `Eq` (20), below `+`/`-` (30).
            Precedence::PgOther => 21,
            other => DuckDbDialect {}.prec_value(other),
        }
    }

    /// DuckDB reads `5_000` as 5000 (sqlparser's `DuckDbDialect` does not say so).
    fn supports_numeric_literal_underscores(&self) -> bool {
        true
    }

    as_duckdb!(
        supports_trailing_commas,
        supports_filter_during_aggregation,
        supports_group_by_expr,
        supports_bitwise_shift_operators,
        supports_named_fn_args_with_eq_operator,
        supports_named_fn_args_with_assignment_operator,
        supports_dictionary_syntax,
        support_map_literal_syntax,
        allow_extract_single_quotes,
        supports_explain_with_utility_options,
        supports_load_extension,
        supports_array_typedef_with_brackets,
        supports_from_first_select,
        supports_order_by_all,
        supports_select_wildcard_exclude,
        supports_notnull_operator,
        supports_install,
        supports_detach,
        supports_select_wildcard_replace,
        supports_comma_separated_trim,
    );
}

/// The session's dialect, read from its settings.
pub(crate) fn of(config: &ConfigOptions) -> SqlDialect {
    config
        .extensions
        .get::<TesseraOptions>()
        .map_or(SqlDialect::default(), |options| options.dialect)
}

/// Makes DataFusion's own parser settings follow `tessera.dialect`: the grammar of SQL
/// text DataFusion parses itself, and where NULLs sort by default.
pub(crate) fn configure(config: &mut ConfigOptions) {
    let (grammar, nulls) = match of(config) {
        // PostgreSQL's grammar binds `->>` tighter than `=` (as PostgreSQL and DuckDB
        // do), so `j->>'kind' = 'commit'` compares the extracted value.
        SqlDialect::Postgres => (Dialect::PostgreSQL, "nulls_max"),
        SqlDialect::DuckDb => (Dialect::DuckDB, "nulls_last"),
    };
    config.sql_parser.dialect = grammar;
    config.sql_parser.default_null_ordering = nulls.to_string();
    // DuckDB reads `1.2` as DECIMAL(2,1), not DOUBLE.
    config.sql_parser.parse_float_as_decimal = matches!(of(config), SqlDialect::DuckDb);
}

/// `script` as the parser of `dialect` should see it: under 'duckdb', DuckDB's text
/// that sqlparser reads otherwise is rewritten ([`prepare::duckdb_text`], and
/// DESCRIBE/SUMMARIZE as relations by `describe::text`, COPY FROM by `copy_from`).
pub(crate) fn prepare(script: &str, dialect: SqlDialect) -> Cow<'_, str> {
    match dialect {
        SqlDialect::DuckDb => {
            let copies = crate::copy_from::prepare(script, &DuckDbGrammar);
            let described = crate::describe::text::prepare(&copies, &DuckDbGrammar);
            Cow::Owned(prepare::duckdb_text(&described, &DuckDbGrammar).into_owned())
        }
        SqlDialect::Postgres => Cow::Borrowed(script),
    }
}

/// Rewrites `statement` (parsed with [`parser_dialect`]) to what it means under
/// `dialect`: under 'duckdb', `a // b` becomes `divide(a, b)`.
pub(crate) fn rewrite(statement: &mut Statement, dialect: SqlDialect) {
    if dialect != SqlDialect::DuckDb {
        return;
    }
    let _ = statement_walk::walk(statement, &mut IntegerDivisions);
    let _ = statement_walk::walk(statement, &mut number_literals::ExponentDoubles);
    crate::table_function_names::rewrite(statement);
    crate::order_by_all::rewrite(statement);
}

/// Turns each `a // b` into `divide(a, b)`, innermost first.
struct IntegerDivisions;

impl VisitorMut for IntegerDivisions {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        let ast::Expr::BinaryOp {
            op: BinaryOperator::DuckIntegerDivide,
            left,
            right,
        } = expr
        else {
            return ControlFlow::Continue(());
        };
        let operands = [left, right].map(|operand| {
            let operand = std::mem::replace(operand.as_mut(), ast::Expr::value(ast::Value::Null));
            FunctionArg::Unnamed(FunctionArgExpr::Expr(operand))
        });
        *expr = ast::Expr::Function(ast::Function {
            name: ObjectName::from(vec![Ident::new(DIVIDE)]),
            uses_odbc_syntax: false,
            parameters: FunctionArguments::None,
            args: FunctionArguments::List(FunctionArgumentList {
                duplicate_treatment: None,
                args: operands.into(),
                clauses: Vec::new(),
            }),
            filter: None,
            null_treatment: None,
            over: None,
            within_group: Vec::new(),
        });
        ControlFlow::Continue(())
    }
}

/// DuckDB's name of `//`.
const DIVIDE: &str = "divide";

/// `divide(a, b)`, DuckDB's `a // b`: between integers, their integer quotient
/// (truncated toward zero, of their common type); otherwise the ordinary quotient
/// (`DOUBLE` unless both are `FLOAT`). Division by zero is an error, as in DuckDB.
pub(crate) fn divide() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(Divide {
        signature: Signature::user_defined(Volatility::Immutable),
    }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Divide {
    signature: Signature,
}

impl ScalarUDFImpl for Divide {
    fn name(&self) -> &str {
        DIVIDE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [left, right] = arg_types else {
            return plan_err!(
                "{DIVIDE} takes two numbers, not {} arguments",
                arg_types.len()
            );
        };
        let (left, right) = BinaryTypeCoercer::new(left, &Operator::Divide, right)
            .get_input_types()
            .or_else(|_| plan_err!("cannot divide {left} by {right} with //"))?;
        Ok(match (&left, &right) {
            (l, r) if l.is_integer() && r.is_integer() => vec![left, right],
            (DataType::Float32, DataType::Float32) => vec![left, right],
            (l, r) if l.is_numeric() && r.is_numeric() => vec![DataType::Float64; 2],
            _ => return plan_err!("cannot divide {left} by {right} with //"),
        })
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(data_type) => Ok(data_type.clone()),
            None => plan_err!("{DIVIDE} takes two numbers"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalars = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [left, right] = arrays.as_slice() else {
            return plan_err!("{DIVIDE} takes two numbers");
        };
        let quotient = ColumnarValue::Array(numeric::div(left, right)?);
        match scalars {
            true => Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&quotient.to_array(1)?, 0)?,
            )),
            false => Ok(quotient),
        }
    }
}

/// DuckDB's `/`: between integers or decimals, a fractional (`DOUBLE`) quotient, where
/// PostgreSQL (and DataFusion) divide integers to an integer. `//` keeps integer
/// division; floats and intervals divide as before. Applies only under 'duckdb'.
#[derive(Debug, Default)]
pub(crate) struct FractionalDivision;

impl FunctionRewrite for FractionalDivision {
    fn name(&self) -> &str {
        "duckdb_fractional_division"
    }

    fn rewrite(
        &self,
        expr: Expr,
        schema: &DFSchema,
        config: &ConfigOptions,
    ) -> Result<Transformed<Expr>> {
        if of(config) != SqlDialect::DuckDb {
            return Ok(Transformed::no(expr));
        }
        let Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Divide,
            right,
        }) = &expr
        else {
            return Ok(Transformed::no(expr));
        };
        if !(exact_number(&left.get_type(schema)?) && exact_number(&right.get_type(schema)?)) {
            return Ok(Transformed::no(expr));
        }
        let Expr::BinaryExpr(BinaryExpr { left, right, .. }) = expr else {
            unreachable!("matched as a division above");
        };
        Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
            Box::new(cast(*left, DataType::Float64)),
            Operator::Divide,
            Box::new(cast(*right, DataType::Float64)),
        ))))
    }
}

/// Integers and decimals: the types whose quotient DuckDB makes a `DOUBLE`.
fn exact_number(data_type: &DataType) -> bool {
    data_type.is_integer() || data_type.is_decimal()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(sql: &str) -> String {
        prepare(sql, SqlDialect::DuckDb).into_owned()
    }

    #[test]
    fn lists_after_in_become_parenthesized() {
        assert_eq!(
            prepared("SELECT 1 WHERE x in ['a', 'b'] AND y NOT IN [1,[2]]"),
            "SELECT 1 WHERE x in ('a', 'b') AND y NOT IN (1,[2])"
        );
        assert_eq!(
            prepared("SELECT 'é' AS \"[\", x IN\n  [ 'ü]' ] -- IN [\nFROM t"),
            "SELECT 'é' AS \"[\", x IN\n  ( 'ü]' ) -- IN [\nFROM t"
        );
    }

    #[test]
    fn question_mark_parameters_are_numbered_per_statement() {
        assert_eq!(
            prepared("PREPARE q AS SELECT ?, '?', \"?\" + ?; PREPARE r AS SELECT ? -- ?\n"),
            "PREPARE q AS SELECT $1, '?', \"?\" + $2; PREPARE r AS SELECT $1 -- ?\n"
        );
    }

    #[test]
    fn from_first_subqueries_get_a_select() {
        assert_eq!(
            prepared("SELECT * FROM (FROM t) AS x, (from u SELECT a), (SELECT 1 FROM v)"),
            "SELECT * FROM (SELECT * FROM t) AS x, (from u SELECT a), (SELECT 1 FROM v)"
        );
        assert_eq!(
            prepared("SELECT x IN [1] FROM (FROM t WHERE y IN (SELECT 1))"),
            "SELECT x IN (1) FROM (SELECT * FROM t WHERE y IN (SELECT 1))"
        );
        // Found by the dialect_prepare fuzz target: the list's brackets, once
        // parentheses, hold a FROM-first query, which a second preparation completed.
        let once = prepared("SELECT x IN [FROM t]");
        assert_eq!(once, "SELECT x IN (SELECT * FROM t)");
        assert_eq!(prepared(&once), once);
    }

    #[test]
    fn other_brackets_and_other_dialects_are_left_alone() {
        for sql in [
            "SELECT [1, 2], l[1] FROM t WHERE x IN (1, 2)",
            "SELECT 'x IN [1]'",
            "SELECT x IN [1, 2",
            "SELECT 'unterminated",
        ] {
            assert_eq!(prepared(sql), sql);
        }
        let sql = "SELECT x IN [1]";
        assert_eq!(prepare(sql, SqlDialect::Postgres), sql);
    }

    #[test]
    fn prepared_text_parses_as_the_parenthesized_list() {
        use datafusion::sql::parser::DFParser;
        let sql = prepared("SELECT x FROM t WHERE x IN ['a', 'b']");
        let parsed = DFParser::parse_sql_with_dialect(&sql, &DuckDbGrammar).unwrap();
        assert_eq!(
            parsed[0].to_string(),
            "SELECT x FROM t WHERE x IN ('a', 'b')"
        );
    }

    /// Scripts pieced together from fragments that stress the tokenizer (strings,
    /// quoted names, comments, multi-byte text, unbalanced brackets): preparing never
    /// fails, changes only brackets into parentheses, and leaves the text parsing with
    /// every `IN [` gone.
    #[test]
    fn generated_scripts_change_only_brackets_after_in() {
        const FRAGMENTS: [&str; 16] = [
            " IN ", "[", "]", "(", ")", "'a[b'", "\"[\"", "-- [\n", "/* ] */", "é", "1", ",",
            " x ", "\n", "NOT", "'",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..20_000 {
            let mut script = String::new();
            for _ in 0..(state % 12) {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                script.push_str(FRAGMENTS[(state >> 60) as usize]);
            }
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let out = prepared(&script);
            assert_eq!(out.len(), script.len(), "{script:?}");
            for (a, b) in script.bytes().zip(out.bytes()) {
                assert!(
                    a == b || (a, b) == (b'[', b'(') || (a, b) == (b']', b')'),
                    "{script:?}"
                );
            }
        }
    }

    #[test]
    fn arrows_bind_tighter_than_comparisons_and_in() {
        use datafusion::sql::parser::DFParser;
        let cases = [
            ("j->>'k' IN ('a')", "(j ->> 'k') IN ('a')"),
            ("j->'a'->>'b' = 'c'", "(j -> 'a' ->> 'b') = 'c'"),
            ("j->>'d' LIKE 'e'", "(j ->> 'd') LIKE 'e'"),
            ("j->>'f'::VARCHAR = 'g'", "(j ->> 'f'::VARCHAR) = 'g'"),
            ("x // 2 = 1", "(x // 2) = 1"),
        ];
        for (sql, shape) in cases {
            let parsed =
                DFParser::parse_sql_with_dialect(&format!("SELECT {sql}"), &DuckDbGrammar).unwrap();
            let Statement::Statement(statement) = &parsed[0] else {
                panic!("{sql} is a query");
            };
            let ast::Statement::Query(query) = statement.as_ref() else {
                panic!("{sql} is a query");
            };
            let ast::SetExpr::Select(select) = query.body.as_ref() else {
                panic!("{sql} is a select");
            };
            let ast::SelectItem::UnnamedExpr(expr) = &select.projection[0] else {
                panic!("{sql} is one expression");
            };
            let seen = match expr {
                ast::Expr::InList { expr, list, .. } => format!("({expr}) IN ({})", list[0]),
                ast::Expr::BinaryOp { left, op, right } => format!("({left}) {op} {right}"),
                ast::Expr::Like { expr, pattern, .. } => format!("({expr}) LIKE {pattern}"),
                other => format!("{other:?}"),
            };
            assert_eq!(seen, shape, "{sql}");
        }
    }
}
