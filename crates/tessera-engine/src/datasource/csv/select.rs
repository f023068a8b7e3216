//! A CSV scan whose objects S3 Select reads: the store returns only the columns the scan
//! reads, of the rows that may pass the filter above it ([`CsvCondition`]), as CSV; the
//! scan decodes them with the table's schema, so its rows are the rows a read of the
//! object gives, and the filter tests them again.
//!
//! An object is read by DataFusion's own CSV reader instead when S3 Select cannot
//! answer it: a failed request (after asking again with only the conditions that
//! cannot fail), or an answer that does not decode. A malformed file then fails as it
//! would without pushdown.

use std::fmt;
use std::io::Cursor;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::csv::ReaderBuilder;
use arrow::datatypes::SchemaRef;
use datafusion::common::Result;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    CsvOpener, CsvSource, FileOpenFuture, FileOpener, FileScanConfig, FileSource,
};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_plan::DisplayFormatType;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder};
use futures::{FutureExt, StreamExt};
use object_store::ObjectStore;
use tessera_blob::s3::S3Client;
use tessera_blob::select::{CsvHeader, InputCompression, InputFormat, OutputFormat, SelectRequest};
use tessera_pushdown::select_csv::{CsvCondition, CsvSelect};
use tessera_pushdown::select_sql::FIELDS_MAX;

use crate::datasource::select::{SelectMetrics, ask};

/// DataFusion's CSV source, its objects read through S3 Select.
#[derive(Clone)]
pub struct CsvSelectSource {
    inner: CsvSource,
    client: S3Client,
    condition: Option<CsvCondition>,
    batch_size: Option<usize>,
}

impl CsvSelectSource {
    /// `inner` read through `client`, when S3 Select reads its files as `inner` does:
    /// `,`-separated, `"`-quoted, `\n`-terminated, no escape or comment character, no
    /// newlines in values, no short rows, stored as is or in gzip or bzip2.
    pub fn try_new(
        inner: &CsvSource,
        client: S3Client,
        compression: FileCompressionType,
    ) -> Option<Self> {
        let readable = inner.delimiter() == b','
            && inner.quote() == b'"'
            && inner.escape().is_none()
            && inner.comment().is_none()
            && inner.terminator().is_none()
            && !inner.newlines_in_values()
            && !inner.truncate_rows()
            && input_compression(compression).is_some();
        readable.then(|| Self {
            inner: inner.clone(),
            client,
            condition: None,
            batch_size: None,
        })
    }

    /// The same scan asking only for the rows for which `condition` holds too.
    pub fn with_condition(&self, condition: CsvCondition) -> Self {
        let condition = match self.condition.clone() {
            None => condition,
            Some(CsvCondition::And(mut parts)) => {
                parts.push(condition);
                CsvCondition::And(parts)
            }
            Some(other) => CsvCondition::And(vec![other, condition]),
        };
        Self {
            condition: Some(condition),
            ..self.clone()
        }
    }

    /// DataFusion's source it reads with when the store cannot answer.
    pub fn inner(&self) -> &CsvSource {
        &self.inner
    }

    /// The columns of the files, in order.
    pub fn file_schema(&self) -> &SchemaRef {
        self.inner.table_schema().file_schema()
    }

    fn split_projection(&self) -> SplitProjection {
        let projection = self
            .inner
            .projection()
            .expect("CSV sources have a projection");
        SplitProjection::new(self.file_schema(), projection)
    }

    /// What each object is asked for; `None` when the scan reads no column (a count),
    /// which S3 Select would answer with as many bytes as it saves.
    fn select(&self, split: &SplitProjection) -> Option<CsvSelect> {
        let columns = split.file_indices.clone();
        (!columns.is_empty() && columns.len() <= FIELDS_MAX).then(|| CsvSelect {
            columns,
            condition: self.condition.clone(),
        })
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

fn input_compression(compression: FileCompressionType) -> Option<InputCompression> {
    match compression {
        FileCompressionType::UNCOMPRESSED => Some(InputCompression::None),
        FileCompressionType::GZIP => Some(InputCompression::Gzip),
        FileCompressionType::BZIP2 => Some(InputCompression::Bzip2),
        _ => None,
    }
}

impl fmt::Debug for CsvSelectSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CsvSelectSource")
            .field("condition", &self.condition)
            .finish_non_exhaustive()
    }
}

impl FileSource for CsvSelectSource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let compression = base_config.file_compression_type;
        let fallback = CsvOpener::new(Arc::new(self.inner.clone()), compression, object_store);
        let split = self.split_projection();
        let file_schema = self.file_schema();
        let set = self.inner.metrics();
        let bytes_scanned = MetricBuilder::new(set).counter("bytes_scanned", partition);
        let opener = CsvSelectOpener {
            fallback: Arc::new(fallback),
            client: self.client.clone(),
            select: self.select(&split).map(Arc::new),
            compression: input_compression(compression).expect("checked when built"),
            header: match self.inner.has_header() {
                true => CsvHeader::Ignore,
                false => CsvHeader::None,
            },
            schema: Arc::new(file_schema.project(&split.file_indices)?),
            batch_size: self.batch_size.expect("batch size set before opening"),
            metrics: SelectMetrics::new(set, partition, bytes_scanned),
        };
        ProjectionOpener::try_new(split, Arc::new(opener), file_schema)
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
        "csv"
    }

    fn fmt_extra(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.fmt_extra(t, f)?;
        match self.select(&self.split_projection()) {
            Some(select) => write!(f, ", s3_select=[{}]", select.sql()),
            None => write!(f, ", s3_select=none"),
        }
    }

    fn supports_repartitioning(&self) -> bool {
        // S3 Select reads an object in one request.
        false
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
}

/// Opens objects through S3 Select, or through DataFusion's CSV reader when the store
/// cannot answer; its batches hold the columns the projection reads from the file.
#[derive(Clone)]
struct CsvSelectOpener {
    fallback: Arc<dyn FileOpener>,
    client: S3Client,
    select: Option<Arc<CsvSelect>>,
    compression: InputCompression,
    header: CsvHeader,
    schema: SchemaRef,
    batch_size: usize,
    metrics: SelectMetrics,
}

impl FileOpener for CsvSelectOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let this = self.clone();
        Ok(async move {
            if file.range.is_none()
                && let Some(batches) = this.batches(file.object_meta.location.as_ref()).await
            {
                return Ok(futures::stream::iter(batches.into_iter().map(Ok)).boxed());
            }
            this.metrics.select_fallbacks.add(1);
            this.fallback.open(file)?.await
        }
        .boxed())
    }
}

impl CsvSelectOpener {
    /// The batches of the object `key` (all of them: an answer is complete or not
    /// used), or `None` when DataFusion's reader must read it.
    async fn batches(&self, key: &str) -> Option<Vec<RecordBatch>> {
        let select = self.select.as_ref()?;
        let mut answer = self.answer(key, select).await;
        if answer.is_none()
            && let Some(robust) = select.robust()
        {
            self.metrics.select_retries.add(1);
            answer = self.answer(key, &robust).await;
        }
        let answer = answer?;
        let reader = ReaderBuilder::new(Arc::clone(&self.schema))
            .with_header(false)
            .with_batch_size(self.batch_size)
            .build_buffered(Cursor::new(answer))
            .ok()?;
        reader.collect::<Result<Vec<RecordBatch>, _>>().ok()
    }

    async fn answer(&self, key: &str, select: &CsvSelect) -> Option<bytes::Bytes> {
        let sql = select.sql();
        let request = SelectRequest {
            expression: &sql,
            input: InputFormat::Csv {
                header: self.header,
            },
            compression: self.compression,
            output: OutputFormat::Csv,
        };
        ask(&self.client, &self.metrics, key, &request).await
    }
}
