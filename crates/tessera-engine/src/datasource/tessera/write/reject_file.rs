//! Reject files: every line a write skipped as malformed (`on_error = skip`), in full,
//! as one JSON object per line (see [`RejectSpill`](crate::rejects::RejectSpill)).
//!
//! An embedded ingest spills its session's rejects to a local file and uploads it as
//! `<table>/_rejects/<version>.ndjson`. On a cluster, each task of the write spills what
//! its own scans skipped ([`TaskRejects`]) and uploads it as a reject part; the commit
//! here [`gather`]s the parts into the session's spill, so that the ingest's one reject
//! file holds every line whichever process read it.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom};
use std::sync::Arc;

use datafusion::common::{DataFusionError, Result};
use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, WriteMultipart};
use tessera_table::Table;

use crate::datasource::tessera::provider::external;
use crate::rejects::RejectLog;

/// The size of each part of a reject file's upload, and of what is read at a time.
const CHUNK_BYTES: usize = 8 << 20;

/// Streams the file `spill` from its start to `path`, a part at a time, so that a large
/// reject file never sits in memory whole.
pub(super) async fn upload(store: &dyn ObjectStore, path: &Path, mut spill: File) -> Result<()> {
    spill
        .seek(SeekFrom::Start(0))
        .map_err(DataFusionError::IoError)?;
    let upload = store.put_multipart(path).await.map_err(external)?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, CHUNK_BYTES);
    let mut buffer = vec![0; CHUNK_BYTES];
    loop {
        let n = spill.read(&mut buffer).map_err(DataFusionError::IoError)?;
        if n == 0 {
            break;
        }
        writer.wait_for_capacity(2).await.map_err(external)?;
        writer.write(&buffer[..n]);
    }
    writer.finish().await.map_err(external)?;
    Ok(())
}

/// The lines one cluster task's scans skip, spilled from its own reject log to a local
/// file while its write runs.
pub(super) struct TaskRejects {
    log: Arc<RejectLog>,
    spill: File,
}

impl TaskRejects {
    /// Spills everything `log` records from now on.
    pub(super) fn start(log: Arc<RejectLog>) -> Result<Self> {
        let spill = tempfile::tempfile().map_err(DataFusionError::IoError)?;
        let out = spill.try_clone().map_err(DataFusionError::IoError)?;
        log.start_spill(Box::new(BufWriter::new(out)));
        Ok(Self { log, spill })
    }

    /// Stops the spill and, when the task skipped lines, uploads them as a new reject
    /// part of `table`: its key.
    pub(super) async fn finish(self, table: &Table) -> Result<Option<Path>> {
        self.log.finish_spill().map_err(DataFusionError::IoError)?;
        let bytes = self
            .spill
            .metadata()
            .map_err(DataFusionError::IoError)?
            .len();
        if bytes == 0 {
            return Ok(None);
        }
        let part = table.new_reject_part();
        upload(table.store().as_ref(), &part, self.spill).await?;
        Ok(Some(part))
    }
}

/// Appends the reject parts `parts` of `store` to `log`'s spill, when it has one (an
/// ingest's), and deletes them. Their lines were counted where they were skipped; this
/// runs after the write's tasks ended, so no scan records into the spill meanwhile.
pub(super) async fn gather(store: &dyn ObjectStore, parts: &[Path], log: &RejectLog) -> Result<()> {
    for part in parts {
        if log.is_spilling() {
            let mut chunks = store.get(part).await.map_err(external)?.into_stream();
            while let Some(chunk) = chunks.next().await {
                log.spill_raw(&chunk.map_err(external)?)
                    .map_err(DataFusionError::IoError)?;
            }
        }
        store.delete(part).await.map_err(external)?;
    }
    Ok(())
}
