//! The NDJSON [`FileFormat`]: `STORED AS NDJSON` / `STORED AS JSON` tables and
//! `FROM 'file.json'`, exposing each line as one JSON document column.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{GetExt, Result, Statistics, plan_err};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder, FileSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::physical_plan::ExecutionPlan;
use object_store::{ObjectMeta, ObjectStore};

use super::open::ScanSettings;
use super::source::NdjsonSource;
use crate::block_cache::ScanCache;
use crate::datasource::select::select_client;
use crate::datasource::with_file_size;
use crate::options::{OnError, Pushdown, TesseraOptions, Validation, ValidationSetting};
use crate::rejects::RejectLog;

/// Name of the document column unless a table says otherwise.
pub const DEFAULT_DOCUMENT_COLUMN: &str = "j";

/// Table-level options (`OPTIONS ('column' 'doc', 'on_error' 'skip', 'validation' 'full')`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NdjsonOptions {
    /// Name of the document column.
    pub column: String,
    /// Overrides the session's `tessera.on_error` for this table.
    pub on_error: Option<OnError>,
    /// Overrides the session's `tessera.validation` for this table.
    pub validation: Option<Validation>,
    /// Whether a line a Tessera table could not store exactly (an integer of more than
    /// 38 digits, a number beyond the range of a double) is malformed: set by ingest, so
    /// that such a line is skipped or fails with its place like any other bad line.
    pub storable: bool,
}

impl Default for NdjsonOptions {
    fn default() -> Self {
        Self {
            column: DEFAULT_DOCUMENT_COLUMN.to_string(),
            on_error: None,
            validation: None,
            storable: false,
        }
    }
}

impl NdjsonOptions {
    /// Reads options given to `CREATE EXTERNAL TABLE`; unknown keys are errors.
    pub fn from_map(options: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        for (key, value) in options {
            match key.trim_start_matches("format.") {
                "column" => out.column = value.clone(),
                "on_error" => out.on_error = Some(value.parse()?),
                "validation" => out.validation = Some(value.parse::<ValidationSetting>()?.0),
                // DataFusion passes these for every format; compression is read from
                // each file's name instead.
                "compression" | "newline_delimited" => {}
                other => {
                    return plan_err!(
                        "unknown NDJSON option '{other}' (known: column, on_error, validation)"
                    );
                }
            }
        }
        if out.column.is_empty() {
            return plan_err!("the NDJSON document column needs a name");
        }
        Ok(out)
    }
}

/// Reads newline-delimited JSON as one JSON document per row.
#[derive(Debug, Clone, Default)]
pub struct NdjsonFormat {
    options: NdjsonOptions,
}

impl NdjsonFormat {
    /// A format with the given table options.
    pub fn new(options: NdjsonOptions) -> Self {
        Self { options }
    }

    /// The table schema: the document column.
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new(
            &self.options.column,
            DataType::Utf8View,
            false,
        )]))
    }

    /// Scan settings for `session`: table options over session settings.
    fn settings(&self, session: &dyn Session) -> ScanSettings {
        let options = session
            .config_options()
            .extensions
            .get::<TesseraOptions>()
            .cloned()
            .unwrap_or_default();
        ScanSettings {
            on_error: self.options.on_error.unwrap_or(options.on_error),
            validation: self.options.validation.unwrap_or(options.validation.0),
            block_size: options.block_size() as u64,
            prefetch: options.prefetch(),
            storable: self.options.storable,
            rejects: session
                .config()
                .get_extension::<RejectLog>()
                .unwrap_or_default(),
        }
    }
}

#[async_trait]
impl FileFormat for NdjsonFormat {
    fn get_ext(&self) -> String {
        "json".to_string()
    }

    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> Result<String> {
        Ok(format!("json{}", compression.get_ext()))
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        None
    }

    async fn infer_schema(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        Ok(self.schema())
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        Ok(with_file_size(
            Statistics::new_unknown(&table_schema),
            object,
        ))
    }

    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let settings = self.settings(state);
        let source = match NdjsonSource::from_dyn(conf.file_source()) {
            Some(source) => source
                .with_settings(settings)
                .with_cache(ScanCache::for_scan(state, &conf.object_store_url))
                .with_select_client(select_client(
                    state,
                    &conf,
                    &[Pushdown::S3Select, Pushdown::Auto],
                )),
            None => return plan_err!("an NDJSON scan needs the NDJSON file source"),
        };
        let conf = FileScanConfigBuilder::from(conf)
            .with_source(Arc::new(source))
            .build();
        Ok(DataSourceExec::from_data_source(conf))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        let settings = ScanSettings {
            on_error: self.options.on_error.unwrap_or_default(),
            validation: self.options.validation.unwrap_or_default(),
            block_size: TesseraOptions::default().block_size() as u64,
            prefetch: TesseraOptions::default().prefetch(),
            storable: self.options.storable,
            rejects: Arc::new(RejectLog::default()),
        };
        Arc::new(NdjsonSource::new(table_schema, settings))
    }
}

/// Creates [`NdjsonFormat`]s for `STORED AS NDJSON` (and `JSON`, replacing DataFusion's
/// schema-inferring reader).
#[derive(Debug)]
pub struct NdjsonFormatFactory {
    ext: &'static str,
}

impl NdjsonFormatFactory {
    /// A factory registered under the file type `ext` (`"ndjson"` or `"json"`).
    pub fn new(ext: &'static str) -> Self {
        Self { ext }
    }
}

impl GetExt for NdjsonFormatFactory {
    fn get_ext(&self) -> String {
        self.ext.to_string()
    }
}

impl FileFormatFactory for NdjsonFormatFactory {
    fn create(
        &self,
        _state: &dyn Session,
        options: &HashMap<String, String>,
    ) -> Result<Arc<dyn FileFormat>> {
        Ok(Arc::new(NdjsonFormat::new(NdjsonOptions::from_map(
            options,
        )?)))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(NdjsonFormat::default())
    }
}
