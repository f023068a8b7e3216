//! CSV locations (`FROM 's3://bucket/lineitem/*.csv'`, `STORED AS CSV`): DataFusion's
//! CSV format, whose scans are Tessera's ([`source`]): they count what they read from
//! the store, and read S3 objects through S3 Select when the session says so (`SET
//! tessera.pushdown = 's3select'`, or `'auto'` where it chooses so, [`select`]), as
//! PushdownDB did for its TPC-H tables in CSV.

mod counted_store;
pub mod select;
pub mod source;

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{Result, Statistics};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::physical_plan::{
    CsvSource, FileScanConfig, FileScanConfigBuilder, FileSinkConfig, FileSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::ExecutionPlan;
use object_store::{ObjectMeta, ObjectStore};

use crate::datasource::select::select_client;
use crate::datasource::with_file_size;
use crate::options::Pushdown;
use select::SelectPushdown;
use source::CsvScanSource;

/// A CSV format (DataFusion's) whose scans are [`CsvScanSource`]s, which may ask S3
/// Select.
#[derive(Debug)]
pub struct CsvScanFormat {
    inner: Arc<dyn FileFormat>,
}

impl CsvScanFormat {
    /// `inner`, a CSV format, with Tessera's scans.
    pub fn new(inner: Arc<dyn FileFormat>) -> Self {
        Self { inner }
    }
}

#[async_trait]
impl FileFormat for CsvScanFormat {
    fn get_ext(&self) -> String {
        self.inner.get_ext()
    }

    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> Result<String> {
        self.inner.get_ext_with_compression(compression)
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        self.inner.compression_type()
    }

    async fn infer_schema(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        self.inner.infer_schema(state, store, objects).await
    }

    async fn infer_stats(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        let statistics = self.inner.infer_stats(state, store, table_schema, object);
        Ok(with_file_size(statistics.await?, object))
    }

    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let client = select_client(state, &conf, &[Pushdown::S3Select, Pushdown::Auto]);
        let plan = self.inner.create_physical_plan(state, conf).await?;
        let config = plan
            .downcast_ref::<DataSourceExec>()
            .and_then(|scan| scan.data_source().downcast_ref::<FileScanConfig>());
        let Some((config, csv)) =
            config.and_then(|c| Some((c, c.file_source().downcast_ref::<CsvSource>()?)))
        else {
            return Ok(plan);
        };
        let mut source = CsvScanSource::new(csv.clone());
        let compression = config.file_compression_type;
        if let Some(select) = client.and_then(|c| SelectPushdown::try_new(csv, c, compression)) {
            source = source.with_select(select);
        }
        Ok(DataSourceExec::from_data_source(
            FileScanConfigBuilder::from(config.clone())
                .with_source(Arc::new(source))
                .build(),
        ))
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner
            .create_writer_physical_plan(input, state, conf, order_requirements)
            .await
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        self.inner.file_source(table_schema)
    }
}
