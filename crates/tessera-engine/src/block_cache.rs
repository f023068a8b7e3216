//! The block cache (`tessera-cache`) in the engine's scans: when `tessera.cache_dir` is
//! set, raw NDJSON and Tessera-table scans of S3 objects read through a
//! [`CachedStore`], and `EXPLAIN ANALYZE` shows per scan what the cache answered:
//! `bytes_from_cache`, `requests_saved` and `request_cost_saved_nanodollars` (GETs not
//! sent, at the price the table scan's `request_cost_nanodollars` uses).

use std::path::PathBuf;
use std::sync::Arc;

use datafusion::catalog::Session;
use datafusion::datasource::object_store::ObjectStoreUrl;
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder};
use object_store::ObjectStore;
use tessera_cache::block::{self, BlockCache, BlockSettings, CacheObserver, CachedStore};

use crate::options::TesseraOptions;

/// Price of one GET request on S3 Standard ($0.0004 per 1,000; AnyBlob, VLDB 2023,
/// Table 1), in billionths of a dollar.
pub(crate) const GET_NANODOLLARS: usize = 400;

/// Names the S3 endpoint in cache keys, so that two endpoints' equal bucket names never
/// share entries; the session keeps it in its configuration.
#[derive(Debug)]
pub(crate) struct StoreEndpoint(pub(crate) String);

/// The block cache one scan reads through, and how its entries name the scan's store.
#[derive(Debug, Clone)]
pub(crate) struct ScanCache {
    cache: Arc<BlockCache>,
    store_id: String,
}

impl ScanCache {
    /// The cache for a scan of the store at `url`: `None` when `tessera.cache_dir` is
    /// unset, `tessera.block_cache` is off, the store is not S3 (local files have the OS
    /// page cache), or the directory is unusable (warned once; the scan reads uncached).
    pub(crate) fn for_scan(state: &dyn Session, url: &ObjectStoreUrl) -> Option<Self> {
        let config = state.config_options();
        let options = config.extensions.get::<TesseraOptions>()?;
        let on = options.block_cache.0 && !options.cache_dir.is_empty();
        if !on || !url.as_str().starts_with("s3://") {
            return None;
        }
        let cache = block::shared(&BlockSettings {
            dir: PathBuf::from(&options.cache_dir),
            cache_bytes_max: options.cache_size.0,
        })?;
        Some(Self {
            cache,
            store_id: store_id(state, url),
        })
    }

    /// `store` read through the cache, counting its hits into `metrics` (for
    /// `partition`, or for the whole scan when `None`).
    pub(crate) fn wrap(
        &self,
        store: Arc<dyn ObjectStore>,
        metrics: &ExecutionPlanMetricsSet,
        partition: Option<usize>,
    ) -> CachedStore {
        let observer = Arc::new(CacheMetrics::new(metrics, partition));
        CachedStore::new(store, Arc::clone(&self.cache), self.store_id.clone())
            .with_observer(observer)
    }
}

/// A scan's `EXPLAIN ANALYZE` counters of what the block cache answered.
#[derive(Debug)]
struct CacheMetrics {
    bytes_from_cache: Count,
    requests_saved: Count,
    request_cost_saved_nanodollars: Count,
}

impl CacheMetrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: Option<usize>) -> Self {
        let counter = |name: &'static str| match partition {
            Some(p) => MetricBuilder::new(set).counter(name, p),
            None => MetricBuilder::new(set).global_counter(name),
        };
        Self {
            bytes_from_cache: counter("bytes_from_cache"),
            requests_saved: counter("requests_saved"),
            request_cost_saved_nanodollars: counter("request_cost_saved_nanodollars"),
        }
    }
}

impl CacheObserver for CacheMetrics {
    fn hit(&self, bytes: u64) {
        self.bytes_from_cache.add(bytes as usize);
        self.requests_saved.add(1);
        self.request_cost_saved_nanodollars.add(GET_NANODOLLARS);
    }
}

/// Names the store at `url` among all a process reads (its endpoint and bucket), so that
/// equal paths of two stores never share a cache's entries.
pub(crate) fn store_id(state: &dyn Session, url: &ObjectStoreUrl) -> String {
    let endpoint = state
        .config()
        .get_extension::<StoreEndpoint>()
        .map_or_else(String::new, |e| e.0.clone());
    format!("{endpoint} {url}")
}
