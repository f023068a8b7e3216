//! One block cache: foyer's hybrid cache (memory tier, then a block engine over files in
//! the cache directory) on a runtime of its own, the LRU-2 history deciding what reaches
//! disk, the directory's lock file, and the lifetime counters `tessera cache stats` shows.

use std::collections::HashSet;
use std::fs::File;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use foyer::{
    BlockEngineConfig, DeviceBuilder, FsDeviceBuilder, HybridCache, HybridCacheBuilder,
    HybridCachePolicy, HybridCacheProperties, Location, LruConfig, PsyncIoEngineConfig,
    RecoverMode, Source, Spawner,
};
use parking_lot::Mutex;

use super::dir::{self, Lifetime};
use super::ghost::{Admission, History};
use crate::CacheError;

/// The disk budget when `tessera.cache_size` is not set.
pub const CACHE_BYTES_DEFAULT: u64 = 10 << 30;
/// The smallest disk budget accepted: [`DISK_BLOCKS_MIN`] blocks of the smallest block
/// size. Small enough to compare with the region cache at a tenth of a small table;
/// ranges above a block's room are then read past the cache.
pub const CACHE_BYTES_MIN: u64 = 16 << 20;
/// The memory tier's upper bound, whatever the disk budget: it competes with queries.
const MEMORY_BYTES_MAX: u64 = 1 << 30;
/// The memory tier's share of the disk budget (one eighth).
const MEMORY_SHARE_DIVISOR: u64 = 8;
/// A disk block (foyer's unit of writing and eviction) holds whole entries, so it bounds
/// the largest cached range: scans read at most 64 MiB at once (`MAX_BLOCK_SIZE`).
const DISK_BLOCK_BYTES_MAX: u64 = 64 << 20;
const DISK_BLOCK_BYTES_MIN: u64 = 1 << 20;
/// Disk blocks per cache at least, so eviction frees a small part of it at a time.
const DISK_BLOCKS_MIN: u64 = 16;
/// Room in a disk block for an entry's header and key, besides its bytes.
const ENTRY_OVERHEAD_BYTES: u64 = 64 << 10;
/// The LRU-2 history remembers one first access per this many bytes of disk budget
/// (a typical ranged read), between the two bounds below.
const HISTORY_BYTES_PER_ENTRY: u64 = 64 << 10;
const HISTORY_ENTRIES_MIN: u64 = 4096;
const HISTORY_ENTRIES_MAX: u64 = 1 << 20;
/// How often the lifetime counters are written to the directory, at most.
const PERSIST_INTERVAL: Duration = Duration::from_secs(2);
/// Threads of the cache's own runtime (foyer's flushers, reclaimers and disk reads), so
/// the cache outlives the runtime of the session that opened it.
const RUNTIME_THREADS: usize = 2;

/// Where a block cache lives and how large it may grow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockSettings {
    /// The cache directory (created if missing).
    pub dir: PathBuf,
    /// Bytes the cache may take on disk (`tessera.cache_size`), at least
    /// [`CACHE_BYTES_MIN`]; the memory tier takes an eighth of it, at most 1 GiB.
    pub cache_bytes_max: u64,
}

/// Byte ranges of remote objects in memory and in files of one directory.
pub struct BlockCache {
    dir: PathBuf,
    hybrid: HybridCache<String, Bytes>,
    history: Mutex<History>,
    entry_bytes_max: u64,
    lifetime: Lifetime,
    session: Counters,
    persisted_at: Mutex<Instant>,
    warned: Mutex<HashSet<&'static str>>,
    /// Held (locked) while the cache is open: a second process finds it locked.
    _lock: File,
    runtime: Option<tokio::runtime::Runtime>,
}

/// Counters of what the cache answered since it was opened in this process.
#[derive(Debug, Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    bytes_from_cache: AtomicU64,
    admitted: AtomicU64,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("dir", &self.dir)
            .finish()
    }
}

impl BlockCache {
    /// Opens (or creates) the cache in `settings.dir`, recovering what an earlier process
    /// left there; entries that do not match their checksums are skipped.
    pub fn open(settings: &BlockSettings) -> Result<Self, CacheError> {
        let dir = settings.dir.clone();
        let io = |source: std::io::Error| CacheError::Io {
            dir: dir.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let lock = dir::lock(&dir)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_THREADS)
            .thread_name("tessera-cache")
            .enable_all()
            .build()
            .map_err(io)?;
        let sizes = Sizes::of(settings.cache_bytes_max);
        let handle = runtime.handle().clone();
        // Built on a thread of its own: the caller may be on another runtime's worker,
        // where blocking on this runtime is not allowed.
        let hybrid = std::thread::scope(|scope| {
            scope
                .spawn(|| handle.block_on(build_hybrid(&dir, &sizes, handle.clone())))
                .join()
        })
        .map_err(|_| engine(&dir, "building the cache panicked".into()))?
        .map_err(|e| engine(&dir, e.to_string()))?;
        let history = dir::read_history(&dir, sizes.history_entries as usize);
        Ok(Self {
            lifetime: Lifetime::read(&dir),
            dir,
            hybrid,
            history: Mutex::new(history),
            entry_bytes_max: sizes.entry_bytes_max,
            session: Counters::default(),
            persisted_at: Mutex::new(Instant::now()),
            warned: Mutex::new(HashSet::new()),
            _lock: lock,
            runtime: Some(runtime),
        })
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The largest range the cache keeps; longer reads always go to the store.
    pub fn entry_bytes_max(&self) -> u64 {
        self.entry_bytes_max
    }

    /// The bytes under `key`, from memory or disk; `None` on a miss or when the cache
    /// failed (warned once), so the caller reads from the store.
    pub(crate) async fn get(&self, key: &str) -> Option<Bytes> {
        let entry = match self.hybrid.get(key).await {
            Ok(entry) => entry,
            Err(e) => {
                self.warn_once("read", &format!("reading from it failed ({e})"));
                None
            }
        };
        let Some(entry) = entry else {
            self.session.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let bytes = entry.value().clone();
        let hash = hash_of(key);
        match entry.source() {
            Source::Disk => self.history.lock().on_disk(hash),
            _ if self.history.lock().access(hash) == Admission::Second => {
                self.insert(key.to_string(), bytes.clone(), Location::Default);
            }
            _ => {}
        }
        self.session.hits.fetch_add(1, Ordering::Relaxed);
        self.session
            .bytes_from_cache
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.persist_now_and_then();
        Some(bytes)
    }

    /// Keeps `bytes`, just fetched from the store, under `key`: in memory on a first
    /// access, also on disk on a second one (LRU-2).
    pub(crate) fn put(&self, key: String, bytes: Bytes) {
        if bytes.len() as u64 > self.entry_bytes_max {
            return;
        }
        let location = match self.history.lock().access(hash_of(&key)) {
            Admission::First => Location::InMem,
            Admission::Second | Admission::Admitted => Location::Default,
        };
        self.insert(key, bytes, location);
        self.persist_now_and_then();
    }

    fn insert(&self, key: String, bytes: Bytes, location: Location) {
        if location != Location::InMem {
            self.session.admitted.fetch_add(1, Ordering::Relaxed);
        }
        let properties = HybridCacheProperties::default().with_location(location);
        self.hybrid.insert_with_properties(key, bytes, properties);
    }

    /// Reports a failure of this cache once per kind: the query goes on uncached.
    pub(crate) fn warn_once(&self, kind: &'static str, what: &str) {
        if self.warned.lock().insert(kind) {
            super::warn(&format!(
                "the block cache in {} is bypassed: {what}",
                self.dir.display()
            ));
        }
    }

    /// Writes the lifetime counters to the directory if the last write is old enough.
    fn persist_now_and_then(&self) {
        let mut at = self.persisted_at.lock();
        if at.elapsed() < PERSIST_INTERVAL {
            return;
        }
        *at = Instant::now();
        drop(at);
        if let Err(e) = self.lifetime_counters().write(&self.dir) {
            self.warn_once("stats", &format!("its counters cannot be written ({e})"));
        }
    }

    /// Writes the lifetime counters (earlier processes' plus this one's) and the LRU-2
    /// history to the directory, so that the next process counts on and admits a range
    /// read once by each of two processes (a CLI runs one process per statement list).
    pub fn persist(&self) {
        let history = self.history.lock().to_bytes();
        let written = self
            .lifetime_counters()
            .write(&self.dir)
            .and_then(|()| dir::write_history(&self.dir, &history));
        if let Err(e) = written {
            self.warn_once("stats", &format!("its counters cannot be written ({e})"));
        }
    }

    /// What the cache answered over its lifetime: earlier processes' counts plus this
    /// process's.
    pub fn lifetime_counters(&self) -> Lifetime {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Lifetime {
            hits: self.lifetime.hits + load(&self.session.hits),
            misses: self.lifetime.misses + load(&self.session.misses),
            bytes_from_cache: self.lifetime.bytes_from_cache + load(&self.session.bytes_from_cache),
            admitted: self.lifetime.admitted + load(&self.session.admitted),
        }
    }

    /// Waits until the ranges admitted so far are written to disk (tests, benchmarks).
    pub async fn flush(&self) {
        self.hybrid.storage().wait().await;
    }
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        self.persist();
        // Dropping a runtime blocks; the last owner may be an async task.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The bounds derived from a disk budget.
struct Sizes {
    disk_bytes: u64,
    memory_bytes: u64,
    block_bytes: u64,
    entry_bytes_max: u64,
    history_entries: u64,
}

impl Sizes {
    fn of(cache_bytes_max: u64) -> Self {
        let disk_bytes = cache_bytes_max.max(CACHE_BYTES_MIN);
        let block_bytes = (disk_bytes / DISK_BLOCKS_MIN)
            .clamp(DISK_BLOCK_BYTES_MIN, DISK_BLOCK_BYTES_MAX)
            .next_power_of_two()
            .min(DISK_BLOCK_BYTES_MAX);
        Self {
            disk_bytes,
            memory_bytes: (disk_bytes / MEMORY_SHARE_DIVISOR).min(MEMORY_BYTES_MAX),
            block_bytes,
            entry_bytes_max: block_bytes - ENTRY_OVERHEAD_BYTES,
            history_entries: (disk_bytes / HISTORY_BYTES_PER_ENTRY)
                .clamp(HISTORY_ENTRIES_MIN, HISTORY_ENTRIES_MAX),
        }
    }
}

async fn build_hybrid(
    dir: &Path,
    sizes: &Sizes,
    runtime: tokio::runtime::Handle,
) -> foyer::Result<HybridCache<String, Bytes>> {
    let device = FsDeviceBuilder::new(dir)
        .with_capacity(sizes.disk_bytes as usize)
        .build()?;
    let engine = BlockEngineConfig::new(device).with_block_size(sizes.block_bytes as usize);
    HybridCacheBuilder::new()
        .with_name("tessera-block-cache")
        .with_policy(HybridCachePolicy::WriteOnInsertion)
        .memory(sizes.memory_bytes as usize)
        .with_eviction_config(LruConfig::default())
        .with_weighter(|key: &String, value: &Bytes| key.len() + value.len())
        .storage()
        .with_io_engine_config(PsyncIoEngineConfig::new())
        .with_engine_config(engine)
        .with_recover_mode(RecoverMode::Quiet)
        .with_spawner(Spawner::from(runtime))
        .build()
        .await
}

fn engine(dir: &Path, reason: String) -> CacheError {
    CacheError::Engine {
        dir: dir.to_path_buf(),
        reason,
    }
}

fn hash_of(key: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_budget_within_bounds() {
        let small = Sizes::of(1);
        assert_eq!(small.disk_bytes, CACHE_BYTES_MIN);
        assert_eq!(small.block_bytes, DISK_BLOCK_BYTES_MIN);
        assert_eq!(small.memory_bytes, CACHE_BYTES_MIN / 8);
        let large = Sizes::of(CACHE_BYTES_DEFAULT);
        assert_eq!(large.block_bytes, DISK_BLOCK_BYTES_MAX);
        assert_eq!(large.memory_bytes, MEMORY_BYTES_MAX);
        assert!(
            large.entry_bytes_max >= 8 << 20,
            "an NDJSON scan block fits"
        );
        assert_eq!(large.history_entries, (10 << 30) / HISTORY_BYTES_PER_ENTRY);
    }
}
