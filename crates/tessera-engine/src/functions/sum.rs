//! `SUM` over integers widened to `DECIMAL(38, 0)`, as DuckDB widens it to `HUGEINT`:
//! DataFusion's integer sum wraps around silently (`9223372036854775807 + 1` gives
//! `-9223372036854775808`), a wrong answer with no error. Both the aggregate and the
//! window function (`SUM(x) OVER (...)`) are widened.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::{AggregateFunction, WindowFunction, WindowFunctionDefinition};
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
        match expr {
            Expr::AggregateFunction(AggregateFunction { func, mut params })
                if is_integer_sum(func.name(), &params.args, schema)? =>
            {
                params.args = widened(params.args);
                Ok(Transformed::yes(Expr::AggregateFunction(
                    AggregateFunction { func, params },
                )))
            }
            Expr::WindowFunction(window) => {
                let WindowFunction { fun, mut params } = *window;
                let sum = matches!(&fun, WindowFunctionDefinition::AggregateUDF(f)
                    if is_integer_sum(f.name(), &params.args, schema)?);
                if sum {
                    params.args = widened(params.args);
                }
                let window = Expr::WindowFunction(Box::new(WindowFunction { fun, params }));
                Ok(Transformed::new_transformed(window, sum))
            }
            other => Ok(Transformed::no(other)),
        }
    }
}

/// Whether a call of `name` with `args` is `sum` of one integer.
fn is_integer_sum(name: &str, args: &[Expr], schema: &DFSchema) -> Result<bool> {
    Ok(match args {
        [arg] => name == "sum" && arg.get_type(schema)?.is_integer(),
        _ => false,
    })
}

/// The one argument of an integer `sum`, cast to the wide type.
fn widened(mut args: Vec<Expr>) -> Vec<Expr> {
    let arg = args.pop().expect("an integer sum has one argument");
    vec![cast(arg, WIDE_SUM)]
}
