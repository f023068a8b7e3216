//! DuckDB's `TRY(expr)`: the value of `expr`, or NULL where computing it fails.
//!
//! A scalar function receives its argument computed already, so the failure must be
//! caught where the argument is computed. Over constants that is planning: the
//! simplifier folds `TRY(c)` into `c`'s value, or into NULL when computing `c` fails
//! (`TRY(json_set('{}', '$bad', '1'))`). Over columns `TRY` passes its argument's value
//! through and a failure stays an error (row-by-row recovery would need every function
//! to report failures per row).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::{DFSchema, Result, ScalarValue, plan_err};
use datafusion::execution::context::ExecutionProps;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr::{PhysicalExpr, create_physical_expr};

/// The `try` function.
pub(crate) fn try_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(Try {
        signature: Signature::any(1, Volatility::Immutable),
    }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Try {
    signature: Signature,
}

impl ScalarUDFImpl for Try {
    fn name(&self) -> &str {
        "try"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [data_type] => Ok(data_type.clone()),
            _ => plan_err!("try takes one argument"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match args.args.into_iter().next() {
            Some(value) => Ok(value),
            None => plan_err!("try takes one argument"),
        }
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let [arg] = args.as_slice() else {
            return Ok(ExprSimplifyResult::Original(args));
        };
        if !arg.column_refs().is_empty() || arg.is_volatile() {
            return Ok(ExprSimplifyResult::Original(args));
        }
        // What cannot be planned alone (a subquery, an aggregate) is left to the plan.
        let planned = create_physical_expr(
            arg,
            &DFSchema::empty(),
            &ExecutionProps::new(),
            &PhysicalPlanningContext::default(),
        );
        let Ok(physical) = planned else {
            return Ok(ExprSimplifyResult::Original(args));
        };
        let value = match constant_value(physical.as_ref()) {
            Ok(value) => value,
            Err(_) => ScalarValue::try_from(&info.get_data_type(arg)?)?,
        };
        Ok(ExprSimplifyResult::Simplified(Expr::Literal(value, None)))
    }
}

/// The value of a physical expression over no columns.
fn constant_value(physical: &dyn PhysicalExpr) -> Result<ScalarValue> {
    let one_row = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        Vec::new(),
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    match physical.evaluate(&one_row)? {
        ColumnarValue::Scalar(value) => Ok(value),
        ColumnarValue::Array(array) => ScalarValue::try_from_array(&array, 0),
    }
}
