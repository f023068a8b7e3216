//! `RegionScan`: a region's Parquet files read in place of a table scan.

use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::TaskContext;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};

use object_store::ObjectMeta;
use object_store::path::Path as ObjectPath;

use super::store::StoredRegion;

/// DataFusion's Parquet scan of `region`'s files over `partitions` partitions (those of
/// the scan it replaces, so that the plan above keeps its distribution), the files
/// dealt round-robin.
pub(crate) fn parquet_scan(
    region: &StoredRegion,
    partitions: usize,
) -> Result<Arc<dyn ExecutionPlan>> {
    let partitions = partitions.max(1);
    let mut groups: Vec<Vec<PartitionedFile>> = vec![Vec::new(); partitions];
    for (i, path) in region.files.iter().enumerate() {
        let metadata = std::fs::metadata(path)?;
        let location = ObjectPath::from_filesystem_path(path)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let meta = ObjectMeta {
            location,
            last_modified: metadata.modified()?.into(),
            size: metadata.len(),
            e_tag: None,
            version: None,
        };
        groups[i % partitions].push(PartitionedFile::new_from_meta(meta));
    }
    let source = ParquetSource::new(Arc::clone(&region.schema));
    let config = FileScanConfigBuilder::new(ObjectStoreUrl::local_filesystem(), Arc::new(source))
        .with_file_groups(groups.into_iter().map(FileGroup::new).collect())
        .build();
    Ok(DataSourceExec::from_data_source(config))
}

/// Passes its input (DataFusion's Parquet scan of the region's files) through; it holds
/// the region so that its files outlive an eviction while the plan runs, and names the
/// region in `EXPLAIN` with what the table scan it replaces spent.
#[derive(Debug)]
pub(crate) struct RegionScanExec {
    input: Arc<dyn ExecutionPlan>,
    region: Arc<StoredRegion>,
}

impl RegionScanExec {
    /// `input` reading `region`'s files.
    pub(crate) fn new(input: Arc<dyn ExecutionPlan>, region: Arc<StoredRegion>) -> Self {
        Self { input, region }
    }
}

impl DisplayAs for RegionScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let sidecar = &self.region.sidecar;
        write!(
            f,
            "RegionScan: region={} version={} rows={} saved_bytes={} saved_requests={}",
            self.region.id.0,
            sidecar.version,
            sidecar.rows,
            sidecar.remote_bytes,
            sidecar.remote_requests
        )
    }
}

impl ExecutionPlan for RegionScanExec {
    fn name(&self) -> &str {
        "RegionScanExec"
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
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let (Some(input), true) = (children.pop(), children.is_empty()) else {
            return Err(DataFusionError::Internal(
                "RegionScanExec has one input".into(),
            ));
        };
        Ok(Arc::new(Self::new(input, Arc::clone(&self.region))))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }
}
