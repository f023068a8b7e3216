//! Bloom join over S3 Select ("PushdownDB: Accelerating a DBMS using S3 Computation",
//! ICDE 2020, §V-A): a hash join that collects its build side whole hands the build
//! side's keys, as a Bloom filter, to the scan of its probe side, whose S3 Select
//! requests then return only the documents that may join. Where the build side is
//! selective, most of the probe side never crosses the link.
//!
//! A join qualifies when it drops the probe rows that match nothing (inner, right
//! semi) and has an integer key whose probe side comes from an NDJSON scan that asks S3
//! Select through a chain of projections, filters and repartitions ([`super::select_chain`]),
//! the key being an integer JSON access of that scan (`json_get_int`, or a cast of `->>`
//! to `BIGINT`). The join itself is unchanged: the filter only leaves
//! out documents it would drop anyway.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::{JoinType, NullEquality};
use datafusion::datasource::physical_plan::FileScanConfigBuilder;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::{
    ExecutionPlan, ExecutionPlanProperties, replace_children_if_necessary,
};

use super::select_chain::{integer_access, rewrite_in_process, scan_path, with_scan};
use crate::datasource::ndjson::select::SemiJoin;
use crate::datasource::ndjson::source::NdjsonSource;
use crate::physical_plan::build_keys::{BuildKeys, BuildKeysExec};

/// The rule; registered after [`super::SelectPushdown`], over the scans' final
/// projections.
#[derive(Debug, Default)]
pub struct BloomJoin;

impl PhysicalOptimizerRule for BloomJoin {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let rewrite = |node: &Arc<dyn ExecutionPlan>| {
            let Some(join) = node.downcast_ref::<HashJoinExec>() else {
                return Ok(None);
            };
            bloom_joined(join)?
                .map(|children| replace_children_if_necessary(Arc::clone(node), children))
                .transpose()
        };
        rewrite_in_process(plan, config, |o| o.bloom_join.0, &rewrite)
    }

    fn name(&self) -> &str {
        "tessera_bloom_join"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The new children of `join` when it becomes a Bloom join: its build side keeping its
/// keys, its probe side's scan filtering by them.
fn bloom_joined(join: &HashJoinExec) -> Result<Option<Vec<Arc<dyn ExecutionPlan>>>> {
    with_build_keys(join, |probe_side, probe_key, keys| {
        let no_semi_join = |source: &NdjsonSource| source.semi_join().is_none();
        let Some(path) = scan_path(probe_side, probe_key, &no_semi_join, &integer_access) else {
            return Ok(None);
        };
        let semi = SemiJoin {
            path,
            keys: Arc::clone(keys),
        };
        let probing = |config: FileScanConfigBuilder, source: &NdjsonSource| {
            config.with_source(Arc::new(source.with_semi_join(semi.clone())))
        };
        with_scan(probe_side, &probing)
    })
}

/// The new children of `join` when its build side's keys can filter its probe side:
/// the build side keeping its keys, and the probe side `probe` makes to filter by them
/// for the first integer key it can (given the probe side, its key and the keys to come).
/// `None` when the join keeps probe rows that match nothing, or `probe` makes none.
pub(super) fn with_build_keys(
    join: &HashJoinExec,
    probe: impl Fn(
        &Arc<dyn ExecutionPlan>,
        &Arc<dyn PhysicalExpr>,
        &Arc<BuildKeys>,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>>,
) -> Result<Option<Vec<Arc<dyn ExecutionPlan>>>> {
    let drops_unmatched_probe_rows =
        matches!(join.join_type(), JoinType::Inner | JoinType::RightSemi);
    // Null keys join nothing here; where they join each other, a filter would drop them.
    if !drops_unmatched_probe_rows || join.null_equality() == NullEquality::NullEqualsNull {
        return Ok(None);
    }
    let left_schema = join.left().schema();
    for (build_key, probe_key) in join.on() {
        if build_key.data_type(&left_schema)? != DataType::Int64 {
            continue;
        }
        let partitions = join.left().output_partitioning().partition_count();
        let keys = Arc::new(BuildKeys::new(partitions));
        let Some(probed) = probe(join.right(), probe_key, &keys)? else {
            continue;
        };
        let build = BuildKeysExec::try_new(Arc::clone(join.left()), Arc::clone(build_key), keys)?;
        return Ok(Some(vec![Arc::new(build), probed]));
    }
    Ok(None)
}
