//! Casts of JSON accesses that an aggregate computes move into the Tessera scan below it.
//!
//! DataFusion moves JSON accesses (`j->>'time_us'`) into the scan, but a cast around one
//! (`CAST(j->>'time_us' AS BIGINT)` in a GROUP BY key or an aggregate's argument) stays
//! in the aggregate, which then parses back the text the scan just rendered from a
//! typed column. Once the cast is part of the scan's projection, the scan reads the
//! typed leaf as the target type directly wherever that is exact (seed 000, P3 §4.3
//! step 8, cast rewriting) and casts the text otherwise, with the same errors.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{CastExpr, Column};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::{AggregateExec, PhysicalGroupBy};
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};

use super::scan::TilesSource;

/// Name prefix of the scan outputs this rule adds.
const PUSHED_CAST_PREFIX: &str = "__tessera_pushed_cast_";

/// The physical optimizer rule; it runs after DataFusion's own rules, when aggregates
/// sit directly on their scans.
#[derive(Debug, Default)]
pub struct CastPushdown;

impl PhysicalOptimizerRule for CastPushdown {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(aggregate) = node.downcast_ref::<AggregateExec>() else {
                return Ok(Transformed::no(node));
            };
            Ok(match push_casts(aggregate)? {
                Some(rewritten) => Transformed::yes(rewritten),
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tessera_cast_pushdown"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `aggregate` with the casts of its input's columns computed by the Tessera scan
/// below it, when its input is one and something was moved.
fn push_casts(aggregate: &AggregateExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let input = aggregate.input();
    if tiles_scan(input).is_none() {
        return Ok(None);
    }
    let width = input.schema().fields().len();
    let mut casts: Vec<Arc<dyn PhysicalExpr>> = Vec::new();
    let mut rewrite = |expr: &Arc<dyn PhysicalExpr>| -> Result<Arc<dyn PhysicalExpr>> {
        Arc::clone(expr)
            .transform_down(|e| {
                let Some(cast) = e.downcast_ref::<CastExpr>() else {
                    return Ok(Transformed::no(e));
                };
                // Only casts that fail on bad input, the ones the scan evaluates.
                if cast.cast_options().safe || cast.expr().downcast_ref::<Column>().is_none() {
                    return Ok(Transformed::no(e));
                }
                let k = match casts.iter().position(|c| c.as_ref() == e.as_ref()) {
                    Some(k) => k,
                    None => {
                        casts.push(Arc::clone(&e));
                        casts.len() - 1
                    }
                };
                let column = Column::new(&format!("{PUSHED_CAST_PREFIX}{k}"), width + k);
                Ok(Transformed::new(
                    Arc::new(column) as Arc<dyn PhysicalExpr>,
                    true,
                    TreeNodeRecursion::Jump,
                ))
            })
            .map(|t| t.data)
    };
    let group_by = aggregate.group_expr();
    let group_exprs = group_by
        .expr()
        .iter()
        .map(|(e, name)| Ok((rewrite(e)?, name.clone())))
        .collect::<Result<Vec<_>>>()?;
    let mut aggr_exprs = Vec::with_capacity(aggregate.aggr_expr().len());
    for function in aggregate.aggr_expr() {
        let args = function
            .expressions()
            .iter()
            .map(&mut rewrite)
            .collect::<Result<Vec<_>>>()?;
        let order_by = function
            .order_bys()
            .iter()
            .map(|s| rewrite(&s.expr))
            .collect::<Result<Vec<_>>>()?;
        match function.with_new_expressions(args, order_by) {
            Some(rewritten) => aggr_exprs.push(Arc::new(rewritten)),
            None => return Ok(None),
        }
    }
    let filters = aggregate
        .filter_expr()
        .iter()
        .map(|f| f.as_ref().map(&mut rewrite).transpose())
        .collect::<Result<Vec<_>>>()?;
    if casts.is_empty() {
        return Ok(None);
    }
    let pushed = casts
        .into_iter()
        .enumerate()
        .map(|(k, cast)| (cast, format!("{PUSHED_CAST_PREFIX}{k}")))
        .collect();
    let Some(scan) = with_scan_outputs(input, pushed)? else {
        return Ok(None);
    };
    let group_by = PhysicalGroupBy::new(
        group_exprs,
        group_by.null_expr().to_vec(),
        group_by.groups().to_vec(),
        group_by.has_grouping_set(),
    );
    let scan_schema = scan.schema();
    let rewritten = AggregateExec::try_new(
        *aggregate.mode(),
        group_by,
        aggr_exprs,
        filters,
        scan,
        scan_schema,
    )?
    .with_limit_options(aggregate.limit_options());
    Ok(Some(Arc::new(rewritten)))
}

/// `scan` (a Tessera scan) with `outputs` (expressions over its output, with their
/// names) computed by it as further columns after its own, when it takes them.
pub(super) fn with_scan_outputs(
    scan: &Arc<dyn ExecutionPlan>,
    outputs: Vec<(Arc<dyn PhysicalExpr>, String)>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let schema = scan.schema();
    let mut projection: Vec<ProjectionExpr> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| ProjectionExpr::new(Arc::new(Column::new(f.name(), i)), f.name().clone()))
        .collect();
    projection.extend(
        outputs
            .into_iter()
            .map(|(expr, name)| ProjectionExpr::new(expr, name)),
    );
    let projection = ProjectionExec::try_new(projection, Arc::clone(scan))?;
    scan.try_swapping_with_projection(&projection)
}

/// The file scan configuration and source of `plan` when it scans a Tessera table.
pub(super) fn tiles_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<(&FileScanConfig, &TilesSource)> {
    let config = plan
        .downcast_ref::<DataSourceExec>()?
        .data_source()
        .downcast_ref::<FileScanConfig>()?;
    Some((config, config.file_source().downcast_ref::<TilesSource>()?))
}
