//! Casts of JSON accesses that an aggregate computes move into the Tessera scan below it.
//!
//! DataFusion moves JSON accesses (`j->>'time_us'`) into the scan, but a cast around one
//! (`CAST(j->>'time_us' AS BIGINT)` in a GROUP BY key or an aggregate's argument) stays
//! in the aggregate, which then parses back the text the scan just rendered from a
//! typed column. Once the cast is part of the scan's projection, the scan reads the
//! typed leaf as the target type directly wherever that is exact (JSON Tiles, SIGMOD 2021, §4.3
//! step 8, cast rewriting) and casts the text otherwise, with the same errors; the text
//! itself is no longer computed when nothing else reads it.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{CastExpr, Column};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::AggregateExec;

use super::aggregate_rewrite::{AggregateParts, rewrite_aggregates, tessera_scan};

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
        rewrite_aggregates(plan, push_casts)
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
    let (Some(_), Some(parts)) = (tessera_scan(input), AggregateParts::of(aggregate)) else {
        return Ok(None);
    };
    let width = input.schema().fields().len();
    let mut casts: Vec<Arc<dyn PhysicalExpr>> = Vec::new();
    let parts = parts.map(|expr| {
        expr.transform_down(|e| {
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
    })?;
    if casts.is_empty() {
        return Ok(None);
    }
    let pushed = casts
        .into_iter()
        .enumerate()
        .map(|(k, cast)| (cast, format!("{PUSHED_CAST_PREFIX}{k}")))
        .collect();
    let Some((scan, parts)) = parts.over_scan_with(input, pushed)? else {
        return Ok(None);
    };
    Ok(parts
        .aggregate(aggregate, scan)?
        .map(|a| Arc::new(a) as Arc<dyn ExecutionPlan>))
}
