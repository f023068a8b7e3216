//! `object_store::ObjectStore` over the io_uring [`S3Client`](crate::s3::S3Client), so DataFusion's readers
//! fetch `s3://` bytes through tessera-blob.
//!
//! Reads (GET, ranged GET with request sizing, HEAD), PUTs (including create-only PUTs
//! for atomic commits), multipart uploads, ListObjectsV2 listings and deletes go
//! through the io_uring client. Copies, conditional reads and tagged writes, which
//! Tessera does not issue on its paths, are delegated to the `object_store` crate's
//! client for the same bucket.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    Attributes, CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload,
    PutResult,
};

use crate::crypt::{self, CryptError, EncryptionKey};
use crate::s3::{ListedObject, S3Client, S3Error, content_range};
use crate::sizing;
use crate::uring::HttpResponse;

/// The name object_store errors carry for this store.
const STORE: &str = "S3";
/// Deletes in flight at once for a stream of deletes.
const DELETE_CONCURRENCY: usize = 16;
/// Parts S3 allows in one multipart upload.
const MAX_PARTS: usize = 10_000;
/// Listing pages followed before a listing stops with an error: 10 million keys, so a
/// server that keeps returning continuation tokens cannot make a listing endless.
const MAX_LIST_PAGES: usize = 10_000;

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

    /// Reads an encrypted object: whole, or the blocks holding `range` after a
    /// 12-byte read of its header (which also gives the stored size); returns the
    /// plaintext metadata, bytes and range.
    async fn get_encrypted(
        &self,
        key: &EncryptionKey,
        location: &Path,
        range: Option<GetRange>,
    ) -> object_store::Result<(ObjectMeta, Bytes, Range<u64>)> {
        let name = location.as_ref();
        let err = |e| to_store_error(e, location, false);
        let Some(range) = range else {
            let fetched = self.client.get_from(name, 0).await.map_err(err)?;
            // Decryption needs the ciphertext in one piece.
            let stored = fetched.parts.concat();
            let plain = Bytes::from(crypt::decrypt(key, &stored).map_err(crypt_error)?);
            let size = plain.len() as u64;
            return Ok((meta_of(location, &fetched.response, size), plain, 0..size));
        };
        let head = self
            .client
            .get_response(name, Some(0..crypt::HEADER))
            .await
            .map_err(err)?;
        let stored = content_range(&head)
            .map(|(_, total)| total)
            .ok_or(CryptError::NotEncrypted)
            .map_err(crypt_error)?;
        let size = crypt::plaintext_len(stored).map_err(crypt_error)?;
        let meta = meta_of(location, &head, size);
        let wanted = range
            .as_range(size)
            .map_err(|e| object_store::Error::Generic {
                store: STORE,
                source: Box::new(e),
            })?;
        if wanted.is_empty() {
            return Ok((meta, Bytes::new(), wanted));
        }
        let span = crypt::span(&wanted, size);
        let response = self
            .client
            .get_response(name, Some(span.stored.clone()))
            .await
            .map_err(err)?;
        if response.body.len() as u64 != span.stored.end - span.stored.start {
            return Err(crypt_error(CryptError::BadSize(response.body.len() as u64)));
        }
        let plain = crypt::decrypt_blocks(key, &head.body, span.first_block, &response.body, size)
            .map_err(crypt_error)?;
        let from = span.skip as usize;
        let bytes = Bytes::from(plain).slice(from..from + (wanted.end - wanted.start) as usize);
        Ok((meta, bytes, wanted))
    }

    /// Everything from byte `from` of an object of unknown size, split and hedged like
    /// known ranges ([`S3Client::get_from`]); the parts stream without being joined.
    async fn get_from(&self, location: &Path, from: u64) -> object_store::Result<GetResult> {
        let fetched = self
            .client
            .get_from(location.as_ref(), from)
            .await
            .map_err(|e| to_store_error(e, location, false))?;
        let meta = meta_of(location, &fetched.response, fetched.size);
        let parts = futures::stream::iter(fetched.parts.into_iter().map(Ok)).boxed();
        Ok(GetResult {
            payload: GetResultPayload::Stream(parts),
            meta,
            range: fetched.range,
            attributes: Attributes::default(),
        })
    }

    /// Refuses `what` on `location` when encryption is on: those operations go to the
    /// `object_store` client, which would store or return ciphertext as plaintext.
    fn unencrypted(&self, location: &Path, what: &str) -> object_store::Result<()> {
        match self.client.options().encryption {
            Some(_) => Err(object_store::Error::NotSupported {
                source: format!("{location}: {what} are not supported with client-side encryption")
                    .into(),
            }),
            None => Ok(()),
        }
    }

    /// The client, for its counters and latency model.
    pub fn client(&self) -> &S3Client {
        &self.client
    }

    /// Whether the io_uring client can serve these options; conditional and versioned
    /// reads, which Tessera does not issue, go to the fallback.
    fn serves(options: &GetOptions) -> bool {
        options.if_match.is_none()
            && options.if_none_match.is_none()
            && options.if_modified_since.is_none()
            && options.if_unmodified_since.is_none()
            && options.version.is_none()
    }
}

impl std::fmt::Display for UringS3Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s3://{}", self.bucket)
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
        // A HEAD answer has no body to name the cause; the status alone must say
        // "refused", as object_store's client does.
        S3Error::Status { status: 403, .. } => object_store::Error::PermissionDenied {
            path,
            source: Box::new(error),
        },
        S3Error::Status { status: 401, .. } => object_store::Error::Unauthenticated {
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

#[async_trait]
impl ObjectStore for UringS3Store {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let delegated = matches!(opts.mode, PutMode::Update(_))
            || !opts.tags.encoded().is_empty()
            || !opts.attributes.is_empty();
        if delegated {
            self.unencrypted(location, "conditional updates, tags and attributes")?;
            return self.fallback.put_opts(location, payload, opts).await;
        }
        let create = matches!(opts.mode, PutMode::Create);
        let body = match &self.client.options().encryption {
            Some(key) => {
                let plain = Bytes::from(payload);
                Bytes::from(crypt::encrypt(key, &plain).map_err(crypt_error)?)
            }
            None => Bytes::from(payload),
        };
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
        if !opts.tags.encoded().is_empty() || !opts.attributes.is_empty() {
            self.unencrypted(location, "tags and attributes")?;
            return self.fallback.put_multipart_opts(location, opts).await;
        }
        let upload_id = self
            .client
            .create_multipart(location.as_ref())
            .await
            .map_err(|e| to_store_error(e, location, false))?;
        let upload = Upload {
            client: self.client.clone(),
            location: location.clone(),
            upload_id,
            etags: Arc::default(),
            parts: 0,
        };
        match &self.client.options().encryption {
            Some(key) => Ok(Box::new(SealedUpload {
                upload,
                sealer: Some(crypt::Sealer::new(key).map_err(crypt_error)?),
            })),
            None => Ok(Box::new(upload)),
        }
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        if let Some(r) = ranges.iter().find(|r| r.start > r.end) {
            return Err(invalid_range(location, r));
        }
        if let Some(key) = &self.client.options().encryption {
            let mut out = Vec::with_capacity(ranges.len());
            for range in ranges {
                let got = self
                    .get_encrypted(key, location, Some(GetRange::Bounded(range.clone())))
                    .await?;
                out.push(got.1);
            }
            return Ok(out);
        }
        let requests = sizing::plan(ranges, &self.client.options().sizing);
        let largest = requests.iter().map(|r| r.end - r.start).max().unwrap_or(1);
        let concurrency = self.client.concurrency_for(largest);
        let key = location.as_ref();
        let fetched: Vec<(Range<u64>, Bytes)> = futures::stream::iter(requests)
            .map(|range| async move {
                let body = self
                    .client
                    .get(key, Some(range.clone()))
                    .await
                    .map_err(|e| to_store_error(e, location, false))?;
                if body.len() as u64 != range.end - range.start {
                    return Err(invalid_range(location, &range));
                }
                Ok((range, body))
            })
            .buffered(concurrency)
            .try_collect()
            .await?;
        Ok(sizing::assemble(ranges, &fetched))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if !Self::serves(&options) {
            self.unencrypted(location, "conditional and versioned reads")?;
            return self.fallback.get_opts(location, options).await;
        }
        if let Some(encryption) = &self.client.options().encryption
            && !options.head
        {
            let (meta, body, range) = self
                .get_encrypted(encryption, location, options.range.clone())
                .await?;
            return Ok(result(meta, range, body));
        }
        let key = location.as_ref();
        let err = |e| to_store_error(e, location, false);
        if options.head {
            let response = self.client.head_response(key).await.map_err(err)?;
            let stored = response
                .header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let size = match &self.client.options().encryption {
                Some(_) => crypt::plaintext_len(stored).map_err(crypt_error)?,
                None => stored,
            };
            return Ok(result(
                meta_of(location, &response, size),
                0..0,
                Bytes::new(),
            ));
        }
        let response = match &options.range {
            None => return self.get_from(location, 0).await,
            Some(GetRange::Offset(from)) => return self.get_from(location, *from).await,
            Some(GetRange::Bounded(r)) if r.start >= r.end => {
                return Err(invalid_range(location, r));
            }
            Some(GetRange::Bounded(r)) => self.client.get_response(key, Some(r.clone())).await,
            Some(GetRange::Suffix(last)) => {
                self.client
                    .get_open_range(key, &format!("bytes=-{last}"))
                    .await
            }
        }
        .map_err(err)?;
        let len = response.body.len() as u64;
        let (size, served) = match (content_range(&response), response.status) {
            (Some((start, total)), 206) => (total, start..start + len),
            _ => (len, 0..len),
        };
        let body = response.body.clone();
        Ok(result(meta_of(location, &response, size), served, body))
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        let client = self.client.clone();
        locations
            .map(move |location| {
                let client = client.clone();
                async move {
                    let location = location?;
                    client
                        .delete(location.as_ref())
                        .await
                        .map_err(|e| to_store_error(e, &location, false))?;
                    Ok(location)
                }
            })
            .buffered(DELETE_CONCURRENCY)
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let client = self.client.clone();
        let prefix = list_prefix(prefix);
        futures::stream::try_unfold((Some(None::<String>), 0usize), move |(token, pages)| {
            let client = client.clone();
            let prefix = prefix.clone();
            async move {
                let Some(token) = token else {
                    return Ok(None);
                };
                if pages == MAX_LIST_PAGES {
                    return Err(too_many_pages(&prefix));
                }
                let page = client
                    .list_page(&prefix, None, token.as_deref())
                    .await
                    .map_err(|e| to_store_error(e, &Path::from(prefix.as_str()), false))?;
                let encrypted = client.options().encryption.is_some();
                let objects = page
                    .objects
                    .into_iter()
                    .map(|o| object_meta(o, encrypted))
                    .collect::<Vec<_>>();
                let next = page.next.map(Some);
                Ok(Some((futures::stream::iter(objects), (next, pages + 1))))
            }
        })
        .try_flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let prefix = list_prefix(prefix);
        let mut result = ListResult {
            common_prefixes: Vec::new(),
            objects: Vec::new(),
        };
        let mut token: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let page = self
                .client
                .list_page(&prefix, Some(DELIMITER), token.as_deref())
                .await
                .map_err(|e| to_store_error(e, &Path::from(prefix.as_str()), false))?;
            for common in page.prefixes {
                let trimmed = common.strip_suffix(DELIMITER).unwrap_or(&common);
                result.common_prefixes.push(Path::parse(trimmed)?);
            }
            let encrypted = self.client.options().encryption.is_some();
            for object in page.objects {
                result.objects.push(object_meta(object, encrypted)?);
            }
            match page.next {
                Some(next) => token = Some(next),
                None => return Ok(result),
            }
        }
        Err(too_many_pages(&prefix))
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

/// object_store's path delimiter, which is also the S3 listing delimiter.
const DELIMITER: &str = "/";

/// The S3 key prefix that lists the objects under `prefix` as object_store means it:
/// whole path segments, so `a` lists `a/x` but not `ab`.
fn list_prefix(prefix: Option<&Path>) -> String {
    match prefix {
        Some(p) if !p.as_ref().is_empty() => format!("{p}{DELIMITER}"),
        _ => String::new(),
    }
}

/// A decryption failure as the object_store error the rest of Tessera expects.
fn crypt_error(error: CryptError) -> object_store::Error {
    object_store::Error::Generic {
        store: STORE,
        source: Box::new(error),
    }
}

/// Metadata of a listed object; with `encrypted`, its size is the plaintext size.
fn object_meta(object: ListedObject, encrypted: bool) -> object_store::Result<ObjectMeta> {
    let size = if encrypted {
        crypt::plaintext_len(object.size).map_err(crypt_error)?
    } else {
        object.size
    };
    let last_modified = DateTime::parse_from_rfc3339(&object.last_modified)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| object_store::Error::Generic {
            store: STORE,
            source: format!(
                "bad LastModified '{}' of {}: {e}",
                object.last_modified, object.key
            )
            .into(),
        })?;
    Ok(ObjectMeta {
        location: Path::parse(&object.key)?,
        last_modified,
        size,
        e_tag: object.e_tag,
        version: None,
    })
}

fn too_many_pages(prefix: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: STORE,
        source: format!("listing '{prefix}' returned more than {MAX_LIST_PAGES} pages").into(),
    }
}

fn invalid_range(location: &Path, range: &Range<u64>) -> object_store::Error {
    object_store::Error::Generic {
        store: STORE,
        source: format!(
            "invalid range {}..{} for {location}: empty, reversed or past the end",
            range.start, range.end
        )
        .into(),
    }
}

/// A multipart upload through the io_uring client. Parts may be uploaded
/// concurrently; each records its ETag at its part number.
#[derive(Debug)]
struct Upload {
    client: S3Client,
    location: Path,
    upload_id: String,
    etags: Arc<Mutex<Vec<Option<String>>>>,
    parts: usize,
}

#[async_trait]
impl MultipartUpload for Upload {
    fn put_part(&mut self, data: PutPayload) -> object_store::UploadPart {
        self.parts += 1;
        let number = self.parts;
        let client = self.client.clone();
        let location = self.location.clone();
        let upload_id = self.upload_id.clone();
        let etags = self.etags.clone();
        Box::pin(async move {
            if number > MAX_PARTS {
                return Err(object_store::Error::Generic {
                    store: STORE,
                    source: format!("{location}: more than {MAX_PARTS} parts").into(),
                });
            }
            let etag = client
                .upload_part(
                    location.as_ref(),
                    &upload_id,
                    number as u32,
                    Bytes::from(data),
                )
                .await
                .map_err(|e| to_store_error(e, &location, false))?;
            let mut etags = etags.lock().unwrap_or_else(|p| p.into_inner());
            if etags.len() < number {
                etags.resize(number, None);
            }
            etags[number - 1] = Some(etag);
            Ok(())
        })
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        if self.parts == 0 {
            // S3 rejects a completion without parts; an empty object is one empty part.
            self.put_part(PutPayload::default()).await?;
        }
        let etags: Option<Vec<String>> = {
            let etags = self.etags.lock().unwrap_or_else(|p| p.into_inner());
            (etags.len() == self.parts)
                .then(|| etags.iter().cloned().collect::<Option<Vec<_>>>())
                .flatten()
        };
        let Some(etags) = etags else {
            return Err(object_store::Error::Generic {
                store: STORE,
                source: format!(
                    "{}: complete before all {} parts were uploaded",
                    self.location, self.parts
                )
                .into(),
            });
        };
        let e_tag = self
            .client
            .complete_multipart(self.location.as_ref(), &self.upload_id, &etags)
            .await
            .map_err(|e| to_store_error(e, &self.location, false))?;
        Ok(PutResult {
            e_tag,
            version: None,
        })
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.client
            .abort_multipart(self.location.as_ref(), &self.upload_id)
            .await
            .map_err(|e| to_store_error(e, &self.location, false))
    }
}

/// Ciphertext bytes gathered before they go out as one part: above S3's 5 MiB minimum
/// for all parts but the last.
const SEALED_PART: usize = 8 * 1024 * 1024;

/// A multipart upload that encrypts as parts arrive ([`crypt::Sealer`]): ciphertext is
/// uploaded in parts of [`SEALED_PART`] bytes whatever the sizes of the plaintext parts,
/// and the last block is sealed at completion.
#[derive(Debug)]
struct SealedUpload {
    upload: Upload,
    /// `None` once completed.
    sealer: Option<crypt::Sealer>,
}

#[async_trait]
impl MultipartUpload for SealedUpload {
    fn put_part(&mut self, data: PutPayload) -> object_store::UploadPart {
        let Some(sealer) = self.sealer.as_mut() else {
            return Box::pin(futures::future::ready(Err(object_store::Error::Generic {
                store: STORE,
                source: "a part after the upload was completed".into(),
            })));
        };
        for chunk in data.iter() {
            if let Err(e) = sealer.push(chunk) {
                return Box::pin(futures::future::ready(Err(crypt_error(e))));
            }
        }
        if sealer.output_len() < SEALED_PART {
            return Box::pin(futures::future::ready(Ok(())));
        }
        let part = sealer.take_output();
        self.upload.put_part(PutPayload::from(part))
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let Some(sealer) = self.sealer.take() else {
            return Err(object_store::Error::Generic {
                store: STORE,
                source: "the upload was already completed".into(),
            });
        };
        let last = sealer.finish().map_err(crypt_error)?;
        self.upload.put_part(PutPayload::from(last)).await?;
        self.upload.complete().await
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.sealer = None;
        self.upload.abort().await
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
