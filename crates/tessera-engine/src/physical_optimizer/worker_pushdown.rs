//! Storage-side worker pushdown (`SET tessera.pushdown = 'worker'`): the largest
//! sub-plans above raw NDJSON or CSV scans or Tessera table scans of S3 that compute each
//! partition on its own (the scan, filters, projections, partial aggregates, on
//! dictionary codes too, per-partition top-K sorts, Bloom probes) run on the worker, in one
//! [`WorkerExec`] each, so that only their output crosses the link.
//!
//! As in "PushdownDB: Accelerating a DBMS using S3 Computation", what needs rows of
//! other partitions (final aggregates, joins, repartitions, merges) stays here. Under
//! `'auto'` only the sub-plans [`super::PushdownChoice`] placed on the worker go.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::{ExecutionPlan, replace_children_if_necessary};

use super::storage_scan::storage_scan;
use crate::options::{Pushdown, TesseraOptions};
use crate::physical_plan::bloom_probe::BloomProbeExec;
use crate::physical_plan::code_aggregate::CodeAggregateExec;
use crate::physical_plan::pushdown_choice::{Choice, PushdownChoiceExec};
use crate::physical_plan::worker_exec::WorkerExec;

/// The rule; registered last, over the plan every other rule has finished.
#[derive(Debug, Default)]
pub struct WorkerPushdown;

impl PhysicalOptimizerRule for WorkerPushdown {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(options) = config.extensions.get::<TesseraOptions>() else {
            return Ok(plan);
        };
        if !matches!(options.pushdown, Pushdown::Worker | Pushdown::Auto) {
            return Ok(plan);
        }
        let endpoint = options.worker.trim().to_string();
        let auto = options.pushdown == Pushdown::Auto;
        plan.transform_down(|node| {
            let sent = match node.downcast_ref::<PushdownChoiceExec>() {
                Some(chosen) if chosen.choice() == Choice::Worker => chosen.children()[0],
                Some(_) => return Ok(Transformed::new(node, false, TreeNodeRecursion::Jump)),
                None if !auto && runs_on_worker(&node) => &node,
                None => return Ok(Transformed::no(node)),
            };
            // Checked only where a scan goes: `SET`s in any order must still plan.
            if endpoint.is_empty() {
                return Err(DataFusionError::Configuration(
                    "tessera.pushdown = 'worker' needs tessera.worker, the address of \
                     `tessera serve --storage-side` (http://HOST:PORT)"
                        .into(),
                ));
            }
            let worker = Arc::new(WorkerExec::new(Arc::clone(sent), endpoint.clone()));
            let done = match node.downcast_ref::<PushdownChoiceExec>() {
                Some(_) => replace_children_if_necessary(node, vec![worker])?,
                None => worker,
            };
            Ok(Transformed::new(done, true, TreeNodeRecursion::Jump))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tessera_worker_pushdown"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether `plan` is a chain of per-partition operators over a scan of S3 that the
/// worker reads as this session would (`StorageScan::travels_to_worker`).
pub(super) fn runs_on_worker(plan: &Arc<dyn ExecutionPlan>) -> bool {
    if let Some((config, source)) = storage_scan(plan) {
        return config.object_store_url.as_str().starts_with("s3://")
            && source.travels_to_worker(config);
    }
    let per_partition = plan.is::<FilterExec>()
        || plan.is::<ProjectionExec>()
        || plan
            .downcast_ref::<AggregateExec>()
            .is_some_and(|a| *a.mode() == AggregateMode::Partial)
        || plan.is::<CodeAggregateExec>()
        || plan.is::<BloomProbeExec>()
        || plan
            .downcast_ref::<SortExec>()
            .is_some_and(|s| s.preserve_partitioning() && s.fetch().is_some());
    match plan.children().as_slice() {
        [input] => per_partition && runs_on_worker(input),
        _ => false,
    }
}
