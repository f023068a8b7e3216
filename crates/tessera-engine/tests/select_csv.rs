//! CSV locations read through S3 Select (`tessera.pushdown = 's3select'`) against a real
//! MinIO: every query gives the rows it gives without pushdown, over objects with
//! empty fields, quoted commas and quotes, NaN and infinities, `\r\n` line ends (the
//! store drops the `\r` as DataFusion's reader does, so the last column compares as
//! read), dates written otherwise, plain and gzipped; and the store returns fewer
//! bytes than the objects hold. A CSV scan that reads the objects itself counts what it
//! read and the GETs it paid for, whole or split into byte ranges.

use std::sync::Arc;

use tessera_engine::physical_plan::subtree_metric_sum;
use tessera_engine::{SessionOptions, TesseraSession};

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::{Rng, analyze, gzip, lines, local_and_pushed, metric, minio_bucket, put, rows};

const BUCKET: &str = "csv";
const COLUMNS: &str = "id,g,n,p,dt,note";

/// `count` CSV rows after a header: an id, a group `g`, an integer `n`, a price `p`, a
/// date `dt` and a note (the last column, sometimes quoted), then the rows `extra`.
fn csv(rng: &mut Rng, count: usize, extra: &[&str], line_end: &str) -> String {
    let mut text = format!("{COLUMNS}{line_end}");
    for id in 0..count {
        let g = ["a", "b", "c", "it's"][rng.below(4) as usize];
        let n = rng.below(1_000) as i64 - 100;
        let p = rng.below(40_000) as f64 / 4.0 - 1_000.0;
        let dt = format!(
            "199{}-0{}-1{}",
            rng.below(8),
            1 + rng.below(9),
            rng.below(10)
        );
        let note = ["plain", "\"with, comma\"", "\"say \"\"hi\"\"\"", ""][rng.below(4) as usize];
        text.push_str(&format!("{id},{g},{n},{p},{dt},{note}{line_end}"));
    }
    for row in extra {
        text.push_str(row);
        text.push_str(line_end);
    }
    text
}

/// Rows with NaN and infinities, dates written otherwise, quoted fields.
const SPECIAL: &[&str] = &[
    "900002,a,5,NaN,1994-03-01,nan row",
    "900003,b,6,inf,1994-03-01,plain",
    "900004,c,7,-inf,1995-05-05,x",
    "900005,a,801,1e3,1994-3-1,plain",
    "900006,\"a\",9,2.5,1996-01-01,\"\"",
];

/// A row of empty fields, which fails the store's casts.
const EMPTY: &[&str] = &["900001,,,,,"];

/// Queries over `t` with filters of every kind a condition has, and some none has.
fn queries() -> Vec<String> {
    vec![
        "SELECT id, p FROM t WHERE p < 500.5".to_string(),
        "SELECT id, p, note FROM t WHERE p > 9000 OR g = 'it''s'".to_string(),
        "SELECT id FROM t WHERE p >= 8000.25".to_string(),
        "SELECT id, n FROM t WHERE n = 7 OR n = 250".to_string(),
        "SELECT count(*), sum(p) FROM t WHERE g IN ('a', 'c') AND n BETWEEN 0 AND 300".to_string(),
        "SELECT id, dt FROM t WHERE dt >= DATE '1994-01-01' AND dt < DATE '1995-01-01'".to_string(),
        "SELECT id FROM t WHERE g IS NOT NULL AND n < 0".to_string(),
        "SELECT id, note FROM t WHERE note = 'plain' AND n > 800".to_string(),
        "SELECT g, count(*), max(p) FROM t GROUP BY g".to_string(),
        "SELECT count(*) FROM t WHERE n + 1 > 5".to_string(),
    ]
}

/// A session on 2 partitions reaching `minio`.
fn session(s3: tessera_blob::S3Config) -> TesseraSession {
    let options = SessionOptions {
        target_partitions: Some(2),
        ..Default::default()
    };
    TesseraSession::new(s3, options).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_through_s3_select_gives_the_rows_a_read_gives() {
    let (_minio, s3, store) = minio_bucket(BUCKET);
    let mut rng = Rng(0x5eed_c5f0);
    for (key, extra, line_end, zipped) in [
        ("plain/part0.csv", SPECIAL, "\n", false),
        ("plain/part1.csv", EMPTY, "\n", false),
        ("plain/part2.csv", SPECIAL, "\r\n", false),
        ("zipped/part0.csv.gz", SPECIAL, "\n", true),
        ("zipped/part1.csv.gz", EMPTY, "\n", true),
    ] {
        let text = csv(&mut rng, 2_000, extra, line_end).into_bytes();
        put(store.as_ref(), key, if zipped { gzip(&text) } else { text }).await;
    }
    let session = session(s3);
    let schema = "(id BIGINT, g VARCHAR, n BIGINT, p DOUBLE, dt DATE, note VARCHAR)";
    for (prefix, compression) in [("plain", "uncompressed"), ("zipped", "gzip")] {
        rows(&session, "DROP TABLE IF EXISTS t").await;
        rows(
            &session,
            &format!(
                "CREATE EXTERNAL TABLE t {schema} STORED AS CSV \
                 LOCATION 's3://{BUCKET}/{prefix}/' \
                 OPTIONS ('format.has_header' 'true', 'format.compression' '{compression}')"
            ),
        )
        .await;
        let mut asked = 0;
        for sql in queries() {
            let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
            assert!(!local.is_empty(), "{sql}: some rows");
            assert_eq!(pushed, local, "{prefix}: {sql}\n{plan}");
            assert!(plan.contains("s3_select="), "{sql}: the scan asks\n{plan}");
            asked += metric(&plan, "select_requests");
        }
        assert!(asked > 0, "{prefix}: the store was asked");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_returns_the_columns_and_rows_the_query_needs() {
    let (_minio, s3, store) = minio_bucket(BUCKET);
    let mut rng = Rng(0xc5f0_5eed);
    let text = csv(&mut rng, 20_000, &[], "\n");
    let object_bytes = text.len() as u64;
    put(store.as_ref(), "lines/part0.csv", text.into_bytes()).await;
    let session = session(s3);
    let sql = format!("SELECT id, p FROM 's3://{BUCKET}/lines/part0.csv' WHERE p < -900");
    let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
    assert_eq!(pushed, local, "{plan}");
    assert!(plan.contains("CAST(s._4 AS FLOAT) < -900"), "{plan}");
    let returned = metric(&plan, "select_returned_bytes");
    assert!(
        returned > 0 && returned * 20 < object_bytes,
        "{returned} of {object_bytes} bytes returned\n{plan}"
    );
    assert_eq!(metric(&plan, "select_fallbacks"), 0, "{plan}");
    // An empty field fails the cast: the object is asked again without the
    // condition, and only the columns come back.
    put(
        store.as_ref(),
        "lines/part1.csv",
        b"id,g,n,p,dt,note\n1,a,2,,1994-01-01,x\n".to_vec(),
    )
    .await;
    let sql = format!("SELECT id, p FROM 's3://{BUCKET}/lines/*.csv' WHERE p < -900");
    let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
    assert_eq!(pushed, local, "{plan}");
    assert_eq!(metric(&plan, "select_retries"), 1, "{plan}");
}

/// `sql`'s rows in `session`, and the exact sums of the metrics `names` over its plan
/// (`EXPLAIN ANALYZE` shows them rounded from a thousand on).
async fn run_counted(
    session: &TesseraSession,
    sql: &str,
    names: &[&str],
) -> (Vec<String>, Vec<u64>) {
    let plan = session
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let ctx = session.context().task_ctx();
    let batches = datafusion::physical_plan::collect(Arc::clone(&plan), ctx)
        .await
        .unwrap();
    let sums = names.iter().map(|n| subtree_metric_sum(&plan, n)).collect();
    (lines(&batches), sums)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_read_shows_the_bytes_and_gets_it_paid_for() {
    let (_minio, s3, store) = minio_bucket(BUCKET);
    let mut rng = Rng(0xb17e_5c0f);
    let mut object_bytes = 0;
    for part in 0..2 {
        let text = csv(&mut rng, 5_000, &[], "\n");
        object_bytes += text.len() as u64;
        put(
            store.as_ref(),
            &format!("counted/part{part}.csv"),
            text.into_bytes(),
        )
        .await;
    }
    let session = session(s3);
    rows(&session, "SET tessera.pushdown = 'off'").await;
    let sql = format!("SELECT g, count(*), sum(n) FROM 's3://{BUCKET}/counted/*.csv' GROUP BY g");
    let plan = analyze(&session, &sql).await;
    // EXPLAIN shows four digits.
    let shown = metric(&plan, "bytes_scanned");
    assert!(
        shown.abs_diff(object_bytes) * 1_000 <= object_bytes,
        "{shown} of {object_bytes} bytes\n{plan}"
    );
    let requests = metric(&plan, "requests");
    assert!(requests >= 1, "{plan}");
    // Each GET at $0.0004 per 1,000.
    assert_eq!(
        metric(&plan, "request_cost_nanodollars"),
        400 * requests,
        "{plan}"
    );
    // Exactly: each object read whole, once.
    let names = ["bytes_scanned", "requests", "request_cost_nanodollars"];
    let (_, counted) = run_counted(&session, &sql, &names).await;
    assert_eq!(counted, vec![object_bytes, 2, 800], "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_split_into_byte_ranges_gives_its_rows_once() {
    let (_minio, s3, store) = minio_bucket(BUCKET);
    let mut rng = Rng(0x5b11_7c5f);
    let text = csv(&mut rng, 20_000, &[], "\n");
    let object_bytes = text.len() as u64;
    put(store.as_ref(), "split/part0.csv", text.into_bytes()).await;
    let options = SessionOptions {
        target_partitions: Some(4),
        ..Default::default()
    };
    let session = TesseraSession::new(s3, options).unwrap();
    let table = format!("'s3://{BUCKET}/split/part0.csv'");
    let sql = format!("SELECT id, g, n, p, dt, note FROM {table}");
    let counted = format!("SELECT count(*), count(DISTINCT id), sum(id) FROM {table}");
    rows(&session, "SET tessera.pushdown = 'off'").await;
    let whole = rows(&session, &sql).await;
    let whole_plan = analyze(&session, &sql).await;
    assert!(!whole_plan.contains("part0.csv:0.."), "{whole_plan}");
    rows(
        &session,
        "SET datafusion.optimizer.repartition_file_min_size = 1",
    )
    .await;
    let plan = analyze(&session, &sql).await;
    assert!(plan.contains("part0.csv:0.."), "not split:\n{plan}");
    assert_eq!(rows(&session, &sql).await, whole, "{plan}");
    let ids: u64 = (0..20_000).sum();
    assert_eq!(
        rows(&session, &counted).await,
        vec![format!("20000 | 20000 | {ids}")]
    );
    // Each range read once, and a line past its end: 16 KiB at most.
    let names = ["bytes_scanned", "requests", "request_cost_nanodollars"];
    let (_, spent) = run_counted(&session, &sql, &names).await;
    let (read, requests) = (spent[0], spent[1]);
    assert!(
        (object_bytes..=object_bytes + 4 * (16 * 1024 + 1)).contains(&read),
        "{read} of {object_bytes} bytes\n{plan}"
    );
    assert!(requests >= 4, "{requests} requests\n{plan}");
    assert_eq!(spent[2], 400 * requests);
    // A scan asking S3 Select reads each object in one request: not split.
    rows(&session, "SET tessera.pushdown = 's3select'").await;
    let plan = analyze(&session, &sql).await;
    assert!(plan.contains("s3_select="), "{plan}");
    assert!(!plan.contains("part0.csv:0.."), "{plan}");
    assert_eq!(rows(&session, &sql).await, whole, "{plan}");
}
