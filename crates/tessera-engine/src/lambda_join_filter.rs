//! Inner nested-loop join filters that hold a lambda (`array_any_match(list, x -> ...)`,
//! as `json_each_subquery` writes an `EXISTS` over `json_each`) moved into a filter above
//! the join.
//!
//! DataFusion 55's `ProjectionPushdown` pushes the parts of a join filter that read one
//! side into a projection of that side, and cannot rebuild a higher-order function whose
//! lambda it replaced ("unable to unwrap lambda"). For an inner join, filtering its
//! output is the same as filtering inside it, so this rule, run before that one, does so.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{JoinSide, JoinType, Result};
use datafusion::config::ConfigOptions;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{Column, LambdaVariable};
use datafusion::physical_expr::higher_order_function::HigherOrderFunctionExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::NestedLoopJoinExec;
use datafusion::physical_plan::joins::utils::JoinFilter;

/// The physical optimizer rule (see the module documentation).
#[derive(Debug, Default)]
pub struct LambdaJoinFilter;

/// The name of DataFusion's rule this one runs before.
pub const RUNS_BEFORE: &str = "ProjectionPushdown";

impl PhysicalOptimizerRule for LambdaJoinFilter {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(plan.transform_up(lift)?.data)
    }

    fn name(&self) -> &str {
        "LambdaJoinFilter"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `node` as a filter over the join without its filter, if it is an inner nested-loop
/// join (without an embedded projection) whose filter holds a lambda.
fn lift(node: Arc<dyn ExecutionPlan>) -> Result<Transformed<Arc<dyn ExecutionPlan>>> {
    let Some(join) = node.downcast_ref::<NestedLoopJoinExec>() else {
        return Ok(Transformed::no(node));
    };
    let Some(filter) = join.filter() else {
        return Ok(Transformed::no(node));
    };
    if *join.join_type() != JoinType::Inner
        || join.projection().is_some()
        || !holds_lambda(filter.expression())?
    {
        return Ok(Transformed::no(node));
    }
    let predicate = join_output_predicate(join, filter)?;
    let unfiltered = NestedLoopJoinExec::try_new(
        Arc::clone(join.left()),
        Arc::clone(join.right()),
        None,
        join.join_type(),
        None,
    )?;
    let lifted = FilterExec::try_new(predicate, Arc::new(unfiltered))?;
    Ok(Transformed::yes(Arc::new(lifted)))
}

/// The join filter's expression over the join's output instead of the filter's own
/// columns; a lambda's variables follow the columns of the batch it is evaluated over,
/// so their indices move by the difference of the widths.
fn join_output_predicate(
    join: &NestedLoopJoinExec,
    filter: &JoinFilter,
) -> Result<Arc<dyn PhysicalExpr>> {
    let left_width = join.left().schema().fields().len();
    let output = join.schema();
    let filter_width = filter.column_indices().len();
    let shift = output.fields().len() as isize - filter_width as isize;
    let indices = filter.column_indices();
    let moved = Arc::clone(filter.expression()).transform(|e| {
        if let Some(variable) = e.downcast_ref::<LambdaVariable>() {
            let at = variable.index().checked_add_signed(shift);
            return match at {
                Some(at) if variable.index() >= filter_width => Ok(Transformed::yes(Arc::new(
                    LambdaVariable::new(at, Arc::clone(variable.field())),
                )
                    as Arc<dyn PhysicalExpr>)),
                _ => Ok(Transformed::no(e)),
            };
        }
        let Some(column) = e.downcast_ref::<Column>() else {
            return Ok(Transformed::no(e));
        };
        let Some(index) = indices.get(column.index()) else {
            return Ok(Transformed::no(e));
        };
        let at = match index.side {
            JoinSide::Right => left_width + index.index,
            _ => index.index,
        };
        let name = output.field(at).name();
        Ok(Transformed::yes(
            Arc::new(Column::new(name, at)) as Arc<dyn PhysicalExpr>
        ))
    })?;
    Ok(moved.data)
}

fn holds_lambda(expr: &Arc<dyn PhysicalExpr>) -> Result<bool> {
    expr.exists(|e| Ok(e.is::<HigherOrderFunctionExpr>()))
}
