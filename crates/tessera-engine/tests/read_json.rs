//! read_json over `s3://` (MinIO) answers as over the same files on a local disk: globs,
//! lists of locations, gzip, JSON arrays and NDJSON, and malformed records reported.

use std::io::Write;
use std::sync::Arc;

use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tessera_engine::{SessionOptions, TesseraSession};
use tessera_testkit::MinioServer;

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::rows;

/// Records per generated file.
const RECORDS: usize = 200;

fn session(s3: tessera_blob::S3Config) -> TesseraSession {
    TesseraSession::new(s3, SessionOptions::default()).unwrap()
}

/// Generated files: (name, bytes) of an NDJSON file, the same records as one JSON array,
/// and a gzipped NDJSON file with one malformed line.
fn files() -> Vec<(String, Vec<u8>)> {
    let record = |i: usize| {
        format!(
            r#"{{"id":{i},"day":"2024-01-{:02}","tags":["t{}"],"o":{{"k":{}}}}}"#,
            1 + i % 28,
            i % 3,
            i % 7
        )
    };
    let ndjson: String = (0..RECORDS).map(|i| record(i) + "\n").collect();
    let array = format!(
        "[\n{}\n]",
        (0..RECORDS).map(record).collect::<Vec<_>>().join(",\n")
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(ndjson.as_bytes()).unwrap();
    gz.write_all(b"{\"id\": oops}\n").unwrap();
    vec![
        ("a.json".to_string(), ndjson.into_bytes()),
        ("b.json".to_string(), array.into_bytes()),
        ("c.ndjson.gz".to_string(), gz.finish().unwrap()),
    ]
}

const QUERIES: &[&str] = &[
    "SELECT count(*), count(DISTINCT id), min(day), max(day) FROM read_json({files}, ignore_errors=true)",
    "SELECT o.k, count(*) FROM read_json({files}, ignore_errors=true) WHERE day >= DATE '2024-01-15' GROUP BY o.k ORDER BY o.k",
    "SELECT unnest(tags) AS t, count(*) FROM read_json('{dir}/*.json') GROUP BY t ORDER BY t",
    "SELECT count(*) FROM read_json_objects('{dir}/a.json')",
];

async fn answers(session: &TesseraSession, dir: &str) -> Vec<Vec<String>> {
    let list = format!("['{dir}/a.json', '{dir}/b.json', '{dir}/c.ndjson.gz']");
    let mut out = Vec::new();
    for query in QUERIES {
        let sql = query.replace("{files}", &list).replace("{dir}", dir);
        out.push(rows(session, &sql).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_json_on_minio_answers_as_on_a_local_disk() {
    let local = tempfile::tempdir().unwrap();
    for (name, bytes) in files() {
        std::fs::write(local.path().join(name), bytes).unwrap();
    }
    let local_session =
        session(tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap());
    let expected = answers(&local_session, &local.path().display().to_string()).await;
    // Three files of RECORDS records, the gzipped one with a malformed line as a NULL row.
    let total = (3 * RECORDS + 1).to_string();
    assert_eq!(
        expected[0][0].split(" | ").next(),
        Some(total.as_str()),
        "{expected:?}"
    );
    assert_eq!(
        local_session.take_rejects().count,
        2,
        "the malformed line, once per query"
    );

    let minio = MinioServer::start();
    minio.create_bucket("readjson");
    let env = minio.env();
    let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &lookup).unwrap();
    let store: Arc<dyn ObjectStore> = tessera_blob::StoreFactory::new(s3.clone())
        .open(&url::Url::parse("s3://readjson/").unwrap())
        .unwrap();
    for (name, bytes) in files() {
        store
            .put(&format!("data/{name}").into(), PutPayload::from(bytes))
            .await
            .unwrap();
    }
    let remote = session(s3);
    assert_eq!(answers(&remote, "s3://readjson/data").await, expected);
    let rejects = remote.take_rejects();
    assert_eq!(rejects.count, 2);
    assert!(
        rejects.samples[0]
            .file
            .starts_with("s3://readjson/data/c.ndjson.gz"),
        "{rejects}"
    );
}
