//! `SUM` over integers widened to `DECIMAL(38, 0)`, as DuckDB widens it to `HUGEINT`:
//! DataFusion's integer sum wraps around silently (`9223372036854775807 + 1` gives
//! `-9223372036854775808`), a wrong answer with no error.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::{Expr, ExprSchemable, cast};

/// The widened type: 38 digits hold the sum of 2^64 values of 64 bits.
const WIDE_SUM: DataType = DataType::Decimal128(38, 0);

/// Rewrites `sum(x)` of an integer `x` to `sum(CAST(x AS DECIMAL(38, 0)))`; the
/// analyzer keeps the expression's original name, so plans and outputs are named as
/// before.
#[derive(Debug)]
pub struct WideIntegerSum;

impl FunctionRewrite for WideIntegerSum {
    fn name(&self) -> &str {
        "wide_integer_sum"
    }

    fn rewrite(
        &self,
        expr: Expr,
        schema: &DFSchema,
        _config: &ConfigOptions,
    ) -> Result<Transformed<Expr>> {
        let Expr::AggregateFunction(AggregateFunction { func, params }) = &expr else {
            return Ok(Transformed::no(expr));
        };
        let [arg] = params.args.as_slice() else {
            return Ok(Transformed::no(expr));
        };
        if func.name() != "sum" || !arg.get_type(schema)?.is_integer() {
            return Ok(Transformed::no(expr));
        }
        let mut params = params.clone();
        params.args = vec![cast(arg.clone(), WIDE_SUM)];
        Ok(Transformed::yes(Expr::AggregateFunction(
            AggregateFunction {
                func: func.clone(),
                params,
            },
        )))
    }
}
