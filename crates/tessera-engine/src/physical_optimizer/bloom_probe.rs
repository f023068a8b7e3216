//! Bloom join on the storage-side worker ("PushdownDB: Accelerating a DBMS using S3
//! Computation", ICDE 2020, §V-A): a hash join whose probe side is a sub-plan the worker
//! runs hands that sub-plan its build side's keys as a Bloom filter, so the worker sends
//! only the probe rows that may join. PushdownDB expressed the filter in S3 Select's
//! SQL ([`super::BloomJoin`]); the worker tests it natively, so no text limits it and it
//! costs the store nothing.
//!
//! A join qualifies when it drops the probe rows that match nothing (inner, right semi,
//! null keys matching nothing) and has an integer key. Its probe side must reach the
//! sub-plan that goes to the worker (forced, or placed there by
//! [`super::PushdownChoice`]) through operators that keep the rows and their columns
//! (repartitions, merges of partitions), so the probe key means the same at its top. The
//! join itself is unchanged: the filter only drops rows it would drop anyway.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, replace_children_if_necessary};

use super::bloom_join::with_build_keys;
use super::worker_pushdown::runs_on_worker;
use crate::options::{Pushdown, TesseraOptions};
use crate::physical_plan::bloom_probe::BloomProbeExec;
use crate::physical_plan::build_keys::BuildKeys;
use crate::physical_plan::pushdown_choice::{Choice, PushdownChoiceExec};

/// The rule; registered after [`super::PushdownChoice`] and before
/// [`super::WorkerPushdown`], which sends the probe with its sub-plan.
#[derive(Debug, Default)]
pub struct BloomProbe;

impl PhysicalOptimizerRule for BloomProbe {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(options) = config.extensions.get::<TesseraOptions>() else {
            return Ok(plan);
        };
        let sends = matches!(options.pushdown, Pushdown::Worker | Pushdown::Auto);
        if !sends || options.worker.trim().is_empty() {
            return Ok(plan);
        }
        let auto = options.pushdown == Pushdown::Auto;
        plan.transform_up(|node| {
            let Some(join) = node.downcast_ref::<HashJoinExec>() else {
                return Ok(Transformed::no(node));
            };
            match probed(join, auto)? {
                Some(children) => Ok(Transformed::yes(replace_children_if_necessary(
                    node, children,
                )?)),
                None => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tessera_bloom_probe"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The new children of `join` when its probe side is probed on the worker: its build
/// side keeping its keys, its probe side's sent sub-plan filtering by them.
fn probed(join: &HashJoinExec, auto: bool) -> Result<Option<Vec<Arc<dyn ExecutionPlan>>>> {
    with_build_keys(join, |probe_side, probe_key, keys| {
        // The operators down to the sent sub-plan keep the columns: checked once here.
        if probe_key.data_type(&probe_side.schema())? != DataType::Int64 {
            return Ok(None);
        }
        with_probe(probe_side, probe_key, keys, auto)
    })
}

/// `plan` with a [`BloomProbeExec`] by `key` over `keys` on top of the sub-plan it
/// sends to the worker (`key` an integer of its rows); `None` when it sends none.
fn with_probe(
    plan: &Arc<dyn ExecutionPlan>,
    key: &Arc<dyn PhysicalExpr>,
    keys: &Arc<BuildKeys>,
    auto: bool,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let probe = |sent: &Arc<dyn ExecutionPlan>| -> Result<Arc<dyn ExecutionPlan>> {
        let probe = BloomProbeExec::try_new(Arc::clone(sent), Arc::clone(key), Arc::clone(keys));
        Ok(Arc::new(probe?))
    };
    if let Some(chosen) = plan.downcast_ref::<PushdownChoiceExec>() {
        if !auto || chosen.choice() != Choice::Worker {
            return Ok(None);
        }
        let probed = probe(chosen.children()[0])?;
        return replace_children_if_necessary(Arc::clone(plan), vec![probed]).map(Some);
    }
    if !auto && runs_on_worker(plan) {
        return probe(plan).map(Some);
    }
    let keeps_rows = plan.is::<RepartitionExec>() || plan.is::<CoalescePartitionsExec>();
    let [input] = plan.children()[..] else {
        return Ok(None);
    };
    if !keeps_rows || input.schema() != plan.schema() {
        return Ok(None);
    }
    match with_probe(input, key, keys, auto)? {
        Some(probed) => replace_children_if_necessary(Arc::clone(plan), vec![probed]).map(Some),
        None => Ok(None),
    }
}
