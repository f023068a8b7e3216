//! The seam between Tessera and object-store clients.
//!
//! Everything above this crate asks a [`StoreFactory`] for an
//! `Arc<dyn object_store::ObjectStore>` per store URL (`s3://bucket`, `file:///`) and
//! never names a concrete client, so the S3 client behind it can be swapped without
//! touching the engine: tessera-blob's io_uring client by default, for `http` and
//! `https` endpoints and for AWS without an endpoint URL; the `object_store` crate's
//! client when selected with `TESSERA_S3_CLIENT=object_store` (for comparison).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};
use url::Url;

use crate::checked::LengthChecked;
use crate::config::{Addressing, S3Config};
use crate::error::BlobError;
use crate::explain::explain;
use crate::options::RetrievalOptions;
use crate::s3::{ClientParts, S3Client};
use crate::stats::RequestStats;
use crate::uring::Retrievers;
use crate::uring_store::UringS3Store;

/// Bounds on how long one request of the `object_store` client may take before it
/// fails with a clear error: an unreachable endpoint must fail in seconds, and a
/// server that accepts connections but never answers within the request timeout
/// (that client's own default; it covers the whole body, as it has no idle timeout),
/// not after minutes of retries. Shorter attempt timeouts and fewer attempts in
/// [`RetrievalOptions`] lower them further.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_RETRIES: usize = 3;
const RETRY_TIMEOUT: Duration = Duration::from_secs(15);

/// Environment variable selecting the S3 client: `object_store` picks the
/// `object_store` crate's client; anything else, or unset, tessera-blob's io_uring
/// client.
pub const CLIENT_ENV: &str = "TESSERA_S3_CLIENT";

/// Which client serves `s3://` stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum S3ClientKind {
    /// tessera-blob's io_uring client (the default).
    Uring,
    /// The `object_store` crate's `AmazonS3`.
    ObjectStore,
}

/// Opens object stores for store URLs, configured once for the whole session.
#[derive(Debug, Clone)]
pub struct StoreFactory {
    s3: S3Config,
    /// The retrieval options, or why the `TESSERA_S3_*` variables were unusable (an
    /// error reported when an S3 store is opened, so local files keep working).
    options: Result<RetrievalOptions, String>,
    stats: Arc<RequestStats>,
    /// The retriever threads every io_uring store of this factory sends through,
    /// started by the first one: a few threads for all buckets, as in
    /// AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023).
    retrievers: Arc<Mutex<Option<Retrievers>>>,
}

impl StoreFactory {
    /// A factory whose S3 stores use `s3` and the retrieval options from the
    /// `TESSERA_S3_*` environment variables ([`RetrievalOptions::from_lookup`]).
    pub fn new(s3: S3Config) -> Self {
        Self {
            s3,
            options: RetrievalOptions::from_lookup(&|name| std::env::var(name).ok()),
            stats: Arc::default(),
            retrievers: Arc::default(),
        }
    }

    /// A factory whose io_uring S3 stores run with `options`.
    pub fn with_options(s3: S3Config, options: RetrievalOptions) -> Self {
        Self {
            s3,
            options: Ok(options),
            stats: Arc::default(),
            retrievers: Arc::default(),
        }
    }

    /// The request counters of every io_uring store this factory opened, so a caller
    /// can show requests, bytes, retries, hedges and dollars (take a snapshot before
    /// and after a query).
    pub fn stats(&self) -> &Arc<RequestStats> {
        &self.stats
    }

    /// The retrieval options of the io_uring stores, or why they are unusable.
    pub fn options(&self) -> Result<&RetrievalOptions, BlobError> {
        self.options
            .as_ref()
            .map_err(|e| BlobError::Config(e.clone()))
    }

    /// The S3 settings stores are opened with.
    pub fn s3_config(&self) -> &S3Config {
        &self.s3
    }

    /// Opens the store for `store_url`: `s3://bucket` or `file:///`.
    pub fn open(&self, store_url: &Url) -> Result<Arc<dyn ObjectStore>, BlobError> {
        match store_url.scheme() {
            "file" => Ok(crate::local::local_store()),
            "s3" => {
                let bucket = store_url.host_str().unwrap_or_default();
                let kind = match std::env::var(CLIENT_ENV) {
                    Ok(v) if v == "object_store" => S3ClientKind::ObjectStore,
                    _ => S3ClientKind::Uring,
                };
                self.open_s3(bucket, kind)
            }
            other => Err(BlobError::InvalidLocation {
                location: store_url.to_string(),
                reason: format!("the scheme '{other}' is not supported (use s3:// or file://)"),
            }),
        }
    }

    /// Opens `s3://bucket` with the chosen client (benchmarks compare both in one run).
    pub fn open_s3(
        &self,
        bucket: &str,
        kind: S3ClientKind,
    ) -> Result<Arc<dyn ObjectStore>, BlobError> {
        let cfg = &self.s3;
        let options = self.options.as_ref().ok();
        let attempt_timeout = options.map_or(REQUEST_TIMEOUT, |o| o.attempt_timeout);
        let mut client = ClientOptions::new()
            .with_allow_http(cfg.is_plain_http())
            .with_connect_timeout(CONNECT_TIMEOUT.min(attempt_timeout))
            .with_timeout(REQUEST_TIMEOUT.min(attempt_timeout));
        // The same private CA for the object_store client (selected, or serving the
        // operations the io_uring client delegates).
        if let Some(path) = options.and_then(|o| o.ca_file.as_ref()) {
            let unusable = |reason: String| {
                BlobError::Config(format!(
                    "the CA bundle {} is unusable: {reason}",
                    path.display()
                ))
            };
            let pem = std::fs::read(path).map_err(|e| unusable(e.to_string()))?;
            let certificates = object_store::Certificate::from_pem_bundle(&pem)
                .map_err(|e| unusable(e.to_string()))?;
            for certificate in certificates {
                client = client.with_root_certificate(certificate);
            }
        }
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: options.map_or(MAX_RETRIES, |o| {
                MAX_RETRIES.min(o.max_attempts.saturating_sub(1) as usize)
            }),
            retry_timeout: RETRY_TIMEOUT.min(attempt_timeout),
        };
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_region(&cfg.region)
            .with_client_options(client)
            .with_retry(retry)
            .with_virtual_hosted_style_request(cfg.addressing == Addressing::VirtualHosted);
        if let Some(endpoint) = &cfg.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        builder = match &cfg.credentials {
            Some(creds) => {
                let b = builder
                    .with_access_key_id(&creds.access_key_id)
                    .with_secret_access_key(&creds.secret_access_key);
                match &creds.session_token {
                    Some(token) => b.with_token(token),
                    None => b,
                }
            }
            // Without keys the client would ask an instance-metadata service that does
            // not exist off-cloud; unsigned requests fail fast with AccessDenied instead.
            None => builder.with_skip_signature(true),
        };
        let client = Arc::new(builder.build().map_err(|source| BlobError::Open {
            url: format!("s3://{bucket}"),
            source,
        })?);
        let attempts = options.map_or(MAX_RETRIES as u32 + 1, |o| o.max_attempts);
        let store: Arc<dyn ObjectStore> = Arc::new(LengthChecked::new(client, bucket, attempts));
        if kind == S3ClientKind::ObjectStore {
            // That client would write plaintext and return ciphertext.
            if self.options()?.encryption.is_some() {
                return Err(BlobError::Config(format!(
                    "client-side encryption (TESSERA_S3_ENCRYPTION_KEY) needs tessera-blob's io_uring client; s3://{bucket} would use the object_store client (unset TESSERA_S3_CLIENT)"
                )));
            }
            return Ok(store);
        }
        let client = self.uring_client(bucket)?;
        Ok(Arc::new(UringS3Store::new(client, store, bucket)))
    }

    /// The io_uring client for `s3://bucket`, for S3 Select (`SelectObjectContent`),
    /// which the `ObjectStore` trait has no call for; `None` when objects are
    /// encrypted on the client (the store would select from ciphertext) or the
    /// retrieval options are unusable (opening the store reports why).
    pub fn select_client(&self, bucket: &str) -> Option<S3Client> {
        let options = self.options().ok()?;
        if options.encryption.is_some() {
            return None;
        }
        self.uring_client(bucket).ok()
    }

    fn uring_client(&self, bucket: &str) -> Result<S3Client, BlobError> {
        let options = self.options()?.clone();
        let open_error = |e: std::io::Error| BlobError::Open {
            url: format!("s3://{bucket}"),
            source: object_store::Error::Generic {
                store: "S3",
                source: Box::new(e),
            },
        };
        let retrievers = self.retrievers(&options).map_err(open_error)?;
        let parts = ClientParts {
            stats: self.stats.clone(),
            retrievers: Some(retrievers),
            endpoints: None,
        };
        S3Client::with_parts(self.s3.clone(), bucket, options, parts).map_err(|e| BlobError::Open {
            url: format!("s3://{bucket}"),
            source: object_store::Error::Generic {
                store: "S3",
                source: Box::new(e),
            },
        })
    }

    /// The shared retriever threads, started on first use.
    fn retrievers(&self, options: &RetrievalOptions) -> std::io::Result<Retrievers> {
        let mut shared = self.retrievers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(running) = shared.as_ref() {
            return Ok(running.clone());
        }
        let started = Retrievers::start(options.retriever_threads())?;
        *shared = Some(started.clone());
        Ok(started)
    }

    /// One sentence explaining a store failure, naming this factory's endpoint.
    pub fn explain(&self, error: &object_store::Error) -> String {
        explain(error, Some(&self.s3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::S3Overrides;
    use object_store::ObjectStoreExt;
    use object_store::path::Path;

    fn factory(endpoint: &str) -> StoreFactory {
        let env = |name: &str| match name {
            "AWS_ENDPOINT_URL" => Some(endpoint.to_string()),
            "AWS_ACCESS_KEY_ID" => Some("AKID".to_string()),
            "AWS_SECRET_ACCESS_KEY" => Some("SECRET".to_string()),
            _ => None,
        };
        StoreFactory::new(S3Config::resolve(&S3Overrides::default(), &env).unwrap())
    }

    #[tokio::test]
    async fn local_store_reads_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, b"hello").unwrap();
        let store = factory("http://127.0.0.1:1")
            .open(&Url::parse("file:///").unwrap())
            .unwrap();
        let path = Path::from_filesystem_path(&file).unwrap();
        let bytes = store.get_range(&path, 1..4).await.unwrap();
        assert_eq!(&bytes[..], b"ell");
    }

    #[tokio::test]
    async fn unreachable_endpoint_fails_fast_and_clearly() {
        // Port 1 on loopback: nothing listens, so the connection is refused at once.
        let factory = factory("http://127.0.0.1:1");
        let store = factory.open(&Url::parse("s3://bucket").unwrap()).unwrap();
        let started = std::time::Instant::now();
        let err = store.head(&Path::from("x")).await.unwrap_err();
        let sentence = factory.explain(&err);
        assert!(
            sentence.contains("cannot reach the S3 endpoint http://127.0.0.1:1"),
            "{sentence}"
        );
        assert!(started.elapsed() < RETRY_TIMEOUT + CONNECT_TIMEOUT * 2);
    }

    #[test]
    fn encryption_is_refused_for_the_object_store_client() {
        let options = RetrievalOptions {
            encryption: Some(crate::crypt::EncryptionKey::new([9; 32])),
            ..RetrievalOptions::default()
        };
        let factory = StoreFactory::with_options(factory("http://127.0.0.1:1").s3, options);
        let err = factory
            .open_s3("bucket", S3ClientKind::ObjectStore)
            .unwrap_err();
        assert!(err.to_string().contains("encryption"), "{err}");
        assert!(factory.open_s3("bucket", S3ClientKind::Uring).is_ok());
    }

    #[test]
    fn unsupported_scheme_is_an_error() {
        let err = factory("http://127.0.0.1:1")
            .open(&Url::parse("gs://bucket").unwrap())
            .unwrap_err();
        assert!(err.to_string().contains("'gs' is not supported"));
    }
}
