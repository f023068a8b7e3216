//! Tessera's own physical operators.
//!
//! - [`answer_format`]: how the storage-side worker writes its answers (zstd Arrow IPC).
//! - [`bloom_probe`]: `BloomProbeExec`, a join's probe side filtered by its build
//!   keys where it is read (a Bloom join on the storage-side worker).
//! - [`build_keys`]: `BuildKeysExec`, a join's build side keeping its keys for the
//!   probe side's scans (a Bloom join).
//! - [`code_aggregate`]: `CodeAggregateExec`, grouping on the dictionary codes a Tessera
//!   table stores instead of hashing strings.
//! - [`codec`]: the `datafusion-proto` codecs of Tessera's plan nodes, for plans run in
//!   another process (alone for the storage-side worker, with Ballista's for a cluster).
//! - [`compact_views`]: view columns that hold only their values, before batches are
//!   written out of the process (to the link, to a cluster's shuffle files).
//! - [`cluster_exec`]: `ClusterExec`, a whole plan run on a Ballista cluster.
//! - [`cluster_job`]: that plan's job: submitted, waited for, its rows fetched, its
//!   report (stages, tasks, counters over all executors) for `EXPLAIN ANALYZE`.
//! - [`sample_size`]: `SampleSizeExec`, the bytes a sample returns, counted where it
//!   runs (on the worker, so that its rows stay there).
//! - [`select_aggregation`]: `SelectAggregationExec`, a partial aggregation over an
//!   S3 Select scan whose objects the store aggregates (per group, for the largest).
//! - [`top_k_threshold`]: `TopKThresholdExec`, a top-K sort whose input's S3 Select
//!   requests carry a threshold sampled first.
//! - [`worker_exec`]: `WorkerExec`, a sub-plan run by the storage-side worker.
//! - [`worker_spend`]: what a sub-plan spent on the worker (store bytes and dollars).
//! - [`pushdown_choice`]: `PushdownChoiceExec`, where `tessera.pushdown = 'auto'` sent
//!   a sub-plan and why.

pub mod answer_format;
pub mod bloom_probe;
pub mod build_keys;
pub mod cluster_exec;
pub mod cluster_job;
pub mod code_aggregate;
pub mod codec;
pub mod compact_views;
pub mod pushdown_choice;
pub mod sample_size;
pub mod select_aggregation;
pub mod top_k_threshold;
pub mod worker_exec;
pub mod worker_spend;

use std::sync::Arc;

use datafusion::common::{DataFusionError, Result};
use datafusion::physical_plan::ExecutionPlan;

/// The `name`, `properties` and `children` of a plan over its one `input` field that
/// keeps its input's partitioning and order (an operator that passes rows on, or runs
/// its input elsewhere), written once for all of them.
macro_rules! over_one_input {
    ($name:literal) => {
        fn name(&self) -> &str {
            $name
        }

        fn properties(&self) -> &std::sync::Arc<datafusion::physical_plan::PlanProperties> {
            self.input.properties()
        }

        fn children(&self) -> Vec<&std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
            vec![&self.input]
        }
    };
}
pub(crate) use over_one_input;

/// The one child of the single-input plan `name` (for `with_new_children`).
pub(crate) fn only_child(
    mut children: Vec<Arc<dyn ExecutionPlan>>,
    name: &str,
) -> Result<Arc<dyn ExecutionPlan>> {
    match (children.pop(), children.is_empty()) {
        (Some(input), true) => Ok(input),
        _ => Err(DataFusionError::Internal(format!("{name} has one input"))),
    }
}

/// The counter `name` summed over `plan` and every plan below it, 0 where no node has
/// it: a scan's counters (bytes, requests, row groups skipped) sit on a node under
/// filters and projections, while whoever reads them holds the plan's root.
pub fn subtree_metric_sum(plan: &Arc<dyn ExecutionPlan>, name: &str) -> u64 {
    let own = plan
        .metrics()
        .and_then(|m| m.sum_by_name(name))
        .map_or(0, |v| v.as_usize() as u64);
    let below: u64 = plan
        .children()
        .into_iter()
        .map(|c| subtree_metric_sum(c, name))
        .sum();
    own + below
}
