//! Raw Parquet files (`FROM 'x.parquet'`): DataFusion's Parquet format behind a check of
//! every file's footer before DataFusion reads it.
//!
//! parquet 59's metadata decoder computes where the metadata starts as the file size
//! minus the footer length the file claims, and panics when that underflows; so a
//! truncated or foreign file named `.parquet` would crash the process. Checked here
//! first, such a file is an error that names it.
//!
//! A text column of Parquet's `JSON` logical type reads as Tessera's `JSON` (as in
//! DuckDB): Arrow's reader gives plain text, so the inferred schema marks such columns.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileMeta};
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::datasource::physical_plan::{FileScanConfig, FileSinkConfig, FileSource};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::physical_expr::{LexOrdering, LexRequirement};
use datafusion::physical_plan::ExecutionPlan;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use parquet::basic::{ConvertedType, LogicalType};

use crate::json::json_type::json_field;

/// Bytes at the end of a Parquet file: the metadata length (4, little-endian) and the
/// magic `PAR1`.
const FOOTER_BYTES: u64 = 8;
/// The magic at both ends of a Parquet file.
const MAGIC: &[u8; 4] = b"PAR1";
/// The magic that ends a Parquet file with an encrypted footer.
const ENCRYPTED_MAGIC: &[u8; 4] = b"PARE";
/// Footer checks in flight at once when a listing names many files.
const CHECKS_IN_FLIGHT: usize = 16;
/// Files whose footers are read for `JSON` columns when a schema is inferred.
const JSON_SCHEMA_FILES_MAX: usize = 32;
/// Files remembered as checked; past this the memory starts over (checks are one small
/// read each).
const MAX_CHECKED: usize = 100_000;

/// Why a file of `size` bytes whose last bytes are `tail` is not a Parquet file, if it
/// is not one; `name` names it in the sentence.
pub fn check_footer(name: &str, size: u64, tail: &[u8]) -> Result<(), String> {
    let smallest = MAGIC.len() as u64 + FOOTER_BYTES;
    let footer = match tail {
        [.., a, b, c, d, m0, m1, m2, m3] if size >= smallest => {
            ([*a, *b, *c, *d], [*m0, *m1, *m2, *m3])
        }
        _ => {
            return Err(format!(
                "not a Parquet file: {name} is {size} bytes, fewer than the {smallest} of the smallest Parquet file"
            ));
        }
    };
    match &footer.1 {
        magic if magic == MAGIC => {}
        magic if magic == ENCRYPTED_MAGIC => {
            return Err(format!(
                "{name} is an encrypted Parquet file, which Tessera cannot read"
            ));
        }
        _ => {
            return Err(format!(
                "not a Parquet file: {name} does not end in the magic bytes PAR1"
            ));
        }
    }
    let length = u64::from(u32::from_le_bytes(footer.0));
    if length == 0 || length + smallest > size {
        return Err(format!(
            "not a Parquet file: {name} has footer length {length}, but the file is {size} bytes"
        ));
    }
    Ok(())
}

/// `error`, met reading `object`, as a sentence that names the file.
fn named(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    error: DataFusionError,
) -> DataFusionError {
    let name = tessera_blob::location::object_url(store.as_ref(), &object.location);
    DataFusionError::Execution(format!("{name}: {error}"))
}

/// DataFusion's Parquet format (`inner`) whose files' footers are checked before
/// DataFusion reads them, for schemas, statistics and scans alike.
#[derive(Debug)]
pub struct CheckedParquetFormat {
    inner: Arc<dyn FileFormat>,
    /// Files (location and size) whose footers passed, so that a query checks each once.
    checked: parking_lot::Mutex<HashSet<(Path, u64)>>,
}

impl CheckedParquetFormat {
    /// `inner` (a Parquet format) behind footer checks.
    pub fn new(inner: Arc<dyn FileFormat>) -> Self {
        Self {
            inner,
            checked: parking_lot::Mutex::default(),
        }
    }

    /// Checks the footers of the `objects` not checked before: one read of their last
    /// 8 bytes each.
    async fn check<'a>(
        &self,
        store: &Arc<dyn ObjectStore>,
        objects: impl Iterator<Item = &'a ObjectMeta>,
    ) -> Result<()> {
        let unchecked: Vec<ObjectMeta> = {
            let checked = self.checked.lock();
            objects
                .filter(|o| !checked.contains(&(o.location.clone(), o.size)))
                .cloned()
                .collect()
        };
        futures::stream::iter(unchecked)
            .map(|object| async move {
                let name = tessera_blob::location::object_url(store.as_ref(), &object.location);
                let start = object.size.saturating_sub(FOOTER_BYTES);
                let tail = store
                    .get_range(&object.location, start..object.size)
                    .await?;
                check_footer(&name, object.size, &tail).map_err(DataFusionError::Execution)?;
                Ok::<_, DataFusionError>(object)
            })
            .buffer_unordered(CHECKS_IN_FLIGHT)
            .try_for_each(|object| {
                let mut checked = self.checked.lock();
                if checked.len() >= MAX_CHECKED {
                    checked.clear();
                }
                checked.insert((object.location, object.size));
                futures::future::ready(Ok(()))
            })
            .await
    }
}

/// `schema` with its top-level text columns that Parquet types `JSON` (in any of the
/// first files) marked as Tessera's `JSON`.
async fn json_columns(
    store: &Arc<dyn ObjectStore>,
    objects: &[ObjectMeta],
    schema: SchemaRef,
) -> Result<SchemaRef> {
    let mut names: HashSet<String> = HashSet::new();
    for object in objects.iter().take(JSON_SCHEMA_FILES_MAX) {
        let metadata = DFParquetMetadata::new(store.as_ref(), object)
            .fetch_metadata()
            .await
            .map_err(|error| named(store, object, error))?;
        let columns = metadata.file_metadata().schema_descr_ptr();
        for column in columns.columns() {
            let json = matches!(column.logical_type_ref(), Some(LogicalType::Json))
                || column.converted_type() == ConvertedType::JSON;
            if let ([name], true) = (column.path().parts(), json) {
                names.insert(name.clone());
            }
        }
    }
    if names.is_empty() {
        return Ok(schema);
    }
    let marker = json_field("").metadata().clone();
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|field| {
            let text = matches!(
                field.data_type(),
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
            );
            match text && names.contains(field.name()) {
                true => field.as_ref().clone().with_metadata(marker.clone()),
                false => field.as_ref().clone(),
            }
        })
        .collect();
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

#[async_trait]
impl FileFormat for CheckedParquetFormat {
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
        self.check(store, objects.iter()).await?;
        let error = match self.inner.infer_schema(state, store, objects).await {
            Ok(schema) => return json_columns(store, objects, schema).await,
            Err(error) => error,
        };
        // DataFusion's error does not say which file; on this failure path, find it.
        for object in objects {
            let one = std::slice::from_ref(object);
            if let Err(error) = self.inner.infer_schema(state, store, one).await {
                return Err(named(store, object, error));
            }
        }
        Err(error)
    }

    async fn infer_stats(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        self.check(store, std::iter::once(object)).await?;
        self.inner
            .infer_stats(state, store, table_schema, object)
            .await
            .map_err(|error| named(store, object, error))
    }

    async fn infer_ordering(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Option<LexOrdering>> {
        self.check(store, std::iter::once(object)).await?;
        self.inner
            .infer_ordering(state, store, table_schema, object)
            .await
            .map_err(|error| named(store, object, error))
    }

    async fn infer_stats_and_ordering(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<FileMeta> {
        self.check(store, std::iter::once(object)).await?;
        self.inner
            .infer_stats_and_ordering(state, store, table_schema, object)
            .await
            .map_err(|error| named(store, object, error))
    }

    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let store = state.runtime_env().object_store(&conf.object_store_url)?;
        let files = conf.file_groups.iter().flat_map(|g| g.iter());
        self.check(&store, files.map(|f| &f.object_meta)).await?;
        self.inner.create_physical_plan(state, conf).await
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footers_are_judged_before_their_length_is_trusted() {
        let footer = |length: u32, magic: &[u8; 4]| {
            let mut tail = length.to_le_bytes().to_vec();
            tail.extend_from_slice(magic);
            tail
        };
        assert!(check_footer("f", 100, &footer(50, MAGIC)).is_ok());
        assert!(check_footer("f", 100, &footer(88, MAGIC)).is_ok());
        for (size, tail) in [
            (100, footer(89, MAGIC)),
            (100, footer(u32::MAX, MAGIC)),
            (100, footer(0, MAGIC)),
            (100, footer(10, b"PAR2")),
            (100, footer(10, ENCRYPTED_MAGIC)),
            (11, footer(1, MAGIC)),
            (3, b"PAR".to_vec()),
            (0, Vec::new()),
        ] {
            let err = check_footer("dir/f.parquet", size, &tail).expect_err("not Parquet");
            assert!(err.contains("dir/f.parquet"), "{err}");
        }
    }
}
