//! The block cache against an in-memory store that counts the reads reaching it.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

use super::*;

/// An in-memory store counting the reads that reach it.
#[derive(Debug, Default)]
struct Counted {
    inner: InMemory,
    reads: AtomicUsize,
}

impl std::fmt::Display for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("counted")
    }
}

#[async_trait]
impl ObjectStore for Counted {
    async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(l, p, o).await
    }
    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(l, o).await
    }
    async fn get_opts(&self, l: &Path, o: GetOptions) -> Result<GetResult> {
        if !o.head {
            self.reads.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.get_opts(l, o).await
    }
    async fn get_ranges(&self, l: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.reads.fetch_add(ranges.len(), Ordering::Relaxed);
        self.inner.get_ranges(l, ranges).await
    }
    fn delete_stream(
        &self,
        l: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(l)
    }
    fn list(&self, p: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(p)
    }
    async fn list_with_delimiter(&self, p: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(p).await
    }
    async fn copy_opts(&self, f: &Path, t: &Path, o: CopyOptions) -> Result<()> {
        self.inner.copy_opts(f, t, o).await
    }
}

#[derive(Debug, Default)]
struct Hits(AtomicUsize);

impl CacheObserver for Hits {
    fn hit(&self, _bytes: u64) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn settings(dir: &std::path::Path) -> BlockSettings {
    BlockSettings {
        dir: dir.to_path_buf(),
        cache_bytes_max: CACHE_BYTES_MIN,
    }
}

fn content(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
}

struct Fixture {
    inner: Arc<Counted>,
    store: CachedStore,
    hits: Arc<Hits>,
    path: Path,
}

async fn fixture(cache: Arc<BlockCache>, data: Vec<u8>) -> Fixture {
    let inner = Arc::new(Counted::default());
    let path = Path::from("data/a.json");
    inner.put(&path, data.into()).await.unwrap();
    let hits = Arc::new(Hits::default());
    let store = CachedStore::new(inner.clone(), cache, "test".into()).with_observer(hits.clone());
    let meta = store.head(&path).await.unwrap();
    store.observe(&meta);
    Fixture {
        inner,
        store,
        hits,
        path,
    }
}

#[tokio::test]
async fn cached_answers_equal_the_store_and_spare_its_reads() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(BlockCache::open(&settings(dir.path())).unwrap());
    let data = content(100_000, 1);
    let f = fixture(cache, data.clone()).await;
    for round in 0..3 {
        let bytes = f.store.get_range(&f.path, 100..60_000).await.unwrap();
        assert_eq!(&bytes[..], &data[100..60_000], "round {round}");
    }
    assert_eq!(
        f.inner.reads.load(Ordering::Relaxed),
        1,
        "one read reached the store"
    );
    assert_eq!(f.hits.0.load(Ordering::Relaxed), 2);
    // A different range is a different entry.
    let other = f.store.get_range(&f.path, 0..10).await.unwrap();
    assert_eq!(&other[..], &data[0..10]);
    assert_eq!(f.inner.reads.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn an_object_overwritten_in_place_is_read_anew() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(BlockCache::open(&settings(dir.path())).unwrap());
    let f = fixture(Arc::clone(&cache), content(1000, 1)).await;
    let old = f.store.get_range(&f.path, 0..500).await.unwrap();
    let new = content(1000, 2);
    f.inner.put(&f.path, new.clone().into()).await.unwrap();
    // The next query's store saw the new entity tag in its listing.
    let next = CachedStore::new(f.inner.clone(), cache, "test".into());
    let listed: Vec<ObjectMeta> = futures::TryStreamExt::try_collect(next.list(None))
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    let bytes = next.get_range(&f.path, 0..500).await.unwrap();
    assert_eq!(&bytes[..], &new[..500]);
    assert_ne!(bytes, old);
}

#[tokio::test]
async fn immutable_ranges_mix_hits_and_one_store_read_for_the_misses() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(BlockCache::open(&settings(dir.path())).unwrap());
    let data = content(50_000, 3);
    let f = fixture(cache, data.clone()).await;
    f.store.observe_immutable(&f.path, data.len() as u64);
    let first = f
        .store
        .get_ranges(&f.path, &[0..100, 1000..2000])
        .await
        .unwrap();
    assert_eq!(f.inner.reads.load(Ordering::Relaxed), 2);
    let ranges = [0..100, 5000..9000, 1000..2000];
    let second = f.store.get_ranges(&f.path, &ranges).await.unwrap();
    assert_eq!(
        f.inner.reads.load(Ordering::Relaxed),
        3,
        "only the new range was read"
    );
    for (range, bytes) in ranges.iter().zip(&second) {
        assert_eq!(&bytes[..], &data[range.start as usize..range.end as usize]);
    }
    assert_eq!(first[1], second[2]);
}

#[tokio::test]
async fn unknown_versions_and_conditional_reads_are_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(BlockCache::open(&settings(dir.path())).unwrap());
    let inner = Arc::new(Counted::default());
    let path = Path::from("b.json");
    inner.put(&path, content(100, 4).into()).await.unwrap();
    let store = CachedStore::new(inner.clone(), cache, "test".into());
    let head = GetOptions::new().with_head(true);
    let etag = inner.inner.get_opts(&path, head).await.unwrap().meta.e_tag;
    let conditional = || GetOptions {
        if_match: etag.clone(),
        ..GetOptions::new().with_range(Some(0..10))
    };
    for _ in 0..2 {
        store
            .get_opts(&path, conditional())
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
    }
    assert_eq!(inner.reads.load(Ordering::Relaxed), 2);
}

/// Reads `range` twice so that it reaches disk (LRU-2), waits for the write and closes
/// the cache; returns the store, which still holds the object.
async fn admit_to_disk(dir: &std::path::Path, data: &[u8], range: Range<u64>) -> Arc<Counted> {
    let cache = Arc::new(BlockCache::open(&settings(dir)).unwrap());
    let f = fixture(Arc::clone(&cache), data.to_vec()).await;
    f.store.observe_immutable(&f.path, data.len() as u64);
    for _ in 0..2 {
        f.store.get_range(&f.path, range.clone()).await.unwrap();
    }
    cache.flush().await;
    f.inner
}

/// A store over `inner` through the cache in `dir` reopened, as a new process would.
fn reopened(dir: &std::path::Path, inner: &Arc<Counted>, size: u64) -> (CachedStore, Arc<Hits>) {
    let cache = Arc::new(BlockCache::open(&settings(dir)).unwrap());
    let hits = Arc::new(Hits::default());
    let store = CachedStore::new(inner.clone(), cache, "test".into()).with_observer(hits.clone());
    store.observe_immutable(&Path::from("data/a.json"), size);
    (store, hits)
}

#[tokio::test]
async fn the_disk_tier_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = content(200_000, 5);
    let inner = admit_to_disk(dir.path(), &data, 1000..150_000).await;
    let (store, hits) = reopened(dir.path(), &inner, data.len() as u64);
    let reads = inner.reads.load(Ordering::Relaxed);
    let bytes = store
        .get_range(&Path::from("data/a.json"), 1000..150_000)
        .await
        .unwrap();
    assert_eq!(&bytes[..], &data[1000..150_000]);
    assert_eq!(hits.0.load(Ordering::Relaxed), 1, "answered from disk");
    assert_eq!(inner.reads.load(Ordering::Relaxed), reads);
}

#[tokio::test]
async fn a_corrupted_cache_file_is_detected_and_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let data = content(200_000, 6);
    let inner = admit_to_disk(dir.path(), &data, 0..150_000).await;
    let mut corrupted = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("foyer-storage-")
        {
            let mut bytes = std::fs::read(&path).unwrap();
            // Flip bytes inside the entry's value (past its header), as a torn write would
            // leave them.
            for b in bytes.iter_mut().skip(4096).take(64 * 1024) {
                *b ^= 0x5a;
            }
            std::fs::write(&path, bytes).unwrap();
            corrupted += 1;
        }
    }
    assert!(corrupted > 0, "the entry was on disk");
    let (store, hits) = reopened(dir.path(), &inner, data.len() as u64);
    let bytes = store
        .get_range(&Path::from("data/a.json"), 0..150_000)
        .await
        .unwrap();
    assert_eq!(
        &bytes[..],
        &data[0..150_000],
        "the store's bytes, not the corrupt ones"
    );
    assert_eq!(hits.0.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn a_locked_or_unusable_directory_reads_uncached_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let first = shared(&settings(dir.path())).expect("the first opens it");
    assert!(
        Arc::ptr_eq(&first, &shared(&settings(dir.path())).unwrap()),
        "one per directory"
    );
    assert!(matches!(
        BlockCache::open(&settings(dir.path())),
        Err(crate::CacheError::Locked { .. })
    ));
    // Root may write anywhere, so unusable means: a path below a regular file.
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let below = file.join("cache");
    assert!(shared(&settings(&below)).is_none());
    let warnings = warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(&*below.to_string_lossy())),
        "{warnings:?}"
    );
}
