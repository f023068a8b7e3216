//! Tessera tables: JSON ingested as JSON tiles (shredded Parquet Variant) under a table
//! prefix on object storage, with atomic commits and deletion vectors (`tessera-table`).
//!
//! They are reached as `CREATE EXTERNAL TABLE t STORED AS TESSERA LOCATION '...'`
//! (created empty when the location holds no table yet), as `FROM '<table location>'`,
//! and by `CREATE TABLE t AS SELECT ...` when `tessera.warehouse` names a location.
//! `INSERT INTO`, `DELETE FROM` and `DESCRIBE` work on them.

pub mod describe;
pub mod open;
pub mod provider;
pub mod scan;
pub mod write;

use std::sync::Arc;
use std::time::Duration;

use arrow::datatypes::Fields;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::CreateExternalTable;
pub use tessera_table::VacuumReport;
use tessera_table::{Table, TableOptions};

pub use describe::describe;
pub use open::{check_declared, declared_columns, table_root, table_url};
pub use provider::TesseraTable;
pub use write::delete::delete;
pub use write::ingest::{IngestOutcome, ingest};

use provider::external;

/// The table at `location`, created (empty, with the columns `fields` declare, see
/// [`declared_columns`]) when there is none yet.
pub async fn open_or_create(
    state: &dyn Session,
    location: &str,
    fields: &Fields,
) -> Result<TesseraTable> {
    let (store, prefix) = table_root(state, location)?;
    let url = table_url(location)?;
    let table = match Table::open(Arc::clone(&store), prefix.clone()).await {
        Ok(table) => {
            check_declared(&table, location, fields)?;
            table
        }
        Err(e) if e.is_not_found() => {
            let (json_column, columns) = declared_columns(fields)?;
            let options = TableOptions {
                json_column,
                columns,
            };
            Table::open_or_create(store, prefix, options)
                .await
                .map_err(external)?
        }
        Err(e) => return Err(external(e)),
    };
    TesseraTable::new(Arc::new(table), url)
}

/// The table at `location` if one is there (`None` when the location holds no table).
pub async fn open_existing(state: &dyn Session, location: &str) -> Result<Option<TesseraTable>> {
    let (store, prefix) = table_root(state, location)?;
    match Table::open(store, prefix).await {
        Ok(table) => Ok(Some(TesseraTable::new(
            Arc::new(table),
            table_url(location)?,
        )?)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(external(e)),
    }
}

/// Removes unreferenced data files older than `retention` from the table at `location`.
pub async fn vacuum(
    state: &dyn Session,
    location: &str,
    retention: Duration,
) -> Result<VacuumReport> {
    let Some(table) = open_existing(state, location).await? else {
        return Err(DataFusionError::Plan(format!(
            "no Tessera table at {location}"
        )));
    };
    let mut table = table.table().as_ref().clone();
    if table_url(location)?.as_str() == "file:///" {
        // Local table prefixes are absolute paths: the store's root is `/`.
        table = table.with_local_root("/".into());
    }
    table.vacuum(retention).await.map_err(external)
}

/// `CREATE EXTERNAL TABLE ... STORED AS TESSERA LOCATION '...'`.
#[derive(Debug, Default)]
pub struct TesseraTableFactory;

#[async_trait]
impl TableProviderFactory for TesseraTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> Result<Arc<dyn TableProvider>> {
        let [location] = cmd.locations.as_slice() else {
            return Err(DataFusionError::Plan(
                "a Tessera table has exactly one location".into(),
            ));
        };
        Ok(Arc::new(
            open_or_create(state, location, cmd.schema.fields()).await?,
        ))
    }
}
