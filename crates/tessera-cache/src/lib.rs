//! Tessera's caches of what queries read from object storage, below the engine and above
//! `tessera-blob`: the engine's raw NDJSON and Tessera-table scans read through them when a
//! session sets `tessera.cache_dir`.
//!
//! - [`block`]: the block cache, byte ranges of remote objects in memory and on local
//!   disk, keyed by (store, object, entity tag or immutable size, range), bounded in bytes,
//!   admitted to disk on a range's second access (LRU-2), checksummed so that a torn or
//!   corrupt entry is dropped and never served. It is the baseline (Alluxio's and
//!   Databricks' disk caches) that finer caches must beat.
//! - [`semantic`]: the decisions of Crystal's semantic region cache ("Crystal: A Unified
//!   Cache Storage System for Analytical Databases"): predicates normalized to DNF,
//!   containment between regions, the cover of a request by cached regions (Algorithm 1),
//!   the requested-region cache (LRU-2) and the oracle cache's planner (Algorithms 2 and
//!   3). Pure logic; the engine materializes and reads the regions.
//! - [`predicate`]: the predicate cache (Redshift's predicate caching, SIGMOD 2024):
//!   per (data file, row group, normalized predicate) the rows that qualified, in memory
//!   and in one checksummed file, so a repeated or stronger filter skips row groups with
//!   no match and reads only the matching rows' pages elsewhere.
//!
//! The disk tier is foyer's hybrid cache (`foyer` 0.22: a memory tier in front of a block
//! engine over files in one directory, every entry checksummed with XXH64 and checked on
//! load, recovery on restart that skips what does not parse). It was chosen over a cache
//! written by hand because it is maintained, runs on tokio 1 and added no second copy of
//! a crate already in the build; what it does not do, this crate adds: LRU-2 admission
//! (foyer's admission filter sees an entry only when it is written, not when it is read
//! again from memory), one cache per directory per process with a lock file against a
//! second process, and degrading to uncached reads with a warning when the directory is
//! unusable.

pub mod block;
mod error;
pub mod lock;
pub mod predicate;
pub mod semantic;

pub use error::CacheError;
