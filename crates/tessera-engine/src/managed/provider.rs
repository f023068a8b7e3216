//! A Tessera table as a DataFusion table: scans read one snapshot's data files (deleted
//! rows removed) through [`TilesSource`], which answers JSON accesses from the shredded
//! columns; INSERT appends through [`TilesSink`]; DELETE records deletion vectors.

use std::fmt;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result, not_impl_err};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;
use tessera_table::Table;

use super::scan::{SnapshotFile, TilesSource};
use super::sink::{TilesSink, WriteProgress, WriteReport};
use crate::options::TesseraOptions;

/// A table of JSON documents stored as JSON tiles under one prefix.
pub struct ManagedTable {
    table: Arc<Table>,
    url: ObjectStoreUrl,
    schema: SchemaRef,
    progress: Arc<WriteProgress>,
    last_write: Arc<parking_lot::Mutex<Option<WriteReport>>>,
}

impl fmt::Debug for ManagedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedTable").finish_non_exhaustive()
    }
}

impl ManagedTable {
    /// The SQL view of `table`, whose store the session knows as `url`: one JSON text
    /// column named after the table's document column.
    pub fn new(table: Arc<Table>, url: ObjectStoreUrl) -> Self {
        let column = table.json_column().to_string();
        let schema = Arc::new(Schema::new(vec![Field::new(
            column,
            DataType::Utf8View,
            false,
        )]));
        Self {
            table,
            url,
            schema,
            progress: Arc::default(),
            last_write: Arc::default(),
        }
    }

    /// The name of the document column.
    pub fn schema_column(&self) -> &str {
        self.schema.field(0).name()
    }

    /// The table underneath.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// Live counters of writes into this table (for progress bars).
    pub fn progress(&self) -> &Arc<WriteProgress> {
        &self.progress
    }

    /// What the last completed write committed.
    pub fn last_write(&self) -> Option<WriteReport> {
        self.last_write.lock().clone()
    }
}

#[async_trait]
impl TableProvider for ManagedTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let snapshot = Arc::new(self.table.snapshot().await.map_err(external)?);
        let partitions = state.config().target_partitions().max(1);
        let mut groups: Vec<Vec<PartitionedFile>> =
            vec![Vec::new(); partitions.min(snapshot.files().len()).max(1)];
        let count = groups.len();
        for (i, file) in snapshot.files().iter().enumerate() {
            let key = self.table.key(&file.path);
            let mut part = PartitionedFile::new(key.to_string(), file.size);
            part.extensions.insert(SnapshotFile {
                snapshot: Arc::clone(&snapshot),
                file: file.clone(),
            });
            groups[i % count].push(part);
        }
        let typed_reads = state
            .config_options()
            .extensions
            .get::<TesseraOptions>()
            .is_none_or(|o| o.typed_reads);
        let table_schema = TableSchema::from(Arc::clone(&self.schema));
        let source = TilesSource::new(table_schema, typed_reads);
        let config = FileScanConfigBuilder::new(self.url.clone(), Arc::new(source))
            .with_file_groups(groups.into_iter().map(FileGroup::new).collect())
            .with_projection_indices(projection.cloned())?
            .with_limit(limit)
            .build();
        Ok(DataSourceExec::from_data_source(config))
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return not_impl_err!(
                "{insert_op} is not supported on Tessera tables; use INSERT INTO"
            );
        }
        let sink = TilesSink::new(
            Arc::clone(&self.table),
            Arc::clone(&self.schema),
            Arc::clone(&self.progress),
            Arc::clone(&self.last_write),
        );
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}

/// The stored batch as the table's SQL schema: its Variant column rendered as JSON text.
pub(super) fn json_batch(schema: &SchemaRef, stored: RecordBatch) -> Result<RecordBatch> {
    let text = tessera_tiles::read_json(stored.column(0).as_ref()).map_err(external)?;
    let text = arrow::compute::cast(&text, &DataType::Utf8View)?;
    Ok(RecordBatch::try_new(Arc::clone(schema), vec![text])?)
}

pub(super) fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
