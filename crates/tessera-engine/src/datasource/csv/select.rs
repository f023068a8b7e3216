//! S3 Select for a CSV scan of S3 objects (a `CsvScanSource` with a client): the
//! store returns only the columns the scan reads, of the rows that may pass the filter
//! above it ([`CsvCondition`]), as CSV; the scan decodes them with the table's schema,
//! so its rows are the rows a read of the object gives, and the filter tests them
//! again.
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
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    CsvOpener, CsvSource, FileOpenFuture, FileOpener, FileSource,
};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::physical_plan::metrics::Count;
use futures::{FutureExt, StreamExt};
use object_store::ObjectStore;
use tessera_blob::s3::S3Client;
use tessera_blob::select::{CsvHeader, InputCompression, InputFormat, OutputFormat, SelectRequest};
use tessera_pushdown::select_csv::{CsvCondition, CsvSelect};
use tessera_pushdown::select_sql::FIELDS_MAX;

use crate::datasource::select::{SelectMetrics, ask};

/// S3 Select for a CSV scan's objects: the bucket's client, and the condition of the
/// filters above the scan.
#[derive(Clone)]
pub struct SelectPushdown {
    client: S3Client,
    condition: Option<CsvCondition>,
}

impl SelectPushdown {
    /// S3 Select through `client` for the files `inner` reads, when S3 Select reads
    /// them as `inner` does: `,`-separated, `"`-quoted, `\n`-terminated, no escape or
    /// comment character, no newlines in values, no short rows, stored as is or in gzip
    /// or bzip2.
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
        readable.then_some(Self {
            client,
            condition: None,
        })
    }

    /// The same asking only for the rows for which `condition` holds too.
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

    /// What each object is asked for, the scan's columns in `split`; `None` when the
    /// scan reads no column (a count), which S3 Select would answer with as many bytes
    /// as it saves.
    fn select(&self, split: &SplitProjection) -> Option<CsvSelect> {
        let columns = split.file_indices.clone();
        (!columns.is_empty() && columns.len() <= FIELDS_MAX).then(|| CsvSelect {
            columns,
            condition: self.condition.clone(),
        })
    }

    /// The request of a scan of `inner`, as `EXPLAIN` shows it after the scan.
    pub(super) fn fmt_request(&self, inner: &CsvSource, f: &mut fmt::Formatter) -> fmt::Result {
        match self.select(&split_projection(inner)) {
            Some(select) => write!(f, ", s3_select=[{}]", select.sql()),
            None => write!(f, ", s3_select=none"),
        }
    }

    /// The opener of `partition` of a scan of `inner`'s files, stored with
    /// `compression`: S3 Select first, then DataFusion's reader over `store`; answers'
    /// bytes counted in `bytes_scanned`.
    pub(super) fn opener(
        &self,
        inner: &CsvSource,
        store: Arc<dyn ObjectStore>,
        compression: FileCompressionType,
        partition: usize,
        batch_size: usize,
        bytes_scanned: Count,
    ) -> Result<Arc<dyn FileOpener>> {
        let split = split_projection(inner);
        let fallback = CsvOpener::new(Arc::new(inner.clone()), compression, store);
        let file_schema = inner.table_schema().file_schema();
        let opener = CsvSelectOpener {
            fallback: Arc::new(fallback),
            client: self.client.clone(),
            select: self.select(&split).map(Arc::new),
            compression: input_compression(compression).expect("checked when built"),
            header: match inner.has_header() {
                true => CsvHeader::Ignore,
                false => CsvHeader::None,
            },
            schema: Arc::new(file_schema.project(&split.file_indices)?),
            batch_size,
            metrics: SelectMetrics::new(inner.metrics(), partition, bytes_scanned),
        };
        ProjectionOpener::try_new(split, Arc::new(opener), file_schema)
    }
}

/// The columns a scan of `inner` reads from its files, and its projection over them.
fn split_projection(inner: &CsvSource) -> SplitProjection {
    let projection = inner.projection().expect("CSV sources have a projection");
    SplitProjection::new(inner.table_schema().file_schema(), projection)
}

fn input_compression(compression: FileCompressionType) -> Option<InputCompression> {
    match compression {
        FileCompressionType::UNCOMPRESSED => Some(InputCompression::None),
        FileCompressionType::GZIP => Some(InputCompression::Gzip),
        FileCompressionType::BZIP2 => Some(InputCompression::Bzip2),
        _ => None,
    }
}

impl fmt::Debug for SelectPushdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectPushdown")
            .field("condition", &self.condition)
            .finish_non_exhaustive()
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
