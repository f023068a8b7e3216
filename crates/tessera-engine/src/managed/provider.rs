//! A Tessera table as a DataFusion table: scans read one snapshot's data files (deleted
//! rows removed) and turn the shredded Variant column back into JSON text, so every JSON
//! function works on it; INSERT appends through [`TilesSink`]; DELETE records deletion
//! vectors.

use std::fmt;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result, not_impl_err};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use futures::{StreamExt, TryStreamExt};
use tessera_table::{DataFile, Snapshot, Table};

use super::sink::{TilesSink, WriteProgress, WriteReport};

/// A table of JSON documents stored as JSON tiles under one prefix.
pub struct ManagedTable {
    table: Arc<Table>,
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
    /// The SQL view of `table`: one JSON text column named after the table's document
    /// column.
    pub fn new(table: Arc<Table>) -> Self {
        let column = table.json_column().to_string();
        let schema = Arc::new(Schema::new(vec![Field::new(
            column,
            DataType::Utf8View,
            false,
        )]));
        Self {
            table,
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
        let mut groups: Vec<Vec<DataFile>> =
            vec![Vec::new(); partitions.min(snapshot.files().len()).max(1)];
        let count = groups.len();
        for (i, file) in snapshot.files().iter().enumerate() {
            groups[i % count].push(file.clone());
        }
        let streams = groups
            .into_iter()
            .map(|files| {
                Arc::new(FilesStream {
                    snapshot: Arc::clone(&snapshot),
                    files,
                    schema: Arc::clone(&self.schema),
                }) as Arc<dyn PartitionStream>
            })
            .collect();
        Ok(Arc::new(StreamingTableExec::try_new(
            Arc::clone(&self.schema),
            streams,
            projection,
            Vec::new(),
            false,
            limit,
        )?))
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

/// One partition of a scan: its files in turn, each as JSON text batches.
struct FilesStream {
    snapshot: Arc<Snapshot>,
    files: Vec<DataFile>,
    schema: SchemaRef,
}

impl fmt::Debug for FilesStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FilesStream({} files)", self.files.len())
    }
}

impl PartitionStream for FilesStream {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let snapshot = Arc::clone(&self.snapshot);
        let schema = Arc::clone(&self.schema);
        let files = self.files.clone();
        let batches = futures::stream::iter(files)
            .then(move |file| {
                let snapshot = Arc::clone(&snapshot);
                async move { snapshot.read_file(&file, true).await.map_err(external) }
            })
            .map_ok(|stream| stream.map_err(external))
            .try_flatten()
            .map({
                let schema = Arc::clone(&schema);
                move |batch| json_batch(&schema, batch?)
            });
        Box::pin(RecordBatchStreamAdapter::new(schema, batches))
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
