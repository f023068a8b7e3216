//! Throttling answers from a real MinIO: the client retries them with backoff and
//! re-signing and still returns exact bytes.
//!
//! MinIO (this version) throttles with `429 TooManyRequests` when all
//! `MINIO_API_REQUESTS_MAX` slots are taken, not with S3's `503 SlowDown`; both are
//! retried by the same rule.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use tessera_blob::s3::S3Client;
use tessera_blob::{Hedging, RequestStats, RetrievalOptions};
use tessera_testkit::{MinioOptions, MinioServer};

mod common;

const MIB: usize = 1024 * 1024;

/// A client of `bucket` without hedging (so every extra request is a retry), with
/// `max_attempts` and `base_backoff`, counting into `stats`.
fn unhedged_client(
    minio: &MinioServer,
    bucket: &str,
    max_attempts: u32,
    base_backoff: Duration,
    stats: &Arc<RequestStats>,
) -> S3Client {
    let options = RetrievalOptions {
        max_attempts,
        base_backoff,
        hedging: Hedging {
            enabled: false,
            ..Hedging::default()
        },
        ..RetrievalOptions::default()
    };
    S3Client::with_options(
        common::config(minio, &minio.endpoint()),
        bucket,
        options,
        Arc::clone(stats),
    )
    .unwrap()
}

/// MinIO admitting `max` requests at once and answering 429 TooManyRequests to any
/// request that finds no slot within `deadline`.
fn throttled_minio(max: u32, deadline: &str) -> MinioServer {
    MinioServer::start_with(MinioOptions {
        env: vec![
            ("MINIO_API_REQUESTS_MAX".into(), max.to_string()),
            ("MINIO_API_REQUESTS_DEADLINE".into(), deadline.into()),
        ],
        ..MinioOptions::default()
    })
}

#[tokio::test]
async fn throttling_answers_are_retried_to_exact_bytes() {
    let minio = throttled_minio(2, "5ms");
    minio.create_bucket("throttled");
    let data = common::random_bytes(8 * MIB, 21);
    let stats = Arc::new(RequestStats::default());
    // Enough attempts with a short backoff that every request gets a slot while 64
    // compete for two; the bound keeps a server that never admits finite.
    let client = unhedged_client(&minio, "throttled", 16, Duration::from_millis(10), &stats);
    common::bounded("upload", client.put("o.bin", data.clone(), false))
        .await
        .unwrap();
    let ranges: Vec<Range<u64>> = (0..64u64)
        .map(|i| i * 128 * 1024..i * 128 * 1024 + 100_000)
        .collect();
    let gets = ranges.iter().map(|r| client.get("o.bin", Some(r.clone())));
    let results = common::bounded("throttled GETs", futures::future::join_all(gets)).await;
    for (range, got) in ranges.iter().zip(results) {
        let got = got.unwrap_or_else(|e| panic!("GET {range:?}: {e}"));
        assert!(
            got[..] == data[range.start as usize..range.end as usize],
            "wrong bytes for {range:?}"
        );
    }
    let seen = stats.snapshot();
    assert!(seen.retries > 0, "MinIO throttled nothing: {seen:?}");
    assert_eq!(seen.failures, 0, "{seen:?}");
}

/// A server error that persists fails after the bounded attempts with one clear error,
/// and one that clears up between attempts ends in exact bytes: MinIO answers 500
/// InternalError ("file is corrupted") while the object's metadata is damaged on more
/// drives than its erasure set can lose, and serves it again once it is restored.
#[tokio::test]
async fn server_errors_are_retried_until_they_clear_or_the_attempts_end() {
    let minio = MinioServer::start_with(MinioOptions {
        drives: 4,
        ..MinioOptions::default()
    });
    minio.create_bucket("damaged");
    let data = common::random_bytes(3 * MIB + 5, 22);
    let stats = Arc::new(RequestStats::default());
    // The backoff is long enough that the metadata is restored within the first one.
    let client = unhedged_client(&minio, "damaged", 4, Duration::from_millis(400), &stats);
    common::bounded("upload", client.put("o.bin", data.clone(), false))
        .await
        .unwrap();
    let metas: Vec<_> = minio.drives()[..3]
        .iter()
        .map(|d| d.join("damaged/o.bin/xl.meta"))
        .collect();
    let originals: Vec<Vec<u8>> = metas.iter().map(|m| std::fs::read(m).unwrap()).collect();
    let damage = || {
        for meta in &metas {
            std::fs::write(meta, b"damaged").unwrap();
        }
    };

    damage();
    let err = common::bounded("GET of a damaged object", client.get("o.bin", None))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("HTTP 500") && err.to_string().contains("InternalError"),
        "{err}"
    );
    let after_failure = stats.snapshot();
    assert_eq!(after_failure.retries, 3, "{after_failure:?}");
    assert_eq!(after_failure.failures, 1, "{after_failure:?}");

    let restore = async {
        while stats.snapshot().retries == after_failure.retries {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for (meta, original) in metas.iter().zip(&originals) {
            std::fs::write(meta, original).unwrap();
        }
    };
    let (got, ()) = common::bounded(
        "GET while the object is restored",
        futures::future::join(client.get("o.bin", Some(1000..3 * MIB as u64)), restore),
    )
    .await;
    let got = got.unwrap();
    assert!(got[..] == data[1000..3 * MIB], "wrong bytes after recovery");
    let recovered = stats.snapshot().since(&after_failure);
    assert!(recovered.retries >= 1, "{recovered:?}");
    assert_eq!(recovered.failures, 0, "{recovered:?}");
}
