//! Tables named by location: `FROM 's3://bucket/events/*.json.zst'`, `FROM 'data.parquet'`,
//! and `CREATE EXTERNAL TABLE` checked for missing data.
//!
//! The format comes from the file name (`.json`, `.ndjson`, `.jsonl` -> NDJSON documents,
//! `.parquet`, `.csv`; a trailing `.gz`/`.zst` is compression). A location that matches no
//! file is an error, not an empty table.

use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory, UrlTableFactory};
use datafusion::common::{DataFusionError, Result, plan_err};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::listing_table_factory::ListingTableFactory;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::CreateExternalTable;
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectMeta;
use tessera_blob::Location;

use crate::ndjson::NdjsonFormat;

/// The format of a file, by name; `None` when the name says nothing.
pub fn format_for(name: &str) -> Option<Arc<dyn FileFormat>> {
    let lower = name.to_ascii_lowercase();
    let stem = ["gz", "gzip", "zst", "zstd"]
        .iter()
        .find_map(|c| lower.strip_suffix(&format!(".{c}")))
        .unwrap_or(&lower);
    let ext = stem.rsplit_once('.').map(|(_, e)| e)?;
    match ext {
        "json" | "ndjson" | "jsonl" => Some(Arc::new(NdjsonFormat::default())),
        "parquet" => Some(Arc::new(ParquetFormat::default())),
        "csv" => Some(Arc::new(CsvFormat::default().with_has_header(true))),
        _ => None,
    }
}

/// Lists the files of a location (at most `limit`), surfacing store errors.
async fn list_files(
    state: &dyn Session,
    url: &ListingTableUrl,
    limit: usize,
) -> Result<Vec<ObjectMeta>> {
    let store = state.runtime_env().object_store(url)?;
    url.list_all_files(state, store.as_ref(), "")
        .await?
        .take(limit)
        .try_collect()
        .await
}

/// Builds the table for a location string.
pub async fn table_for_location(state: &dyn Session, text: &str) -> Result<Arc<dyn TableProvider>> {
    let location = Location::parse(text).map_err(|e| DataFusionError::Plan(e.to_string()))?;
    let url = ListingTableUrl::parse(location.to_url_string())?;
    let files = list_files(state, &url, 1).await?;
    let Some(first) = files.first() else {
        return plan_err!("no files found at {location}");
    };
    let format = format_for(text)
        .or_else(|| format_for(first.location.as_ref()))
        .ok_or_else(|| {
            DataFusionError::Plan(format!(
                "cannot tell the format of {location} from its name (expected .json, .ndjson, .jsonl, .parquet or .csv, optionally .gz or .zst)"
            ))
        })?;
    let options = ListingOptions::new(format).with_file_extension("");
    let config = ListingTableConfig::new(url)
        .with_listing_options(options)
        .infer_schema(state)
        .await?;
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
        // Only names that look like locations; anything else is an unknown table.
        let looks_like_location = name.contains("://")
            || name.starts_with('/')
            || name.starts_with("./")
            || name.starts_with("../")
            || format_for(name).is_some();
        if !looks_like_location {
            return Ok(None);
        }
        let state = self
            .session
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| DataFusionError::Internal("the session is gone".to_string()))?
            .read()
            .clone();
        table_for_location(&state, name).await.map(Some)
    }
}

/// `CREATE EXTERNAL TABLE` that refuses locations without files.
#[derive(Debug, Default)]
pub struct CheckedTableFactory {
    inner: ListingTableFactory,
}

#[async_trait]
impl TableProviderFactory for CheckedTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> Result<Arc<dyn TableProvider>> {
        for text in &cmd.locations {
            let location =
                Location::parse(text).map_err(|e| DataFusionError::Plan(e.to_string()))?;
            let url = ListingTableUrl::parse(location.to_url_string())?;
            if list_files(state, &url, 1).await?.is_empty() {
                return plan_err!("no files found at {location}");
            }
        }
        self.inner.create(state, cmd).await
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
}
