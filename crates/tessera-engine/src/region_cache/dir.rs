//! The regions directory seen from outside a running store, for `tessera cache
//! stats|clear`: how many regions it holds, their bytes and lifetime answers, and
//! emptying it (refused while a process has it open, as the block cache's clear is).

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use super::RegionCacheError;
use tessera_cache::lock::{LOCK_FILE, lock_directory};

use super::store::{Sidecar, read_hits};

/// What the regions directory under a cache directory holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionDirStats {
    /// `<cache_dir>/regions`.
    pub dir: PathBuf,
    /// Whole regions (those with a sidecar).
    pub regions: u64,
    /// Bytes of their files, as their sidecars record them.
    pub bytes: u64,
    /// Scans answered from regions over the directory's lifetime.
    pub hits: u64,
    /// Whether a running process has the regions open now.
    pub in_use: bool,
}

/// The regions directory of `cache_dir`.
fn regions_dir(cache_dir: &Path) -> PathBuf {
    cache_dir.join("regions")
}

impl RegionDirStats {
    /// Reads the regions under `cache_dir` (none when it has no regions directory).
    pub fn read(cache_dir: &Path) -> Result<Self, RegionCacheError> {
        let dir = regions_dir(cache_dir);
        let mut stats = Self {
            dir: dir.clone(),
            regions: 0,
            bytes: 0,
            hits: read_hits(&dir),
            in_use: false,
        };
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(stats),
            Err(source) => return Err(RegionCacheError::Io { path: dir, source }),
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let sidecar = fs::read(&path).ok();
            let sidecar = sidecar.and_then(|t| serde_json::from_slice::<Sidecar>(&t).ok());
            if let Some(sidecar) = sidecar {
                stats.regions += 1;
                stats.bytes += sidecar.bytes;
            }
        }
        stats.in_use = lock(&dir).is_err();
        Ok(stats)
    }
}

/// The directory's lock, held; an error when another process holds it.
fn lock(dir: &Path) -> Result<File, RegionCacheError> {
    lock_directory(dir).map_err(RegionCacheError::from)
}

/// Deletes every region under `cache_dir` and its lifetime answers; the bytes freed.
pub fn clear_regions(cache_dir: &Path) -> Result<u64, RegionCacheError> {
    let dir = regions_dir(cache_dir);
    if !dir.exists() {
        return Ok(0);
    }
    let _held = lock(&dir)?;
    let io = |source| RegionCacheError::Io {
        path: dir.clone(),
        source,
    };
    let mut freed = 0;
    for entry in fs::read_dir(&dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if entry.file_name() == LOCK_FILE {
            continue;
        }
        freed += entry.metadata().map_err(io)?.len();
        fs::remove_file(entry.path()).map_err(io)?;
    }
    Ok(freed)
}
