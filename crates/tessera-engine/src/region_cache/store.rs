//! Regions on local disk: `<tessera.cache_dir>/regions/`, one store per directory per
//! process, shared by every session, bounded in bytes with LRU-2 (`RequestedCache`).
//!
//! A region is `r<id>-p<k>.parquet` per scan partition (columns `c0..cn`, the fields as
//! the scan produced them) and the sidecar `r<id>.json`, written last. Every file is
//! written under a `.tmp` name and renamed, so a region whose sidecar exists is whole;
//! at startup anything without a sidecar, or whose files fail to open, is deleted.

use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use arrow::datatypes::SchemaRef;
use parking_lot::Mutex;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::{Deserialize, Serialize};
use tessera_cache::semantic::budget::CacheBudget;
use tessera_cache::semantic::cover::{Cover, RegionIndex, cover};
use tessera_cache::semantic::dnf::Dnf;
use tessera_cache::semantic::normalize::NormalizeLimits;
use tessera_cache::semantic::predicate::{ColumnId, Predicate};
use tessera_cache::semantic::region::{Region, RegionId, Request};
use tessera_cache::semantic::requested::{
    Admission, AdmitTicket, REQUESTED_HISTORY_LEN_DEFAULT, RequestedCache,
};

use super::RegionCacheError;

/// The version of the sidecar's layout; sidecars of another version are deleted.
pub(crate) const SIDECAR_FORMAT: u32 = 1;
/// Held with an exclusive lock while a process has the store open: the startup sweep
/// would otherwise delete another process's regions being written.
const LOCK_FILE: &str = "LOCK";

/// What a region's sidecar records: enough to serve it and to say what it saves.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Sidecar {
    /// [`SIDECAR_FORMAT`].
    pub(crate) format: u32,
    /// The table: its store URL and prefix.
    pub(crate) table: String,
    /// The snapshot version the rows come from.
    pub(crate) version: u64,
    /// The rows kept (the translated filters' AND).
    pub(crate) predicate: Predicate,
    /// The column ids of `c0..cn`, in order.
    pub(crate) columns: Vec<ColumnId>,
    /// The Parquet files, named relative to the store's directory.
    pub(crate) files: Vec<String>,
    /// Rows in all files.
    pub(crate) rows: u64,
    /// Bytes of all files on disk.
    pub(crate) bytes: u64,
    /// Bytes the scan that wrote the region read from the table's store.
    pub(crate) remote_bytes: u64,
    /// Requests the scan that wrote the region sent to the table's store.
    pub(crate) remote_requests: u64,
}

/// A region on disk that queries may read. Its files live as long as a plan holds it:
/// eviction deletes the sidecar at once (no later process serves it) and the Parquet
/// files when the last holder lets go.
#[derive(Debug)]
pub(crate) struct StoredRegion {
    /// Its id in the store.
    pub(crate) id: RegionId,
    /// What its sidecar says.
    pub(crate) sidecar: Sidecar,
    /// The schema of its files (`c0..cn`).
    pub(crate) schema: SchemaRef,
    /// Its Parquet files, absolute.
    pub(crate) files: Vec<PathBuf>,
    evicted: AtomicBool,
}

impl Drop for StoredRegion {
    fn drop(&mut self) {
        if self.evicted.load(Ordering::Acquire) {
            self.files.iter().for_each(|f| remove_quietly(f));
        }
    }
}

/// The regions of one directory.
#[derive(Debug)]
pub(crate) struct RegionStore {
    dir: PathBuf,
    /// The largest region admitted (the requested-region cache's budget), in bytes.
    pub(crate) region_bytes_max: u64,
    state: Mutex<State>,
    _lock: File,
}

#[derive(Debug)]
struct State {
    cache: RequestedCache,
    regions: HashMap<RegionId, Arc<StoredRegion>>,
    next_id: u64,
}

/// One store per directory for the whole process (sessions share it and its LRU-2
/// history); `None` remembers a directory that could not be opened (warned once).
static STORES: LazyLock<Mutex<HashMap<PathBuf, Option<Arc<RegionStore>>>>> =
    LazyLock::new(Mutex::default);

/// The store under `cache_dir` (`<cache_dir>/regions`), opened on first use with
/// `cache_bytes_max` as its bound; `None` when it cannot be (warned once).
pub(crate) fn shared(cache_dir: &Path, cache_bytes_max: u64) -> Option<Arc<RegionStore>> {
    let dir = cache_dir.join("regions");
    let mut stores = STORES.lock();
    stores
        .entry(dir.clone())
        .or_insert_with(|| match RegionStore::open(&dir, cache_bytes_max) {
            Ok(store) => Some(Arc::new(store)),
            Err(e) => {
                eprintln!("warning: the region cache is off: {e}");
                None
            }
        })
        .clone()
}

impl RegionStore {
    /// Opens `dir`, keeping the whole regions found there (within the budget) and
    /// deleting everything else.
    pub(crate) fn open(dir: &Path, cache_bytes_max: u64) -> Result<Self, RegionCacheError> {
        let io = |source| RegionCacheError::Io {
            path: dir.to_path_buf(),
            source,
        };
        fs::create_dir_all(dir).map_err(io)?;
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK_FILE))
            .map_err(io)?;
        lock.try_lock().map_err(|_| RegionCacheError::Locked {
            dir: dir.to_path_buf(),
        })?;
        let budget = CacheBudget::split(cache_bytes_max);
        // The paper shortens RR's history by the RR/OR split because the oracle cache
        // holds the long-term regions; without the oracle cache (not built yet) RR keeps
        // the full default history.
        let cache = RequestedCache::new(budget.requested_bytes, REQUESTED_HISTORY_LEN_DEFAULT);
        let store = Self {
            dir: dir.to_path_buf(),
            region_bytes_max: budget.requested_bytes,
            state: Mutex::new(State {
                cache,
                regions: HashMap::new(),
                next_id: 1,
            }),
            _lock: lock,
        };
        store.recover().map_err(io)?;
        Ok(store)
    }

    /// Loads every region whose sidecar and files open; deletes the rest.
    fn recover(&self) -> std::io::Result<()> {
        let mut kept: Vec<PathBuf> = vec![self.dir.join(LOCK_FILE)];
        let mut sidecars: Vec<(u64, PathBuf)> = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let id = name.strip_prefix('r').and_then(|n| n.strip_suffix(".json"));
            if let Some(Ok(id)) = id.map(str::parse) {
                sidecars.push((id, path.clone()));
            }
        }
        sidecars.sort();
        for (id, path) in sidecars {
            match self.load(RegionId(id), &path) {
                Some(region) => {
                    kept.push(path);
                    kept.extend(region.files.iter().cloned());
                    self.state.lock().next_id = id + 1;
                    self.restore(region);
                }
                None => remove_quietly(&path),
            }
        }
        for entry in fs::read_dir(&self.dir)? {
            let path = entry?.path();
            if !kept.contains(&path) {
                remove_quietly(&path);
            }
        }
        Ok(())
    }

    /// The region of sidecar `path`, when the sidecar parses and every file opens with
    /// the same schema.
    fn load(&self, id: RegionId, path: &Path) -> Option<StoredRegion> {
        let sidecar: Sidecar = serde_json::from_slice(&fs::read(path).ok()?).ok()?;
        if sidecar.format != SIDECAR_FORMAT || sidecar.files.is_empty() {
            return None;
        }
        let files: Vec<PathBuf> = sidecar.files.iter().map(|f| self.dir.join(f)).collect();
        let mut schema: Option<SchemaRef> = None;
        for file in &files {
            let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(file).ok()?).ok()?;
            let found = Arc::clone(reader.schema());
            if schema.as_ref().is_some_and(|s| *s != found) {
                return None;
            }
            schema = Some(found);
        }
        Some(StoredRegion {
            id,
            schema: schema?,
            files,
            sidecar,
            evicted: AtomicBool::new(false),
        })
    }

    fn restore(&self, region: StoredRegion) {
        let Some(shape) = semantic_region(&region) else {
            region.evict(&self.dir);
            return;
        };
        let mut state = self.state.lock();
        match state.cache.restore(shape) {
            Ok(evicted) => {
                state.regions.insert(region.id, Arc::new(region));
                self.evict(&mut state, evicted);
            }
            Err(_) => region.evict(&self.dir),
        }
    }

    /// The region that alone answers `request` (Crystal's Algorithm 1 when it finds a
    /// single superset), counted as a hit; `None` otherwise.
    pub(crate) fn lookup(&self, request: &Request) -> Option<Arc<StoredRegion>> {
        let mut state = self.state.lock();
        let found = match cover(request, &RegionIndex::new(), state.cache.index()) {
            Cover {
                pieces,
                remainder: None,
            } if pieces.len() == 1 => pieces[0].region,
            _ => return None,
        };
        state.cache.record_hit(found);
        state.regions.get(&found).cloned()
    }

    /// Records a miss of `request`; on its second occurrence, the id and ticket under
    /// which to write its region.
    pub(crate) fn admit(&self, request: &Request) -> Option<(RegionId, AdmitTicket)> {
        let mut state = self.state.lock();
        match state.cache.observe_miss(request) {
            Admission::Admit(ticket) => {
                let id = RegionId(state.next_id);
                state.next_id += 1;
                Some((id, ticket))
            }
            Admission::Wait => None,
        }
    }

    /// The path of a file of the store named `name`.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Makes a fully written region (files renamed into place) servable: its sidecar is
    /// written and renamed last, then it joins the cache, evicting by LRU-2 to fit.
    pub(crate) fn commit(
        &self,
        region: StoredRegion,
        ticket: AdmitTicket,
    ) -> Result<(), RegionCacheError> {
        let Some(shape) = semantic_region(&region) else {
            region.evict(&self.dir);
            return Ok(());
        };
        let sidecar = self.path(&sidecar_name(region.id));
        let temporary = sidecar.with_extension("json.tmp");
        let io = |source| RegionCacheError::Io {
            path: temporary.clone(),
            source,
        };
        let text = serde_json::to_vec(&region.sidecar).map_err(|e| io(e.into()))?;
        fs::write(&temporary, text).map_err(io)?;
        fs::rename(&temporary, &sidecar).map_err(io)?;
        let mut state = self.state.lock();
        match state.cache.insert(shape, ticket) {
            Ok(evicted) => {
                state.regions.insert(region.id, Arc::new(region));
                self.evict(&mut state, evicted);
            }
            Err(_) => region.evict(&self.dir),
        }
        Ok(())
    }

    fn evict(&self, state: &mut State, evicted: Vec<Region>) {
        for region in evicted {
            if let Some(stored) = state.regions.remove(&region.id) {
                stored.evict(&self.dir);
            }
        }
    }
}

impl StoredRegion {
    /// A region of `files` just written under `id`.
    pub(crate) fn new(
        id: RegionId,
        sidecar: Sidecar,
        schema: SchemaRef,
        files: Vec<PathBuf>,
    ) -> Self {
        Self {
            id,
            sidecar,
            schema,
            files,
            evicted: AtomicBool::new(false),
        }
    }

    /// Deletes the sidecar now and the files when the last holder drops the region.
    fn evict(&self, dir: &Path) {
        remove_quietly(&dir.join(sidecar_name(self.id)));
        self.evicted.store(true, Ordering::Release);
    }
}

/// The sidecar's file name of region `id`.
fn sidecar_name(id: RegionId) -> String {
    format!("r{}.json", id.0)
}

/// The semantic module's view of a stored region (`None` when its predicate no longer
/// normalizes within the limits).
fn semantic_region(region: &StoredRegion) -> Option<Region> {
    let sidecar = &region.sidecar;
    Some(Region {
        id: region.id,
        table: sidecar.table.clone(),
        version: sidecar.version,
        predicate: Dnf::from_predicate(&sidecar.predicate, &NormalizeLimits::default())?,
        columns: sidecar.columns.iter().cloned().collect(),
        rows: sidecar.rows,
        bytes: sidecar.bytes,
    })
}

/// Deletes a file of the cache; one already gone, or that cannot be deleted, only
/// wastes space until the next sweep.
pub(crate) fn remove_quietly(path: &Path) {
    let _ = fs::remove_file(path);
}
