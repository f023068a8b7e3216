//! One table version, read: its files, and the rows of each file that are not deleted.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::RecordBatch;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::ParquetRecordBatchStreamBuilder;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, RowSelection, RowSelector};
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::ParquetError;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

use crate::error::TableError;
use crate::manifest::{DataFile, Manifest};

/// Rows per decoded batch.
const BATCH_ROWS: usize = 8192;

/// An immutable view of one table version (snapshot isolation: later commits never
/// change what it returns).
#[derive(Debug, Clone)]
pub struct Snapshot {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    manifest: Manifest,
}

impl Snapshot {
    pub(crate) fn new(store: Arc<dyn ObjectStore>, prefix: Path, manifest: Manifest) -> Self {
        Self {
            store,
            prefix,
            manifest,
        }
    }

    /// The version number.
    pub fn version(&self) -> u64 {
        self.manifest.version
    }

    /// The manifest of this version.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The data files of this version.
    pub fn files(&self) -> &[DataFile] {
        &self.manifest.files
    }

    /// Rows that are not deleted, over all files.
    pub fn live_rows(&self) -> u64 {
        self.files().iter().map(DataFile::live_rows).sum()
    }

    /// The batches of `file` as stored; with `skip_deleted`, rows its deletion vector
    /// names are left out (without, row positions match the deletion vector's).
    pub async fn read_file(
        &self,
        file: &DataFile,
        skip_deleted: bool,
    ) -> Result<BoxStream<'static, Result<RecordBatch, TableError>>, TableError> {
        let reader = FileReader {
            store: Arc::clone(&self.store),
            key: crate::table::child_key(&self.prefix, &file.path),
            size: file.size,
        };
        let parquet_error = |path: &str| {
            let path = path.to_string();
            move |source| TableError::Parquet { path, source }
        };
        let mut builder = ParquetRecordBatchStreamBuilder::new(reader)
            .await
            .map_err(parquet_error(&file.path))?
            .with_batch_size(BATCH_ROWS);
        if skip_deleted && !file.deleted.is_empty() {
            let selectors: Vec<RowSelector> = file
                .deleted
                .selection(file.summary.rows)
                .into_iter()
                .map(|(deleted, rows)| match deleted {
                    true => RowSelector::skip(rows as usize),
                    false => RowSelector::select(rows as usize),
                })
                .collect();
            builder = builder.with_row_selection(RowSelection::from(selectors));
        }
        let stream = builder.build().map_err(parquet_error(&file.path))?;
        let path = file.path.clone();
        Ok(stream
            .map_err(move |source| TableError::Parquet {
                path: path.clone(),
                source,
            })
            .boxed())
    }
}

/// Ranged reads of one data file, for the Parquet decoder.
struct FileReader {
    store: Arc<dyn ObjectStore>,
    key: Path,
    size: u64,
}

/// Bytes read from the end of a file at once, so footer and metadata usually take one
/// request.
const FOOTER_HINT: usize = 64 << 10;

impl AsyncFileReader for FileReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            self.store
                .get_range(&self.key, range)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move {
            self.store
                .get_ranges(&self.key, &ranges)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        _options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let metadata = ParquetMetaDataReader::new()
                .with_prefetch_hint(Some(FOOTER_HINT))
                .load_and_finish(self, size)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}
