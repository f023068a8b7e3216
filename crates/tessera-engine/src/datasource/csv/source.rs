//! Tessera's CSV scan: DataFusion's [`CsvSource`] reading through a [`CountedStore`], so
//! that `EXPLAIN ANALYZE` (and the storage-side worker's [`WorkerSpend`]) shows what it
//! read from the store per partition, in the NDJSON scan's counters: `bytes_scanned`,
//! `requests`, and `request_cost_nanodollars` from a store that bills GETs. With an S3
//! Select client ([`SelectPushdown`]) it asks S3 Select for each object first.
//!
//! Plans sent to another process carry DataFusion's own CSV scan (no client, no
//! credentials); the storage-side worker counts its reads again with
//! [`with_csv_reads_counted`].
//!
//! [`WorkerSpend`]: crate::physical_plan::worker_spend::WorkerSpend

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::{
    CsvSource, FileOpener, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder};
use datafusion::physical_plan::proto::ExecutionPlanEncodeCtx;
use datafusion::physical_plan::{DisplayFormatType, ExecutionPlan};
use datafusion_proto::protobuf::PhysicalPlanNode;
use object_store::ObjectStore;
use tessera_pushdown::select_csv::CsvCondition;

use super::counted_store::CountedStore;
use super::select::SelectPushdown;
use crate::datasource::ndjson::read::Gets;

/// DataFusion's CSV source, its reads counted, and its objects asked of S3 Select first
/// when it has a client.
#[derive(Clone)]
pub struct CsvScanSource {
    inner: CsvSource,
    select: Option<SelectPushdown>,
    batch_size: Option<usize>,
}

impl CsvScanSource {
    /// `inner`, its reads counted.
    pub fn new(inner: CsvSource) -> Self {
        Self {
            inner,
            select: None,
            batch_size: None,
        }
    }

    /// The same scan asking S3 Select through `select`.
    pub(crate) fn with_select(&self, select: SelectPushdown) -> Self {
        Self {
            select: Some(select),
            ..self.clone()
        }
    }

    /// The same scan reading every object itself.
    pub(crate) fn without_select(&self) -> Self {
        Self {
            select: None,
            ..self.clone()
        }
    }

    /// Whether the scan asks S3 Select.
    pub fn asks_select(&self) -> bool {
        self.select.is_some()
    }

    /// The same scan asking S3 Select only for the rows for which `condition` holds
    /// too; `None` when it does not ask S3 Select.
    pub fn with_condition(&self, condition: CsvCondition) -> Option<Self> {
        let select = self.select.as_ref()?;
        Some(self.with_select(select.with_condition(condition)))
    }

    /// The columns of the files, in order.
    pub fn file_schema(&self) -> &SchemaRef {
        self.inner.table_schema().file_schema()
    }

    fn with_inner(&self, inner: &Arc<dyn FileSource>) -> Self {
        let inner = inner
            .downcast_ref::<CsvSource>()
            .expect("a CSV source stays one")
            .clone();
        Self {
            inner,
            ..self.clone()
        }
    }
}

impl fmt::Debug for CsvScanSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CsvScanSource")
            .field("select", &self.select)
            .finish_non_exhaustive()
    }
}

impl FileSource for CsvScanSource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let set = self.inner.metrics();
        let bytes_scanned = MetricBuilder::new(set).counter("bytes_scanned", partition);
        // No block cache in front of a CSV scan.
        let gets = Gets::new(set, partition, &base_config.object_store_url, false);
        let store = Arc::new(CountedStore::new(object_store, bytes_scanned.clone(), gets));
        let Some(select) = &self.select else {
            return self.inner.create_file_opener(store, base_config, partition);
        };
        select.opener(
            &self.inner,
            store,
            base_config.file_compression_type,
            partition,
            self.batch_size.expect("batch size set before opening"),
            bytes_scanned,
        )
    }

    fn table_schema(&self) -> &TableSchema {
        self.inner.table_schema()
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(Self {
            batch_size: Some(batch_size),
            ..self.with_inner(&self.inner.with_batch_size(batch_size))
        })
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        self.inner.projection()
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        self.inner.metrics()
    }

    fn file_type(&self) -> &str {
        self.inner.file_type()
    }

    fn fmt_extra(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.fmt_extra(t, f)?;
        match &self.select {
            Some(select) => select.fmt_request(&self.inner, f),
            None => Ok(()),
        }
    }

    fn supports_repartitioning(&self) -> bool {
        // S3 Select reads an object in one request; DataFusion's reader splits files
        // into byte ranges as its source allows.
        self.select.is_none() && self.inner.supports_repartitioning()
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn FileSource>>> {
        Ok(self
            .inner
            .try_pushdown_projection(projection)?
            .map(|inner| Arc::new(self.with_inner(&inner)) as Arc<dyn FileSource>))
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.inner.apply_expressions(f)
    }

    /// As DataFusion's CSV scan, without S3 Select: a plan never carries a client.
    fn try_to_proto(
        &self,
        base: &FileScanConfig,
        ctx: &ExecutionPlanEncodeCtx<'_>,
    ) -> Result<Option<PhysicalPlanNode>> {
        self.inner.try_to_proto(base, ctx)
    }
}

/// `plan` with each of DataFusion's CSV scans counting its reads as Tessera's do (no
/// S3 Select): a plan decoded from another process, whose scans are DataFusion's.
pub fn with_csv_reads_counted(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let config = node
            .downcast_ref::<DataSourceExec>()
            .and_then(|scan| scan.data_source().downcast_ref::<FileScanConfig>());
        let Some((config, csv)) =
            config.and_then(|c| Some((c, c.file_source().downcast_ref::<CsvSource>()?)))
        else {
            return Ok(Transformed::no(node));
        };
        let config = FileScanConfigBuilder::from(config.clone())
            .with_source(Arc::new(CsvScanSource::new(csv.clone())))
            .build();
        Ok(Transformed::yes(
            DataSourceExec::from_data_source(config) as _
        ))
    })
    .map(|t| t.data)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use datafusion::common::tree_node::TreeNode;

    use super::*;
    use crate::test_support::{session_with, text_rows};

    /// The sum of metric `name` over `plan`'s operators.
    fn summed(plan: &Arc<dyn ExecutionPlan>, name: &str) -> Option<usize> {
        let mut total = None;
        plan.apply(|node| {
            if let Some(value) = node.metrics().and_then(|m| m.sum_by_name(name)) {
                *total.get_or_insert(0) += value.as_usize();
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .unwrap();
        total
    }

    /// A local CSV file, split into byte ranges or not, is read once and counted, its
    /// reads unbilled.
    #[tokio::test]
    async fn local_files_count_their_bytes_unbilled() {
        let mut file = tempfile::NamedTempFile::with_suffix(".csv").unwrap();
        writeln!(file, "id,kind").unwrap();
        for i in 0..5_000 {
            writeln!(file, "{i},{}", ["a", "b"][i % 2]).unwrap();
        }
        let size = file.as_file().metadata().unwrap().len() as usize;
        let session = session_with(crate::SessionOptions {
            target_partitions: Some(2),
            ..Default::default()
        });
        let sql = format!(
            "SELECT count(*), sum(id) FROM '{}' WHERE kind = 'b'",
            file.path().display()
        );
        for min_size in [10 << 20, 1] {
            let set = format!("SET datafusion.optimizer.repartition_file_min_size = {min_size}");
            session.sql(&set).await.unwrap().collect().await.unwrap();
            let frame = session.sql(&sql).await.unwrap();
            let plan = frame.create_physical_plan().await.unwrap();
            let ctx = session.context().task_ctx();
            let batches = datafusion::physical_plan::collect(Arc::clone(&plan), ctx)
                .await
                .unwrap();
            let sum: usize = (0..5_000).filter(|i| i % 2 == 1).sum();
            assert_eq!(text_rows(&batches), [["2500".to_string(), sum.to_string()]]);
            let read = summed(&plan, "bytes_scanned").unwrap();
            let requests = summed(&plan, "requests").unwrap();
            match min_size {
                // Two ranges, each with a line past its end.
                1 => {
                    assert!((size..size + 2 * (16 * 1024 + 1)).contains(&read), "{read}");
                    assert!(requests >= 2, "{requests}");
                }
                _ => assert_eq!((read, requests), (size, 1)),
            }
            assert_eq!(summed(&plan, "request_cost_nanodollars"), None);
        }
    }
}
