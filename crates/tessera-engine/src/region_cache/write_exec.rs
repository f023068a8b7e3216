//! `RegionWrite`: a table scan's batches written into a new region as they stream by.
//!
//! Each partition writes its own Parquet file, batch by batch (memory is bounded by the
//! writer's buffered row group, flushed at [`BUFFERED_BYTES_MAX`]). The region is
//! committed only when every partition read its input to the end without an error:
//! a LIMIT that stops early, a cancelled query or a failed read leaves it unwritten, and
//! its files are deleted when the plan is dropped.

use std::fmt;
use std::fs::{self, File};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::{RecordBatchStream, TaskContext};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};
use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use tessera_cache::semantic::region::RegionId;

use super::store::{Destination, RegionStore, Sidecar, StoredRegion, remove_quietly};
use crate::physical_plan::{only_child, subtree_metric_sum};

/// Bytes a partition's writer buffers before it writes a row group out.
const BUFFERED_BYTES_MAX: usize = 16 << 20;

/// One region being written: its files, and whether every partition finished.
#[derive(Debug)]
pub(crate) struct RegionWrite {
    store: Arc<RegionStore>,
    id: RegionId,
    destination: Destination,
    /// The sidecar without files, rows and bytes (known at the end).
    sidecar: Sidecar,
    state: Mutex<WriteState>,
}

#[derive(Debug)]
struct WriteState {
    /// Per partition: `None` until it started, then the bytes it wrote so far.
    bytes: Vec<Option<u64>>,
    /// Per partition, its rows once it finished.
    finished: Vec<Option<u64>>,
    failed: bool,
    committed: bool,
}

impl RegionWrite {
    /// The write of region `id` into `destination` over `partitions` partitions.
    pub(crate) fn new(
        store: Arc<RegionStore>,
        id: RegionId,
        destination: Destination,
        sidecar: Sidecar,
        partitions: usize,
    ) -> Self {
        let state = WriteState {
            bytes: vec![None; partitions],
            finished: vec![None; partitions],
            failed: false,
            committed: false,
        };
        Self {
            store,
            id,
            destination,
            sidecar,
            state: Mutex::new(state),
        }
    }

    fn file_name(&self, partition: usize) -> String {
        format!("r{}-p{partition}.parquet", self.id.0)
    }

    /// The writer of `partition`, unless it already ran (a plan executed again reads
    /// through without writing) or the region failed.
    fn start(&self, partition: usize, schema: &SchemaRef) -> Option<ArrowWriter<File>> {
        let mut state = self.state.lock();
        if state.failed || state.bytes.get(partition)?.is_some() {
            state.failed = true;
            return None;
        }
        state.bytes[partition] = Some(0);
        let path = self
            .store
            .path(&format!("{}.tmp", self.file_name(partition)));
        let properties = WriterProperties::builder()
            .set_compression(Compression::LZ4_RAW)
            .build();
        let writer = File::create(path).map_err(|e| e.to_string()).and_then(|f| {
            ArrowWriter::try_new(f, Arc::clone(schema), Some(properties)).map_err(|e| e.to_string())
        });
        state.failed |= writer.is_err();
        writer.map_err(|e| self.store.warn_write_failure(&e)).ok()
    }

    /// Records `bytes` written by `partition`; false when the region has failed or
    /// outgrew the largest region its cache admits.
    fn progress(&self, partition: usize, bytes: u64) -> bool {
        let bytes_max = match self.destination {
            Destination::Requested(_) => self.store.requested_bytes_max,
            Destination::Oracle => self.store.oracle_bytes_max,
        };
        let mut state = self.state.lock();
        state.bytes[partition] = Some(bytes);
        let total: u64 = state.bytes.iter().flatten().sum();
        state.failed |= total > bytes_max;
        !state.failed
    }

    fn fail(&self) {
        self.state.lock().failed = true;
    }

    /// `partition` finished with `rows`; commits the region when it was the last.
    fn finish(&self, partition: usize, rows: u64, input: &Arc<dyn ExecutionPlan>) {
        let temporary = self
            .store
            .path(&format!("{}.tmp", self.file_name(partition)));
        let renamed = fs::rename(&temporary, self.store.path(&self.file_name(partition)));
        let mut state = self.state.lock();
        state.failed |= renamed.is_err();
        state.finished[partition] = Some(rows);
        if state.failed || state.finished.iter().any(Option::is_none) {
            return;
        }
        state.committed = true;
        let rows = state.finished.iter().flatten().sum();
        drop(state);
        if let Err(e) = self.commit(rows, input) {
            self.state.lock().committed = false;
            eprintln!("warning: a region was not cached: {e}");
        }
    }

    fn commit(&self, rows: u64, input: &Arc<dyn ExecutionPlan>) -> Result<()> {
        let partitions = self.state.lock().finished.len();
        let names: Vec<String> = (0..partitions).map(|p| self.file_name(p)).collect();
        let files: Vec<PathBuf> = names.iter().map(|n| self.store.path(n)).collect();
        let mut bytes = 0;
        for file in &files {
            bytes += fs::metadata(file)?.len();
        }
        let sidecar = Sidecar {
            files: names,
            rows,
            bytes,
            remote_bytes: subtree_metric_sum(input, "bytes_scanned"),
            remote_requests: subtree_metric_sum(input, "requests"),
            ..self.sidecar.clone()
        };
        let region = StoredRegion::new(self.id, sidecar, input.schema(), files);
        self.store
            .commit(region, self.destination)
            .map_err(|e| DataFusionError::External(Box::new(e)))
    }
}

impl Drop for RegionWrite {
    fn drop(&mut self) {
        let state = self.state.get_mut();
        if state.committed {
            return;
        }
        for partition in 0..state.bytes.len() {
            let name = self.file_name(partition);
            remove_quietly(&self.store.path(&name));
            remove_quietly(&self.store.path(&format!("{name}.tmp")));
        }
    }
}

/// Writes its input's batches into a region while passing them on unchanged.
#[derive(Debug)]
pub(crate) struct RegionWriteExec {
    input: Arc<dyn ExecutionPlan>,
    write: Arc<RegionWrite>,
}

impl RegionWriteExec {
    /// `input` (a table scan outputting the region's columns and rows) writing `write`.
    pub(crate) fn new(input: Arc<dyn ExecutionPlan>, write: Arc<RegionWrite>) -> Self {
        Self { input, write }
    }
}

impl DisplayAs for RegionWriteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let sidecar = &self.write.sidecar;
        write!(
            f,
            "RegionWrite: region={} version={} columns={}",
            self.write.id.0,
            sidecar.version,
            sidecar.columns.len()
        )
    }
}

impl ExecutionPlan for RegionWriteExec {
    fn name(&self) -> &str {
        "RegionWriteExec"
    }

    pass_through_methods!();

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = only_child(children, self.name())?;
        Ok(Arc::new(Self::new(input, Arc::clone(&self.write))))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let stream = self.input.execute(partition, context)?;
        let writer = self.write.start(partition, &self.input.schema());
        Ok(Box::pin(WritingStream {
            input: stream,
            plan: Arc::clone(&self.input),
            write: Arc::clone(&self.write),
            writer,
            partition,
            rows: 0,
        }))
    }
}

/// One partition's batches, each written before it is passed on.
struct WritingStream {
    input: SendableRecordBatchStream,
    plan: Arc<dyn ExecutionPlan>,
    write: Arc<RegionWrite>,
    /// `None` once finished, or when this partition does not write.
    writer: Option<ArrowWriter<File>>,
    partition: usize,
    rows: u64,
}

impl WritingStream {
    fn write(&mut self, batch: &RecordBatch) {
        let Some(writer) = self.writer.as_mut() else {
            return;
        };
        let mut written = writer.write(batch);
        if written.is_ok() && writer.in_progress_size() > BUFFERED_BYTES_MAX {
            written = writer.flush();
        }
        let bytes = (writer.bytes_written() + writer.in_progress_size()) as u64;
        self.rows += batch.num_rows() as u64;
        if let Err(e) = &written {
            self.write.store.warn_write_failure(&e.to_string());
        }
        if written.is_err() || !self.write.progress(self.partition, bytes) {
            self.abandon();
        }
    }

    fn finish(&mut self) {
        let Some(writer) = self.writer.take() else {
            return;
        };
        match writer.close() {
            Ok(_) => self.write.finish(self.partition, self.rows, &self.plan),
            Err(e) => {
                self.write.store.warn_write_failure(&e.to_string());
                self.write.fail();
            }
        }
    }

    fn abandon(&mut self) {
        if self.writer.take().is_some() {
            self.write.fail();
        }
    }
}

impl Stream for WritingStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.input.poll_next_unpin(cx);
        match &polled {
            Poll::Ready(Some(Ok(batch))) => self.write(batch),
            Poll::Ready(Some(Err(_))) => self.abandon(),
            Poll::Ready(None) => self.finish(),
            Poll::Pending => {}
        }
        polled
    }
}

impl RecordBatchStream for WritingStream {
    fn schema(&self) -> SchemaRef {
        self.input.schema()
    }
}

impl Drop for WritingStream {
    /// Dropped before its end (LIMIT, cancel): the region is incomplete.
    fn drop(&mut self) {
        self.abandon();
    }
}
