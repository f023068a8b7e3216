//! The `object_store` crate's S3 client with one more check: a read returns exactly the
//! bytes of the range it answered.
//!
//! That client checks a `206`'s `Content-Range` against the range asked for, but then
//! passes on whatever body arrives: a body that ends early (a proxy or server that
//! closes the connection, a `Content-Length` that disagrees with `Content-Range`) would
//! be taken as the range. Here a short body is read on from where it stopped, a bounded
//! number of times, and is an error naming the object and range if it stays short.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};

/// A body that did not hold the bytes of its range.
#[derive(Debug, thiserror::Error)]
#[error("{path}: the server sent {received} bytes for bytes {expected:?} ({attempts} attempts)")]
pub struct WrongLength {
    /// The object read.
    pub path: Path,
    /// The range the answer announced (and the request asked for, when it asked).
    pub expected: Range<u64>,
    /// Bytes the body held.
    pub received: u64,
    /// Requests made for the range.
    pub attempts: u32,
}

/// `inner` (the `object_store` crate's S3 client) whose reads are checked for length.
#[derive(Debug)]
pub(crate) struct LengthChecked {
    inner: Arc<dyn ObjectStore>,
    /// The bucket `inner` reads, which names the store.
    bucket: String,
    /// Requests allowed for one read, the first included (at least 1).
    attempts: u32,
}

impl LengthChecked {
    /// `inner`, the client of `bucket`, with reads checked, each allowed `attempts`
    /// requests.
    pub(crate) fn new(inner: Arc<dyn ObjectStore>, bucket: &str, attempts: u32) -> Self {
        Self {
            inner,
            bucket: bucket.to_string(),
            attempts: attempts.max(1),
        }
    }
}

impl fmt::Display for LengthChecked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // As every Tessera store: the root of its URLs (see `location::object_url`).
        write!(f, "s3://{}", self.bucket)
    }
}

/// Where a checked body stands: the store and request to ask again with, the body so
/// far, and what it must add up to.
struct Body {
    inner: Arc<dyn ObjectStore>,
    path: Path,
    options: GetOptions,
    stream: BoxStream<'static, object_store::Result<Bytes>>,
    expected: Range<u64>,
    received: u64,
    attempts: u32,
    attempts_max: u32,
}

impl Body {
    fn error(&self) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: Box::new(WrongLength {
                path: self.path.clone(),
                expected: self.expected.clone(),
                received: self.received,
                attempts: self.attempts,
            }),
        }
    }

    /// The next piece of the body; `None` once all of the range has arrived. A body that
    /// ends early is asked for again from where it stopped (the same version of the
    /// object, by its ETag), up to the attempts allowed.
    async fn next(mut self) -> object_store::Result<Option<(Bytes, Self)>> {
        let length = self.expected.end - self.expected.start;
        loop {
            match self.stream.next().await {
                Some(Ok(bytes)) => {
                    self.received += bytes.len() as u64;
                    if self.received > length {
                        return Err(self.error());
                    }
                    return Ok(Some((bytes, self)));
                }
                Some(Err(e)) => return Err(e),
                None if self.received == length => return Ok(None),
                None if self.attempts >= self.attempts_max => return Err(self.error()),
                None => {
                    self.attempts += 1;
                    let rest = self.expected.start + self.received..self.expected.end;
                    let options = GetOptions {
                        range: Some(GetRange::Bounded(rest)),
                        ..self.options.clone()
                    };
                    let again = self.inner.get_opts(&self.path, options).await?;
                    self.stream = match again.payload {
                        GetResultPayload::Stream(stream) => stream,
                        GetResultPayload::File(..) => return Err(self.error()),
                    };
                }
            }
        }
    }
}

#[async_trait]
impl ObjectStore for LengthChecked {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    /// `get_ranges` is left to the trait's default, which reads each range through
    /// this method and so through the check.
    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let mut result = self.inner.get_opts(location, options.clone()).await?;
        if options.head {
            return Ok(result);
        }
        let GetResultPayload::Stream(stream) = result.payload else {
            return Ok(result);
        };
        let body = Body {
            inner: Arc::clone(&self.inner),
            path: location.clone(),
            options: GetOptions {
                if_match: result.meta.e_tag.clone().or(options.if_match.clone()),
                ..options
            },
            stream,
            expected: result.range.clone(),
            received: 0,
            attempts: 1,
            attempts_max: self.attempts,
        };
        let checked = futures::stream::try_unfold(body, Body::next);
        result.payload = GetResultPayload::Stream(checked.into_stream().boxed());
        Ok(result)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}
