//! The local file system as an object store, with ranged reads served from memory maps.
//!
//! A ranged read through `object_store`'s `LocalFileSystem` zero-fills a buffer and copies
//! the file into it; scanning raw JSON spends about a sixth of its time there. Mapping the
//! range instead hands the page cache's bytes to the parser without a copy. Everything
//! but plain ranged reads is delegated unchanged.

use std::fmt;
use std::fs::File;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    Attributes, CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, Result,
};

/// Ranges smaller than this are read with a plain `pread`; mapping costs more for them.
const MIN_MAPPED_RANGE: u64 = 256 * 1024;

/// A local file system store whose ranged reads are memory-mapped.
#[derive(Debug, Default)]
pub struct LocalStore {
    inner: LocalFileSystem,
}

impl LocalStore {
    /// A store over the whole local file system (paths are absolute).
    pub fn new() -> Self {
        Self::default()
    }
}

/// Maps `range` of the file at `path` (the object `location`).
fn map_range(path: &std::path::Path, location: &Path, range: Range<u64>) -> Result<Bytes> {
    let file = File::open(path).map_err(|e| io_error(location, e))?;
    // SAFETY: the mapping is read-only; like every reader of a local file, a scan that
    // races a writer truncating the same file may see changed bytes.
    let map = unsafe {
        memmap2::MmapOptions::new()
            .offset(range.start)
            .len((range.end - range.start) as usize)
            .populate()
            .map(&file)
    }
    .map_err(|e| io_error(location, e))?;
    Ok(Bytes::from_owner(map))
}

fn io_error(location: &Path, error: std::io::Error) -> object_store::Error {
    match error.kind() {
        std::io::ErrorKind::NotFound => object_store::Error::NotFound {
            path: location.to_string(),
            source: Box::new(error),
        },
        _ => object_store::Error::Generic {
            store: "LocalStore",
            source: Box::new(error),
        },
    }
}

impl fmt::Display for LocalStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::location::LOCAL_ROOT)
    }
}

#[async_trait]
impl ObjectStore for LocalStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let plain = options.if_match.is_none()
            && options.if_none_match.is_none()
            && options.if_modified_since.is_none()
            && options.if_unmodified_since.is_none()
            && options.version.is_none()
            && !options.head;
        let Some(requested) = options.range.clone().filter(|_| plain) else {
            return self.inner.get_opts(location, options).await;
        };
        let meta = self.inner.head(location).await?;
        let range = requested
            .as_range(meta.size)
            .map_err(|e| object_store::Error::Generic {
                store: "LocalStore",
                source: Box::new(e),
            })?;
        if range.end - range.start < MIN_MAPPED_RANGE {
            return self.inner.get_opts(location, options).await;
        }
        let path = self.inner.path_to_filesystem(location)?;
        let (loc, r) = (location.clone(), range.clone());
        let bytes = tokio::task::spawn_blocking(move || map_range(&path, &loc, r))
            .await
            .map_err(|e| object_store::Error::JoinError { source: e })??;
        Ok(GetResult {
            payload: GetResultPayload::Stream(futures::stream::once(async { Ok(bytes) }).boxed()),
            meta,
            range,
            attributes: Attributes::default(),
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// The store for `file://` URLs.
pub fn local_store() -> Arc<dyn ObjectStore> {
    Arc::new(LocalStore::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn mapped_and_copied_reads_agree() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data.bin");
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&file, &data).unwrap();
        let path = Path::from_filesystem_path(&file).unwrap();
        let store = LocalStore::new();
        for range in [
            0..10,
            5..300_000,
            1_000_003..3_000_000,
            2_999_999..3_000_000,
        ] {
            let got = store.get_range(&path, range.clone()).await.unwrap();
            assert_eq!(
                &got[..],
                &data[range.start as usize..range.end as usize],
                "{range:?}"
            );
        }
        let missing = store
            .get_range(
                &Path::from_filesystem_path(dir.path()).unwrap().join("nope"),
                0..1_000_000,
            )
            .await;
        assert!(
            matches!(missing, Err(object_store::Error::NotFound { .. })),
            "{missing:?}"
        );
    }
}
