//! SQL operators over JSON: `->` (value as JSON) and `->>` (value as text), with
//! PostgreSQL semantics, chained, and DuckDB-style JSONPath right-hand sides
//! (`j->>'$.commit.collection'`).

use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{Expr, ScalarUDF};
use datafusion::sql::sqlparser::ast::BinaryOperator;
use std::sync::Arc;

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
        _schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let func = match expr.op {
            BinaryOperator::Arrow => &self.get,
            BinaryOperator::LongArrow => &self.get_text,
            _ => return Ok(PlannerResult::Original(expr)),
        };
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(Arc::clone(func), vec![expr.left, expr.right]),
        )))
    }
}
