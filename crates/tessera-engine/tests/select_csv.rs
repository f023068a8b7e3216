//! CSV locations read through S3 Select (`tessera.pushdown = 's3select'`) against a real
//! MinIO: every query gives the rows it gives without pushdown, over objects with
//! empty fields, quoted commas and quotes, NaN and infinities, `\r\n` line ends (the
//! store drops the `\r` as DataFusion's reader does, so the last column compares as
//! read), dates written otherwise, plain and gzipped; and the store returns fewer
//! bytes than the objects hold.

use tessera_engine::{SessionOptions, TesseraSession};

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::{Rng, gzip, local_and_pushed, metric, minio_bucket, put, rows};

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
