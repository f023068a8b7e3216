//! Where a Tessera table lives: a location URL turned into an object store and a prefix.

use std::sync::Arc;

use arrow::datatypes::{DataType, Fields};
use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use object_store::ObjectStore;
use object_store::path::Path;
use tessera_blob::Location;
use tessera_table::{Table, TableColumn};

/// The store and the key prefix of the table at `location` (`s3://bucket/tables/events`,
/// `file:///data/events` or a plain directory path).
pub fn table_root(state: &dyn Session, location: &str) -> Result<(Arc<dyn ObjectStore>, Path)> {
    let (url, prefix) = parse_root(location)?;
    Ok((state.runtime_env().object_store(&url)?, prefix))
}

/// The URL of the object store holding the table at `location` (`s3://bucket/`,
/// `file:///`), under which scans find the store in the session's registry.
pub fn table_url(location: &str) -> Result<ObjectStoreUrl> {
    parse_root(location).map(|(url, _)| url)
}

fn parse_root(location: &str) -> Result<(ObjectStoreUrl, Path)> {
    if location.contains(['*', '?']) {
        return Err(DataFusionError::Plan(format!(
            "a table location cannot contain a glob: {location}"
        )));
    }
    let parsed = Location::parse(location).map_err(|e| DataFusionError::Plan(e.to_string()))?;
    let (url, prefix) = match &parsed {
        Location::Local(dir) => {
            let prefix = Path::from_absolute_path(dir)
                .map_err(|e| DataFusionError::Plan(format!("{location}: {e}")))?;
            ("file:///".to_string(), prefix)
        }
        Location::S3 { bucket, key } => (
            format!("s3://{bucket}/"),
            Path::from(key.trim_end_matches('/')),
        ),
    };
    Ok((ObjectStoreUrl::parse(url)?, prefix))
}

/// The document column of a table whose columns are declared (by `CREATE EXTERNAL
/// TABLE` or the query of `CREATE TABLE AS`) as `fields`: no columns means `j` alone;
/// one column is the document column whatever its name; with several, the column named
/// `j` holds the JSON documents and every other one is a relational column, stored as
/// an ordinary Parquet column. Relational columns are nullable in SQL: a scan that does
/// not read one fills it with nulls.
pub fn declared_columns(fields: &Fields) -> Result<(String, Vec<TableColumn>)> {
    const DOCUMENT: &str = tessera_tiles::layout::COLUMN;
    match fields.iter().as_slice() {
        [] => Ok((DOCUMENT.to_string(), Vec::new())),
        [only] => Ok((only.name().clone(), Vec::new())),
        all => {
            let Some(json) = all.iter().find(|f| f.name() == DOCUMENT) else {
                let names: Vec<&str> = all.iter().map(|f| f.name().as_str()).collect();
                return Err(DataFusionError::Plan(format!(
                    "a Tessera table with several columns keeps its JSON documents in the \
                     column named {DOCUMENT}, but the columns are {}; name the document \
                     column {DOCUMENT} (for example `doc AS {DOCUMENT}`)",
                    names.join(", ")
                )));
            };
            if !matches!(
                json.data_type(),
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
            ) {
                return Err(DataFusionError::Plan(format!(
                    "column {DOCUMENT} of a Tessera table holds JSON text, but it has type {}",
                    json.data_type()
                )));
            }
            let columns = all
                .iter()
                .map(|f| match f.name() == DOCUMENT {
                    true => TableColumn::json(DOCUMENT),
                    false => TableColumn::relational(&f.as_ref().clone().with_nullable(true)),
                })
                .collect();
            Ok((DOCUMENT.to_string(), columns))
        }
    }
}

/// Checks that the columns a statement declares for an existing table are the table's
/// (no declaration, or a single document column, accepts any table).
pub fn check_declared(table: &Table, location: &str, fields: &Fields) -> Result<()> {
    let (_, declared) = declared_columns(fields)?;
    if declared.is_empty() || declared.as_slice() == table.columns() {
        return Ok(());
    }
    let show = |columns: &[TableColumn]| {
        columns
            .iter()
            .map(|c| format!("{} {}", c.name, c.ty))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(DataFusionError::Plan(format!(
        "the Tessera table at {location} has the columns ({}), not ({})",
        show(table.columns()),
        show(&declared)
    )))
}
