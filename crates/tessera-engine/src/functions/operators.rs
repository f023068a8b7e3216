//! SQL operators over JSON: `->` (value as JSON) and `->>` (value as text), with
//! PostgreSQL semantics, chained, and DuckDB-style JSONPath right-hand sides
//! (`j->>'$.commit.collection'`); and comparisons of `JSON` with other types, as
//! DuckDB compares them (the other side cast to `JSON`).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::{DFSchema, Result, ScalarValue, plan_err};
use datafusion::logical_expr::expr::{Cast, ScalarFunction};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{Expr, ExprSchemable, ScalarUDF};
use datafusion::sql::sqlparser::ast::BinaryOperator;
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use tessera_json::path::MAX_PATH_DEPTH;

use crate::json::json_type::{is_json, json_field};

/// Refuses SQL with a chain of more `->`/`->>` operators than a JSON path has elements,
/// before it is parsed: planning such a chain costs time cubic in its length (each
/// level's expression and name is rebuilt from the levels below it), and thousands of
/// levels would exhaust the stack long before the path limit is checked.
///
/// A chain is arrows separated by one operand each (`j->'a'->>'b'`, `->> -1`); two or
/// more tokens between arrows (`j->'a' || k->'b'`) start a new chain. Text that does not
/// tokenize is left for the parser to report.
pub fn check_chains(sql: &str, dialect: &dyn Dialect) -> Result<()> {
    let Ok(tokens) = Tokenizer::new(dialect, sql).tokenize() else {
        return Ok(());
    };
    let mut chain = 0usize;
    // Tokens since the last arrow, other than the operand's sign.
    let mut since_arrow = 2usize;
    for token in tokens.iter().filter(|t| !matches!(t, Token::Whitespace(_))) {
        let arrow = match token {
            Token::Arrow | Token::LongArrow => true,
            // `j->-1` tokenizes as one operator `->-`: an arrow all the same.
            Token::CustomBinaryOperator(op) => op.starts_with("->"),
            _ => false,
        };
        match token {
            _ if arrow => {
                chain = if since_arrow <= 1 { chain + 1 } else { 1 };
                since_arrow = 0;
                if chain > MAX_PATH_DEPTH {
                    return plan_err!(
                        "a chain of more than {MAX_PATH_DEPTH} -> or ->> operators: a JSON path \
                         has at most {MAX_PATH_DEPTH} elements"
                    );
                }
            }
            Token::Minus if since_arrow == 0 => {}
            _ => since_arrow += 1,
        }
    }
    Ok(())
}

/// Plans `->` and `->>` into the `json_get` and `json_get_text` functions.
#[derive(Debug)]
pub struct JsonOperatorPlanner {
    get: Arc<ScalarUDF>,
    get_text: Arc<ScalarUDF>,
}

impl JsonOperatorPlanner {
    /// A planner that calls the given `json_get` and `json_get_text` functions.
    pub fn new(get: Arc<ScalarUDF>, get_text: Arc<ScalarUDF>) -> Self {
        Self { get, get_text }
    }
}

impl ExprPlanner for JsonOperatorPlanner {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let (func, duckdb_name) = match expr.op {
            BinaryOperator::Arrow => (&self.get, "json_extract"),
            BinaryOperator::LongArrow => (&self.get_text, "json_extract_string"),
            _ => return json_comparison(expr, schema).map(PlannerResult::Original),
        };
        let func = match duckdb_path(&expr.right, schema)? {
            true => super::json_path::all_functions()
                .into_iter()
                .find(|f| f.name() == duckdb_name)
                .unwrap_or_else(|| Arc::clone(func)),
            false => Arc::clone(func),
        };
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(func, vec![expr.left, expr.right]),
        )))
    }
}

/// Whether the path of `->`/`->>` needs DuckDB's reading function: a JSON Pointer
/// (`j -> '/a/0'`, where a token of digits indexes an array or keys an object, whichever
/// the document holds), a path with wildcards (`'$.*'`, `'$..a'`) or a list of paths,
/// which select many values, given as a list; also the root (`'$'`, `''`: the document
/// written back minified) and a bare key holding a `"` (which DuckDB reads as a pointer).
fn duckdb_path(path: &Expr, schema: &DFSchema) -> Result<bool> {
    if let Expr::Literal(ScalarValue::Utf8(Some(path)), _) = path {
        let jsonpath = path.starts_with('$');
        let wildcard = jsonpath && (path.contains('*') || path.contains(".."));
        let root = path.is_empty() || path == "$";
        let quoted_bare = !jsonpath && path.contains('"');
        return Ok(path.starts_with('/') || wildcard || root || quoted_bare);
    }
    Ok(matches!(
        path.get_type(schema)?,
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
    ))
}

/// A comparison of `JSON` with a value of another type compares JSON texts, the other
/// side cast to `JSON` (text validated, other values `to_json`), as DuckDB does: so
/// `json('{"a": 1}') = {a: 1}` holds and comparing with text that is not JSON fails.
fn json_comparison(mut expr: RawBinaryExpr, schema: &DFSchema) -> Result<RawBinaryExpr> {
    use BinaryOperator as B;
    if !matches!(
        expr.op,
        B::Eq | B::NotEq | B::Lt | B::LtEq | B::Gt | B::GtEq | B::Spaceship
    ) {
        return Ok(expr);
    }
    let (_, left) = expr.left.to_field(schema)?;
    let (_, right) = expr.right.to_field(schema)?;
    let as_json = |side: Expr| {
        Expr::Cast(Cast {
            expr: Box::new(side),
            field: Arc::new(json_field("")),
        })
    };
    match (is_json(&left), is_json(&right)) {
        (true, false) if !right.data_type().is_null() => expr.right = as_json(expr.right),
        (false, true) if !left.data_type().is_null() => expr.left = as_json(expr.left),
        _ => {}
    }
    Ok(expr)
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;

    use super::*;

    fn chain(steps: usize, arrow: &str) -> String {
        let mut sql = String::from("SELECT j");
        for i in 0..steps {
            sql.push_str(&format!(
                "{arrow}{}",
                if i % 2 == 0 { "'a'" } else { " -1" }
            ));
        }
        sql + " FROM t"
    }

    #[test]
    fn chains_longer_than_a_path_are_refused_before_parsing() {
        let check = |sql: &str| check_chains(sql, &PostgreSqlDialect {});
        for arrow in ["->", "->>", " -> "] {
            assert!(check(&chain(MAX_PATH_DEPTH, arrow)).is_ok(), "{arrow}");
            let err = check(&chain(MAX_PATH_DEPTH + 1, arrow)).unwrap_err();
            assert!(err.to_string().contains("at most 64"), "{err}");
        }
        assert!(check(&chain(100_000, "->")).is_err());
        assert!(check(&format!("SELECT j{}", "->-1".repeat(65))).is_err());
        // Separate chains do not add up.
        let half = chain(MAX_PATH_DEPTH, "->");
        let pair = format!("{half} WHERE {}", &chain(MAX_PATH_DEPTH, "->")[7..]);
        assert!(check(&pair).is_ok(), "{pair}");
        assert!(check("SELECT 'unterminated").is_ok());
    }
}
