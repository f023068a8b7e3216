//! The snapshot entry of a scan's files: held ([`SnapshotFile`], a scan planned here), or,
//! for a scan decoded in another process (a Ballista executor), named: they name the
//! table version the client planned on, by its key prefix and number, instead of
//! holding the client's snapshot. The first file a task opens reads that version's
//! manifest through the receiving process's own store (its own credentials), so that
//! decoding a plan, which the scheduler does too, reads nothing, and every executor reads
//! exactly the client's files whatever was committed since.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::listing::PartitionedFile;
use object_store::ObjectStore;
use object_store::path::Path;
use tessera_table::{DataFile, Snapshot, Table};
use tokio::sync::OnceCell;

use crate::datasource::tessera::provider::external;

/// The snapshot a data file belongs to, attached to its [`PartitionedFile`].
#[derive(Debug, Clone)]
pub struct SnapshotFile {
    /// The table version being read.
    pub snapshot: Arc<Snapshot>,
    /// The file, with its deletion vector and summary.
    pub file: DataFile,
}

/// A table version named, and read once when first needed.
#[derive(Debug)]
pub struct PinnedSnapshot {
    prefix: Path,
    version: u64,
    read: OnceCell<Files>,
}

/// The version's files by their keys in the store.
#[derive(Debug)]
struct Files {
    by_key: HashMap<Path, Arc<SnapshotFile>>,
}

impl PinnedSnapshot {
    /// Version `version` of the table under `prefix`.
    pub fn new(prefix: Path, version: u64) -> Self {
        Self {
            prefix,
            version,
            read: OnceCell::new(),
        }
    }

    /// The table prefix and version of the snapshot `file` belongs to, held or pinned,
    /// as a scan sends them (`None`: not a file of a Tessera snapshot). A pinned one is
    /// sent on as it came: Ballista's scheduler decodes the client's plan and encodes
    /// its tasks again.
    pub fn named_by(file: &PartitionedFile) -> Option<(String, u64)> {
        if let Some(entry) = file.extensions.get::<SnapshotFile>() {
            let snapshot = &entry.snapshot;
            return Some((snapshot.prefix().to_string(), snapshot.version()));
        }
        let pinned = file.extensions.get::<PinnedSnapshot>()?;
        Some((pinned.prefix.to_string(), pinned.version))
    }

    /// The file at `key` of this version, read through `store` the first time.
    pub(super) async fn file(
        &self,
        store: &Arc<dyn ObjectStore>,
        key: &Path,
    ) -> Result<Arc<SnapshotFile>> {
        let files = self.read.get_or_try_init(|| self.read(store)).await?;
        files.by_key.get(key).cloned().ok_or_else(|| {
            DataFusionError::Execution(format!(
                "{key} is not a file of version {} of the table at {}",
                self.version, self.prefix
            ))
        })
    }

    async fn read(&self, store: &Arc<dyn ObjectStore>) -> Result<Files> {
        let snapshot = Table::pinned(Arc::clone(store), self.prefix.clone(), self.version)
            .await
            .map_err(external)?;
        let snapshot = Arc::new(snapshot);
        let by_key = snapshot
            .files()
            .iter()
            .map(|file| {
                let entry = SnapshotFile {
                    snapshot: Arc::clone(&snapshot),
                    file: file.clone(),
                };
                (snapshot.key(&file.path), Arc::new(entry))
            })
            .collect();
        Ok(Files { by_key })
    }
}

/// Where an opener finds the snapshot entry of a file: attached to it (a scan planned
/// in this process), or named by the version it pins (a scan decoded here).
pub(super) enum FileEntry {
    Held(Arc<SnapshotFile>),
    Pinned(Arc<PinnedSnapshot>),
}

impl FileEntry {
    pub(super) fn of(file: &PartitionedFile) -> Result<Self> {
        if let Some(entry) = file.extensions.get_arc::<SnapshotFile>() {
            return Ok(Self::Held(entry));
        }
        match file.extensions.get_arc::<PinnedSnapshot>() {
            Some(pinned) => Ok(Self::Pinned(pinned)),
            None => Err(DataFusionError::Internal(format!(
                "{} is not a file of a Tessera table snapshot",
                file.object_meta.location
            ))),
        }
    }

    pub(super) async fn resolve(
        self,
        store: &Arc<dyn ObjectStore>,
        key: &Path,
    ) -> Result<Arc<SnapshotFile>> {
        match self {
            Self::Held(entry) => Ok(entry),
            Self::Pinned(pinned) => pinned.file(store, key).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use object_store::memory::InMemory;

    #[tokio::test]
    async fn a_missing_version_is_an_error_naming_it() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let pinned = PinnedSnapshot::new(Path::from("tables/events"), 7);
        let err = pinned
            .file(&store, &Path::from("tables/events/data/x.parquet"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("tables/events"), "{err}");
    }
}
