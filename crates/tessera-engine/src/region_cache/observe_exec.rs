//! `RegionObserve`: passes a scan the rule saw through; when it runs (not when it is only
//! explained), the oracle records its request and gets the running query's context, and
//! starts a background run when one is due.

use std::fmt;
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};

use tessera_cache::semantic::region::Request;

use super::oracle::{self, RegionOracle, Template};
use super::store::RegionStore;
use crate::physical_plan::only_child;

/// A scan (as it runs: remotely, from regions or writing one) that the oracle sees.
#[derive(Debug)]
pub(crate) struct RegionObserveExec {
    input: Arc<dyn ExecutionPlan>,
    store: Arc<RegionStore>,
    oracle: Arc<RegionOracle>,
    /// The scan's request and template; `None` for a scan of some files only, whose
    /// rows are not its request's.
    observed: Option<(Request, Arc<Template>)>,
}

impl RegionObserveExec {
    /// `input`, the plan of a scan for `oracle`, the oracle of `store`.
    pub(crate) fn new(
        input: Arc<dyn ExecutionPlan>,
        store: Arc<RegionStore>,
        oracle: Arc<RegionOracle>,
        observed: Option<(Request, Arc<Template>)>,
    ) -> Self {
        Self {
            input,
            store,
            oracle,
            observed,
        }
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

    pass_through_methods!();

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = only_child(children, self.name())?;
        let (store, oracle) = (Arc::clone(&self.store), Arc::clone(&self.oracle));
        Ok(Arc::new(Self::new(
            input,
            store,
            oracle,
            self.observed.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition == 0 {
            if let Some((request, template)) = &self.observed {
                self.oracle.observe(request, template);
            }
            oracle::poke(&self.store, &self.oracle, &context);
        }
        self.input.execute(partition, context)
    }
}
