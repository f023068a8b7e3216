//! The lock file a process holds on a cache directory while its cache is open, so that
//! a second process reads uncached instead of corrupting it.

use std::fs::{File, TryLockError};
use std::path::Path;

use crate::CacheError;

/// Held with an exclusive lock by the process whose cache is open. The kernel releases
/// it when that process ends, however it ends, so a killed process leaves no stale lock.
pub const LOCK_FILE: &str = "LOCK";

/// Takes `dir`'s lock for this process (the file stays locked while the returned handle
/// lives), or says that another process holds it.
pub fn lock_directory(dir: &Path) -> Result<File, CacheError> {
    let io = |source| CacheError::Io {
        dir: dir.to_path_buf(),
        source,
    };
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK_FILE))
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(CacheError::Locked {
            dir: dir.to_path_buf(),
        }),
        Err(TryLockError::Error(e)) => Err(io(e)),
    }
}
