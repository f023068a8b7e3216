//! Regions on local disk: `<tessera.cache_dir>/regions/`, one store per directory per
//! process, shared by every session, bounded in bytes. As in "Crystal: A Unified Cache
//! Storage System for Analytical Databases" there are two caches: the requested
//! regions, written by scans seen twice and evicted by LRU-2 (`RequestedCache`), and the
//! oracle regions a background oracle chooses (95% of the bytes unless
//! `tessera.region_oracle` is off).
//!
//! A region is `r<id>-p<k>.parquet` per scan partition (columns `c0..cn`, the fields as
//! the scan produced them) and the sidecar `r<id>.json`, written last. Every file is
//! written under a `.tmp` name and renamed, so a region whose sidecar exists is whole;
//! at startup anything without a sidecar, or whose files fail to open, is deleted.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use arrow::datatypes::SchemaRef;
use parking_lot::Mutex;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::{Deserialize, Serialize};
use tessera_cache::lock::{LOCK_FILE, lock_directory};
use tessera_cache::semantic::budget::CacheBudget;
use tessera_cache::semantic::cover::{Cover, RegionIndex, cover};
use tessera_cache::semantic::dnf::Dnf;
use tessera_cache::semantic::normalize::NormalizeLimits;
use tessera_cache::semantic::oracle::history::HISTORY_LEN_DEFAULT;
use tessera_cache::semantic::predicate::{ColumnId, Predicate};
use tessera_cache::semantic::region::{Region, RegionId, Request};
use tessera_cache::semantic::requested::{
    Admission, AdmitTicket, REQUESTED_HISTORY_LEN_DEFAULT, RequestedCache,
};

use super::RegionCacheError;
use super::freshness::{Freshness, SourceFile, freshness};

/// The version of the sidecar's layout; sidecars of another version are deleted.
pub(crate) const SIDECAR_FORMAT: u32 = 2;
/// The scans answered from the directory's regions over its lifetime (decimal text),
/// for `tessera cache stats`.
const HITS_FILE: &str = "HITS";

/// The lifetime answers recorded in `dir` (0 when missing or unreadable).
pub(crate) fn read_hits(dir: &Path) -> u64 {
    let text = fs::read_to_string(dir.join(HITS_FILE)).unwrap_or_default();
    text.trim().parse().unwrap_or(0)
}

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
    /// The data files of `version` (with their deletion vectors): a later version
    /// keeping all of them as they were only appended, and the region still answers.
    pub(crate) source_files: Vec<SourceFile>,
    /// Whether the oracle chose the region (else a scan requested it twice).
    #[serde(default)]
    pub(crate) oracle: bool,
}

impl Sidecar {
    /// The sidecar of a region about to be written (files, rows and bytes known later).
    pub(crate) fn unwritten(
        table: String,
        version: u64,
        predicate: Predicate,
        columns: Vec<ColumnId>,
        source_files: Vec<SourceFile>,
        oracle: bool,
    ) -> Self {
        Self {
            format: SIDECAR_FORMAT,
            table,
            version,
            predicate,
            columns,
            files: Vec::new(),
            rows: 0,
            bytes: 0,
            remote_bytes: 0,
            remote_requests: 0,
            source_files,
            oracle,
        }
    }
}

/// The cache a region is written into.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Destination {
    /// The requested-region cache, admitted by LRU-2 with this ticket.
    Requested(AdmitTicket),
    /// The oracle-region cache.
    Oracle,
}

/// Regions that answer a scan together (a cover), and what is left to scan remotely.
#[derive(Debug)]
pub(crate) struct Answer {
    /// Each region with the filter (over the table's columns) that keeps its rows
    /// disjoint from the pieces before it; `None` for a lone region that holds all.
    pub(crate) pieces: Vec<(Arc<StoredRegion>, Option<Predicate>)>,
    /// The rows of the regions' files no piece holds, to scan remotely.
    pub(crate) remainder: Option<Predicate>,
    /// Files of the scanned version the regions' version did not have (scanned
    /// remotely with the scan's own filters); empty when the versions are the same.
    pub(crate) appended: HashSet<String>,
}

/// A region on disk that queries may read. Its files live as long as a plan or a running
/// stream holds it: eviction deletes the sidecar at once (no later process serves it)
/// and the Parquet files when the last holder lets go.
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
    /// The requested-region cache's budget, in bytes: the largest region it admits.
    pub(crate) requested_bytes_max: u64,
    /// The oracle-region cache's budget, in bytes (0 with the oracle off).
    pub(crate) oracle_bytes_max: u64,
    /// Whether a failed write was reported (once per process: a full disk fails them all).
    warned: AtomicBool,
    state: Mutex<State>,
    _lock: File,
}

#[derive(Debug)]
struct State {
    cache: RequestedCache,
    /// The oracle-region cache's regions and the bytes they take.
    oracle: RegionIndex,
    oracle_bytes: u64,
    regions: HashMap<RegionId, Arc<StoredRegion>>,
    next_id: u64,
    /// Scans answered over the directory's lifetime.
    hits: u64,
}

/// One store per directory for the whole process (sessions share it and its LRU-2
/// history); `None` remembers a directory that could not be opened (warned once).
static STORES: LazyLock<Mutex<HashMap<PathBuf, Option<Arc<RegionStore>>>>> =
    LazyLock::new(Mutex::default);

/// The store under `cache_dir` (`<cache_dir>/regions`), opened on first use with
/// `cache_bytes_max` as its bound, with or without the `oracle` cache; `None` when it
/// cannot be (warned once).
pub(crate) fn shared(
    cache_dir: &Path,
    cache_bytes_max: u64,
    oracle: bool,
) -> Option<Arc<RegionStore>> {
    let dir = cache_dir.join("regions");
    let mut stores = STORES.lock();
    stores
        .entry(dir.clone())
        .or_insert_with(|| match RegionStore::open(&dir, cache_bytes_max, oracle) {
            Ok(store) => Some(Arc::new(store)),
            Err(e) => {
                eprintln!("warning: the region cache is off: {e}");
                None
            }
        })
        .clone()
}

impl RegionStore {
    /// Opens `dir`, keeping the whole regions found there (within the budgets) and
    /// deleting everything else.
    pub(crate) fn open(
        dir: &Path,
        cache_bytes_max: u64,
        oracle: bool,
    ) -> Result<Self, RegionCacheError> {
        let io = |source| RegionCacheError::Io {
            path: dir.to_path_buf(),
            source,
        };
        fs::create_dir_all(dir).map_err(io)?;
        let lock = lock_directory(dir)?;
        // The paper shortens RR's history by the RR/OR split because the oracle cache
        // holds the long-term regions; without the oracle cache RR keeps the full
        // default history.
        let (budget, history_len) = if oracle {
            let budget = CacheBudget::split(cache_bytes_max);
            (budget, budget.requested_history_len(HISTORY_LEN_DEFAULT))
        } else {
            let budget = CacheBudget::split_with(cache_bytes_max, 0);
            (budget, REQUESTED_HISTORY_LEN_DEFAULT)
        };
        let store = Self {
            dir: dir.to_path_buf(),
            requested_bytes_max: budget.requested_bytes,
            oracle_bytes_max: budget.oracle_bytes,
            warned: AtomicBool::new(false),
            state: Mutex::new(State {
                cache: RequestedCache::new(budget.requested_bytes, history_len),
                oracle: RegionIndex::new(),
                oracle_bytes: 0,
                regions: HashMap::new(),
                next_id: 1,
                hits: read_hits(dir),
            }),
            _lock: lock,
        };
        store.recover().map_err(io)?;
        Ok(store)
    }

    /// Loads every region whose sidecar and files open; deletes the rest.
    fn recover(&self) -> std::io::Result<()> {
        let mut kept: Vec<PathBuf> = vec![self.dir.join(LOCK_FILE), self.dir.join(HITS_FILE)];
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
        if region.sidecar.oracle {
            self.insert_oracle(&mut state, shape, region);
            return;
        }
        match state.cache.restore(shape) {
            Ok(evicted) => {
                state.regions.insert(region.id, Arc::new(region));
                self.evict(&mut state, evicted);
            }
            Err(_) => region.evict(&self.dir),
        }
    }

    /// Adds an oracle region when it fits the oracle's budget; deletes it otherwise
    /// (the oracle's plan fits, but its sizes are estimates).
    fn insert_oracle(&self, state: &mut State, shape: Region, region: StoredRegion) {
        if state.oracle_bytes + shape.bytes > self.oracle_bytes_max {
            region.evict(&self.dir);
            return;
        }
        state.oracle_bytes += shape.bytes;
        state.oracle.insert(shape);
        state.regions.insert(region.id, Arc::new(region));
    }

    /// Deletes region `id` from whichever cache holds it.
    fn forget(&self, state: &mut State, id: RegionId) {
        state.cache.remove(id);
        if let Some(shape) = state.oracle.remove(id) {
            state.oracle_bytes -= shape.bytes;
        }
        if let Some(region) = state.regions.remove(&id) {
            region.evict(&self.dir);
        }
    }

    /// The oracle cache's regions, as the oracle plans with them.
    pub(crate) fn oracle_regions(&self) -> Vec<Region> {
        self.state.lock().oracle.regions().cloned().collect()
    }

    /// Deletes oracle regions from `unwanted`, last first, until `bytes` more fit the
    /// oracle cache; the deleted ones leave `unwanted`. The oracle deletes only to make
    /// room: a region it no longer wants still answers until its replacement is written.
    pub(crate) fn make_oracle_room(&self, bytes: u64, unwanted: &mut Vec<RegionId>) {
        let mut state = self.state.lock();
        while state.oracle_bytes.saturating_add(bytes) > self.oracle_bytes_max {
            let Some(id) = unwanted.pop() else { break };
            if state.oracle.regions().any(|r| r.id == id) {
                self.forget(&mut state, id);
            }
        }
    }

    /// The regions stored for `table` (both caches), for the oracle's size estimates.
    pub(crate) fn table_regions(&self, table: &str) -> Vec<Arc<StoredRegion>> {
        let state = self.state.lock();
        let of_table = state.regions.values().filter(|r| r.sidecar.table == table);
        of_table.cloned().collect()
    }

    /// A fresh region id.
    pub(crate) fn next_id(&self) -> RegionId {
        let mut state = self.state.lock();
        let id = RegionId(state.next_id);
        state.next_id += 1;
        id
    }

    /// The regions that answer `request` (a scan of `files`, its version's data
    /// files): Crystal's Algorithm 1 over the regions of the request's version, and of
    /// every earlier version it only appended to; the best cover wins (whole before
    /// partial, the same version before an earlier one, fewer pieces before more).
    /// Regions that version made stale are dropped on the way. `None` when no region
    /// holds any of its rows.
    pub(crate) fn lookup(&self, request: &Request, files: &[SourceFile]) -> Option<Answer> {
        let mut state = self.state.lock();
        let mut best: Option<(Cover, HashSet<String>)> = None;
        for (version, appended) in self.fresh_versions(&mut state, request, files) {
            let at = Request {
                version,
                ..request.clone()
            };
            let found = cover(&at, &state.oracle, state.cache.index());
            if found.pieces.is_empty() {
                continue;
            }
            if best
                .as_ref()
                .is_none_or(|(c, a)| rank(&found, &appended) > rank(c, a))
            {
                best = Some((found, appended));
            }
        }
        let (found, appended) = best?;
        let lone = found.pieces.len() == 1 && found.remainder.is_none();
        let pieces = found
            .pieces
            .into_iter()
            .map(|p| {
                let region = Arc::clone(state.regions.get(&p.region)?);
                Some((region, (!lone).then_some(p.residual)))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Answer {
            pieces,
            remainder: found.remainder,
            appended,
        })
    }

    /// The versions of the request's table whose regions may answer it, each with the
    /// files added since; drops the regions of versions it made stale.
    fn fresh_versions(
        &self,
        state: &mut State,
        request: &Request,
        files: &[SourceFile],
    ) -> Vec<(u64, HashSet<String>)> {
        let mut verdicts: HashMap<u64, Freshness> = HashMap::new();
        let mut stale = Vec::new();
        for region in state.regions.values() {
            let sidecar = &region.sidecar;
            if sidecar.table != request.table {
                continue;
            }
            let verdict = verdicts.entry(sidecar.version).or_insert_with(|| {
                freshness(
                    sidecar.version,
                    &sidecar.source_files,
                    request.version,
                    files,
                )
            });
            if *verdict == Freshness::Stale {
                stale.push(region.id);
            }
        }
        for id in stale {
            self.forget(state, id);
        }
        let mut out: Vec<(u64, HashSet<String>)> = verdicts
            .into_iter()
            .filter_map(|(version, verdict)| match verdict {
                Freshness::Current => Some((version, HashSet::new())),
                Freshness::Appended(added) => Some((version, added)),
                Freshness::Stale | Freshness::Older => None,
            })
            .collect();
        out.sort_by_key(|(version, _)| std::cmp::Reverse(*version));
        out
    }

    /// Counts a hit on every region of `answer` (LRU-2 ranks them as just used), and
    /// one answer in the directory's lifetime count (a lost update only undercounts).
    pub(crate) fn record_hits(&self, answer: &Answer) {
        let mut state = self.state.lock();
        for (region, _) in &answer.pieces {
            state.cache.record_hit(region.id);
        }
        state.hits += 1;
        let _ = fs::write(self.dir.join(HITS_FILE), state.hits.to_string());
    }

    /// Records a miss of `request`; on its second occurrence, the id and ticket under
    /// which to write its region.
    pub(crate) fn admit(&self, request: &Request) -> Option<(RegionId, AdmitTicket)> {
        let admission = self.state.lock().cache.observe_miss(request);
        match admission {
            Admission::Admit(ticket) => Some((self.next_id(), ticket)),
            Admission::Wait => None,
        }
    }

    /// Reports, once per process, that a region could not be written (a full or
    /// unwritable disk): the queries go on, reading uncached.
    pub(crate) fn warn_write_failure(&self, error: &str) {
        if !self.warned.swap(true, Ordering::AcqRel) {
            let dir = self.dir.display();
            eprintln!("warning: regions are not cached in {dir}: {error}; queries read uncached");
        }
    }

    /// The store's directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of a file of the store named `name`.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Makes a fully written region (files renamed into place) servable: its sidecar is
    /// written and renamed last, then it joins its cache: the requested regions evict by
    /// LRU-2 to fit, an oracle region that does not fit is deleted.
    pub(crate) fn commit(
        &self,
        region: StoredRegion,
        destination: Destination,
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
        let Destination::Requested(ticket) = destination else {
            self.insert_oracle(&mut state, shape, region);
            return Ok(());
        };
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

/// How good a cover is: whole before partial, from the scanned version before an earlier
/// one (whose appended files need scanning), fewer pieces before more (each piece is a
/// read of its own, and Crystal's Algorithm 1 prefers few).
fn rank(cover: &Cover, appended: &HashSet<String>) -> (bool, bool, usize) {
    (
        cover.remainder.is_none(),
        appended.is_empty(),
        usize::MAX - cover.pieces.len(),
    )
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
