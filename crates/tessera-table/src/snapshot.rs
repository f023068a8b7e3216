//! One table version, read: its files, and the rows of each file that are not deleted.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow::array::BooleanArray;
use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::{
    ArrowPredicateFn, ArrowReaderMetadata, ArrowReaderOptions, RowFilter, RowSelection, RowSelector,
};
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask, RowNumber};
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

use tessera_blob::{Sizing, accounting, sizing};
use tessera_tiles::checksum::verify_pages;

use crate::cache;
use crate::error::TableError;
use crate::layout::child_key;
use crate::manifest::{DataFile, Manifest};
use crate::readahead::{Pacer, Readahead};
use crate::traffic::Traffic;

/// Rows per decoded batch (the default of [`FileRead::batch_rows`]).
const BATCH_ROWS: usize = 8192;

/// An immutable view of one table version (snapshot isolation: later commits never
/// change what it returns).
#[derive(Debug, Clone)]
pub struct Snapshot {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    /// Shared with the process's manifest cache: snapshots of one version hold one copy.
    manifest: Arc<Manifest>,
}

impl Snapshot {
    pub(crate) fn new(store: Arc<dyn ObjectStore>, prefix: Path, manifest: Arc<Manifest>) -> Self {
        Self {
            store,
            prefix,
            manifest,
        }
    }

    /// The same version with its files read through `store` (a cache in front of the
    /// table's store, say): data and side files are immutable, so any store holding the
    /// same objects reads the same bytes.
    pub fn with_store(self, store: Arc<dyn ObjectStore>) -> Self {
        Self { store, ..self }
    }

    /// The key of a file named relative to the table prefix (`data/....parquet`).
    pub fn key(&self, relative: &str) -> Path {
        child_key(&self.prefix, relative)
    }

    /// The key prefix of the table (what [`Table::pinned`](crate::Table::pinned) takes).
    pub fn prefix(&self) -> &Path {
        &self.prefix
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
        self.open_file(file).await?.read(FileRead {
            skip_deleted,
            ..FileRead::default()
        })
    }

    /// Whether this process holds `file`'s footer, so that opening it makes no request
    /// for it: a cost model's question (a scan over a slow link waits a round trip per
    /// footer it fetches).
    pub fn footer_cached(&self, file: &DataFile) -> bool {
        cache::footer(&self.footer_key(file)).is_some()
    }

    /// The key of `file`'s footer in the process's cache.
    fn footer_key(&self, file: &DataFile) -> cache::ObjectKey {
        (
            self.store.to_string(),
            child_key(&self.prefix, &file.path).to_string(),
            file.size.to_string(),
        )
    }

    /// Opens `file` for selective reads: its Parquet footer is fetched once, so the
    /// caller can choose leaf columns and row groups from it before any data is read.
    pub async fn open_file(&self, file: &DataFile) -> Result<OpenFile, TableError> {
        let traffic = Arc::new(Traffic::default());
        let mut reader = FileReader {
            store: Arc::clone(&self.store),
            key: child_key(&self.prefix, &file.path),
            size: file.size,
            traffic: Arc::clone(&traffic),
            readahead: None,
        };
        let footer = self.footer_key(file);
        let metadata = match cache::footer(&footer) {
            Some(metadata) => metadata,
            None => {
                let metadata = reader
                    .get_metadata(None)
                    .await
                    .map_err(parquet_error(&file.path))?;
                let read = traffic.bytes.load(Ordering::Relaxed);
                traffic.footer_bytes.store(read, Ordering::Relaxed);
                let requests = traffic.requests.load(Ordering::Relaxed);
                traffic.footer_requests.store(requests, Ordering::Relaxed);
                cache::keep_footer(footer, Arc::clone(&metadata));
                metadata
            }
        };
        let stored = ArrowReaderMetadata::try_new(Arc::clone(&metadata), ArrowReaderOptions::new())
            .map_err(parquet_error(&file.path))?;
        let views = Arc::new(Schema::new(
            stored
                .schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_data_type(as_views(f.data_type())))
                .collect::<Vec<_>>(),
        ));
        let reader_metadata =
            ArrowReaderMetadata::try_new(metadata, ArrowReaderOptions::new().with_schema(views))
                .map_err(parquet_error(&file.path))?;
        Ok(OpenFile {
            file: file.clone(),
            reader,
            metadata: reader_metadata,
            traffic,
        })
    }
}

/// What to read of an opened file.
#[derive(Debug, Default)]
pub struct FileRead {
    /// Parquet leaf column indices to decode; all columns when `None`.
    pub leaves: Option<Vec<usize>>,
    /// Row groups to read, ascending; all when `None`.
    pub row_groups: Option<Vec<usize>>,
    /// Rows of those row groups to read (a selection over the chosen row groups only,
    /// as the Parquet reader takes it), e.g. the pages that statistics did not exclude;
    /// every row when `None`. Only the selected pages are fetched and decoded.
    pub rows: Option<RowSelection>,
    /// Leave out the rows the file's deletion vector names.
    pub skip_deleted: bool,
    /// Rows per batch; 8192 when `None`.
    pub batch_rows: Option<usize>,
    /// Late materialization: the rows to decode are chosen from a few columns first.
    pub predicate: Option<FilePredicate>,
    /// Fetch column chunks ahead of the decoder, as far as the pacer allows.
    pub pacer: Option<Arc<dyn Pacer>>,
    /// String leaf columns (Parquet leaf indices) to decode as [`dictionary_type`]:
    /// the codes and the chunk's dictionary as they are stored, instead of one string
    /// per row, for consumers that work on codes (grouping).
    pub dictionaries: Vec<usize>,
    /// Append each row's position in the file as a last column, [`ROW_NUMBER`] (Int64),
    /// so a batch's rows can be joined to rows of the file's side files whatever the
    /// selection, deletions and filters left of it.
    pub row_numbers: bool,
}

/// The name of the column [`FileRead::row_numbers`] appends.
pub const ROW_NUMBER: &str = "__tessera_row_number";

/// The type [`FileRead::dictionaries`] decodes string leaves as.
pub fn dictionary_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// Chooses the rows of a file to decode from some of its columns, so the other columns
/// are decoded (and, with page indexes, fetched) only for the rows it keeps.
pub struct FilePredicate {
    /// Parquet leaf column indices the predicate looks at.
    pub leaves: Vec<usize>,
    /// Given those leaves of a run of rows, which of the rows to keep.
    pub keep: Box<dyn FnMut(RecordBatch) -> Result<BooleanArray, ArrowError> + Send>,
}

impl std::fmt::Debug for FilePredicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilePredicate")
            .field("leaves", &self.leaves)
            .finish_non_exhaustive()
    }
}

/// One data file whose footer has been read.
pub struct OpenFile {
    file: DataFile,
    reader: FileReader,
    metadata: ArrowReaderMetadata,
    traffic: Arc<Traffic>,
}

impl std::fmt::Debug for OpenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenFile")
            .field("path", &self.file.path)
            .finish_non_exhaustive()
    }
}

impl OpenFile {
    /// The file's Parquet metadata (schema, row groups, column chunk statistics).
    pub fn metadata(&self) -> &Arc<ParquetMetaData> {
        self.metadata.metadata()
    }

    /// The file's Arrow schema.
    pub fn schema(&self) -> &SchemaRef {
        self.metadata.schema()
    }

    /// Requests and bytes fetched from the store for this file so far (footer
    /// included); shared, so it keeps counting while returned streams are read.
    pub fn traffic(&self) -> &Arc<Traffic> {
        &self.traffic
    }

    /// Decodes the chosen leaves and row groups of the file.
    pub fn read(
        &self,
        read: FileRead,
    ) -> Result<BoxStream<'static, Result<RecordBatch, TableError>>, TableError> {
        let path = self.file.path.clone();
        let row_groups: Vec<usize> = match &read.row_groups {
            Some(groups) => groups.clone(),
            None => (0..self.metadata().num_row_groups()).collect(),
        };
        assert!(
            row_groups.windows(2).all(|w| w[0] < w[1]),
            "row groups are read in ascending order"
        );
        let live = (read.skip_deleted && !self.file.deleted.is_empty())
            .then(|| self.live_selection(&row_groups));
        let selection = match (live, read.rows) {
            (Some(live), Some(rows)) => Some(live.intersection(&rows)),
            (live, rows) => live.or(rows),
        };
        let mut reader = self.reader.clone();
        if let Some(pacer) = read.pacer {
            let columns: Vec<usize> = match (&read.leaves, &read.predicate) {
                (Some(leaves), Some(p)) => {
                    let mut all: Vec<usize> = leaves.iter().chain(&p.leaves).copied().collect();
                    all.sort_unstable();
                    all.dedup();
                    all
                }
                (Some(leaves), None) => leaves.clone(),
                (None, _) => {
                    (0..self.metadata().file_metadata().schema_descr().num_columns()).collect()
                }
            };
            let readahead = Readahead::new(
                Arc::clone(&reader.store),
                reader.key.clone(),
                pacer,
                Arc::clone(&self.traffic),
                self.plan_fetches(&row_groups, &columns, selection.as_ref()),
            );
            readahead.start();
            reader.readahead = Some(Arc::new(readahead));
        }
        let mut metadata = match read.dictionaries.as_slice() {
            [] => self.metadata.clone(),
            leaves => self
                .with_dictionaries(leaves)
                .map_err(parquet_error(&path))?,
        };
        if read.row_numbers {
            metadata = with_row_numbers(&metadata).map_err(parquet_error(&path))?;
        }
        let mut builder = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, metadata)
            .with_batch_size(read.batch_rows.unwrap_or(BATCH_ROWS))
            .with_row_groups(row_groups.clone());
        if let Some(leaves) = &read.leaves {
            let schema = self.metadata().file_metadata().schema_descr();
            builder =
                builder.with_projection(ProjectionMask::leaves(schema, leaves.iter().copied()));
        }
        if let Some(selection) = selection {
            builder = builder.with_row_selection(selection);
        }
        if let Some(predicate) = read.predicate {
            let schema = self.metadata().file_metadata().schema_descr();
            let mask = ProjectionMask::leaves(schema, predicate.leaves.iter().copied());
            let filter = ArrowPredicateFn::new(mask, predicate.keep);
            builder = builder.with_row_filter(RowFilter::new(vec![Box::new(filter)]));
        }
        let stream = builder.build().map_err(parquet_error(&path))?;
        Ok(stream
            .map_err(move |source| TableError::Parquet {
                path: path.clone(),
                source,
            })
            .boxed())
    }

    /// The reader metadata with the string leaves `leaves` decoded as dictionaries.
    fn with_dictionaries(&self, leaves: &[usize]) -> Result<ArrowReaderMetadata, ParquetError> {
        let descriptor = self.metadata().file_metadata().schema_descr();
        let mut fields: Vec<Field> = self
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        for &leaf in leaves {
            let parts = descriptor.column(leaf).path().parts().to_vec();
            let Some(field) = fields.iter_mut().find(|f| f.name() == &parts[0]) else {
                return Err(ParquetError::General(format!("no field for leaf {leaf}")));
            };
            *field = as_dictionary(field, &parts[1..])?;
        }
        ArrowReaderMetadata::try_new(
            Arc::clone(self.metadata()),
            ArrowReaderOptions::new().with_schema(Arc::new(Schema::new(fields))),
        )
    }

    /// The byte ranges the decoder will ask for, (row group, range) in decode order:
    /// whole column chunks, or, when rows are selected and the file has an offset
    /// index, the chunk's dictionary page and the data pages holding selected rows
    /// (what the Parquet reader fetches then), coalesced per row group by [`coalesce`].
    fn plan_fetches(
        &self,
        row_groups: &[usize],
        columns: &[usize],
        selection: Option<&RowSelection>,
    ) -> Vec<(usize, Range<u64>)> {
        let metadata = self.metadata();
        let mut rest = selection.cloned();
        let mut out: Vec<(usize, Range<u64>)> = Vec::new();
        for &g in row_groups {
            let group = metadata.row_group(g);
            let rows = usize::try_from(group.num_rows()).expect("row counts are not negative");
            let selected = rest.as_mut().map(|r| r.split_off(rows));
            let pages = metadata.offset_index().map(|index| &index[g]);
            let mut ranges: Vec<Range<u64>> = Vec::new();
            for &c in columns {
                let (start, len) = group.column(c).byte_range();
                let locations = pages.and_then(|p| p.get(c)).map(|p| p.page_locations());
                match (&selected, locations) {
                    (Some(selected), Some(locations)) if !locations.is_empty() => {
                        let first = u64::try_from(locations[0].offset).unwrap_or(start);
                        if first > start {
                            ranges.push(start..first);
                        }
                        ranges.extend(selected.scan_ranges(locations));
                    }
                    _ => ranges.push(start..start + len),
                }
            }
            out.extend(coalesce(ranges).into_iter().map(|range| (g, range)));
        }
        out
    }

    /// The rows of `row_groups` that the deletion vector keeps, as a selection over
    /// those row groups only (what the Parquet reader expects).
    fn live_selection(&self, row_groups: &[usize]) -> RowSelection {
        let groups = self.metadata().row_groups();
        let mut starts = Vec::with_capacity(groups.len());
        let mut at = 0u64;
        for group in groups {
            starts.push(at);
            at += group.num_rows() as u64;
        }
        let selectors: Vec<RowSelector> = row_groups
            .iter()
            .flat_map(|&g| {
                let start = starts[g];
                let rows = groups[g].num_rows() as u64;
                self.file.deleted.selection_in(start, rows)
            })
            .map(|(deleted, rows)| match deleted {
                true => RowSelector::skip(rows as usize),
                false => RowSelector::select(rows as usize),
            })
            .collect();
        RowSelection::from(selectors)
    }
}

/// The requests that fetch one row group's byte ranges (disjoint, as column chunks and
/// their pages are): close neighbours merged as tessera-blob's request sizing plans
/// them, so that a request's cost is paid once for several small ranges. A range
/// larger than the largest request stays whole, because the decoder asks for it whole
/// and a fetch ahead serves only ranges it covers entirely.
fn coalesce(ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    let sizing = Sizing::default();
    let (large, small): (Vec<_>, Vec<_>) = ranges
        .into_iter()
        .partition(|r| r.end - r.start > sizing.max_request);
    let mut requests = sizing::plan(&small, &sizing);
    requests.extend(large);
    requests.sort_by_key(|r| r.start);
    requests
}

/// `data_type` with strings and binaries as views: the decoder then references the page
/// buffers instead of copying every value, and the engine works on views anyway.
/// `metadata` with the virtual column [`ROW_NUMBER`] after its fields.
fn with_row_numbers(metadata: &ArrowReaderMetadata) -> Result<ArrowReaderMetadata, ParquetError> {
    let row_number = Field::new(ROW_NUMBER, DataType::Int64, false).with_extension_type(RowNumber);
    ArrowReaderMetadata::try_new(
        Arc::clone(metadata.metadata()),
        ArrowReaderOptions::new()
            .with_schema(Arc::clone(metadata.schema()))
            .with_virtual_columns(vec![Arc::new(row_number)])?,
    )
}

fn as_views(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 => DataType::Utf8View,
        DataType::Binary | DataType::LargeBinary => DataType::BinaryView,
        DataType::Struct(fields) => DataType::Struct(
            fields
                .iter()
                .map(|f| f.as_ref().clone().with_data_type(as_views(f.data_type())))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `field` with its string leaf at `path` (names below `field`) as
/// [`dictionary_type`].
fn as_dictionary(field: &Field, path: &[String]) -> Result<Field, ParquetError> {
    match (field.data_type(), path) {
        (DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View, []) => {
            Ok(field.clone().with_data_type(dictionary_type()))
        }
        (DataType::Struct(children), [name, rest @ ..]) => {
            if children.find(name).is_none() {
                return Err(ParquetError::General(format!(
                    "no field {name} below {}",
                    field.name()
                )));
            }
            let children = children
                .iter()
                .map(|child| match child.name() == name {
                    true => as_dictionary(child, rest),
                    false => Ok(child.as_ref().clone()),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(field
                .clone()
                .with_data_type(DataType::Struct(children.into())))
        }
        (other, _) => Err(ParquetError::General(format!(
            "{} of type {other} is no string leaf at {path:?}",
            field.name()
        ))),
    }
}

fn parquet_error(path: &str) -> impl FnOnce(ParquetError) -> TableError + use<> {
    let path = path.to_string();
    move |source| TableError::Parquet { path, source }
}

/// Ranged reads of one data file, for the Parquet decoder; counts the bytes it fetches.
#[derive(Clone)]
struct FileReader {
    store: Arc<dyn ObjectStore>,
    key: Path,
    size: u64,
    traffic: Arc<Traffic>,
    readahead: Option<Arc<Readahead>>,
}

/// Bytes read from the end of a file at once, so footer and metadata usually take one
/// request.
const FOOTER_HINT: usize = 64 << 10;

impl FileReader {
    /// `parts` (the bytes of `ranges`: whole pages, as the decoder asks for them) once
    /// their pages match their checksums. A part that does not is read once more
    /// straight from the store, since the store or the network may have sent bad bytes;
    /// if it still does not match, the file is corrupt and the error says where.
    async fn verified(
        &self,
        ranges: &[Range<u64>],
        mut parts: Vec<Bytes>,
    ) -> parquet::errors::Result<Vec<Bytes>> {
        for (range, part) in ranges.iter().zip(parts.iter_mut()) {
            if verify_pages(part).is_ok() {
                continue;
            }
            self.traffic
                .checksum_retries
                .fetch_add(1, Ordering::Relaxed);
            let again = accounting::scope(
                Arc::clone(&self.traffic.store),
                self.store.get_range(&self.key, range.clone()),
            )
            .await
            .map_err(|e| ParquetError::External(Box::new(e)))?;
            self.traffic.count(1, again.len() as u64);
            if let Err(mismatch) = verify_pages(&again) {
                return Err(ParquetError::General(format!(
                    "{} is corrupt: the page at byte {} does not match its checksum (read twice)",
                    self.key,
                    range.start + mismatch.page_at as u64
                )));
            }
            *part = again;
        }
        Ok(parts)
    }
}

impl AsyncFileReader for FileReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            let bytes = accounting::scope(
                Arc::clone(&self.traffic.store),
                self.store.get_range(&self.key, range),
            )
            .await
            .map_err(|e| ParquetError::External(Box::new(e)))?;
            self.traffic.count(1, bytes.len() as u64);
            Ok(bytes)
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move {
            let external = |e: object_store::Error| ParquetError::External(Box::new(e));
            let Some(readahead) = self.readahead.clone() else {
                let parts = accounting::scope(
                    Arc::clone(&self.traffic.store),
                    self.store.get_ranges(&self.key, &ranges),
                )
                .await
                .map_err(external)?;
                self.traffic
                    .count(parts.len(), parts.iter().map(|b| b.len() as u64).sum());
                return self.verified(&ranges, parts).await;
            };
            let mut parts: Vec<Option<Bytes>> = Vec::with_capacity(ranges.len());
            for hit in readahead.take(&ranges).await {
                parts.push(match hit {
                    Some(Ok(bytes)) => Some(bytes),
                    Some(Err(e)) => return Err(ParquetError::External(Box::new(e))),
                    None => None,
                });
            }
            let missing: Vec<Range<u64>> = ranges
                .iter()
                .zip(&parts)
                .filter(|(_, part)| part.is_none())
                .map(|(range, _)| range.clone())
                .collect();
            let mut fetched = accounting::scope(
                Arc::clone(&self.traffic.store),
                self.store.get_ranges(&self.key, &missing),
            )
            .await
            .map_err(external)?
            .into_iter();
            self.traffic.count(
                missing.len(),
                fetched.as_slice().iter().map(|b| b.len() as u64).sum(),
            );
            let parts: Vec<Bytes> = parts
                .into_iter()
                .map(|part| part.or_else(|| fetched.next()).expect("one part per range"))
                .collect();
            readahead.delivered(parts.iter().map(|b| b.len() as u64).sum());
            self.verified(&ranges, parts).await
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
                .with_page_index_policy(PageIndexPolicy::Optional)
                .load_and_finish(self, size)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}
