//! Writing a region the oracle chose: the table scanned under the region's predicate,
//! projected to its columns, into the oracle cache, one partition at a time.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use futures::StreamExt;
use tessera_cache::semantic::region::Request;

use super::Template;
use crate::region_cache::filters::physical_filter;
use crate::region_cache::freshness::source_files;
use crate::region_cache::rewrite::RegionColumns;
use crate::region_cache::store::{Destination, RegionStore, Sidecar};
use crate::region_cache::write_exec::{RegionWrite, RegionWriteExec};

/// Writes the region of `shape` (a shape of `template`'s table and version) into the
/// oracle cache of `store`; nothing when the shape's columns or predicate are not the
/// template's (the region is then left to a later run).
pub(super) async fn region(
    store: &Arc<RegionStore>,
    template: &Template,
    shape: &Request,
    context: &Arc<TaskContext>,
) -> Result<()> {
    let Some(plan) = plan(store, template, shape) else {
        return Ok(());
    };
    for partition in 0..plan.output_partitioning().partition_count() {
        let mut stream = plan.execute(partition, Arc::clone(context))?;
        while let Some(batch) = stream.next().await {
            batch?;
        }
    }
    Ok(())
}

/// The table scan of `shape`'s rows and columns, with the predicate pushed into the scan
/// (to skip files and row groups) and applied again above it, writing the region.
fn plan(
    store: &Arc<RegionStore>,
    template: &Template,
    shape: &Request,
) -> Option<Arc<dyn ExecutionPlan>> {
    let exprs = shape
        .columns
        .iter()
        .map(|id| template.columns.get(id).map(Arc::clone))
        .collect::<Option<Vec<_>>>()?;
    let predicate = shape.predicate.to_predicate();
    let filter = physical_filter(&predicate, &template.columns, &template.schema())?;
    let over_region = RegionColumns::new(&shape.columns).rewrite(&filter)?;
    let scan = RegionColumns::scan(&template.config, template.source(), exprs, vec![filter]);
    let filtered: Arc<dyn ExecutionPlan> = Arc::new(FilterExec::try_new(over_region, scan).ok()?);
    let sidecar = Sidecar::unwritten(
        template.table.clone(),
        template.snapshot.version(),
        predicate,
        shape.columns.iter().cloned().collect(),
        source_files(template.snapshot.files()),
        true,
    );
    let partitions = filtered.output_partitioning().partition_count();
    let write = RegionWrite::new(
        Arc::clone(store),
        store.next_id(),
        Destination::Oracle,
        sidecar,
        partitions,
    );
    Some(Arc::new(RegionWriteExec::new(filtered, Arc::new(write))))
}
