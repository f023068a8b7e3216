//! Cluster placement (`SET tessera.cluster = 'df://HOST:PORT'`): the finished plan of a
//! query runs on a Ballista cluster, in one [`ClusterExec`] at its root. A `NOT IN` join
//! the cluster cannot run in parallel stays here, with what is above it; what it reads
//! goes to the cluster, one [`ClusterExec`] per input.
//!
//! Registered after every other rule, so that the cluster runs exactly the plan this
//! session would have run itself. Plans that read no files stay here. `EXPLAIN` stays
//! here and shows the plan sent; `EXPLAIN ANALYZE` sends the plan below its analysis,
//! so that the metrics shown are what came back. A write into a Tessera table (`INSERT`,
//! ingest) shreds and uploads its files on the executors and commits once here; another
//! write (`COPY`) sends what it reads and writes here.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNode;
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::analyze::AnalyzeExec;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::explain::ExplainExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::{ExecutionPlan, replace_children_if_necessary};

use crate::datasource::tessera::write::distributed::split_write;
use crate::options::TesseraOptions;
use crate::physical_plan::cluster_exec::{ClusterExec, scheduler_url};

/// The rule; a no-op while `tessera.cluster` is empty.
#[derive(Debug, Default)]
pub struct ClusterPlacement;

impl PhysicalOptimizerRule for ClusterPlacement {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(options) = config.extensions.get::<TesseraOptions>() else {
            return Ok(plan);
        };
        if options.cluster.trim().is_empty() || plan.is::<ExplainExec>() || plan.is::<ClusterExec>()
        {
            return Ok(plan);
        }
        let scheduler = scheduler_url(&options.cluster)?;
        // SET, DDL, constants and in-memory tables: the executors have nothing to read.
        if !reads_any_files(&plan)? {
            return Ok(plan);
        }
        // Ballista's planner makes a join whose build side it cannot size a partitioned
        // one: both sides shuffled, the whole probe side written to files (TPC-H Q9 wrote
        // all of lineitem), where a build side known to be small is broadcast and the
        // probe side streams through the join as it does here.
        let plan = super::table_statistics::with_scan_statistics(plan)?;
        // A write into a Tessera table: files written on the executors, committed here.
        if let Some(split) = split_write(&plan, |files| sent(files, scheduler.clone()))
            && !plan.exists(|node| Ok(runs_here(node)))?
        {
            return Ok(split);
        }
        // The analysis, and another write's sink, stay here.
        if plan.is::<AnalyzeExec>() || plan.is::<DataSinkExec>() {
            let input = Arc::clone(plan.children()[0]);
            return replace_children_if_necessary(plan, vec![placed(input, &scheduler)?]);
        }
        placed(plan, &scheduler)
    }

    fn name(&self) -> &str {
        "tessera_cluster_placement"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether any leaf of `plan` scans files: otherwise the executors have nothing to read.
fn reads_any_files(plan: &Arc<dyn ExecutionPlan>) -> Result<bool> {
    plan.exists(|node| Ok(node.children().is_empty() && reads_files(node)))
}

/// Whether the leaf `plan` scans files (of any format).
fn reads_files(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.downcast_ref::<DataSourceExec>().is_some_and(|scan| {
        scan.data_source()
            .downcast_ref::<FileScanConfig>()
            .is_some()
    })
}

/// Whether `plan` is a join the cluster cannot run: a null-aware anti join (`NOT IN`).
///
/// Its probe partitions share one record of the build rows they matched and of the
/// nulls they saw, so it is only right in one process. Ballista plans it with one probe
/// partition, but then runs DataFusion's distribution enforcement on each stage, which
/// takes the merge away and shares the probe out again: each task then keeps the build
/// rows *its* probe rows missed (TPC-H Q16 kept suppliers another task had excluded).
fn runs_here(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.downcast_ref::<HashJoinExec>()
        .is_some_and(|join| join.null_aware)
}

/// `plan` with every subtree that reads files and holds no join that [`runs_here`]
/// sent to the cluster at `scheduler`; those joins, and the operators above them, run
/// here over their sent inputs.
fn placed(plan: Arc<dyn ExecutionPlan>, scheduler: &str) -> Result<Arc<dyn ExecutionPlan>> {
    if !reads_any_files(&plan)? {
        return Ok(plan);
    }
    if !plan.exists(|node| Ok(runs_here(node)))? {
        return Ok(sent(plan, scheduler.to_string()));
    }
    let children = plan
        .children()
        .into_iter()
        .map(|child| placed(Arc::clone(child), scheduler))
        .collect::<Result<Vec<_>>>()?;
    replace_children_if_necessary(plan, children)
}

/// `plan` run by the cluster at `scheduler`, its partitions merged there.
fn sent(plan: Arc<dyn ExecutionPlan>, scheduler: String) -> Arc<dyn ExecutionPlan> {
    let merged = match plan.properties().partitioning.partition_count() {
        1 => plan,
        _ => Arc::new(CoalescePartitionsExec::new(plan)),
    };
    Arc::new(ClusterExec::new(merged, scheduler))
}
