//! S3 requests over the io_uring retrievers: SigV4-signed GET (with Range and
//! hedging), HEAD, PUT (optionally conditional), DELETE, ListObjectsV2 pages and
//! multipart uploads, with bounded retries on fresh connections, per-request
//! accounting, and errors that [`crate::explain`] turns into one sentence.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;

use crate::config::{Addressing, S3Config};
use crate::endpoints::Endpoints;
use crate::model::LatencyModel;
use crate::options::RetrievalOptions;
use crate::sigv4;
use crate::stats::{RequestClass, RequestStats};
/// The transport types in this client's signatures: its answers, its transport
/// errors and the retriever threads several clients may share.
pub use crate::uring::{HttpError, HttpResponse, Retrievers};
use crate::uring::{HttpRequest, TlsTarget};
use rustls::pki_types::ServerName;

/// S3's maximum keys per ListObjectsV2 page.
const MAX_LIST_PAGE: u32 = 1000;
/// Most backoff doublings, so the delay stays bounded however many attempts are set.
const MAX_BACKOFF_DOUBLINGS: u32 = 6;
/// Largest body a GET without a bounded range accepts (a whole object, or everything
/// from an offset). Tessera reads large objects in sized ranges
/// ([`S3Client::get_from`]), so only small objects come whole; the bound keeps a server
/// that announces an absurd length from making the client allocate it.
const MAX_WHOLE_OBJECT: usize = 1 << 30;
/// Largest body of any other answer (listings, upload results): a ListObjectsV2 page
/// of 1000 keys is well under a megabyte.
const MAX_API_BODY: usize = 16 << 20;

/// An S3 failure: the HTTP status and the XML error body, or a transport failure.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// The server answered with an error status; the body holds S3's XML error.
    #[error("S3 answered HTTP {status}: {body}")]
    Status {
        /// HTTP status.
        status: u16,
        /// The response body (S3's `<Error><Code>…` XML).
        body: String,
    },
    /// The request never got an answer.
    #[error("{0}")]
    Transport(#[from] HttpError),
    /// The endpoint URL is unusable.
    #[error("invalid S3 endpoint: {0}")]
    Endpoint(String),
    /// A requested byte range is empty or reversed.
    #[error("invalid byte range {}..{}: empty or reversed", .0.start, .0.end)]
    Range(Range<u64>),
    /// The TLS settings are unusable (CA bundle, trust store).
    #[error("{0}")]
    Tls(#[from] crate::tls::TlsError),
    /// The client options are unusable.
    #[error("invalid retrieval options: {0}")]
    Options(String),
    /// A response body did not parse as the documented XML.
    #[error("unexpected S3 response: {0}")]
    Response(String),
    /// S3 Select reported an error event in its answer.
    #[error("S3 Select failed ({code}): {message}")]
    Select {
        /// S3's error code, e.g. `InvalidQuery`.
        code: String,
        /// S3's message.
        message: String,
    },
}

/// One object in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListedObject {
    /// The key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// `LastModified` as S3 wrote it (RFC 3339).
    pub last_modified: String,
    /// The ETag, with its quotes.
    pub e_tag: Option<String>,
}

/// One page of a ListObjectsV2 listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListPage {
    /// Objects on this page.
    pub objects: Vec<ListedObject>,
    /// Common prefixes (with a delimiter), each ending in the delimiter.
    pub prefixes: Vec<String>,
    /// The token for the next page; `None` on the last page.
    pub next: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListBucketResult {
    #[serde(default)]
    contents: Vec<Contents>,
    #[serde(default)]
    common_prefixes: Vec<CommonPrefix>,
    #[serde(default)]
    is_truncated: bool,
    next_continuation_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Contents {
    key: String,
    size: u64,
    last_modified: String,
    #[serde(rename = "ETag")]
    e_tag: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CommonPrefix {
    prefix: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InitiateMultipartUploadResult {
    upload_id: String,
}

/// The bytes of a read whose size was learnt from the answer ([`S3Client::get_from`]).
#[derive(Debug)]
pub(crate) struct Fetched {
    /// The first response, whose headers give the object's metadata.
    pub response: HttpResponse,
    /// The object's size.
    pub size: u64,
    /// The byte range of the object the parts hold.
    pub range: Range<u64>,
    /// The bytes in order, one part per request (joining them would copy the body).
    pub parts: Vec<Bytes>,
}

/// The first byte and the object's total size from `Content-Range: bytes a-b/total`.
pub(crate) fn content_range(response: &HttpResponse) -> Option<(u64, u64)> {
    content_range_bounds(response).map(|(first, _, total)| (first, total))
}

/// The first and last byte and the object's total size from
/// `Content-Range: bytes a-b/total`.
fn content_range_bounds(response: &HttpResponse) -> Option<(u64, u64, u64)> {
    let (span, total) = response
        .header("content-range")?
        .strip_prefix("bytes ")?
        .split_once('/')?;
    let (first, last) = span.split_once('-')?;
    Some((first.parse().ok()?, last.parse().ok()?, total.parse().ok()?))
}

/// What a client is built from besides its settings: parts several clients may
/// share (counters, retriever threads) and the endpoint's addresses.
#[derive(Debug, Default)]
pub struct ClientParts {
    /// The counters the client adds to.
    pub stats: Arc<RequestStats>,
    /// Retriever threads to send through; started for the client when `None`.
    pub retrievers: Option<Retrievers>,
    /// The endpoint's addresses; resolved by the system resolver when `None`.
    pub endpoints: Option<Endpoints>,
}

/// One request before signing.
struct Call<'a> {
    method: &'static str,
    /// The object key; `None` addresses the bucket itself.
    key: Option<&'a str>,
    query: &'a [(&'a str, &'a str)],
    headers: &'a [(&'a str, &'a str)],
    body: Bytes,
    class: RequestClass,
}

/// An S3 client for one bucket, sending requests through io_uring [`Retrievers`].
#[derive(Debug, Clone)]
pub struct S3Client {
    config: S3Config,
    bucket: String,
    host: String,
    endpoints: Arc<Endpoints>,
    /// TLS settings for an `https` endpoint.
    tls: Option<TlsTarget>,
    retrievers: Retrievers,
    options: Arc<RetrievalOptions>,
    stats: Arc<RequestStats>,
    model: Arc<LatencyModel>,
}

impl S3Client {
    /// A client for `bucket` with default options and its own counters.
    pub fn new(config: S3Config, bucket: &str) -> Result<Self, S3Error> {
        Self::with_options(config, bucket, RetrievalOptions::default(), Arc::default())
    }

    /// A client for `bucket`: resolves the endpoint once (keeping several addresses),
    /// starts the retriever threads, and counts requests into `stats`.
    pub fn with_options(
        config: S3Config,
        bucket: &str,
        options: RetrievalOptions,
        stats: Arc<RequestStats>,
    ) -> Result<Self, S3Error> {
        let parts = ClientParts {
            stats,
            ..ClientParts::default()
        };
        Self::with_parts(config, bucket, options, parts)
    }

    /// A client for `bucket` built from `parts`, which other clients may share.
    pub fn with_parts(
        config: S3Config,
        bucket: &str,
        options: RetrievalOptions,
        parts: ClientParts,
    ) -> Result<Self, S3Error> {
        let ClientParts {
            stats,
            retrievers,
            endpoints,
        } = parts;
        options.validate().map_err(S3Error::Options)?;
        let endpoint = config
            .endpoint
            .clone()
            .unwrap_or_else(|| format!("https://s3.{}.amazonaws.com", config.region));
        let url = url::Url::parse(&endpoint).map_err(|e| S3Error::Endpoint(e.to_string()))?;
        let https = match url.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(S3Error::Endpoint(format!(
                    "{endpoint}: the scheme '{other}' is not http or https"
                )));
            }
        };
        let mut config = config;
        // A bucket name with dots is not covered by the endpoint's wildcard
        // certificate as a host name; AWS's SDKs address such buckets by path.
        if https && bucket.contains('.') {
            config.addressing = Addressing::Path;
        }
        let base_host = url
            .host_str()
            .ok_or_else(|| S3Error::Endpoint(format!("{endpoint} has no host")))?;
        let port = url.port_or_known_default().unwrap_or(80);
        let host_name = match config.addressing {
            Addressing::Path => base_host.to_string(),
            Addressing::VirtualHosted => format!("{bucket}.{base_host}"),
        };
        let tls = if https {
            let config =
                crate::tls::client_config(options.ca_file.as_deref()).map_err(S3Error::Tls)?;
            // An IPv6 literal comes bracketed from the URL; the certificate names it bare.
            let name = host_name.trim_start_matches('[').trim_end_matches(']');
            let server_name = ServerName::try_from(name.to_string())
                .map_err(|e| S3Error::Endpoint(format!("{endpoint}: {e}")))?;
            Some(TlsTarget {
                config,
                server_name,
            })
        } else {
            None
        };
        let endpoints = match endpoints {
            Some(given) => given,
            None => Endpoints::system(&host_name, port)
                .map_err(|e| S3Error::Endpoint(format!("{endpoint}: {e}")))?,
        };
        let host = match url.port() {
            Some(p) => format!("{host_name}:{p}"),
            None => host_name,
        };
        let retrievers = match retrievers {
            Some(shared) => shared,
            None => Retrievers::start(options.retriever_threads())
                .map_err(|e| S3Error::Transport(HttpError::Unavailable(e.to_string())))?,
        };
        Ok(Self {
            config,
            bucket: bucket.to_string(),
            host,
            endpoints: Arc::new(endpoints),
            tls,
            retrievers,
            options: Arc::new(options),
            stats,
            model: Arc::default(),
        })
    }

    /// The counters this client adds to.
    pub fn stats(&self) -> &Arc<RequestStats> {
        &self.stats
    }

    /// The options this client runs with.
    pub fn options(&self) -> &RetrievalOptions {
        &self.options
    }

    /// Requests of `size` bytes to keep in flight to reach the configured bandwidth,
    /// by the model of AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023)
    /// with the latencies measured so far.
    pub(crate) fn concurrency_for(&self, size: u64) -> usize {
        self.model.concurrency(
            size,
            self.options.bandwidth_bytes_per_second(),
            self.retrievers.capacity(),
        )
    }

    fn path(&self, key: Option<&str>) -> String {
        match (self.config.addressing, key) {
            (Addressing::Path, Some(key)) => format!("/{}/{key}", self.bucket),
            (Addressing::Path, None) => format!("/{}", self.bucket),
            (Addressing::VirtualHosted, Some(key)) => format!("/{key}"),
            (Addressing::VirtualHosted, None) => "/".to_string(),
        }
    }

    /// GET of a whole object or of `range`.
    pub async fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<Bytes, S3Error> {
        Ok(self.get_response(key, range).await?.body)
    }

    /// GET of a whole object or of `range`, with the response headers (for metadata).
    /// A ranged GET later than the hedging percentile of recent GETs of its size gets
    /// one duplicate; whichever answers first wins.
    pub async fn get_response(
        &self,
        key: &str,
        range: Option<Range<u64>>,
    ) -> Result<HttpResponse, S3Error> {
        self.get_hedged(key, range, None).await
    }

    /// [`Self::get_response`], only if the object's ETag is still `if_match` when given
    /// (HTTP 412 otherwise), so parts of one read cannot come from two versions.
    async fn get_hedged(
        &self,
        key: &str,
        range: Option<Range<u64>>,
        if_match: Option<&str>,
    ) -> Result<HttpResponse, S3Error> {
        if let Some(r) = range.as_ref().filter(|r| r.start >= r.end) {
            return Err(S3Error::Range(r.clone()));
        }
        let header = range
            .as_ref()
            .map(|r| format!("bytes={}-{}", r.start, r.end - 1));
        let mut headers: Vec<(&str, &str)> = header.iter().map(|h| ("range", h.as_str())).collect();
        if let Some(tag) = if_match {
            headers.push(("if-match", tag));
        }
        let call = || Call {
            method: "GET",
            key: Some(key),
            query: &[],
            headers: &headers,
            body: Bytes::new(),
            class: RequestClass::Get,
        };
        let deadlines = range.as_ref().and_then(|r| {
            self.model
                .hedge_deadlines(r.end - r.start, &self.options.hedging)
        });
        let Some(deadlines) = deadlines else {
            return self.send(call(), None).await;
        };
        let size = range.as_ref().map_or(0, |r| r.end - r.start);
        let started = std::time::Instant::now();
        let seen = Arc::new(AtomicBool::new(false));
        let primary = self.send(call(), Some(seen.clone()));
        tokio::pin!(primary);
        tokio::select! {
            done = &mut primary => return done,
            () = tokio::time::sleep(deadlines.first_byte) => {}
        }
        if seen.load(Ordering::Relaxed) {
            let rest = deadlines.completion.saturating_sub(deadlines.first_byte);
            tokio::select! {
                done = &mut primary => return done,
                () = tokio::time::sleep(rest) => {}
            }
        }
        // Counted when first polled: a hedge dropped unpolled was never sent.
        let hedge = async {
            crate::accounting::count(&self.stats, |s| s.record_hedge());
            self.send(call(), None).await
        };
        tokio::pin!(hedge);
        // The loser is dropped, which cancels its request in the event loop; when the
        // first to finish failed, the other one decides.
        tokio::select! {
            done = &mut primary => match done {
                Ok(response) => Ok(response),
                Err(_) => {
                    let done = hedge.await;
                    if done.is_ok() {
                        crate::accounting::count(&self.stats, |s| s.record_hedge_won());
                    }
                    done
                }
            },
            done = &mut hedge => match done {
                Ok(response) => {
                    crate::accounting::count(&self.stats, |s| s.record_hedge_won());
                    // The cancelled primary took at least this long; leaving it out
                    // would bias the percentiles towards the fast hedges and make
                    // hedging feed itself.
                    let elapsed = started.elapsed();
                    let first_byte = if seen.load(Ordering::Relaxed) {
                        deadlines.first_byte
                    } else {
                        elapsed
                    };
                    self.model.record(size, first_byte, elapsed);
                    Ok(response)
                }
                Err(_) => primary.await,
            },
        }
    }

    /// GET of everything from byte `start` of an object whose size is not known yet
    /// (a whole-object GET when `start` is 0), by the same policy as known ranges: a
    /// first request of at most `sizing.max_request` bytes, hedged as usual, learns the
    /// object's size from its `Content-Range`; the rest is split by the sizing policy
    /// and fetched concurrently, hedged, each part only if the ETag is unchanged.
    pub(crate) async fn get_from(&self, key: &str, start: u64) -> Result<Fetched, S3Error> {
        let first = start..start.saturating_add(self.options.sizing.max_request.max(1));
        let response = match self.get_hedged(key, Some(first), None).await {
            // A range of an empty object is unsatisfiable (416): read it plainly.
            Err(S3Error::Status { status: 416, .. }) if start == 0 => {
                let response = self.get_hedged(key, None, None).await?;
                let len = response.body.len() as u64;
                return Ok(Fetched {
                    parts: vec![response.body.clone()],
                    range: 0..len,
                    size: len,
                    response,
                });
            }
            other => other?,
        };
        let got = response.body.len() as u64;
        let Some((from, size)) = content_range(&response).filter(|_| response.status == 206) else {
            // The server ignored the range and sent the whole object.
            let body = response.body.slice(start.min(got) as usize..);
            return Ok(Fetched {
                parts: vec![body],
                range: start.min(got)..got,
                size: got,
                response,
            });
        };
        if from != start {
            return Err(S3Error::Response(format!(
                "asked for bytes from {start}, got bytes from {from}"
            )));
        }
        let rest = start + got..size;
        let mut parts = vec![response.body.clone()];
        if !rest.is_empty() {
            let tag = response.header("etag").map(str::to_string);
            let requests = crate::sizing::plan(&[rest], &self.options.sizing);
            let largest = requests.iter().map(|r| r.end - r.start).max().unwrap_or(1);
            let tag = tag.as_deref();
            let fetched: Vec<Bytes> = futures::stream::iter(requests)
                .map(|range| async move {
                    let part = self.get_hedged(key, Some(range.clone()), tag).await?;
                    if part.body.len() as u64 != range.end - range.start {
                        return Err(S3Error::Response(format!(
                            "bytes {}..{} came back as {} bytes",
                            range.start,
                            range.end,
                            part.body.len()
                        )));
                    }
                    Ok(part.body)
                })
                .buffered(self.concurrency_for(largest))
                .try_collect()
                .await?;
            parts.extend(fetched);
        }
        Ok(Fetched {
            parts,
            range: start..size,
            size,
            response,
        })
    }

    /// GET with an open-ended `Range` header value (`bytes=N-` or `bytes=-N`), whose
    /// size is unknown before the answer, so it is not hedged.
    pub(crate) async fn get_open_range(
        &self,
        key: &str,
        range: &str,
    ) -> Result<HttpResponse, S3Error> {
        let headers = [("range", range)];
        self.send(self.simple("GET", key, &headers, Bytes::new()), None)
            .await
    }

    /// HEAD with the response headers (size, ETag, Last-Modified).
    pub(crate) async fn head_response(&self, key: &str) -> Result<HttpResponse, S3Error> {
        self.send(self.simple("HEAD", key, &[], Bytes::new()), None)
            .await
    }

    /// HEAD: the object's size and ETag.
    pub async fn head(&self, key: &str) -> Result<(u64, Option<String>), S3Error> {
        let response = self.head_response(key).await?;
        let size = response
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok((size, response.header("etag").map(str::to_string)))
    }

    /// PUT; with `if_none_match` the write fails with HTTP 412 when the key exists.
    /// Returns the new object's ETag.
    pub async fn put(
        &self,
        key: &str,
        body: Bytes,
        if_none_match: bool,
    ) -> Result<Option<String>, S3Error> {
        let headers: &[(&str, &str)] = if if_none_match {
            &[("if-none-match", "*")]
        } else {
            &[]
        };
        let response = self
            .send(self.simple("PUT", key, headers, body), None)
            .await?;
        Ok(response.header("etag").map(str::to_string))
    }

    /// DELETE of one key (deleting a missing key succeeds, as in S3).
    pub async fn delete(&self, key: &str) -> Result<(), S3Error> {
        self.send(self.simple("DELETE", key, &[], Bytes::new()), None)
            .await?;
        Ok(())
    }

    /// One ListObjectsV2 page of the keys under `prefix`, grouped by `delimiter` when
    /// given, continuing from `token` (the previous page's [`ListPage::next`]).
    pub(crate) async fn list_page(
        &self,
        prefix: &str,
        delimiter: Option<&str>,
        token: Option<&str>,
    ) -> Result<ListPage, S3Error> {
        let max_keys = self
            .options
            .list_page_size
            .clamp(1, MAX_LIST_PAGE)
            .to_string();
        let mut query = vec![("list-type", "2"), ("max-keys", max_keys.as_str())];
        if !prefix.is_empty() {
            query.push(("prefix", prefix));
        }
        if let Some(d) = delimiter {
            query.push(("delimiter", d));
        }
        if let Some(t) = token {
            query.push(("continuation-token", t));
        }
        let call = Call {
            method: "GET",
            key: None,
            query: &query,
            headers: &[],
            body: Bytes::new(),
            class: RequestClass::Put,
        };
        let response = self.send(call, None).await?;
        let result: ListBucketResult = parse_xml(&response.body)?;
        if result.is_truncated && result.next_continuation_token.is_none() {
            return Err(S3Error::Response(
                "a truncated listing without a continuation token".into(),
            ));
        }
        Ok(ListPage {
            objects: result
                .contents
                .into_iter()
                .map(|c| ListedObject {
                    key: c.key,
                    size: c.size,
                    last_modified: c.last_modified,
                    e_tag: c.e_tag,
                })
                .collect(),
            prefixes: result
                .common_prefixes
                .into_iter()
                .map(|p| p.prefix)
                .collect(),
            next: result
                .next_continuation_token
                .filter(|_| result.is_truncated),
        })
    }

    /// Starts a multipart upload of `key`; returns its upload id.
    pub(crate) async fn create_multipart(&self, key: &str) -> Result<String, S3Error> {
        let call = Call {
            method: "POST",
            key: Some(key),
            query: &[("uploads", "")],
            headers: &[],
            body: Bytes::new(),
            class: RequestClass::Put,
        };
        let response = self.send(call, None).await?;
        let result: InitiateMultipartUploadResult = parse_xml(&response.body)?;
        Ok(result.upload_id)
    }

    /// Uploads part `number` (1 to 10000) of an upload; returns the part's ETag.
    pub(crate) async fn upload_part(
        &self,
        key: &str,
        upload_id: &str,
        number: u32,
        body: Bytes,
    ) -> Result<String, S3Error> {
        let number = number.to_string();
        let call = Call {
            method: "PUT",
            key: Some(key),
            query: &[("partNumber", &number), ("uploadId", upload_id)],
            headers: &[],
            body,
            class: RequestClass::Put,
        };
        let response = self.send(call, None).await?;
        response
            .header("etag")
            .map(str::to_string)
            .ok_or_else(|| S3Error::Response(format!("part {number} has no ETag")))
    }

    /// Completes an upload from its parts' ETags in part order; returns the ETag.
    pub(crate) async fn complete_multipart(
        &self,
        key: &str,
        upload_id: &str,
        etags: &[String],
    ) -> Result<Option<String>, S3Error> {
        let mut body = String::from("<CompleteMultipartUpload>");
        for (i, etag) in etags.iter().enumerate() {
            body.push_str(&format!(
                "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>",
                i + 1,
                xml_escape(etag)
            ));
        }
        body.push_str("</CompleteMultipartUpload>");
        let call = Call {
            method: "POST",
            key: Some(key),
            query: &[("uploadId", upload_id)],
            headers: &[],
            body: Bytes::from(body),
            class: RequestClass::Put,
        };
        let response = self.send(call, None).await?;
        // S3 may report a failed completion in the body of a 200 answer.
        if response.body.windows(7).any(|w| w == b"<Error>") {
            return Err(S3Error::Status {
                status: response.status,
                body: String::from_utf8_lossy(&response.body).into_owned(),
            });
        }
        Ok(response.header("etag").map(str::to_string))
    }

    /// The raw event-stream answer of a `SelectObjectContent` over `key` with the XML
    /// request `body`, for the S3 Select module to decode. Billed like a GET.
    pub(crate) async fn select_response(&self, key: &str, body: Bytes) -> Result<Bytes, S3Error> {
        let call = Call {
            method: "POST",
            key: Some(key),
            query: &[("select", ""), ("select-type", "2")],
            headers: &[("content-type", "application/xml")],
            body,
            class: RequestClass::Get,
        };
        Ok(self.send(call, None).await?.body)
    }

    /// Aborts an upload, freeing its parts.
    pub(crate) async fn abort_multipart(&self, key: &str, upload_id: &str) -> Result<(), S3Error> {
        let call = Call {
            method: "DELETE",
            key: Some(key),
            query: &[("uploadId", upload_id)],
            headers: &[],
            body: Bytes::new(),
            class: RequestClass::Free,
        };
        self.send(call, None).await?;
        Ok(())
    }

    fn simple<'a>(
        &self,
        method: &'static str,
        key: &'a str,
        headers: &'a [(&'a str, &'a str)],
        body: Bytes,
    ) -> Call<'a> {
        let class = match method {
            "GET" | "HEAD" => RequestClass::Get,
            "DELETE" => RequestClass::Free,
            _ => RequestClass::Put,
        };
        Call {
            method,
            key: Some(key),
            query: &[],
            headers,
            body,
            class,
        }
    }

    /// Sends one request, retrying transport failures, 5xx/SlowDown and 429 with
    /// exponential backoff, at most `max_attempts` times; every attempt is signed
    /// afresh, and an attempt after a transport failure opens a new connection.
    async fn send(
        &self,
        call: Call<'_>,
        first_byte_seen: Option<Arc<AtomicBool>>,
    ) -> Result<HttpResponse, S3Error> {
        let path = self.path(call.key);
        let conditional = call
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("if-none-match"));
        let mut last = None;
        let mut fresh = false;
        for attempt in 0..self.options.max_attempts {
            if attempt > 0 {
                crate::accounting::count(&self.stats, |s| s.record_retry());
                let doublings = (attempt - 1).min(MAX_BACKOFF_DOUBLINGS);
                let delay = self.options.base_backoff * 2u32.pow(doublings);
                tokio::time::sleep(jittered(delay)).await;
            }
            let mut request = self.build(&call, &path);
            request.fresh_connection = fresh;
            request.first_byte_seen = first_byte_seen.clone();
            let addr = request.addr;
            crate::accounting::count(&self.stats, |s| {
                s.record_request(call.class, call.body.len() as u64)
            });
            let sent = self.retrievers.send(request).await;
            if let Some(segment) = sent.as_ref().ok().and_then(|r| r.new_connection_segment) {
                self.endpoints.record_segment(addr, segment);
            }
            match sent {
                Ok(r) if r.status < 300 => {
                    let size = r.body.len() as u64;
                    crate::accounting::count(&self.stats, |s| s.record_received(size));
                    // A response that is not what was asked for is a transient fault
                    // of the server or the path, like a broken connection.
                    if let Err(mismatch) = check_range(&call, &r) {
                        fresh = true;
                        last = Some(S3Error::Response(mismatch));
                        continue;
                    }
                    if call.method == "GET" {
                        self.model.record(size, r.first_byte, r.elapsed);
                        self.endpoints.record(addr, size, r.elapsed.as_secs_f64());
                    }
                    return Ok(r);
                }
                Ok(r) => {
                    crate::accounting::count(&self.stats, |s| {
                        s.record_received(r.body.len() as u64)
                    });
                    let body = String::from_utf8_lossy(&r.body).into_owned();
                    // S3 throttles with 503 SlowDown; MinIO (and other S3-compatible
                    // servers) with 429 TooManyRequests when its request pool is full.
                    let retry = r.status >= 500
                        || r.status == 429
                        || body.contains("<Code>SlowDown</Code>");
                    let error = S3Error::Status {
                        status: r.status,
                        body,
                    };
                    if !retry {
                        return Err(error);
                    }
                    last = Some(error);
                }
                // A conditional write whose answer was lost may have landed: sent
                // again it would fail its own condition and report someone else's
                // write. Only a connection that never opened is safe to retry; the
                // caller decides about the rest (it can check whether it landed).
                Err(e) if e.is_transient() && (!conditional || e.never_sent()) => {
                    fresh = true;
                    last = Some(e.into());
                }
                Err(e) => {
                    crate::accounting::count(&self.stats, |s| s.record_failure());
                    return Err(e.into());
                }
            }
        }
        crate::accounting::count(&self.stats, |s| s.record_failure());
        Err(last.unwrap_or_else(|| HttpError::Unavailable("no attempt was made".into()).into()))
    }

    fn build(&self, call: &Call<'_>, path: &str) -> HttpRequest {
        let payload = if call.body.is_empty() {
            sigv4::EMPTY_SHA256.to_string()
        } else {
            sigv4::sha256_hex(&call.body)
        };
        let payload = if call.method == "GET" {
            sigv4::UNSIGNED_PAYLOAD.to_string()
        } else {
            payload
        };
        let signed = match &self.config.credentials {
            Some(creds) => sigv4::sign(
                &sigv4::Request {
                    method: call.method,
                    host: &self.host,
                    path,
                    query: call.query,
                    headers: call.headers,
                    payload_sha256: &payload,
                },
                creds,
                &self.config.region,
                SystemTime::now(),
            ),
            None => Vec::new(),
        };
        let mut head = format!(
            "{} {}{} HTTP/1.1\r\nhost: {}\r\n",
            call.method,
            sigv4::uri_encode(path, false),
            sigv4::canonical_query(call.query)
                .map(|q| format!("?{q}"))
                .unwrap_or_default(),
            self.host
        );
        for (k, v) in call.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        for (k, v) in &signed {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("content-length: {}\r\n\r\n", call.body.len()));
        HttpRequest {
            addr: self.endpoints.pick(),
            head: head.into_bytes(),
            body: call.body.clone(),
            head_only: call.method == "HEAD",
            timeout: self.options.attempt_timeout,
            stall_timeout: self.options.stall_timeout,
            fresh_connection: false,
            first_byte_seen: None,
            tls: self.tls.clone(),
            max_body: body_limit(call),
        }
    }
}

/// The byte range a GET's `Range` header asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Requested {
    /// `bytes=first-last`.
    Bounded(u64, u64),
    /// `bytes=first-`: everything from `first`.
    From(u64),
    /// `bytes=-n`: the last `n` bytes.
    Suffix(u64),
}

/// The range `call` asks for, if it is a GET with a `Range` header.
fn requested(call: &Call<'_>) -> Option<Requested> {
    if call.method != "GET" {
        return None;
    }
    let (_, value) = call
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("range"))?;
    let (first, last) = value.strip_prefix("bytes=")?.split_once('-')?;
    match (first.parse().ok(), last.parse().ok()) {
        (Some(first), Some(last)) => Some(Requested::Bounded(first, last)),
        (Some(first), None) if last.is_empty() => Some(Requested::From(first)),
        (None, Some(n)) if first.is_empty() => Some(Requested::Suffix(n)),
        _ => None,
    }
}

/// The most body bytes `call` asked for: the length of its `Range`, or a fixed bound
/// for whole objects and other answers.
fn body_limit(call: &Call<'_>) -> usize {
    // An S3 Select answer is as large as what it selects, up to the whole object.
    if call.query.iter().any(|(name, _)| *name == "select") {
        return MAX_WHOLE_OBJECT;
    }
    if call.method != "GET" || call.key.is_none() {
        return MAX_API_BODY;
    }
    let bounded = match requested(call) {
        Some(Requested::Bounded(first, last)) => {
            last.checked_sub(first).and_then(|d| d.checked_add(1))
        }
        Some(Requested::Suffix(n)) => Some(n),
        Some(Requested::From(_)) | None => None,
    };
    bounded.map_or(MAX_WHOLE_OBJECT, |len| {
        usize::try_from(len).unwrap_or(usize::MAX)
    })
}

/// Whether a successful `response` carries the bytes `call` asked for: a `206`
/// must name the requested range in `Content-Range` (clipped to the object's end, as
/// S3 does) and carry exactly that many bytes. A `200` is the server ignoring the
/// range and sending the whole object, which the body limit already bounds.
fn check_range(call: &Call<'_>, response: &HttpResponse) -> Result<(), String> {
    let Some(asked) = requested(call) else {
        return Ok(());
    };
    if response.status == 200 && response.header("content-range").is_none() {
        return Ok(());
    }
    if response.status != 206 {
        return Err(format!(
            "a ranged GET ({asked:?}) was answered with HTTP {}",
            response.status
        ));
    }
    let Some((first, last, total)) = content_range_bounds(response) else {
        return Err(format!(
            "a 206 answer to {asked:?} without a valid Content-Range ({:?})",
            response.header("content-range")
        ));
    };
    let expected = match asked {
        Requested::Bounded(a, b) => (a, b.min(total.saturating_sub(1))),
        Requested::From(a) => (a, total.saturating_sub(1)),
        Requested::Suffix(n) => (total.saturating_sub(n), total.saturating_sub(1)),
    };
    let len = response.body.len() as u64;
    if (first, last) != expected || last < first || last >= total || len != last - first + 1 {
        return Err(format!(
            "asked for {asked:?}, got Content-Range bytes {first}-{last}/{total} with {len} body bytes"
        ));
    }
    Ok(())
}

/// `delay` scaled by a random factor in [0.5, 1.5): requests throttled together must
/// not all come back together, or a throttling server refuses them again as a herd.
fn jittered(delay: std::time::Duration) -> std::time::Duration {
    use std::hash::BuildHasher;
    // Every RandomState has fresh keys, so hashing anything gives an unpredictable
    // value without a random-number dependency.
    let random = std::collections::hash_map::RandomState::new().hash_one(delay);
    let unit = (random >> 11) as f64 / (1u64 << 53) as f64;
    delay.mul_f64(0.5 + unit)
}

pub(crate) fn parse_xml<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, S3Error> {
    let text = std::str::from_utf8(body)
        .map_err(|_| S3Error::Response("the XML body is not UTF-8".into()))?;
    quick_xml::de::from_str(text).map_err(|e| S3Error::Response(e.to_string()))
}

pub(crate) fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::S3Overrides;
    use std::net::SocketAddr;

    /// A client whose endpoint "resolves" to a closed loopback port, so building it
    /// needs no network.
    fn offline(config: S3Config, bucket: &str) -> S3Client {
        let parts = ClientParts {
            endpoints: Some(
                Endpoints::new(Box::new(|| Ok(vec![SocketAddr::from(([127, 0, 0, 1], 1))])))
                    .unwrap(),
            ),
            ..ClientParts::default()
        };
        S3Client::with_parts(config, bucket, RetrievalOptions::default(), parts).unwrap()
    }

    fn aws(region: &str) -> S3Config {
        let env = |name: &str| match name {
            "AWS_REGION" => Some(region.to_string()),
            "AWS_ACCESS_KEY_ID" => Some("AKID".to_string()),
            "AWS_SECRET_ACCESS_KEY" => Some("SECRET".to_string()),
            _ => None,
        };
        S3Config::resolve(&S3Overrides::default(), &env).unwrap()
    }

    #[test]
    fn aws_without_an_endpoint_is_https_virtual_hosted_in_the_region() {
        let client = offline(aws("eu-west-2"), "logs");
        assert_eq!(client.host, "logs.s3.eu-west-2.amazonaws.com");
        let request = client.build(
            &client.simple("GET", "a/b.json", &[], Bytes::new()),
            &client.path(Some("a/b.json")),
        );
        let head = String::from_utf8(request.head).unwrap();
        assert!(head.starts_with("GET /a/b.json HTTP/1.1\r\n"), "{head}");
        assert!(
            head.contains("host: logs.s3.eu-west-2.amazonaws.com\r\n"),
            "{head}"
        );
        assert!(
            head.contains("Credential=AKID/") && head.contains("/eu-west-2/s3/"),
            "{head}"
        );
        let tls = request.tls.expect("AWS is reached over TLS");
        assert_eq!(tls.server_name.to_str(), "logs.s3.eu-west-2.amazonaws.com");
    }

    #[test]
    fn dotted_buckets_on_https_are_addressed_by_path() {
        // A dotted bucket is no single label under the endpoint's wildcard certificate.
        let client = offline(aws("us-east-1"), "my.logs");
        assert_eq!(client.host, "s3.us-east-1.amazonaws.com");
        assert_eq!(client.path(Some("k")), "/my.logs/k");
    }
}
