//! The cache directory's own files beside foyer's: the lock file a process holds while
//! its cache is open, and the lifetime counters; and what `tessera cache stats|clear`
//! read and remove.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::ghost::History;
use crate::CacheError;
pub(crate) use crate::lock::lock_directory as lock;

/// The lifetime counters, one `name value` line each.
const COUNTERS_FILE: &str = "counters";
/// The LRU-2 history ([`History::to_bytes`]).
const HISTORY_FILE: &str = "history";
/// The prefix of foyer's files (its `FsDevice`'s partitions, one per disk block).
const DEVICE_FILE_PREFIX: &str = "foyer-storage-";

/// The LRU-2 history an earlier process left in `dir`, or an empty one.
pub(crate) fn read_history(dir: &Path, entries_max: usize) -> History {
    let bytes = std::fs::read(dir.join(HISTORY_FILE)).unwrap_or_default();
    History::from_bytes(&bytes, entries_max)
}

/// Writes the LRU-2 history to `dir` atomically.
pub(crate) fn write_history(dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace(dir, HISTORY_FILE, bytes)
}

/// Replaces `dir/name` with `bytes` through a temporary file renamed over it, so a killed
/// process leaves the old content or the new, never half of it.
fn replace(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = dir.join(format!("{name}.{}", std::process::id()));
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, dir.join(name))
}

/// What a cache answered over its lifetime, across processes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lifetime {
    /// Reads answered from memory or disk.
    pub hits: u64,
    /// Reads that went to the store.
    pub misses: u64,
    /// Bytes answered from memory or disk.
    pub bytes_from_cache: u64,
    /// Ranges written to disk (on their second access).
    pub admitted: u64,
}

impl Lifetime {
    /// The counters in `dir`; zeros when there are none or they do not parse (they are
    /// statistics only, never a reason to fail).
    pub fn read(dir: &Path) -> Self {
        let text = std::fs::read_to_string(dir.join(COUNTERS_FILE)).unwrap_or_default();
        let mut counters = Self::default();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some(name), Some(Ok(value))) = (words.next(), words.next().map(str::parse)) else {
                continue;
            };
            match name {
                "hits" => counters.hits = value,
                "misses" => counters.misses = value,
                "bytes_from_cache" => counters.bytes_from_cache = value,
                "admitted" => counters.admitted = value,
                _ => {}
            }
        }
        counters
    }

    /// Writes the counters to `dir` atomically.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let text = format!(
            "hits {}\nmisses {}\nbytes_from_cache {}\nadmitted {}\n",
            self.hits, self.misses, self.bytes_from_cache, self.admitted
        );
        replace(dir, COUNTERS_FILE, text.as_bytes())
    }

    /// Hits over all reads, when there were any.
    pub fn hit_ratio(&self) -> Option<f64> {
        let reads = self.hits + self.misses;
        (reads > 0).then(|| self.hits as f64 / reads as f64)
    }
}

/// What a cache directory holds, for `tessera cache stats`.
#[derive(Debug, Clone, PartialEq)]
pub struct DirStats {
    /// The directory.
    pub dir: PathBuf,
    /// foyer's files (disk blocks) in it.
    pub block_files: u64,
    /// Bytes those files take on disk (they are sparse: written bytes only).
    pub disk_bytes: u64,
    /// Whether a running process has the cache open now.
    pub in_use: bool,
    /// The lifetime counters.
    pub lifetime: Lifetime,
}

impl DirStats {
    /// Reads the statistics of the cache in `dir`.
    pub fn read(dir: &Path) -> Result<Self, CacheError> {
        let io = |source| CacheError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        let mut block_files = 0;
        let mut disk_bytes = 0;
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(DEVICE_FILE_PREFIX)
            {
                block_files += 1;
                // st_blocks counts 512-byte units whatever the file system's block size.
                disk_bytes += entry.metadata().map_err(io)?.blocks() * 512;
            }
        }
        let in_use = match lock(dir) {
            Ok(_) => false,
            Err(CacheError::Locked { .. }) => true,
            Err(e) => return Err(e),
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            block_files,
            disk_bytes,
            in_use,
            lifetime: Lifetime::read(dir),
        })
    }
}

/// Removes the cache in `dir` (foyer's files and the counters), unless a running process
/// has it open; returns the bytes freed.
pub fn clear(dir: &Path) -> Result<u64, CacheError> {
    let io = |source| CacheError::Io {
        dir: dir.to_path_buf(),
        source,
    };
    let _held = lock(dir)?;
    let mut freed = 0;
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = [DEVICE_FILE_PREFIX, COUNTERS_FILE, HISTORY_FILE];
        if ours.iter().any(|prefix| name.starts_with(prefix)) {
            freed += entry.metadata().map_err(io)?.blocks() * 512;
            std::fs::remove_file(entry.path()).map_err(io)?;
        }
    }
    Ok(freed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_round_trip_and_tolerate_garbage() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Lifetime::read(dir.path()), Lifetime::default());
        let counters = Lifetime {
            hits: 3,
            misses: 1,
            bytes_from_cache: 300,
            admitted: 2,
        };
        counters.write(dir.path()).unwrap();
        assert_eq!(Lifetime::read(dir.path()), counters);
        assert_eq!(counters.hit_ratio(), Some(0.75));
        std::fs::write(dir.path().join(COUNTERS_FILE), "hits x\n\0\0garbage").unwrap();
        assert_eq!(Lifetime::read(dir.path()), Lifetime::default());
    }

    #[test]
    fn a_second_lock_is_refused_and_clear_needs_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock(dir.path()).unwrap();
        assert!(matches!(lock(dir.path()), Err(CacheError::Locked { .. })));
        assert!(DirStats::read(dir.path()).unwrap().in_use);
        assert!(matches!(clear(dir.path()), Err(CacheError::Locked { .. })));
        drop(held);
        assert!(!DirStats::read(dir.path()).unwrap().in_use);
        assert_eq!(clear(dir.path()).unwrap(), 0);
    }
}
