//! Physical optimizer rules that rewrite aggregates over Tessera table scans so that
//! they read what the files store (typed values, dictionary codes) instead of text.
//!
//! - [`cast_pushdown`]: casts an aggregate applies to JSON accesses move into the scan.
//! - [`group_on_codes`]: GROUP BY on low-cardinality strings becomes `CodeAggregateExec`.
//! - [`integer_text_min_max`]: MIN/MAX of integer texts aggregate the integers.
//! - [`select_pushdown`]: filters over raw NDJSON and CSV scans of S3 pushed to S3 Select.
//! - [`bloom_join`]: a join's build-side keys, as a Bloom filter, pushed to S3 Select
//!   with the scan of its probe side.
//! - [`bloom_probe`]: the same filter sent to the storage-side worker with the
//!   sub-plan of its probe side.
//! - [`select_top_k`]: a top-K sort's sampled threshold pushed to S3 Select with the
//!   scan of its input.
//! - [`select_aggregation`]: a partial aggregation over such a scan computed by the
//!   store, per object (and group, for the largest groups of a sample).
//! - [`select_chain`]: the chain between such an operator and its scan, which they walk.
//! - [`worker_pushdown`]: sub-plans over raw NDJSON or CSV scans or Tessera table scans
//!   of S3 sent to the storage-side worker.
//! - `storage_scan`: the scans of S3 those rules move: raw NDJSON or CSV, Tessera tables.
//! - [`pushdown_choice`]: `tessera.pushdown = 'auto'`, each such sub-plan placed by a
//!   cost model.
//! - [`table_statistics`]: table scans state the rows they expect before DataFusion's
//!   join selection.
//! - [`cluster_placement`]: `tessera.cluster` set, the finished plan runs on a Ballista
//!   cluster.
//! - [`aggregate_rewrite`]: the bottom-up rewrite of an aggregate over a Tessera scan
//!   that the three rules share.

mod aggregate_rewrite;
pub mod bloom_join;
pub mod bloom_probe;
pub mod cast_pushdown;
pub mod cluster_placement;
pub mod group_on_codes;
pub mod integer_text_min_max;
pub mod pushdown_choice;
pub mod select_aggregation;
mod select_chain;
pub mod select_pushdown;
pub mod select_top_k;
mod storage_scan;
pub mod table_statistics;
pub mod worker_pushdown;

pub use bloom_join::BloomJoin;
pub use bloom_probe::BloomProbe;
pub use cast_pushdown::CastPushdown;
pub use cluster_placement::ClusterPlacement;
pub use group_on_codes::GroupOnCodes;
pub use integer_text_min_max::IntegerTextMinMax;
pub use pushdown_choice::PushdownChoice;
pub use select_aggregation::SelectAggregation;
pub use select_pushdown::SelectPushdown;
pub use select_top_k::SelectTopK;
pub use table_statistics::TableStatistics;
pub use worker_pushdown::WorkerPushdown;

use std::sync::Arc;

use datafusion::datasource::physical_plan::{FileScanConfig, FileSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;

/// The file scan configuration and source of `plan` when it is a scan of files that
/// `S` reads.
fn file_scan<S: FileSource + 'static>(
    plan: &Arc<dyn ExecutionPlan>,
) -> Option<(&FileScanConfig, &S)> {
    let config = plan
        .downcast_ref::<DataSourceExec>()?
        .data_source()
        .downcast_ref::<FileScanConfig>()?;
    Some((config, config.file_source().downcast_ref::<S>()?))
}

/// `rules` with `rule` before the first rule named `before` (at the end if there is
/// none): for Tessera's rules that must see the plan before one of DataFusion's own.
pub fn with_rule_before(
    rules: &[Arc<dyn PhysicalOptimizerRule + Send + Sync>],
    rule: Arc<dyn PhysicalOptimizerRule + Send + Sync>,
    before: &str,
) -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    let mut rules = rules.to_vec();
    let at = rules
        .iter()
        .position(|r| r.name() == before)
        .unwrap_or(rules.len());
    rules.insert(at, rule);
    rules
}
