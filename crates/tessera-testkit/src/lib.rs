//! Real servers for Tessera's tests.
//!
//! Tests talk to a real S3 server, MinIO, started on a free loopback port over a
//! temporary directory and stopped when the handle drops; faults of real object
//! storage are injected by toxiproxy, a TCP proxy placed in front of MinIO. MinIO can
//! serve HTTPS with a certificate from a test CA ([`TestCa`], made with the `openssl`
//! command). The binaries come from `go install` (the test script installs pinned
//! versions); a missing binary fails the test with instructions instead of skipping it.

mod certs;
mod http;
mod minio;
mod process;
mod toxiproxy;

pub use certs::TestCa;
pub use minio::{MinioOptions, MinioServer};
pub use process::find_tool;
pub use toxiproxy::{Direction, Proxy, Toxic, Toxiproxy, fault_retrieval_options};
