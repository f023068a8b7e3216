//! Tessera table scans state the rows they expect (from the manifest alone, see
//! [`scan_statistics`]) before DataFusion's join selection sizes the two sides of each
//! join, so that a hash join builds on the side expected to be smaller.
//!
//! Without it both sides of a join over Tessera tables are unknown and the join keeps
//! the order the query listed them in: TPC-H Q17 lists lineitem first, so the join
//! built a hash table of six million rows to probe it with a few hundred parts, and
//! the probe side's Bloom filter (`bloom_probe`) filtered the parts instead of the
//! items. The filters that tell which documents a scan reads still sit in a
//! `FilterExec` above it (or above a projection of its paths) at that point (DataFusion
//! pushes them into the scan later), so the rule takes them from there. [`super::ClusterPlacement`] states them again for
//! Ballista's planner, once every filter is in its scan.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::physical_plan::FileScanConfigBuilder;
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::projection::update_expr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{ExecutionPlan, replace_children_if_necessary};

use crate::datasource::tessera::scan::{TesseraSource, scan_statistics};

/// The name of DataFusion's rule this one runs before.
pub const RUNS_BEFORE: &str = "join_selection";

/// The rule.
#[derive(Debug, Default)]
pub struct TableStatistics;

impl PhysicalOptimizerRule for TableStatistics {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        with_scan_statistics(plan)
    }

    fn name(&self) -> &str {
        "tessera_table_statistics"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan` with each Tessera table scan stating the rows it expects under its own
/// filters and those of a `FilterExec` right above it (or above a projection of it).
pub(super) fn with_scan_statistics(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        if let Some(scan) = stated(&node, &[])? {
            return Ok(Transformed::yes(scan));
        }
        let Some(filter) = node.downcast_ref::<FilterExec>() else {
            return Ok(Transformed::no(node));
        };
        match filtered(filter.input(), filter.predicate())? {
            Some(input) => Ok(Transformed::yes(replace_children_if_necessary(
                Arc::clone(&node),
                vec![input],
            )?)),
            None => Ok(Transformed::no(node)),
        }
    })
    .map(|t| t.data)
}

/// `input` with the Tessera table scan it is, or projects, stating the rows it expects
/// under `predicate` (over `input`'s columns) too; `None` when there is none.
fn filtered(
    input: &Arc<dyn ExecutionPlan>,
    predicate: &Arc<dyn PhysicalExpr>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(projection) = input.downcast_ref::<ProjectionExec>() else {
        return stated(input, &[Arc::clone(predicate)]);
    };
    // The predicate in the terms of the projection's input: the paths it tests.
    let Some(predicate) = update_expr(predicate, projection.expr(), true)? else {
        return Ok(None);
    };
    match stated(projection.input(), &[predicate])? {
        Some(scan) => Ok(Some(replace_children_if_necessary(
            Arc::clone(input),
            vec![scan],
        )?)),
        None => Ok(None),
    }
}

/// `plan`, if it is a Tessera table scan, stating the rows it expects under its own
/// filters and `above`; `None` when it is not one or its files' manifest entries are
/// not at hand.
fn stated(
    plan: &Arc<dyn ExecutionPlan>,
    above: &[Arc<dyn PhysicalExpr>],
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some((config, source)) = super::file_scan::<TesseraSource>(plan) else {
        return Ok(None);
    };
    let filters: Vec<_> = source.filters().iter().chain(above).cloned().collect();
    let Some(statistics) = scan_statistics(config, &filters) else {
        return Ok(None);
    };
    let config = FileScanConfigBuilder::from(config.clone())
        .with_statistics(statistics)
        .build();
    Ok(Some(DataSourceExec::from_data_source(config)))
}
