//! `object_store::ObjectStore` over the io_uring [`S3Client`], so DataFusion's readers
//! fetch `s3://` bytes through tessera-blob.
//!
//! Reads (GET, ranged GET, HEAD) and single-shot PUTs (including create-only PUTs for
//! atomic commits) go through the io_uring client. Listing, multipart uploads, copies
//! and batch deletes, which are rare and not on the scan path, are delegated to the
//! `object_store` crate's client for the same bucket.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    Attributes, CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload,
    PutResult,
};

use crate::s3::{S3Client, S3Error};
use crate::uring::HttpResponse;

/// The name object_store errors carry for this store.
const STORE: &str = "S3";

/// An S3 bucket read through io_uring, with the `object_store` client as the fallback
/// for operations the io_uring client does not implement.
#[derive(Debug)]
pub struct UringS3Store {
    client: S3Client,
    fallback: Arc<dyn ObjectStore>,
    bucket: String,
}

impl UringS3Store {
    /// A store for `bucket` using `client`, delegating other operations to `fallback`.
    pub fn new(client: S3Client, fallback: Arc<dyn ObjectStore>, bucket: &str) -> Self {
        Self {
            client,
            fallback,
            bucket: bucket.to_string(),
        }
    }

    /// Whether the io_uring client can serve these options; conditional and versioned
    /// reads, and open-ended ranges, go to the fallback.
    fn serves(options: &GetOptions) -> bool {
        options.if_match.is_none()
            && options.if_none_match.is_none()
            && options.if_modified_since.is_none()
            && options.if_unmodified_since.is_none()
            && options.version.is_none()
            && matches!(options.range, None | Some(GetRange::Bounded(_)))
    }
}

impl std::fmt::Display for UringS3Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UringS3Store({})", self.bucket)
    }
}

/// Maps an S3 failure to the object_store error the rest of Tessera expects; the
/// S3 error (with its XML body) stays the source so [`crate::explain`] finds the code.
fn to_store_error(error: S3Error, path: &Path, create: bool) -> object_store::Error {
    let path = path.to_string();
    match &error {
        S3Error::Status { status: 404, body } if !body.contains("NoSuchBucket") => {
            object_store::Error::NotFound {
                path,
                source: Box::new(error),
            }
        }
        S3Error::Status { status: 412, .. } if create => object_store::Error::AlreadyExists {
            path,
            source: Box::new(error),
        },
        S3Error::Status { status: 412, .. } => object_store::Error::Precondition {
            path,
            source: Box::new(error),
        },
        _ => object_store::Error::Generic {
            store: STORE,
            source: Box::new(error),
        },
    }
}

/// Object metadata from a GET or HEAD response; `size` is the whole object's size.
fn meta_of(location: &Path, response: &HttpResponse, size: u64) -> ObjectMeta {
    let last_modified = response
        .header("last-modified")
        .and_then(|v| DateTime::parse_from_rfc2822(v).ok())
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default();
    ObjectMeta {
        location: location.clone(),
        last_modified,
        size,
        e_tag: response.header("etag").map(str::to_string),
        version: response.header("x-amz-version-id").map(str::to_string),
    }
}

/// The total size from `Content-Range: bytes a-b/total`.
fn total_from_content_range(response: &HttpResponse) -> Option<u64> {
    response
        .header("content-range")?
        .rsplit_once('/')?
        .1
        .parse()
        .ok()
}

#[async_trait]
impl ObjectStore for UringS3Store {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let create = match opts.mode {
            PutMode::Overwrite => false,
            PutMode::Create => true,
            PutMode::Update(_) => return self.fallback.put_opts(location, payload, opts).await,
        };
        if !opts.tags.encoded().is_empty() || !opts.attributes.is_empty() {
            return self.fallback.put_opts(location, payload, opts).await;
        }
        let body = Bytes::from(payload);
        let e_tag = self
            .client
            .put(location.as_ref(), body, create)
            .await
            .map_err(|e| to_store_error(e, location, create))?;
        Ok(PutResult {
            e_tag,
            version: None,
        })
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.fallback.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if !Self::serves(&options) {
            return self.fallback.get_opts(location, options).await;
        }
        let key = location.as_ref();
        let err = |e| to_store_error(e, location, false);
        if options.head {
            let response = self.client.head_response(key).await.map_err(err)?;
            let size = response
                .header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            return Ok(result(
                meta_of(location, &response, size),
                0..0,
                Bytes::new(),
            ));
        }
        let range = match &options.range {
            Some(GetRange::Bounded(r)) => Some(r.clone()),
            _ => None,
        };
        if let Some(r) = &range
            && r.start >= r.end
        {
            return Err(object_store::Error::Generic {
                store: STORE,
                source: format!("invalid range {}..{} for {location}", r.start, r.end).into(),
            });
        }
        let response = self
            .client
            .get_response(key, range.clone())
            .await
            .map_err(err)?;
        let len = response.body.len() as u64;
        let (size, served) = match (&range, response.status) {
            (Some(r), 206) => (
                total_from_content_range(&response).unwrap_or(r.start + len),
                r.start..r.start + len,
            ),
            _ => (len, 0..len),
        };
        let body = response.body.clone();
        Ok(result(meta_of(location, &response, size), served, body))
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.fallback.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.fallback.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.fallback.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.fallback.copy_opts(from, to, options).await
    }
}

fn result(meta: ObjectMeta, range: Range<u64>, body: Bytes) -> GetResult {
    GetResult {
        payload: GetResultPayload::Stream(futures::stream::once(async move { Ok(body) }).boxed()),
        meta,
        range,
        attributes: Attributes::default(),
    }
}
