//! [`CachedStore`]: an `object_store::ObjectStore` whose ranged reads of known object
//! versions are answered from a [`BlockCache`] when it holds them, and fill it when not.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    Attributes, CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, RenameOptions, Result,
};
use parking_lot::RwLock;

use super::BlockCache;

/// Which version of an object a cached range belongs to: a range is served only for the
/// version the reader saw, so an object overwritten in place is never answered with its
/// old bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Version {
    /// An object that may be overwritten in place (raw NDJSON): its entity tag as this
    /// query's listing or HEAD saw it.
    ETag(String),
    /// An object never rewritten under its name (a Tessera table's data and side files,
    /// whose names are unique): its size, as the table's manifest gives it.
    Immutable {
        /// The object's size in bytes.
        size: u64,
    },
}

impl Version {
    /// Whether a store's answer about an object (`meta`) is of this version; ranges of
    /// any other are not cached.
    fn matches(&self, meta: &ObjectMeta) -> bool {
        match self {
            Version::ETag(etag) => meta.e_tag.as_deref() == Some(etag),
            Version::Immutable { size } => meta.size == *size,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::ETag(etag) => write!(f, "etag:{etag}"),
            Version::Immutable { size } => write!(f, "size:{size}"),
        }
    }
}

/// Told of every ranged read the cache answered, so a scan can show what it saved.
pub trait CacheObserver: Send + Sync + fmt::Debug {
    /// A read of `bytes` bytes was answered from the cache instead of the store.
    fn hit(&self, bytes: u64);
}

/// An object version a reader observed, with what a cached answer reports as its meta.
#[derive(Debug, Clone)]
struct Known {
    version: Version,
    meta: ObjectMeta,
}

type Objects = Arc<RwLock<HashMap<Path, Known>>>;

/// A store reading ranges through a block cache. Only ranges of objects whose version it
/// knows are cached: versions told with [`CachedStore::observe`] and
/// [`CachedStore::observe_immutable`], or learnt from listings, HEADs and GETs passing
/// through it. Make one per scan (or query), so that what it learnt is what that query
/// saw. Failures of the cache are misses (warned once), never errors.
#[derive(Debug, Clone)]
pub struct CachedStore {
    inner: Arc<dyn ObjectStore>,
    cache: Arc<BlockCache>,
    /// Names the store among all a process reads (endpoint, bucket), so equal paths of
    /// two stores never share entries.
    store_id: String,
    objects: Objects,
    observer: Option<Arc<dyn CacheObserver>>,
}

impl CachedStore {
    /// Wraps `inner`, known in cache keys as `store_id` (say `http://minio:9000 s3://b`).
    pub fn new(inner: Arc<dyn ObjectStore>, cache: Arc<BlockCache>, store_id: String) -> Self {
        Self {
            inner,
            cache,
            store_id,
            objects: Objects::default(),
            observer: None,
        }
    }

    /// The same store telling `observer` of its hits (what it learnt stays shared).
    pub fn with_observer(&self, observer: Arc<dyn CacheObserver>) -> Self {
        Self {
            observer: Some(observer),
            ..self.clone()
        }
    }

    /// Records the version of `meta.location` this reader saw (its entity tag); without
    /// one the object's ranges are not cached.
    pub fn observe(&self, meta: &ObjectMeta) {
        learn(&self.objects, meta);
    }

    /// Records that `location` is immutable and `size` bytes long.
    pub fn observe_immutable(&self, location: &Path, size: u64) {
        let meta = ObjectMeta {
            location: location.clone(),
            last_modified: DateTime::<Utc>::UNIX_EPOCH,
            size,
            e_tag: None,
            version: None,
        };
        let known = Known {
            version: Version::Immutable { size },
            meta,
        };
        self.objects.write().insert(location.clone(), known);
    }

    /// The cache key of `range` of the object `known` is a version of.
    fn key(&self, known: &Known, range: &Range<u64>) -> String {
        format!(
            "{}\n{}\n{}\n{}-{}",
            self.store_id, known.meta.location, known.version, range.start, range.end
        )
    }

    /// The known version of `location`, if `range` of it may be cached.
    fn cacheable(&self, location: &Path, range: &Range<u64>) -> Option<Known> {
        let length = range.end.checked_sub(range.start)?;
        if length == 0 || length > self.cache.entry_bytes_max() {
            return None;
        }
        self.objects.read().get(location).cloned()
    }

    /// `range` from the cache, counted as a hit; `None` on a miss.
    async fn lookup(&self, key: &str, range: &Range<u64>) -> Option<Bytes> {
        let bytes = self.cache.get(key).await?;
        // An entry of another length is not this range (it cannot be, as the key names
        // the range; this guards against a bug ever serving wrong bytes).
        if bytes.len() as u64 != range.end - range.start {
            self.cache
                .warn_once("length", "an entry did not have its range's length");
            return None;
        }
        if let Some(observer) = &self.observer {
            observer.hit(bytes.len() as u64);
        }
        Some(bytes)
    }

    /// A cacheable ranged GET: from the cache, or from the store and then kept if the
    /// store's answer is of the version the key names.
    async fn get_cached(
        &self,
        location: &Path,
        options: GetOptions,
        range: Range<u64>,
        known: Known,
    ) -> Result<GetResult> {
        let key = self.key(&known, &range);
        if let Some(bytes) = self.lookup(&key, &range).await {
            return Ok(answer(known.meta, range, Attributes::default(), bytes));
        }
        let result = self.inner.get_opts(location, options).await?;
        let (meta, returned, attributes) = (
            result.meta.clone(),
            result.range.clone(),
            result.attributes.clone(),
        );
        let bytes = result.bytes().await?;
        if known.version.matches(&meta)
            && returned == range
            && bytes.len() as u64 == range.end - range.start
        {
            self.cache.put(key, bytes.clone());
        }
        Ok(answer(meta, returned, attributes, bytes))
    }

    /// Forgets what it knew of `location`, which this store is about to change.
    fn forget(&self, location: &Path) {
        self.objects.write().remove(location);
    }
}

/// A store answer built from bytes in hand.
fn answer(meta: ObjectMeta, range: Range<u64>, attributes: Attributes, bytes: Bytes) -> GetResult {
    GetResult {
        payload: GetResultPayload::Stream(stream::once(async move { Ok(bytes) }).boxed()),
        meta,
        range,
        attributes,
    }
}

/// Records the entity tag of `meta`, unless its object is known to be immutable.
fn learn(objects: &Objects, meta: &ObjectMeta) {
    let Some(etag) = &meta.e_tag else {
        return;
    };
    let mut objects = objects.write();
    let immutable = objects
        .get(&meta.location)
        .is_some_and(|k| matches!(k.version, Version::Immutable { .. }));
    if !immutable {
        let known = Known {
            version: Version::ETag(etag.clone()),
            meta: meta.clone(),
        };
        objects.insert(meta.location.clone(), known);
    }
}

/// Whether `options` ask for nothing but a byte range, so any version's bytes under that
/// key answer them.
fn plain_range(options: &GetOptions) -> Option<Range<u64>> {
    let plain = !options.head
        && options.if_match.is_none()
        && options.if_none_match.is_none()
        && options.if_modified_since.is_none()
        && options.if_unmodified_since.is_none()
        && options.version.is_none();
    match &options.range {
        Some(GetRange::Bounded(range)) if plain => Some(range.clone()),
        _ => None,
    }
}

impl fmt::Display for CachedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // As the store it wraps: Tessera names stores (and keys its footer cache) by it.
        fmt::Display::fmt(&self.inner, f)
    }
}

#[async_trait]
impl ObjectStore for CachedStore {
    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if let Some(range) = plain_range(&options)
            && let Some(known) = self.cacheable(location, &range)
        {
            return self.get_cached(location, options, range, known).await;
        }
        let result = self.inner.get_opts(location, options).await?;
        learn(&self.objects, &result.meta);
        Ok(result)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let Some(known) = self.objects.read().get(location).cloned() else {
            return self.inner.get_ranges(location, ranges).await;
        };
        if let Version::ETag(_) = known.version {
            // A multi-range read returns no meta to check the version against: read each
            // range on its own, checked.
            let reads = ranges.iter().map(|r| async move {
                ObjectStore::get_opts(
                    self,
                    location,
                    GetOptions::new().with_range(Some(r.clone())),
                )
                .await?
                .bytes()
                .await
            });
            return futures::future::try_join_all(reads).await;
        }
        self.get_immutable_ranges(location, ranges, &known).await
    }

    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.forget(location);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.forget(location);
        self.inner.put_multipart_opts(location, opts).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let objects = Arc::clone(&self.objects);
        let locations = locations
            .inspect_ok(move |location| {
                objects.write().remove(location);
            })
            .boxed();
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let objects = Arc::clone(&self.objects);
        self.inner
            .list(prefix)
            .inspect_ok(move |meta| learn(&objects, meta))
            .boxed()
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let objects = Arc::clone(&self.objects);
        self.inner
            .list_with_offset(prefix, offset)
            .inspect_ok(move |meta| learn(&objects, meta))
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let listed = self.inner.list_with_delimiter(prefix).await?;
        for meta in &listed.objects {
            learn(&self.objects, meta);
        }
        Ok(listed)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.forget(to);
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.forget(from);
        self.forget(to);
        self.inner.rename_opts(from, to, options).await
    }
}

impl CachedStore {
    /// Ranges of an immutable object: those cached from the cache, the rest in one
    /// multi-range read of the store (keeping its coalescing), then kept.
    async fn get_immutable_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
        known: &Known,
    ) -> Result<Vec<Bytes>> {
        let lookups = ranges.iter().map(|range| async move {
            match self.cacheable(location, range) {
                Some(_) => self.lookup(&self.key(known, range), range).await,
                None => None,
            }
        });
        let mut parts: Vec<Option<Bytes>> = futures::future::join_all(lookups).await;
        let missing: Vec<Range<u64>> = ranges
            .iter()
            .zip(&parts)
            .filter(|(_, part)| part.is_none())
            .map(|(range, _)| range.clone())
            .collect();
        if missing.is_empty() {
            return Ok(parts.into_iter().flatten().collect());
        }
        let mut fetched = self.inner.get_ranges(location, &missing).await?.into_iter();
        for (range, part) in ranges.iter().zip(parts.iter_mut()) {
            if part.is_some() {
                continue;
            }
            let bytes = fetched.next().ok_or_else(|| short_answer(location))?;
            if self.cacheable(location, range).is_some()
                && bytes.len() as u64 == range.end - range.start
            {
                self.cache.put(self.key(known, range), bytes.clone());
            }
            *part = Some(bytes);
        }
        Ok(parts.into_iter().flatten().collect())
    }
}

fn short_answer(location: &Path) -> object_store::Error {
    object_store::Error::Generic {
        store: "block cache",
        source: format!("the store returned fewer ranges of {location} than asked for").into(),
    }
}
