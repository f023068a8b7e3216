//! Why a cache could not be opened or used; callers turn these into warnings and read
//! uncached, never into a failed query.

use std::path::PathBuf;

/// A cache directory that cannot serve as a cache.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The directory (or a file in it) cannot be created, opened or written.
    #[error("the cache directory {dir} is unusable: {source}")]
    Io {
        /// The cache directory.
        dir: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// Another process holds the directory's lock file.
    #[error("the cache directory {dir} is in use by another process")]
    Locked {
        /// The cache directory.
        dir: PathBuf,
    },
    /// foyer could not build or run its disk engine in the directory.
    #[error("the cache in {dir} failed: {reason}")]
    Engine {
        /// The cache directory.
        dir: PathBuf,
        /// foyer's error, as text.
        reason: String,
    },
}
