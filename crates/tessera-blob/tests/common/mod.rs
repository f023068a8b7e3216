//! Helpers shared by the MinIO and toxiproxy tests.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tessera_blob::s3::S3Client;
use tessera_blob::{RetrievalOptions, S3Config, S3Overrides};
use tessera_testkit::MinioServer;

/// A hang guard for one test step: far above any correct run, so it fires only when a
/// fault turned into a hang.
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// S3 settings for `minio`'s credentials at `endpoint` (MinIO itself or a proxy).
pub fn config(minio: &MinioServer, endpoint: &str) -> S3Config {
    let env: Vec<(&str, String)> = minio.env();
    let lookup = |name: &str| match name {
        "AWS_ENDPOINT_URL" => Some(endpoint.to_string()),
        _ => env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()),
    };
    S3Config::resolve(&S3Overrides::default(), &lookup).expect("MinIO settings resolve")
}

/// A client with default options straight to `minio`.
pub fn direct(minio: &MinioServer, bucket: &str) -> S3Client {
    S3Client::new(config(minio, &minio.endpoint()), bucket).expect("a client")
}

/// A client to `endpoint` with `options`.
pub fn client(
    minio: &MinioServer,
    endpoint: &str,
    bucket: &str,
    options: RetrievalOptions,
) -> S3Client {
    S3Client::with_options(config(minio, endpoint), bucket, options, Arc::default())
        .expect("a client")
}

/// `len` pseudo-random bytes (xorshift64*), different for each `seed`, so that a
/// misplaced or repeated block cannot look right.
pub fn random_bytes(len: usize, seed: u64) -> Bytes {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        out.extend_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    Bytes::from(out)
}

/// Runs `future`, failing the test if it does not finish within [`HANG_GUARD`].
pub async fn bounded<F: std::future::Future>(what: &str, future: F) -> F::Output {
    match tokio::time::timeout(HANG_GUARD, future).await {
        Ok(out) => out,
        Err(_) => panic!("{what} hung for {HANG_GUARD:?}"),
    }
}
