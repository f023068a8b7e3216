//! The block cache (`SET tessera.cache_dir`) on MinIO: every cached answer equals the
//! uncached one, a warm run sends no GET for data, an object overwritten in place is read
//! anew, and an unusable cache directory reads uncached with a warning.

use std::path::Path;
use std::sync::Arc;

use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tessera_blob::{S3Config, StatsSnapshot};
use tessera_engine::{SessionOptions, TesseraSession};
use tessera_testkit::MinioServer;

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::rows;

const BUCKET: &str = "cache";
const RAW: &str = "s3://cache/raw/docs.json";
const TABLE: &str = "s3://cache/t/";

struct Fixture {
    _minio: MinioServer,
    s3: S3Config,
    store: Arc<dyn ObjectStore>,
}

/// MinIO with a raw NDJSON object of `docs` documents and a Tessera table of the same.
async fn fixture(docs: i64) -> Fixture {
    let (minio, s3, store) = common::minio_bucket(BUCKET);
    store
        .put(
            &"raw/docs.json".into(),
            PutPayload::from(documents(docs, 'a')),
        )
        .await
        .unwrap();
    let session = session(&s3, None).await;
    let create =
        format!("CREATE EXTERNAL TABLE t (j VARCHAR) STORED AS TESSERA LOCATION '{TABLE}'");
    rows(&session, &create).await;
    rows(&session, &format!("INSERT INTO t SELECT j FROM '{RAW}'")).await;
    Fixture {
        _minio: minio,
        s3,
        store,
    }
}

/// `n` documents whose keys start with `letter`: other letters give other answers from
/// as many bytes, so only the entity tag tells versions apart.
fn documents(n: i64, letter: char) -> String {
    (0..n)
        .map(|id| format!(r#"{{"id":{id},"k":"{letter}{}","v":{}}}"#, id % 7, id * 3) + "\n")
        .collect()
}

/// A session reading through the block cache in `cache_dir` when given.
async fn session(s3: &S3Config, cache_dir: Option<&Path>) -> TesseraSession {
    let options = SessionOptions {
        target_partitions: Some(2),
        ..Default::default()
    };
    let session = TesseraSession::new(s3.clone(), options).unwrap();
    // These tests measure the scans' reads: a cache above the scan (the region cache,
    // where the build has it) would answer repeated queries without scanning.
    if let Ok(set) = session.sql("SET tessera.region_cache = 'off'").await {
        set.collect().await.ok();
    }
    if let Some(dir) = cache_dir {
        let set = format!("SET tessera.cache_dir = '{}'", dir.display());
        rows(&session, &set).await;
        rows(&session, "SET tessera.cache_size = '256MiB'").await;
    }
    session
}

fn queries() -> [String; 2] {
    let query = |from: &str| {
        format!(
            "SELECT j->>'k' AS k, count(*) AS n, sum(CAST(j->>'v' AS BIGINT)) AS v FROM {from} GROUP BY k ORDER BY k"
        )
    };
    [query(&format!("'{RAW}'")), query(&format!("'{TABLE}'"))]
}

/// The rows of `sql` and the requests the session's stores sent for it.
async fn measured(session: &TesseraSession, sql: &str) -> (Vec<String>, StatsSnapshot) {
    let before = session.stores().stats().snapshot();
    let answer = rows(session, sql).await;
    (answer, session.stores().stats().snapshot().since(&before))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_answers_equal_uncached_and_warm_runs_send_no_data_get() {
    let f = fixture(3000).await;
    let dir = tempfile::tempdir().unwrap();
    let uncached = session(&f.s3, None).await;
    let cached = session(&f.s3, Some(dir.path())).await;
    for sql in queries() {
        let (expected, _) = measured(&uncached, &sql).await;
        let (cold, cold_remote) = measured(&cached, &sql).await;
        let (warm, warm_remote) = measured(&cached, &sql).await;
        assert_eq!(cold, expected, "{sql}");
        assert_eq!(warm, expected, "{sql}");
        assert!(cold_remote.get_requests > 0, "{sql}: {cold_remote:?}");
        // A warm run still lists (LIST, HEAD: no body), but no byte of data comes.
        match sql.contains(RAW) {
            true => assert_eq!(warm_remote.bytes_received, 0, "{sql}: {warm_remote:?}"),
            false => assert_eq!(warm_remote.get_requests, 0, "{sql}: {warm_remote:?}"),
        }
    }
    // Another query over the same paths reads the same ranges (a query run before may
    // be answered above the scan by later caches).
    let same_ranges = format!(
        "EXPLAIN ANALYZE SELECT j->>'k' AS k, max(CAST(j->>'v' AS BIGINT)) FROM '{TABLE}' GROUP BY k"
    );
    let explained = rows(&cached, &same_ranges).await;
    let text = explained.join("\n");
    assert!(text.contains("cache=block"), "{text}");
    assert!(text.contains("requests_saved="), "{text}");
    assert!(!text.contains("requests_saved=0,"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_overwritten_in_place_gives_the_new_answer() {
    let f = fixture(500).await;
    let dir = tempfile::tempdir().unwrap();
    let cached = session(&f.s3, Some(dir.path())).await;
    let sql = &queries()[0];
    let before = rows(&cached, sql).await;
    assert_eq!(rows(&cached, sql).await, before, "admitted to disk by now");
    f.store
        .put(
            &"raw/docs.json".into(),
            PutPayload::from(documents(500, 'b')),
        )
        .await
        .unwrap();
    let after = rows(&cached, sql).await;
    assert_ne!(after, before);
    assert_eq!(after, rows(&session(&f.s3, None).await, sql).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_cache_dir_reads_uncached_with_a_warning() {
    let f = fixture(500).await;
    let dir = tempfile::tempdir().unwrap();
    // Root may write anywhere, so unusable means: a path below a regular file.
    let file = dir.path().join("file");
    std::fs::write(&file, b"not a directory").unwrap();
    let unusable = file.join("cache");
    let cached = session(&f.s3, Some(&unusable)).await;
    let uncached = session(&f.s3, None).await;
    for sql in queries() {
        assert_eq!(rows(&cached, &sql).await, rows(&uncached, &sql).await);
    }
    let warnings = tessera_cache::block::warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(&*unusable.to_string_lossy())),
        "{warnings:?}"
    );
}
