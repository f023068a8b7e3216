//! `tessera` against a real S3 server (MinIO): queries over objects in place, writes,
//! globs, profiles, and one clear sentence for every way S3 access can fail.

mod common;

use common::run;
use tessera_testkit::MinioServer;

/// Environment variables of one `tessera` run.
type Env<'a> = Vec<(&'a str, String)>;

const QUERIES: &str = include_str!("../../../bench/jsonbench/queries/tessera.sql");

fn jsonbench(table: &str) -> Vec<String> {
    QUERIES
        .lines()
        .filter(|l| !l.starts_with("--") && !l.trim().is_empty())
        .map(|q| q.replace("FROM bluesky", &format!("FROM {table}")))
        .collect()
}

#[test]
fn objects_in_s3_answer_like_local_files() {
    let minio = MinioServer::start();
    minio.create_bucket("lake");
    let env = minio.env();
    let dir = tempfile::tempdir().unwrap();
    let generate = |out: &str| {
        run(
            dir.path(),
            &env,
            &[
                "gen", "bluesky", "--docs", "3000", "--seed", "11", "--out", out,
            ],
        )
        .ok();
    };
    generate("local.json");
    generate("s3://lake/events/2024/part-1.json.zst");
    generate("s3://lake/raw/events.json");

    // Rows as a sorted list: ORDER BY count leaves ties in any order.
    let rows = |out: &str| {
        let mut lines: Vec<String> = out.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    for query in jsonbench("'local.json'") {
        let local = run(dir.path(), &env, &["sql", "--format", "csv", &query]);
        for remote in [
            "'s3://lake/events/2024/*.json.zst'",
            "'s3://lake/raw/events.json'",
        ] {
            let q = query.replace("'local.json'", remote);
            let out = run(dir.path(), &env, &["sql", "--format", "csv", &q]);
            assert_eq!(rows(out.ok()), rows(local.ok()), "{q}");
        }
    }

    let ddl = "CREATE EXTERNAL TABLE ev STORED AS NDJSON LOCATION 's3://lake/events/2024/'; SELECT count(*) AS n FROM ev";
    assert_eq!(
        run(dir.path(), &env, &["sql", "--format", "csv", ddl]).ok(),
        "n\n3000\n"
    );
}

#[test]
fn profiles_and_flags_configure_the_endpoint() {
    let minio = MinioServer::start();
    minio.create_bucket("cfg");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".aws")).unwrap();
    let creds = minio.credentials();
    std::fs::write(
        dir.path().join(".aws/credentials"),
        format!(
            "[lake]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            creds.access_key_id, creds.secret_access_key
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".aws/config"),
        format!(
            "[profile lake]\nregion = us-east-1\nendpoint_url = {}\n",
            minio.endpoint()
        ),
    )
    .unwrap();
    run(
        dir.path(),
        &[],
        &[
            "--profile",
            "lake",
            "gen",
            "bluesky",
            "--docs",
            "100",
            "--out",
            "s3://cfg/x.json",
        ],
    )
    .ok();
    let env = [("AWS_PROFILE", "lake".to_string())];
    let q = "SELECT count(*) AS n FROM 's3://cfg/x.json'";
    assert_eq!(
        run(dir.path(), &env, &["sql", "--format", "csv", q]).ok(),
        "n\n100\n"
    );
    // --endpoint-url wins over the profile's endpoint.
    let wrong = run(
        dir.path(),
        &env,
        &["--endpoint-url", "http://127.0.0.1:9", "sql", q],
    );
    assert!(
        wrong
            .error()
            .contains("cannot reach the S3 endpoint http://127.0.0.1:9"),
        "{}",
        wrong.stderr
    );
}

#[test]
fn every_s3_failure_is_one_clear_sentence() {
    let minio = MinioServer::start();
    minio.create_bucket("okay");
    let dir = tempfile::tempdir().unwrap();
    let env = minio.env();
    run(
        dir.path(),
        &env,
        &[
            "gen",
            "bluesky",
            "--docs",
            "10",
            "--out",
            "s3://okay/a.json",
        ],
    )
    .ok();
    let secret = minio.credentials().secret_access_key.clone();
    let with = |key: &str, value: &str| -> Env {
        env.iter()
            .map(|(k, v)| {
                (
                    *k,
                    if *k == key {
                        value.to_string()
                    } else {
                        v.clone()
                    },
                )
            })
            .collect()
    };
    let cases: Vec<(Env, &str, String)> = vec![
        (
            env.clone(),
            "SELECT count(*) FROM 's3://nobucket/a.json'",
            "the bucket 'nobucket' does not exist at".to_string(),
        ),
        (
            env.clone(),
            "SELECT count(*) FROM 's3://okay/missing/*.json'",
            "no files found at s3://okay/missing/*.json".to_string(),
        ),
        // Listing returns S3's error body, which names the cause...
        (
            with("AWS_SECRET_ACCESS_KEY", "wrong-secret"),
            "SELECT count(*) FROM 's3://okay/*.json'",
            "the secret key does not match access key id 'tessera-test'".to_string(),
        ),
        (
            with("AWS_ACCESS_KEY_ID", "nobody"),
            "SELECT count(*) FROM 's3://okay/*.json'",
            "does not know the access key id 'nobody'".to_string(),
        ),
        // ...a HEAD of one object has no body, only the status.
        (
            with("AWS_SECRET_ACCESS_KEY", "wrong-secret"),
            "SELECT count(*) FROM 's3://okay/a.json'",
            "refused access to 'a.json' for access key id 'tessera-test'".to_string(),
        ),
        (
            with("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
            "SELECT count(*) FROM 's3://okay/a.json'",
            "cannot reach the S3 endpoint http://127.0.0.1:9: connection refused".to_string(),
        ),
    ];
    for (env, query, expected) in cases {
        let out = run(dir.path(), &env, &["sql", query]);
        let message = out.error();
        assert!(message.contains(&expected), "{query}: {message}");
        assert_eq!(message.lines().count(), 1, "{message}");
        assert!(
            !message.contains(&secret) && !message.contains("wrong-secret"),
            "{message}"
        );
    }
}

/// `tessera bench retrieval` downloads through both clients, straight and through a
/// toxiproxy with added latency, and reports a row per client for each; a short
/// download fails the command.
#[test]
fn retrieval_benchmark_compares_both_clients() {
    let minio = MinioServer::start();
    minio.create_bucket("bench");
    let toxiproxy = tessera_testkit::Toxiproxy::start();
    let proxy = toxiproxy.proxy("minio", minio.port());
    proxy.add(
        "latency",
        tessera_testkit::Direction::Downstream,
        tessera_testkit::Toxic::Latency {
            latency_ms: 5,
            jitter_ms: 0,
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &minio.env(),
        &[
            "bench",
            "retrieval",
            "--bucket",
            "bench",
            "--objects",
            "4",
            "--mib",
            "2",
            "--request-mib",
            "1",
            "--concurrency",
            "4",
            "--tries",
            "1",
            "--via",
            &proxy.endpoint(),
        ],
    );
    let text = out.ok();
    for section in ["straight from", "through http://"] {
        assert!(text.contains(section), "{text}");
    }
    assert_eq!(text.matches("| tessera-blob").count(), 2, "{text}");
    assert_eq!(text.matches("| object_store").count(), 2, "{text}");
    assert_eq!(text.matches("CPU per GiB:").count(), 2, "{text}");
}
