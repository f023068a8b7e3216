//! Object-store retrieval for Tessera.
//!
//! This crate owns everything between Tessera and the bytes in object storage:
//! parsing locations ([`Location`]), resolving S3 settings the way the AWS CLI does
//! ([`S3Config`]), and opening stores behind one seam ([`StoreFactory`]) that the rest of
//! Tessera uses through the `object_store::ObjectStore` trait.
//!
//! ```
//! use tessera_blob::Location;
//! let loc = Location::parse("s3://events/2024/*.json.zst").unwrap();
//! assert!(loc.is_glob());
//! assert_eq!(loc.store_url().as_str(), "s3://events");
//! ```

pub mod config;
pub mod crypt;
pub mod endpoints;
pub mod error;
pub mod local;
pub mod location;
pub mod model;
pub mod options;
pub mod retrieval_bench;
pub mod s3;
pub mod sigv4;
pub mod sizing;
pub mod stats;
pub mod store;
pub mod uring;
pub mod uring_store;

pub use config::{Addressing, Credentials, S3Config, S3Overrides};
pub use error::{BlobError, explain};
pub use location::Location;
pub use options::{Hedging, RetrievalOptions, Sizing};
pub use stats::{Provider, RequestStats, StatsSnapshot};
pub use store::{S3ClientKind, StoreFactory};
