//! `RegionObserve`: passes a scan the rule saw through, and hands the running query's
//! context to the oracle, which starts a background run when one is due.

use std::fmt;
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};

use super::only_child;
use super::oracle;
use super::store::RegionStore;

/// A scan (as it runs: remotely, from regions or writing one) that the oracle saw.
#[derive(Debug)]
pub(crate) struct RegionObserveExec {
    input: Arc<dyn ExecutionPlan>,
    store: Arc<RegionStore>,
}

impl RegionObserveExec {
    /// `input`, the plan of a scan the oracle of `store` recorded.
    pub(crate) fn new(input: Arc<dyn ExecutionPlan>, store: Arc<RegionStore>) -> Self {
        Self { input, store }
    }
}

impl DisplayAs for RegionObserveExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("RegionObserve")
    }
}

impl ExecutionPlan for RegionObserveExec {
    fn name(&self) -> &str {
        "RegionObserveExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = only_child(children, self.name())?;
        Ok(Arc::new(Self::new(input, Arc::clone(&self.store))))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition == 0 {
            oracle::poke(&self.store, &context);
        }
        self.input.execute(partition, context)
    }
}
