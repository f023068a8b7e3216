//! The write path of a Tessera table: documents from any query (INSERT, CTAS, ingest)
//! cut into files, each shredded into JSON tiles on its own core, uploaded, and
//! committed together as one new table version.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, SchemaRef};
use async_trait::async_trait;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::sink::DataSink;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use futures::StreamExt;
use tessera_table::{NewFile, SideFile, Table};
use tessera_tiles::TilesOptions;

use crate::options::TesseraOptions;
use tokio::task::JoinSet;

/// Documents per data file: large enough for 2-16 MiB column chunks of the frequent paths,
/// small enough that a few files are shredded in parallel on a 2-core machine.
pub const DOCS_PER_FILE: usize = 262_144;

/// Raw JSON bytes per data file, whichever limit comes first.
pub const BYTES_PER_FILE: usize = 192 << 20;

/// Smallest file the last chunk of a write is split into, in documents or in bytes of
/// JSON (whichever allows more parts): below both, the per-file overhead and weaker
/// compression outweigh shredding the parts on more cores. Large documents (API models
/// of 6 KB each) reach the bytes long before the documents.
pub const MIN_SPLIT_DOCS: usize = 65_536;

/// See [`MIN_SPLIT_DOCS`].
pub const MIN_SPLIT_BYTES: usize = 16 << 20;

/// Counters an ingest shows while it runs and in its summary.
#[derive(Debug, Default)]
pub struct WriteProgress {
    /// Documents read from the input.
    pub documents: AtomicU64,
    /// Bytes of JSON read from the input.
    pub bytes_in: AtomicU64,
    /// Bytes of Parquet written.
    pub bytes_out: AtomicU64,
    /// Data files written.
    pub files: AtomicU64,
}

/// What one commit wrote, for the ingest summary and `DESCRIBE`.
#[derive(Debug, Clone, Default)]
pub struct WriteReport {
    /// The table version the commit created.
    pub version: u64,
    /// The data files it added, with their summaries.
    pub files: Vec<NewFile>,
}

/// A DataFusion sink that appends its input's rows to a table: the document column as
/// JSON tiles, the relational columns next to it.
#[derive(Clone)]
pub struct TesseraSink {
    table: Arc<Table>,
    /// The store holding the table, as the session's registry knows it.
    url: ObjectStoreUrl,
    schema: SchemaRef,
    /// Position of the document column in `schema`.
    document: usize,
    /// Positions of the relational columns in `schema`, and the schema they are stored
    /// with.
    relational: Vec<usize>,
    relational_schema: SchemaRef,
    progress: Arc<WriteProgress>,
    report: Arc<parking_lot::Mutex<Option<WriteReport>>>,
}

impl fmt::Debug for TesseraSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TesseraSink").finish_non_exhaustive()
    }
}

impl DisplayAs for TesseraSink {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TesseraSink")
    }
}

impl TesseraSink {
    /// A sink appending to `table`, whose SQL schema is `schema` (in the table's column
    /// order; the document column is its only non-nullable column).
    pub fn new(
        table: Arc<Table>,
        url: ObjectStoreUrl,
        schema: SchemaRef,
        progress: Arc<WriteProgress>,
        report: Arc<parking_lot::Mutex<Option<WriteReport>>>,
    ) -> Result<Self> {
        let document = schema
            .fields()
            .iter()
            .position(|f| !f.is_nullable())
            .ok_or_else(|| DataFusionError::Internal("a table without a document column".into()))?;
        let relational: Vec<usize> = (0..schema.fields().len())
            .filter(|&i| i != document)
            .collect();
        let relational_schema = Arc::new(schema.project(&relational)?);
        Ok(Self {
            table,
            url,
            schema,
            document,
            relational,
            relational_schema,
            progress,
            report,
        })
    }

    /// The table written to.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// The URL of the store holding the table.
    pub fn url(&self) -> &ObjectStoreUrl {
        &self.url
    }

    /// Shreds and uploads the documents of `data` as data files, none committed yet:
    /// the files and the rows they hold.
    pub(super) async fn write_files(
        &self,
        mut data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<(Vec<NewFile>, u64)> {
        let max_in_flight = context.session_config().target_partitions().max(1);
        let options = tiles_options(context);
        let mut running = JoinSet::new();
        let mut done = Vec::new();
        let mut chunk = Chunk::default();
        let mut rows = 0u64;
        while let Some(batch) = data.next().await {
            let batch = batch?;
            let column = batch.column(self.document);
            for_each_document(column.as_ref(), rows, |doc| {
                chunk.push(doc);
                self.progress
                    .bytes_in
                    .fetch_add(doc.len() as u64, Ordering::Relaxed);
            })?;
            if let Some(columns) = self.relational_columns(&batch)? {
                chunk.columns.push(columns);
            }
            rows += batch.num_rows() as u64;
            self.progress
                .documents
                .fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
            if chunk.is_full() {
                let next = Chunk {
                    first_row: rows,
                    ..Chunk::default()
                };
                let full = std::mem::replace(&mut chunk, next);
                self.flush(full, &mut running, &mut done, max_in_flight, &options)
                    .await?;
            }
        }
        // No input arrives while the last chunk is shredded: split it so that the free
        // cores share it instead of one core shredding it alone.
        if !chunk.ends.is_empty() {
            for part in chunk.split(max_in_flight)? {
                self.flush(part, &mut running, &mut done, max_in_flight, &options)
                    .await?;
            }
        }
        while !running.is_empty() {
            done.push(join_next(&mut running).await?);
        }
        Ok((done, rows))
    }

    /// Commits `files` as one new version, and reports it as this sink's last write.
    pub(super) async fn commit(&self, files: Vec<NewFile>) -> Result<()> {
        // Nothing is visible until this commit; files of a failed statement are left for
        // vacuum, unreferenced.
        let version = self
            .table
            .commit_append(files.clone())
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        *self.report.lock() = Some(WriteReport { version, files });
        Ok(())
    }

    /// The relational columns of `batch` as stored (empty when the table has none).
    fn relational_columns(&self, batch: &RecordBatch) -> Result<Option<RecordBatch>> {
        if self.relational.is_empty() {
            return Ok(None);
        }
        let columns = self
            .relational
            .iter()
            .zip(self.relational_schema.fields())
            .map(|(&i, field)| Ok(arrow::compute::cast(batch.column(i), field.data_type())?))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(RecordBatch::try_new(
            Arc::clone(&self.relational_schema),
            columns,
        )?))
    }
}

/// Documents (and their rows' relational columns) gathered for one data file.
#[derive(Default)]
struct Chunk {
    /// The statement's input row (from 0) of the first document.
    first_row: u64,
    bytes: Vec<u8>,
    ends: Vec<usize>,
    columns: Vec<RecordBatch>,
}

impl Chunk {
    fn push(&mut self, doc: &[u8]) {
        self.bytes.extend_from_slice(doc);
        self.ends.push(self.bytes.len());
    }

    fn is_full(&self) -> bool {
        self.ends.len() >= DOCS_PER_FILE || self.bytes.len() >= BYTES_PER_FILE
    }

    /// The relational columns of all rows, in one batch.
    fn relational(&self) -> Result<Option<RecordBatch>> {
        match self.columns.first() {
            Some(first) => Ok(Some(arrow::compute::concat_batches(
                &first.schema(),
                &self.columns,
            )?)),
            None => Ok(None),
        }
    }

    /// This chunk as at most `parts` chunks of at least [`MIN_SPLIT_DOCS`] documents or
    /// [`MIN_SPLIT_BYTES`] bytes each (in the mean), in order.
    fn split(self, parts: usize) -> Result<Vec<Chunk>> {
        let by_docs = self.ends.len() / MIN_SPLIT_DOCS;
        let by_bytes = self.bytes.len() / MIN_SPLIT_BYTES;
        let parts = parts.min(by_docs.max(by_bytes)).max(1);
        if parts == 1 {
            return Ok(vec![self]);
        }
        let relational = self.relational()?;
        let per_part = self.ends.len().div_ceil(parts);
        let mut start = 0;
        let mut first_row = 0;
        Ok(self
            .ends
            .chunks(per_part)
            .map(|ends| {
                let end = *ends.last().expect("chunks are not empty");
                let part = Chunk {
                    first_row: self.first_row + first_row as u64,
                    bytes: self.bytes[start..end].to_vec(),
                    ends: ends.iter().map(|e| e - start).collect(),
                    columns: relational
                        .iter()
                        .map(|r| r.slice(first_row, ends.len()))
                        .collect(),
                };
                start = end;
                first_row += ends.len();
                part
            })
            .collect())
    }

    fn docs(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let doc = &self.bytes[start..end];
                start = end;
                doc
            })
            .collect()
    }
}

impl TesseraSink {
    /// Shreds and uploads one chunk; at most `max_in_flight` run at once, which bounds
    /// memory to that many chunks.
    async fn flush(
        &self,
        chunk: Chunk,
        running: &mut JoinSet<Result<NewFile>>,
        done: &mut Vec<NewFile>,
        max_in_flight: usize,
        options: &TilesOptions,
    ) -> Result<()> {
        while running.len() >= max_in_flight {
            done.push(join_next(running).await?);
        }
        let table = Arc::clone(&self.table);
        let options = options.clone();
        let progress = Arc::clone(&self.progress);
        let relational = chunk.relational()?;
        let first_row = chunk.first_row;
        running.spawn(async move {
            let written = tokio::task::spawn_blocking(move || {
                tessera_tiles::write_file_with_columns(&chunk.docs(), relational.as_ref(), &options)
            })
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?
            .map_err(|e| written_error(e, first_row))?;
            let mut sides = Vec::with_capacity(written.sides.len());
            for side in written.sides {
                let (path, size) = store(&table, side.file.parquet).await?;
                sides.push(SideFile {
                    array: side.path,
                    path,
                    size,
                    summary: side.file.summary,
                });
            }
            let (path, size) = store(&table, written.parquet).await?;
            let size_with_sides = size + sides.iter().map(|s| s.size).sum::<u64>();
            progress
                .bytes_out
                .fetch_add(size_with_sides, Ordering::Relaxed);
            progress.files.fetch_add(1, Ordering::Relaxed);
            Ok(NewFile {
                path,
                size,
                summary: written.summary,
                sides,
            })
        });
        Ok(())
    }
}

/// Stores a written file under the table's `data/`: its key and size.
async fn store(table: &Table, parquet: bytes::Bytes) -> Result<(String, u64)> {
    let size = parquet.len() as u64;
    let path = table
        .write_data_file(parquet)
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    Ok((path, size))
}

/// A writer's error as the statement's user sees it: a document is named by its row in
/// the statement's input (from 1), not by its place in the file being written.
fn written_error(error: tessera_tiles::TilesError, first_row: u64) -> DataFusionError {
    match error {
        tessera_tiles::TilesError::Json {
            index,
            line,
            column,
            reason,
        } => DataFusionError::Execution(format!(
            "row {} is not a JSON document a Tessera table stores: {reason} (line {line}, \
             column {column} of the document)",
            first_row + index as u64 + 1
        )),
        other => DataFusionError::External(Box::new(other)),
    }
}

async fn join_next(running: &mut JoinSet<Result<NewFile>>) -> Result<NewFile> {
    match running.join_next().await {
        Some(joined) => joined.map_err(|e| DataFusionError::External(Box::new(e)))?,
        None => Err(DataFusionError::Internal("no file is being written".into())),
    }
}

#[async_trait]
impl DataSink for TesseraSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let (files, rows) = self.write_files(data, context).await?;
        self.commit(files).await?;
        Ok(rows)
    }
}

/// How the session's settings shape the written files.
fn tiles_options(context: &TaskContext) -> TilesOptions {
    let settings = context
        .session_config()
        .options()
        .extensions
        .get::<TesseraOptions>();
    let defaults = TilesOptions::default();
    TilesOptions {
        side_arrays: settings.is_none_or(|o| o.side_arrays),
        row_group_docs: settings.map_or(defaults.row_group_docs, |o| o.row_group_rows.max(1)),
        ..defaults
    }
}

/// Calls `f` with each document's text; a NULL document is an error naming its row,
/// since a table row without a document could not be told apart from JSON `null`.
fn for_each_document(column: &dyn Array, first_row: u64, mut f: impl FnMut(&[u8])) -> Result<()> {
    let null_at = |i: usize| {
        DataFusionError::Execution(format!(
            "row {} has no document (NULL); a Tessera table stores one JSON document per row",
            first_row + i as u64 + 1
        ))
    };
    macro_rules! each {
        ($array:expr) => {{
            for (i, doc) in $array.iter().enumerate() {
                f(doc.ok_or_else(|| null_at(i))?.as_bytes());
            }
        }};
    }
    match column.data_type() {
        DataType::Utf8 => each!(column.as_string::<i32>()),
        DataType::LargeUtf8 => each!(column.as_string::<i64>()),
        DataType::Utf8View => each!(column.as_string_view()),
        other => {
            return Err(DataFusionError::Plan(format!(
                "a Tessera table stores JSON text; got a column of type {other}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(docs: usize) -> Chunk {
        let mut chunk = Chunk::default();
        (0..docs).for_each(|i| chunk.push(format!("{{\"i\":{i}}}").as_bytes()));
        chunk
    }

    #[test]
    fn the_last_chunk_splits_into_parts_of_at_least_the_minimum() {
        let whole = chunk(MIN_SPLIT_DOCS * 2 + 3);
        let texts: Vec<Vec<u8>> = whole.docs().iter().map(|d| d.to_vec()).collect();
        let parts = whole.split(4).unwrap();
        assert_eq!(
            parts.iter().map(|p| p.ends.len()).collect::<Vec<_>>(),
            vec![MIN_SPLIT_DOCS + 2, MIN_SPLIT_DOCS + 1]
        );
        let rejoined: Vec<Vec<u8>> = parts
            .iter()
            .flat_map(|p| p.docs().into_iter().map(|d| d.to_vec()))
            .collect();
        assert_eq!(rejoined, texts);
        assert_eq!(chunk(MIN_SPLIT_DOCS * 2 - 1).split(4).unwrap().len(), 1);
        assert_eq!(chunk(10).split(1).unwrap().len(), 1);
    }

    #[test]
    fn large_documents_split_by_their_bytes() {
        let doc = format!("{{\"pad\":\"{}\"}}", "x".repeat(1 << 20));
        let mut whole = Chunk::default();
        (0..2 * (MIN_SPLIT_BYTES >> 20) + 1).for_each(|_| whole.push(doc.as_bytes()));
        let docs = whole.ends.len();
        let parts = whole.split(4).unwrap();
        assert_eq!(parts.len(), 2, "two parts of at least MIN_SPLIT_BYTES");
        assert_eq!(parts.iter().map(|p| p.ends.len()).sum::<usize>(), docs);
        let mut small = Chunk::default();
        (0..(MIN_SPLIT_BYTES >> 20) * 2 - 2).for_each(|_| small.push(doc.as_bytes()));
        assert_eq!(small.split(4).unwrap().len(), 1);
    }

    /// Relational columns, gathered batch by batch, split at the same rows as the
    /// documents.
    #[test]
    fn relational_columns_split_with_their_documents() {
        use arrow::array::Int64Array;
        use arrow::datatypes::{Field, Int64Type, Schema};

        let docs = MIN_SPLIT_DOCS * 2 + 3;
        let mut whole = chunk(docs);
        let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, true)]));
        let cut = 1000;
        for range in [0..cut, cut..docs] {
            let values = Int64Array::from_iter_values(range.map(|i| i as i64));
            whole
                .columns
                .push(RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(values)]).unwrap());
        }
        for part in whole.split(2).unwrap() {
            let columns = part.relational().unwrap().unwrap();
            assert_eq!(columns.num_rows(), part.ends.len());
            let values = columns.column(0).as_primitive::<Int64Type>();
            for (row, doc) in part.docs().into_iter().enumerate() {
                let expected = format!("{{\"i\":{}}}", values.value(row));
                assert_eq!(doc, expected.as_bytes());
            }
        }
    }
}
