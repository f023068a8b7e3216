//! S3 requests over the io_uring retriever: SigV4-signed GET (with Range), HEAD, PUT
//! (optionally conditional) and DELETE, with bounded retries and errors that
//! [`crate::explain`] turns into one sentence.

use std::net::{SocketAddr, ToSocketAddrs};
use std::ops::Range;
use std::time::{Duration, SystemTime};

use bytes::Bytes;

use crate::config::{Addressing, S3Config};
use crate::sigv4;
use crate::uring::{HttpError, HttpRequest, HttpResponse, Retriever};

/// Attempts per request before the last error is returned.
const MAX_ATTEMPTS: u32 = 4;
/// First retry delay; doubled on every further attempt.
const BASE_BACKOFF: Duration = Duration::from_millis(50);
/// Time limit of one attempt.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);

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
}

/// An S3 client for one bucket, sending requests through an io_uring [`Retriever`].
#[derive(Debug, Clone)]
pub struct S3Client {
    config: S3Config,
    bucket: String,
    host: String,
    addr: SocketAddr,
    retriever: Retriever,
}

impl S3Client {
    /// A client for `bucket`; resolves the endpoint once and starts a retriever.
    pub fn new(config: S3Config, bucket: &str) -> Result<Self, S3Error> {
        let endpoint = config
            .endpoint
            .clone()
            .unwrap_or_else(|| format!("http://s3.{}.amazonaws.com", config.region));
        let url = url::Url::parse(&endpoint).map_err(|e| S3Error::Endpoint(e.to_string()))?;
        if url.scheme() != "http" {
            return Err(S3Error::Endpoint(format!(
                "{endpoint}: only http:// endpoints are supported by the io_uring client"
            )));
        }
        let base_host = url
            .host_str()
            .ok_or_else(|| S3Error::Endpoint(format!("{endpoint} has no host")))?;
        let port = url.port().unwrap_or(80);
        let host_name = match config.addressing {
            Addressing::Path => base_host.to_string(),
            Addressing::VirtualHosted => format!("{bucket}.{base_host}"),
        };
        let addr = (host_name.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| S3Error::Endpoint(format!("{endpoint}: {e}")))?
            .next()
            .ok_or_else(|| S3Error::Endpoint(format!("{endpoint} does not resolve")))?;
        let host = match url.port() {
            Some(p) => format!("{host_name}:{p}"),
            None => host_name,
        };
        let retriever = Retriever::start()
            .map_err(|e| S3Error::Transport(HttpError::Unavailable(e.to_string())))?;
        Ok(Self {
            config,
            bucket: bucket.to_string(),
            host,
            addr,
            retriever,
        })
    }

    fn path(&self, key: &str) -> String {
        match self.config.addressing {
            Addressing::Path => format!("/{}/{}", self.bucket, key),
            Addressing::VirtualHosted => format!("/{key}"),
        }
    }

    /// GET of a whole object or of `range`.
    pub async fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<Bytes, S3Error> {
        Ok(self.get_response(key, range).await?.body)
    }

    /// GET of a whole object or of `range`, with the response headers (for metadata).
    pub async fn get_response(
        &self,
        key: &str,
        range: Option<Range<u64>>,
    ) -> Result<HttpResponse, S3Error> {
        let header = range.map(|r| format!("bytes={}-{}", r.start, r.end.saturating_sub(1)));
        let mut headers = Vec::new();
        if let Some(h) = &header {
            headers.push(("range", h.as_str()));
        }
        self.send("GET", key, &headers, Bytes::new(), false).await
    }

    /// HEAD with the response headers (size, ETag, Last-Modified).
    pub async fn head_response(&self, key: &str) -> Result<HttpResponse, S3Error> {
        self.send("HEAD", key, &[], Bytes::new(), true).await
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
        let response = self.send("PUT", key, headers, body, false).await?;
        Ok(response.header("etag").map(str::to_string))
    }

    /// DELETE of one key.
    pub async fn delete(&self, key: &str) -> Result<(), S3Error> {
        self.send("DELETE", key, &[], Bytes::new(), false).await?;
        Ok(())
    }

    /// Sends one request, retrying transport failures and 5xx/SlowDown with
    /// exponential backoff; every attempt is signed afresh.
    async fn send(
        &self,
        method: &str,
        key: &str,
        extra: &[(&str, &str)],
        body: Bytes,
        head_only: bool,
    ) -> Result<HttpResponse, S3Error> {
        let path = self.path(key);
        let mut last = None;
        for attempt in 0..MAX_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(BASE_BACKOFF * 2u32.pow(attempt - 1)).await;
            }
            let request = self.build(method, &path, extra, body.clone(), head_only);
            match self.retriever.send(request).await {
                Ok(r) if r.status < 300 => return Ok(r),
                Ok(r) => {
                    let error = S3Error::Status {
                        status: r.status,
                        body: String::from_utf8_lossy(&r.body).into_owned(),
                    };
                    let slow_down =
                        matches!(&error, S3Error::Status { body, .. } if body.contains("SlowDown"));
                    if r.status < 500 && !slow_down {
                        return Err(error);
                    }
                    last = Some(error);
                }
                Err(e) if e.is_transient() => last = Some(e.into()),
                Err(e) => return Err(e.into()),
            }
        }
        Err(last.unwrap_or_else(|| HttpError::Unavailable("no attempt was made".into()).into()))
    }

    fn build(
        &self,
        method: &str,
        path: &str,
        extra: &[(&str, &str)],
        body: Bytes,
        head_only: bool,
    ) -> HttpRequest {
        let payload = if method == "PUT" {
            sigv4::sha256_hex(&body)
        } else {
            sigv4::UNSIGNED_PAYLOAD.to_string()
        };
        let signed = match &self.config.credentials {
            Some(creds) => sigv4::sign(
                &sigv4::Request {
                    method,
                    host: &self.host,
                    path,
                    query: &[],
                    headers: extra,
                    payload_sha256: &payload,
                },
                creds,
                &self.config.region,
                SystemTime::now(),
            ),
            None => vec![("host".to_string(), self.host.clone())],
        };
        let mut head = format!("{method} {} HTTP/1.1\r\n", sigv4::uri_encode(path, false));
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        for (k, v) in &signed {
            if !extra.iter().any(|(e, _)| e.eq_ignore_ascii_case(k)) {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        if !signed.iter().any(|(k, _)| k == "host") {
            head.push_str(&format!("host: {}\r\n", self.host));
        }
        head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
        HttpRequest {
            addr: self.addr,
            head: head.into_bytes(),
            body,
            head_only,
            timeout: ATTEMPT_TIMEOUT,
        }
    }
}
