//! An object store that counts what a scan reads through it, for a reader that counts
//! nothing itself (DataFusion's CSV reader): the requests it sends, priced as the NDJSON
//! scan prices its GETs ([`Gets`]), and the bytes each returns as they pass, so that a
//! read cut short counts only what it took. It holds nothing back.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::physical_plan::metrics::Count;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

use crate::datasource::ndjson::read::Gets;

/// `inner`, its reads counted.
#[derive(Debug)]
pub(crate) struct CountedStore {
    inner: Arc<dyn ObjectStore>,
    /// Bytes the reads returned (`bytes_scanned`).
    bytes: Count,
    /// The reads sent, and their price.
    gets: Gets,
}

impl CountedStore {
    /// `inner` counting the bytes its reads return in `bytes` and the reads in `gets`.
    pub(crate) fn new(inner: Arc<dyn ObjectStore>, bytes: Count, gets: Gets) -> Self {
        Self { inner, bytes, gets }
    }
}

impl fmt::Display for CountedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // As the store it wraps, as Tessera names stores.
        fmt::Display::fmt(&self.inner, f)
    }
}

#[async_trait]
impl ObjectStore for CountedStore {
    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        // A request is billed whether or not it succeeds; a HEAD as a GET.
        self.gets.count_one();
        let head = options.head;
        let result = self.inner.get_opts(location, options).await?;
        if head {
            return Ok(result);
        }
        let bytes = self.bytes.clone();
        let payload = match result.payload {
            GetResultPayload::Stream(stream) => {
                GetResultPayload::Stream(stream.inspect_ok(move |b| bytes.add(b.len())).boxed())
            }
            // A local file, read by the caller: the range it was opened for.
            file => {
                bytes.add((result.range.end - result.range.start) as usize);
                file
            }
        };
        Ok(GetResult { payload, ..result })
    }

    // `get_ranges` is left to the default, which reads each coalesced range through
    // `get_opts` above, so each is counted.

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

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
    use object_store::memory::InMemory;
    use object_store::{GetRange, ObjectStoreExt};

    #[tokio::test]
    async fn reads_are_counted_as_they_pass() {
        let inner = Arc::new(InMemory::new());
        let location = Path::from("a.csv");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        inner
            .put(&location, PutPayload::from(data.clone()))
            .await
            .unwrap();
        let set = ExecutionPlanMetricsSet::new();
        let url = datafusion::datasource::object_store::ObjectStoreUrl::parse("s3://b").unwrap();
        let gets = Gets::new(&set, 0, &url, false);
        let bytes = Count::new();
        let store = CountedStore::new(inner, bytes.clone(), gets.clone());
        let whole = store.get(&location).await.unwrap().bytes().await.unwrap();
        assert_eq!(whole.as_ref(), data.as_slice());
        let part = store.get_range(&location, 100..350).await.unwrap();
        assert_eq!(part.as_ref(), &data[100..350]);
        // A read dropped before its end counts nothing it did not return.
        let options = GetOptions::new().with_range(Some(GetRange::Bounded(0..5_000)));
        drop(store.get_opts(&location, options).await.unwrap());
        store.head(&location).await.unwrap();
        assert_eq!(bytes.value(), 10_000 + 250);
        assert_eq!(gets.requests.value(), 4);
        let cost = gets.cost_nanodollars.expect("S3 bills its GETs");
        assert_eq!(cost.value(), 4 * crate::block_cache::GET_NANODOLLARS);
    }

    #[test]
    fn local_files_and_cached_reads_are_not_billed() {
        let set = ExecutionPlanMetricsSet::new();
        let url = |u| datafusion::datasource::object_store::ObjectStoreUrl::parse(u).unwrap();
        assert!(
            Gets::new(&set, 0, &url("file://"), false)
                .cost_nanodollars
                .is_none()
        );
        assert!(
            Gets::new(&set, 0, &url("s3://b"), true)
                .cost_nanodollars
                .is_none()
        );
    }
}
