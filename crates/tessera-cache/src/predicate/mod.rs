//! The predicate cache: per (data file, row group, normalized predicate) the rows that
//! satisfied the predicate when a scan last read that row group, so that a later scan
//! with the same or a stronger predicate skips row groups where no row did and reads
//! only the qualifying rows' pages elsewhere.
//!
//! After Redshift's predicate caching ("Predicate Caching: Query-Driven Secondary
//! Indexing for Cloud Data Warehouses", SIGMOD 2024) and ClickHouse's query condition
//! cache: cheap to keep (a few runs per entry), exact because data files never change
//! (keyed by store, path and size, [`FileId`]), and useful for every scan, including those
//! a region cache does not answer. Predicates are normalized by [`crate::semantic`]: a
//! scan whose DNF a cached predicate's DNF contains ([`Dnf::contains`]) may read the
//! cached rows, a superset of its own ([`Hit`]).
//!
//! - `ranges`: [`RowRanges`], the qualifying rows of one row group as runs.
//! - `cache`: the entries in memory, bounded by [`PredicateLimits`], LRU.
//! - `persist`: the entries in `<cache_dir>/predicates/`, atomically replaced and
//!   checksummed.
//!
//! One [`PredicateCache`] per directory per process serves every session ([`shared`]),
//! loaded from disk when first asked for; the engine persists it after its scans.
//!
//! [`Dnf::contains`]: crate::semantic::dnf::Dnf::contains

mod cache;
mod persist;
mod ranges;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

pub use cache::{FileId, Fingerprint, Hit, PredicateLimits};
pub use ranges::RowRanges;

use crate::CacheError;
use cache::Entries;

/// The name of the predicate cache's directory under a cache directory.
pub const DIR_NAME: &str = "predicates";

/// Qualifying rows per (data file, row group, predicate), in memory and, when opened
/// on a directory, persisted there.
#[derive(Debug)]
pub struct PredicateCache {
    /// Where the entries are persisted (`None`: in memory only).
    dir: Option<PathBuf>,
    limits: PredicateLimits,
    entries: Mutex<Entries>,
}

impl PredicateCache {
    /// An empty cache that is never persisted.
    pub fn in_memory(limits: PredicateLimits) -> Self {
        Self {
            dir: None,
            limits,
            entries: Mutex::new(Entries::default()),
        }
    }

    /// The cache persisted under `cache_dir` (its [`DIR_NAME`] directory, created if
    /// missing), with the entries a previous process left there; a torn file is dropped.
    pub fn open(cache_dir: &Path, limits: PredicateLimits) -> Result<Self, CacheError> {
        let dir = cache_dir.join(DIR_NAME);
        std::fs::create_dir_all(&dir).map_err(|source| CacheError::Io {
            dir: dir.clone(),
            source,
        })?;
        let entries = persist::load(&dir, &limits)?;
        Ok(Self {
            dir: Some(dir),
            limits,
            entries: Mutex::new(entries),
        })
    }

    /// What the cache knows of `groups` (row group indices) of `file` for a scan whose
    /// predicate is `query`, one answer per group: `None` where nothing cached contains
    /// it.
    pub fn lookup(&self, file: &FileId, groups: &[usize], query: &Fingerprint) -> Vec<Option<Hit>> {
        self.entries.lock().lookup(file, groups, query)
    }

    /// Keeps `ranges` (a superset of the rows of row group `group` of `file` that
    /// satisfy `predicate`), evicting the least recently used entries beyond the limits.
    pub fn record(
        &self,
        file: &FileId,
        group: u32,
        predicate: &Arc<Fingerprint>,
        ranges: RowRanges,
    ) {
        self.entries
            .lock()
            .record(file, group, predicate, ranges, &self.limits);
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The memory the entries take, in bytes (an estimate, the one bounded by
    /// [`PredicateLimits::bytes_max`]).
    pub fn bytes(&self) -> usize {
        self.entries.lock().bytes()
    }

    /// Writes the entries to the cache's directory when they changed since the last
    /// write; `Ok(false)` when there was nothing to write (or no directory).
    pub fn persist(&self) -> Result<bool, CacheError> {
        let Some(dir) = &self.dir else {
            return Ok(false);
        };
        let bytes = {
            let mut entries = self.entries.lock();
            if !entries.dirty {
                return Ok(false);
            }
            entries.dirty = false;
            persist::encode(&entries)
        };
        persist::write(dir, &bytes).inspect_err(|_| self.entries.lock().dirty = true)?;
        Ok(true)
    }

    /// [`Self::persist`], a failure reported as a warning (the cache keeps serving
    /// from memory).
    pub fn persist_or_warn(&self) {
        if let Err(e) = self.persist() {
            crate::block::warn(&format!("predicate cache not saved: {e}"));
        }
    }
}

/// The predicate caches of this process by cache directory; `None` for a directory that
/// could not be opened (warned once).
static SHARED: LazyLock<Mutex<HashMap<PathBuf, Option<Arc<PredicateCache>>>>> =
    LazyLock::new(Default::default);

/// The process's predicate cache for `cache_dir`, loaded on first use; `None` (with a
/// warning, once) when the directory is unusable. The first caller's limits stand for the
/// life of the process.
pub fn shared(cache_dir: &Path, limits: PredicateLimits) -> Option<Arc<PredicateCache>> {
    let dir = std::path::absolute(cache_dir).unwrap_or_else(|_| cache_dir.to_path_buf());
    let mut caches = SHARED.lock();
    if let Some(cache) = caches.get(&dir) {
        return cache.clone();
    }
    let opened = match PredicateCache::open(&dir, limits) {
        Ok(cache) => Some(Arc::new(cache)),
        Err(e) => {
            crate::block::warn(&format!("scans run without the predicate cache: {e}"));
            None
        }
    };
    caches.insert(dir, opened.clone());
    opened
}

#[cfg(test)]
mod tests;
