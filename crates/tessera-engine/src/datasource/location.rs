//! Tables named by location: `FROM 's3://bucket/events/*.json.zst'`, `FROM 'data.parquet'`
//! and `CREATE EXTERNAL TABLE ... LOCATION '...'`.
//!
//! The format comes from `STORED AS` or else the file name (`.json`, `.ndjson`, `.jsonl`
//! -> NDJSON documents, `.parquet`, `.csv`; a trailing `.gz`/`.zst` is compression).
//! Globs work for `s3://` as well as local paths. A location that matches no file is an
//! error, not an empty table.

use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory, UrlTableFactory};
use datafusion::common::{DataFusionError, Result, plan_err};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::CreateExternalTable;
use futures::{StreamExt, TryStreamExt};
use tessera_blob::Location;
use url::Url;

use crate::datasource::csv::CsvScanFormat;
use crate::datasource::ndjson::NdjsonFormat;
use crate::datasource::parquet::CheckedParquetFormat;

/// The format of a file, by name; `None` when the name says nothing.
pub fn format_for(name: &str) -> Option<Arc<dyn FileFormat>> {
    let lower = name.to_ascii_lowercase();
    let codec = ["gz", "gzip", "zst", "zstd"]
        .into_iter()
        .find(|c| lower.ends_with(&format!(".{c}")));
    let stem = codec.map_or(lower.as_str(), |c| &lower[..lower.len() - c.len() - 1]);
    let compression = match codec {
        Some("gz" | "gzip") => FileCompressionType::GZIP,
        Some(_) => FileCompressionType::ZSTD,
        None => FileCompressionType::UNCOMPRESSED,
    };
    let ext = stem.rsplit_once('.').map(|(_, e)| e)?;
    match ext {
        "json" | "ndjson" | "jsonl" => Some(Arc::new(NdjsonFormat::default())),
        "parquet" => Some(Arc::new(CheckedParquetFormat::new(Arc::new(
            ParquetFormat::default(),
        )))),
        "csv" => Some(Arc::new(CsvScanFormat::new(Arc::new(
            CsvFormat::default()
                .with_has_header(true)
                .with_file_compression_type(compression),
        )))),
        _ => None,
    }
}

/// The listing URL of a location, with its glob (DataFusion parses globs in local paths
/// only; object-store keys are split here the same way).
pub fn listing_url(location: &Location) -> Result<ListingTableUrl> {
    let external = |e: Box<dyn std::error::Error + Send + Sync>| DataFusionError::External(e);
    match location {
        Location::Local(path) => ListingTableUrl::parse(path.to_string_lossy()),
        Location::S3 { bucket, key } => {
            let glob_at = key.find(['*', '?', '[']);
            let (prefix, glob) = match glob_at {
                Some(at) => {
                    let split = key[..at].rfind('/').map_or(0, |slash| slash + 1);
                    let pattern =
                        glob::Pattern::new(&key[split..]).map_err(|e| external(Box::new(e)))?;
                    (&key[..split], Some(pattern))
                }
                None => (key.as_str(), None),
            };
            let url = Url::parse(&format!("s3://{bucket}/{prefix}"))
                .map_err(|e| external(Box::new(e)))?;
            ListingTableUrl::try_new(url, glob)
        }
    }
}

/// Builds the table for `locations`, in `format` or else the format their names imply.
pub async fn table_for_locations(
    state: &dyn Session,
    texts: &[String],
    format: Option<Arc<dyn FileFormat>>,
    schema: Option<arrow::datatypes::SchemaRef>,
) -> Result<Arc<dyn TableProvider>> {
    let mut urls = Vec::with_capacity(texts.len());
    let mut first_file = None;
    for text in texts {
        let location = Location::parse(text).map_err(|e| DataFusionError::Plan(e.to_string()))?;
        let url = listing_url(&location)?;
        let store = state.runtime_env().object_store(&url)?;
        let files: Vec<_> = url
            .list_all_files(state, store.as_ref(), "")
            .await?
            .take(1)
            .try_collect()
            .await?;
        match files.into_iter().next() {
            Some(file) => first_file = first_file.or(Some(file)),
            None => return plan_err!("no files found at {location}"),
        }
        urls.push(url);
    }
    let Some(first_file) = first_file else {
        return plan_err!("a table needs at least one location");
    };
    let format = match format {
        Some(format) => format,
        None => texts
            .first()
            .and_then(|t| format_for(t))
            .or_else(|| format_for(first_file.location.as_ref()))
            .ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "cannot tell the format of {} from its name (expected .json, .ndjson, .jsonl, .parquet or .csv, optionally .gz or .zst); use STORED AS",
                    texts.join(", ")
                ))
            })?,
    };
    // `STORED AS PARQUET` names DataFusion's format, which panics on some bad files;
    // `STORED AS CSV` DataFusion's, whose scans do not ask S3 Select.
    let format: Arc<dyn FileFormat> = if format.downcast_ref::<ParquetFormat>().is_some() {
        Arc::new(CheckedParquetFormat::new(format))
    } else if format.downcast_ref::<CsvFormat>().is_some() {
        Arc::new(CsvScanFormat::new(format))
    } else {
        format
    };
    let options = ListingOptions::new(format).with_file_extension("");
    let config = ListingTableConfig::new_with_multi_paths(urls).with_listing_options(options);
    let config = match schema {
        Some(schema) => config.with_schema(schema),
        None => config.infer_schema(state).await?,
    };
    Ok(Arc::new(ListingTable::try_new(config)?))
}

/// Resolves `FROM '<location>'` table names.
#[derive(Debug, Default)]
pub struct LocationTableFactory {
    session: OnceLock<Weak<parking_lot::RwLock<SessionState>>>,
}

impl LocationTableFactory {
    /// A factory that is not attached to a session yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Attaches the session whose state (object stores, settings) tables are built with.
    pub fn attach(&self, state: Weak<parking_lot::RwLock<SessionState>>) {
        assert!(
            self.session.set(state).is_ok(),
            "a factory serves one session"
        );
    }
}

#[async_trait]
impl UrlTableFactory for LocationTableFactory {
    async fn try_new(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        // Only names that look like locations, or name a local file or directory (a
        // table directory in the working directory, `FROM 'events'`); anything else is
        // an unknown table.
        let looks_like_location = name.contains("://")
            || name.starts_with('/')
            || name.starts_with("./")
            || name.starts_with("../")
            || format_for(name).is_some()
            || name.contains(['*', '?']);
        let local_name = !looks_like_location && std::path::Path::new(name).exists();
        if !looks_like_location && !local_name {
            return Ok(None);
        }
        let state = self
            .session
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| DataFusionError::Internal("the session is gone".to_string()))?
            .read()
            .clone();
        // A prefix without a file format may hold a Tessera table.
        if format_for(name).is_none()
            && !name.contains(['*', '?'])
            && let Some(table) = crate::datasource::tessera::open_existing(&state, name).await?
        {
            return Ok(Some(Arc::new(table)));
        }
        // A bare name that is only a local file or directory of that name is a table
        // name first: `CREATE EXTERNAL TABLE docs ...` asks whether `docs` exists, and a
        // `docs/` folder in the working directory must not answer with an error.
        if local_name {
            return Ok(None);
        }
        table_for_locations(&state, &[name.to_string()], None, None)
            .await
            .map(Some)
    }
}

/// `CREATE EXTERNAL TABLE ... STORED AS <format> LOCATION '...'`, with globs on any
/// store and an error for locations without files.
#[derive(Debug, Default)]
pub struct ExternalTableFactory;

#[async_trait]
impl TableProviderFactory for ExternalTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> Result<Arc<dyn TableProvider>> {
        if !cmd.table_partition_cols.is_empty() {
            return plan_err!(
                "PARTITIONED BY is not supported yet; name the files with a glob instead"
            );
        }
        let Some(session) = state.as_any().downcast_ref::<SessionState>() else {
            return plan_err!("external tables need a Tessera session");
        };
        let factory = session
            .get_file_format_factory(&cmd.file_type)
            .ok_or_else(|| {
                DataFusionError::Plan(format!("unknown file type '{}'", cmd.file_type))
            })?;
        let format = factory.create(session, &cmd.options)?;
        let declared = (!cmd.schema.fields().is_empty()).then(|| Arc::clone(cmd.schema.inner()));
        table_for_locations(state, &cmd.locations, Some(format), declared).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_come_from_names() {
        let name = |n: &str| format_for(n).map(|f| f.get_ext());
        assert_eq!(name("a/b.json").as_deref(), Some("json"));
        assert_eq!(name("b.ndjson.zst").as_deref(), Some("json"));
        assert_eq!(name("b.jsonl.gz").as_deref(), Some("json"));
        assert_eq!(name("x.parquet").as_deref(), Some("parquet"));
        assert_eq!(name("x.csv").as_deref(), Some("csv"));
        assert_eq!(name("x.txt"), None);
        assert_eq!(name("noext"), None);
    }

    #[test]
    fn object_store_globs_split_into_prefix_and_pattern() {
        let url = listing_url(&Location::parse("s3://b/events/2024/*.json.zst").unwrap()).unwrap();
        assert_eq!(url.as_str(), "s3://b/events/2024/");
        assert!(url.contains(&"events/2024/x.json.zst".into(), true));
        assert!(!url.contains(&"events/2024/x.json".into(), true));
        assert!(!url.contains(&"events/2023/x.json.zst".into(), true));
        let plain = listing_url(&Location::parse("s3://b/events/a.json").unwrap()).unwrap();
        assert!(plain.contains(&"events/a.json".into(), true));
    }
}
