//! The block cache: byte ranges of remote objects, in memory and in files of a local
//! directory, read through [`CachedStore`].
//!
//! A range is keyed by its store, object, the object's [`Version`] (entity tag, or size
//! for immutable objects) and its bounds; it enters the memory tier on its first read
//! and the disk tier on its second (LRU-2); disk entries carry checksums, so a torn or
//! corrupted entry is a miss. One [`BlockCache`] per directory per process serves every
//! session ([`shared`]); a second process finds the directory locked and reads uncached.
//! Whatever goes wrong with the cache, reads go to the store, with a warning once.

mod cache;
mod dir;
mod ghost;
mod store;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

pub use cache::{BlockCache, BlockSettings, CACHE_BYTES_DEFAULT, CACHE_BYTES_MIN};
pub use dir::{DirStats, Lifetime, clear};
pub use store::{CacheObserver, CachedStore, Version};

/// The caches of this process by directory; `None` for a directory that could not be
/// opened (warned once, then read uncached without asking again).
static SHARED: LazyLock<Mutex<HashMap<PathBuf, Option<Arc<BlockCache>>>>> =
    LazyLock::new(Default::default);

/// Warnings so far, newest last, at most [`WARNINGS_MAX`].
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());
const WARNINGS_MAX: usize = 64;

/// The process's cache for `settings.dir`, opened on first use; `None` (with a warning,
/// once) when the directory is unusable or another process holds it. The first caller's
/// size stands for the life of the process.
pub fn shared(settings: &BlockSettings) -> Option<Arc<BlockCache>> {
    let dir = std::path::absolute(&settings.dir).unwrap_or_else(|_| settings.dir.clone());
    let mut caches = SHARED.lock();
    if let Some(cache) = caches.get(&dir) {
        return cache.clone();
    }
    let opened = match BlockCache::open(&BlockSettings {
        dir: dir.clone(),
        ..settings.clone()
    }) {
        Ok(cache) => Some(Arc::new(cache)),
        Err(e) => {
            warn(&format!("queries read uncached: {e}"));
            None
        }
    };
    caches.insert(dir, opened.clone());
    opened
}

/// Waits for the ranges admitted so far to reach disk and writes the counters, for every
/// cache this process opened: a process about to exit calls it, so that what it read
/// twice is on disk for the next one (a killed process loses only those writes).
pub async fn flush_shared() {
    let caches: Vec<Arc<BlockCache>> = SHARED.lock().values().flatten().cloned().collect();
    for cache in caches {
        cache.flush().await;
        cache.persist();
    }
}

/// Reports a cache problem: on stderr (the CLI's and servers' log) and in [`warnings`].
pub(crate) fn warn(text: &str) {
    eprintln!("warning: {text}");
    let mut warnings = WARNINGS.lock();
    if warnings.len() == WARNINGS_MAX {
        warnings.remove(0);
    }
    warnings.push(text.to_string());
}

/// The cache warnings this process reported, oldest first (the last 64).
pub fn warnings() -> Vec<String> {
    WARNINGS.lock().clone()
}

#[cfg(test)]
mod tests;
