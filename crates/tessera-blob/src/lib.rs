//! Object-store retrieval for Tessera.
//!
//! This crate owns everything between Tessera and the bytes in object storage:
//! parsing locations ([`Location`]), resolving S3 settings the way the AWS CLI does
//! ([`S3Config`]), and opening stores behind one seam ([`StoreFactory`]) that the rest of
//! Tessera uses through the `object_store::ObjectStore` trait.
//!
//! `s3://` stores (`http://` and `https://` endpoints, and AWS without an endpoint URL)
//! are served by Tessera's own download manager (after AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023)): a few retriever
//! threads each run an io_uring event loop over many keep-alive connections, plain or
//! TLS (`uring`; trusted CAs in [`tls`]: the system store, or the PEM bundle named by
//! `TESSERA_S3_CA_FILE` or `AWS_CA_BUNDLE`); the S3 protocol with SigV4, retries and
//! hedging is in [`s3`], request sizing in [`sizing`], the online latency model that
//! sets concurrency and hedging deadlines in `model`, the multi-address DNS cache in
//! [`endpoints`], cost accounting in [`stats`] (per query with [`accounting::scope`]), optional client-side encryption in
//! `crypt`, and the `ObjectStore` implementation in [`uring_store`]. Its settings are
//! [`RetrievalOptions`]. The `object_store` crate's S3 client (selected, or serving what
//! the io_uring client delegates) has its reads checked for length in [`checked`].
//!
//! ```
//! use tessera_blob::Location;
//! let loc = Location::parse("s3://events/2024/*.json.zst").unwrap();
//! assert!(loc.is_glob());
//! assert_eq!(loc.store_url().as_str(), "s3://events");
//! ```

pub mod accounting;
pub mod checked;
pub mod config;
mod crypt;
/// Public because the fault tests and the test kit build clients over fixed addresses
/// ([`endpoints::Endpoints`]) and compare path segment sizes.
pub mod endpoints;
pub mod error;
mod explain;
mod local;
pub mod location;
mod model;
pub mod options;
/// Public for `tessera bench` (tessera-cli) and this crate's `retrieval` example.
pub mod retrieval_bench;
/// Public because the io_uring S3 client is used directly by the integration tests,
/// which drive it below the `ObjectStore` seam.
pub mod s3;
/// S3 Select (`SelectObjectContent`) and its event-stream answers.
pub mod select;
/// Public because the test kit signs its MinIO admin requests with it.
pub mod sigv4;
/// Public because request sizing ([`sizing::plan`]) is what callers split reads by.
pub mod sizing;
pub mod stats;
pub mod store;
/// Public because the test kit builds its HTTPS admin client with
/// [`tls::client_config`].
pub mod tls;
mod uring;
/// Public because the integration tests build [`uring_store::UringS3Store`] over
/// their own clients.
pub mod uring_store;

/// The HTTP response parser of the io_uring client, for the fuzz target
/// `http_response` only (cargo feature `fuzzing`); not an API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::uring::{HttpError, parse_response};
}

pub use config::{Addressing, Credentials, S3Config, S3Overrides};
pub use crypt::{EncryptionKey, ciphertext_len};
pub use error::BlobError;
pub use explain::explain;
pub use location::Location;
pub use options::{Hedging, RetrievalOptions, Sizing};
pub use stats::{Provider, RequestStats, StatsSnapshot};
pub use store::{S3ClientKind, StoreFactory};
