//! `RegionScan`: a region's Parquet files read in place of a table scan.

use std::fmt;
use std::sync::Arc;

use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::TaskContext;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};

use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;
use object_store::ObjectMeta;
use object_store::path::Path as ObjectPath;

use super::store::StoredRegion;
use crate::block_cache::GET_NANODOLLARS;
use crate::physical_plan::only_child;

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
/// region in `EXPLAIN` with what the table scan that wrote it spent. `EXPLAIN ANALYZE`
/// counts that as saved when the region is read: `remote_bytes_saved`,
/// `requests_saved` and `request_cost_saved_nanodollars` (the GETs at the price the
/// block cache uses).
#[derive(Debug)]
pub(crate) struct RegionScanExec {
    input: Arc<dyn ExecutionPlan>,
    region: Arc<StoredRegion>,
    /// Files of the scanned version added since the region's (scanned remotely).
    appended_files: usize,
    metrics: ExecutionPlanMetricsSet,
}

impl RegionScanExec {
    /// `input` reading `region`'s files, for a scan of a version that added
    /// `appended_files` files since the region's.
    pub(crate) fn new(
        input: Arc<dyn ExecutionPlan>,
        region: Arc<StoredRegion>,
        appended_files: usize,
    ) -> Self {
        Self {
            input,
            region,
            appended_files,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// Counts what reading the region saved, once per execution (partition 0).
    fn count_savings(&self) {
        let sidecar = &self.region.sidecar;
        let counter = |name: &'static str| MetricBuilder::new(&self.metrics).global_counter(name);
        let requests = usize::try_from(sidecar.remote_requests).unwrap_or(usize::MAX);
        let bytes = usize::try_from(sidecar.remote_bytes).unwrap_or(usize::MAX);
        counter("remote_bytes_saved").add(bytes);
        counter("requests_saved").add(requests);
        counter("request_cost_saved_nanodollars").add(requests.saturating_mul(GET_NANODOLLARS));
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
        )?;
        match self.appended_files {
            0 => Ok(()),
            n => write!(f, " appended_files={n}"),
        }
    }
}

impl ExecutionPlan for RegionScanExec {
    fn name(&self) -> &str {
        "RegionScanExec"
    }

    pass_through_methods!();

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = only_child(children, self.name())?;
        Ok(Arc::new(Self::new(
            input,
            Arc::clone(&self.region),
            self.appended_files,
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition == 0 {
            self.count_savings();
        }
        let stream = self.input.execute(partition, context)?;
        let schema = stream.schema();
        // The stream opens the region's files as it goes, after the plan may be gone:
        // it holds the region, so an eviction meanwhile leaves its files in place.
        let region = Arc::clone(&self.region);
        let holding = stream.inspect(move |_| {
            let _ = &region;
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, holding)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
