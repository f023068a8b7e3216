//! `tessera ingest` and `tessera vacuum`: tables on MinIO answer like the raw files,
//! malformed lines fail the commit or land, with reasons, in a reject file, and standard
//! input works compressed or not.

mod common;

use common::{run, run_with_input};
use tessera_testkit::MinioServer;

const QUERIES: &str = include_str!("../../../bench/jsonbench/queries/tessera.sql");

/// JSONBench's queries over `table`, with rows sorted (ties in ORDER BY count may come
/// in any order).
fn answers(dir: &std::path::Path, env: &[(&str, String)], table: &str) -> Vec<Vec<String>> {
    QUERIES
        .lines()
        .filter(|l| !l.starts_with("--") && !l.trim().is_empty())
        .map(|q| {
            let q = q.replace("FROM bluesky", &format!("FROM {table}"));
            let out = run(dir, env, &["sql", "--format", "csv", &q]);
            let mut rows: Vec<String> = out.ok().lines().map(str::to_string).collect();
            rows.sort();
            rows
        })
        .collect()
}

#[test]
fn a_table_ingested_into_minio_answers_like_the_raw_file() {
    let minio = MinioServer::start();
    minio.create_bucket("lake");
    let env = minio.env();
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        &env,
        &[
            "gen",
            "bluesky",
            "--docs",
            "4000",
            "--seed",
            "5",
            "--out",
            "s3://lake/raw/events.json.zst",
        ],
    )
    .ok();
    let report = run(
        dir.path(),
        &env,
        &[
            "ingest",
            "s3://lake/raw/*.json.zst",
            "--table",
            "s3://lake/tables/events",
            "--report",
            "json",
        ],
    );
    let report: serde_json::Value = serde_json::from_str(report.ok()).unwrap();
    assert_eq!(report["documents"], 4000);
    assert_eq!(report["version"], 1);
    assert!(report["paths"].as_array().unwrap().len() >= 5, "{report}");
    assert_eq!(
        answers(dir.path(), &env, "'s3://lake/tables/events'"),
        answers(dir.path(), &env, "'s3://lake/raw/events.json.zst'")
    );
    // Nothing unreferenced to remove after a clean ingest.
    let vacuum = run(
        dir.path(),
        &env,
        &["vacuum", "s3://lake/tables/events", "--retention-secs", "0"],
    );
    assert_eq!(vacuum.code, 0, "{}", vacuum.stderr);
    assert!(
        vacuum.stderr.contains("removed 0 unreferenced data files"),
        "{}",
        vacuum.stderr
    );
}

#[test]
fn malformed_lines_fail_the_commit_or_go_to_the_reject_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = common::fixtures().join("bad.json");
    let bad = bad.to_str().unwrap();
    let failed = run(dir.path(), &[], &["ingest", bad, "--table", "t"]);
    let error = failed.error();
    assert!(error.contains("bad.json line 2"), "{error}");
    // The failed ingest committed nothing: the table is still empty.
    let count = run(
        dir.path(),
        &[],
        &["sql", "--format", "csv", "SELECT count(*) AS n FROM './t'"],
    );
    assert_eq!(count.ok(), "n\n0\n");

    let skipped = run(
        dir.path(),
        &[],
        &["--on-error", "skip", "ingest", bad, "--table", "t"],
    );
    assert_eq!(skipped.code, 0, "{}", skipped.stderr);
    assert!(
        skipped.stderr.contains("skipped 2 malformed lines"),
        "{}",
        skipped.stderr
    );
    let count = run(
        dir.path(),
        &[],
        &["sql", "--format", "csv", "SELECT count(*) AS n FROM './t'"],
    );
    assert_eq!(count.ok(), "n\n3\n");
    let rejects: Vec<serde_json::Value> =
        std::fs::read_to_string(dir.path().join("t/_rejects/00000000000000000001.ndjson"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let lines: Vec<_> = rejects
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        lines,
        vec![
            (2, r#"{"id":2,}"#.to_string()),
            (4, r#"{"id": "unterminated}"#.to_string())
        ]
    );
    assert!(
        rejects
            .iter()
            .all(|r| r["reason"].as_str().unwrap().starts_with("expected"))
    );
}

#[test]
fn standard_input_is_ingested() {
    let dir = tempfile::tempdir().unwrap();
    let docs = "{\"a\":1}\n{\"a\":2,\"b\":[1,{\"c\":null}]}\n";
    let out = run_with_input(
        dir.path(),
        &["ingest", "-", "--table", "t", "--report", "json"],
        docs,
    );
    let report: serde_json::Value = serde_json::from_str(out.ok()).unwrap();
    assert_eq!(report["documents"], 2);
    let back = run(
        dir.path(),
        &[],
        &[
            "sql",
            "--format",
            "csv",
            "SELECT j->'b'->1->'c' IS NULL AS missing, j->>'a' AS a FROM './t' ORDER BY a",
        ],
    );
    assert_eq!(back.ok(), "missing,a\ntrue,1\nfalse,2\n");
}

#[test]
fn compressed_standard_input_is_ingested() {
    let dir = tempfile::tempdir().unwrap();
    let docs: String = (0..1000).map(|i| format!("{{\"a\":{i}}}\n")).collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, docs.as_bytes()).unwrap();
    let zst = zstd::encode_all(docs.as_bytes(), 1).unwrap();
    for (name, bytes) in [("gz", gz.finish().unwrap()), ("zst", zst)] {
        let mut child = common::tessera(dir.path(), &[])
            .args(["ingest", "-", "--table", name, "--report", "json"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), &bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["documents"], 1000, "{name}");
    }
}

/// The stdin spool has no name: a `kill -9` during the ingest leaves nothing behind.
#[test]
fn a_killed_standard_input_ingest_leaves_no_spool() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = common::tessera(dir.path(), &[("TMPDIR", tmp.display().to_string())])
        .args(["ingest", "-", "--table", "t"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let docs: String = (0..10_000).map(|i| format!("{{\"a\":{i}}}\n")).collect();
    std::io::Write::write_all(&mut stdin, docs.as_bytes()).unwrap();
    // Kill once the process holds its spool open (stdin is still open, so it waits).
    let spooling = (0..600).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        holds_file_under(child.id(), &tmp)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    assert!(spooling, "the ingest never opened a spool under TMPDIR");
    let left: Vec<_> = walk(&tmp);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Whether process `pid` has a file under `dir` open.
fn holds_file_under(pid: u32, dir: &std::path::Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .any(|target| target.starts_with(dir))
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flat_map(|e| {
            let path = e.unwrap().path();
            match path.is_dir() {
                true => [vec![path.clone()], walk(&path)].concat(),
                false => vec![path],
            }
        })
        .collect()
}
