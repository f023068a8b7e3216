//! A write cut in two for a cluster: the data files are shredded and uploaded where the
//! rows are ([`WriteFilesExec`], one task per partition on the executors, each opening
//! the table with its own store), and this session commits them all as one version
//! ([`CommitSink`]), so a distributed `INSERT` or ingest is as atomic as an embedded one.
//! A task that runs again after a lost executor writes its files again; only the files
//! of the attempts whose rows arrive are committed, the others are left for vacuum.
//! Lines a task's scans skip go, in full, to a reject part of its own, which the commit
//! gathers into the session's reject file (see [`reject_file`](super::reject_file)).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::StreamExt;
use object_store::path::Path;
use serde::{Deserialize, Serialize};
use tessera_table::{NewFile, Table};

use super::reject_file::{self, TaskRejects};
use super::sink::TesseraSink;
use crate::datasource::tessera::provider::external;
use crate::rejects::RejectLog;

/// The column of [`WriteFilesExec`]'s rows: one [`Written`] each, as JSON.
const FILE_COLUMN: &str = "file";

/// What one row of [`WriteFilesExec`] says its task wrote.
#[derive(Debug, Serialize, Deserialize)]
enum Written {
    /// A data file, uncommitted.
    File(NewFile),
    /// A reject part: the key of every line the task's scans skipped, in full.
    Rejects(String),
}

/// Writes each input partition's documents as data files of a table, uncommitted, and
/// outputs one row per file written, and one for the lines it skipped, if any.
#[derive(Debug)]
pub struct WriteFilesExec {
    input: Arc<dyn ExecutionPlan>,
    /// The store holding the table, found in the running session's registry.
    url: ObjectStoreUrl,
    /// The table's key prefix in that store.
    prefix: Path,
    /// The table's SQL schema (what the input's rows are).
    table_schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl WriteFilesExec {
    /// Writes `input`'s rows into the table under `prefix` of the store at `url`, whose
    /// SQL schema is `table_schema`.
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        url: ObjectStoreUrl,
        prefix: Path,
        table_schema: SchemaRef,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(files_schema()),
            input.properties().partitioning.clone(),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Self {
            input,
            url,
            prefix,
            table_schema,
            properties: Arc::new(properties),
        }
    }

    /// The files written by `sink`'s table from `input` instead of by the sink itself.
    pub fn for_sink(input: Arc<dyn ExecutionPlan>, sink: &TesseraSink) -> Self {
        let prefix = sink.table().prefix().clone();
        Self::new(input, sink.url().clone(), prefix, Arc::clone(sink.schema()))
    }

    /// The store URL, key prefix and SQL schema of the table written.
    pub fn target(&self) -> (&ObjectStoreUrl, &Path, &SchemaRef) {
        (&self.url, &self.prefix, &self.table_schema)
    }
}

fn files_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        FILE_COLUMN,
        DataType::Utf8,
        false,
    )]))
}

impl DisplayAs for WriteFilesExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WriteFilesExec: table={}{}", self.url, self.prefix)
    }
}

impl ExecutionPlan for WriteFilesExec {
    fn name(&self) -> &str {
        "WriteFilesExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = crate::physical_plan::only_child(children, self.name())?;
        Ok(Arc::new(Self::new(
            input,
            self.url.clone(),
            self.prefix.clone(),
            Arc::clone(&self.table_schema),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, Arc::clone(&context))?;
        let (url, prefix) = (self.url.clone(), self.prefix.clone());
        let table_schema = Arc::clone(&self.table_schema);
        let written = async move {
            let store = context.runtime_env().object_store(&url)?;
            let table = Arc::new(Table::open(store, prefix).await.map_err(external)?);
            let rejects = context.session_config().get_extension::<RejectLog>();
            let rejects = rejects.map(TaskRejects::start).transpose()?;
            let sink = TesseraSink::new(
                Arc::clone(&table),
                url,
                table_schema,
                Arc::default(),
                Arc::default(),
            )?;
            // A failed task's spill ends with its log, unread.
            let (files, _) = sink.write_files(input, &context).await?;
            let part = match rejects {
                Some(rejects) => rejects.finish(&table).await?,
                None => None,
            };
            let part = part.map(|key| Written::Rejects(key.to_string()));
            written_batch(files.into_iter().map(Written::File).chain(part))
        };
        let stream = futures::stream::once(written);
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            files_schema(),
            stream,
        )))
    }
}

fn written_batch(written: impl Iterator<Item = Written>) -> Result<RecordBatch> {
    let encoded = written
        .map(|written| serde_json::to_string(&written))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| DataFusionError::Internal(format!("a written file as JSON: {e}")))?;
    let column = Arc::new(StringArray::from(encoded));
    Ok(RecordBatch::try_new(files_schema(), vec![column])?)
}

/// Commits the files [`WriteFilesExec`] wrote, as one version of its sink's table.
#[derive(Debug)]
pub struct CommitSink {
    sink: TesseraSink,
    schema: SchemaRef,
}

impl CommitSink {
    /// Commits through `sink`, which records the write as its table's last one.
    pub fn new(sink: TesseraSink) -> Self {
        Self {
            sink,
            schema: files_schema(),
        }
    }
}

impl DisplayAs for CommitSink {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CommitSink")
    }
}

#[async_trait]
impl DataSink for CommitSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let (mut files, mut parts) = (Vec::new(), Vec::new());
        while let Some(batch) = data.next().await {
            let batch = batch?;
            let Some(column) = batch.column(0).as_string_opt::<i32>() else {
                return Err(DataFusionError::Internal(
                    "written files come as JSON text".into(),
                ));
            };
            for written in column.iter().flatten() {
                match serde_json::from_str(written) {
                    Ok(Written::File(file)) => files.push(file),
                    Ok(Written::Rejects(key)) => parts.push(reject_part(&key)?),
                    Err(e) => {
                        return Err(DataFusionError::Internal(format!(
                            "a written file's description: {e}"
                        )));
                    }
                }
            }
        }
        let rows = files.iter().map(|f| f.summary.rows).sum();
        let committed = self.sink.commit(files).await;
        // Gathered whether or not the commit landed, so that no part outlives the write.
        let log = context.session_config().get_extension::<RejectLog>();
        let gathered = reject_file::gather(
            self.sink.table().store().as_ref(),
            &parts,
            &log.unwrap_or_default(),
        )
        .await;
        committed?;
        gathered?;
        Ok(rows)
    }
}

/// The reject part at `key`, as [`WriteFilesExec`] named it.
fn reject_part(key: &str) -> Result<Path> {
    Path::parse(key)
        .map_err(|e| DataFusionError::Internal(format!("a reject part's key {key:?}: {e}")))
}

/// `plan` with its write into a Tessera table cut in two, the files written by what
/// `send` makes of [`WriteFilesExec`] (a cluster's plan) and committed here; `None`
/// when `plan` is not such a write.
pub fn split_write(
    plan: &Arc<dyn ExecutionPlan>,
    send: impl FnOnce(Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan>,
) -> Option<Arc<dyn ExecutionPlan>> {
    let exec = plan.downcast_ref::<DataSinkExec>()?;
    let sink = (exec.sink() as &dyn Any).downcast_ref::<TesseraSink>()?;
    // A sink takes one partition, merged below it; the files are written per partition.
    let input = match exec.input().downcast_ref::<CoalescePartitionsExec>() {
        Some(merge) => Arc::clone(merge.input()),
        None => Arc::clone(exec.input()),
    };
    let files = WriteFilesExec::for_sink(input, sink);
    let commit = Arc::new(CommitSink::new(sink.clone()));
    Some(Arc::new(DataSinkExec::new(
        send(Arc::new(files)),
        commit,
        None,
    )))
}
