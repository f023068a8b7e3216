//! The semantic region cache in the engine (issue 19), after "Crystal: A Unified Cache
//! Storage System for Analytical Databases" (Durner, Chandramouli, Li; VLDB 2021): the
//! filtered, projected rows a Tessera-table scan produced, kept on local disk as a
//! region, answer a later scan whose filters they contain, with the query's filters run
//! again over them.
//!
//! - [`predicates`]: a scan's pushed filters as the semantic module's predicates;
//!   [`filters`]: a cover's residuals and remainder back as physical filters.
//! - [`freshness`]: whether a region of an earlier table version still answers (the
//!   later version only appended files).
//! - [`rewrite`]: expressions over the table onto a region's columns.
//! - [`store`]: regions on disk under `<tessera.cache_dir>/regions/`, bounded, LRU-2.
//! - [`scan_exec`], [`write_exec`]: reading a region, writing one while a scan streams.
//! - [`oracle`]: the oracle-region cache's background runs (Crystal's Algorithms 2 and
//!   3 over the recent scans), started by [`observe_exec`] as scans run.
//! - [`rule`]: the physical optimizer rule that chooses between them.
//! - [`dir`]: the directory seen from outside (`tessera cache stats|clear`).
//!
//! The decisions (containment, admission, eviction) are `tessera_cache::semantic`'s.
//! Settings: `tessera.region_cache` ('on' by default, effective when `tessera.cache_dir`
//! is set), `tessera.region_cache_size` (1 GiB by default) and `tessera.region_oracle`
//! ('on' by default: 95% of the size for the oracle's regions).

/// The `ExecutionPlan` methods of a plan that passes its one child, `self.input`,
/// through unchanged (its properties, no expressions of its own).
macro_rules! pass_through_methods {
    () => {
        fn properties(&self) -> &std::sync::Arc<datafusion::physical_plan::PlanProperties> {
            self.input.properties()
        }

        fn children(&self) -> Vec<&std::sync::Arc<dyn ExecutionPlan>> {
            vec![&self.input]
        }

        fn apply_expressions(
            &self,
            _f: &mut dyn FnMut(
                &std::sync::Arc<dyn datafusion::physical_expr::PhysicalExpr>,
            ) -> datafusion::common::Result<
                datafusion::common::tree_node::TreeNodeRecursion,
            >,
        ) -> datafusion::common::Result<datafusion::common::tree_node::TreeNodeRecursion> {
            Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
        }
    };
}

mod dir;
mod filters;
mod freshness;
mod observe_exec;
mod oracle;
pub(crate) mod predicates;
pub(crate) mod rewrite;
mod rule;
pub(crate) mod scan_exec;
pub(crate) mod store;
pub(crate) mod write_exec;

use std::path::PathBuf;

pub use dir::{RegionDirStats, clear_regions};
pub use rule::RegionCacheRule;

/// Why the region store of a directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RegionCacheError {
    /// A file of the store could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Another process has the directory's regions open.
    #[error("{} is in use by another process", dir.display())]
    Locked {
        /// The regions directory.
        dir: PathBuf,
    },
}

impl From<tessera_cache::CacheError> for RegionCacheError {
    /// The lock file's errors (the only `CacheError`s the region store meets).
    fn from(e: tessera_cache::CacheError) -> Self {
        match e {
            tessera_cache::CacheError::Locked { dir } => Self::Locked { dir },
            tessera_cache::CacheError::Io { dir, source } => Self::Io { path: dir, source },
            other => Self::Io {
                path: PathBuf::new(),
                source: std::io::Error::other(other.to_string()),
            },
        }
    }
}
