//! Real servers for Tessera's tests.
//!
//! Tests talk to a real S3 server, MinIO, started on a free loopback port over a
//! temporary directory and stopped when the handle drops. The binaries come from
//! `go install` (the test script installs pinned versions); a missing binary fails the
//! test with instructions instead of skipping it.

mod minio;
mod process;

pub use minio::MinioServer;
pub use process::find_tool;
