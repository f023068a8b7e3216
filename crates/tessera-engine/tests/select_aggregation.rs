//! Aggregation and group-by through S3 Select (`tessera.select_aggregation`, with
//! `tessera.pushdown = 's3select'`) against a real MinIO: every aggregate the store
//! computes gives the answer the plan gives without pushdown, over objects with NULLs,
//! missing paths and values of other types (which make the store's exact requests
//! fail, and the object be read as usual), gzipped or not; and over sparse documents,
//! which the store aggregates when every aggregate reads the values they lack. Numbers
//! are multiples of a quarter, so sums are exact in any order and answers compare as
//! text.

use tessera_engine::{SessionOptions, TesseraSession};

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::{Rng, gzip, local_and_pushed, metric, rows};

const BUCKET: &str = "aggregation";

/// Documents of skewed groups `g` (half "a", then "b", "c", and a few rare ones), an
/// integer `n`, a price `p`, a discount `d` and a date `dt`; with `outliers`, documents
/// whose fields are missing, null or of another type.
fn documents(rng: &mut Rng, count: usize, outliers: bool) -> String {
    let mut text = String::new();
    for id in 0..count {
        let g = match rng.below(100) {
            0..50 => "a",
            50..80 => "b",
            80..95 => "c",
            r => ["d", "e", "f", "g", "h"][(r % 5) as usize],
        };
        let p = rng.below(40_000) as f64 / 4.0 - 1_000.0;
        let d = ["0", "0.25", "0.5"][rng.below(3) as usize];
        let n = rng.below(1_000) as i64 - 100;
        let dt = format!(
            "199{}-0{}-1{}",
            rng.below(8),
            1 + rng.below(9),
            rng.below(10)
        );
        text.push_str(&format!(
            "{{\"id\":{id},\"g\":\"{g}\",\"h\":\"{}\",\"n\":{n},\"p\":{p},\"d\":{d},\"dt\":\"{dt}\"}}\n",
            ["x", "y"][rng.below(2) as usize]
        ));
    }
    if outliers {
        for line in [
            r#"{"g":"a","p":null,"n":null,"d":0}"#,
            r#"{"g":"a","p":"abc","n":"x","d":0.5}"#,
            r#"{"g":"b","p":"12.5","n":2.5,"d":"0.25"}"#,
            r#"{"g":"b","p":true,"n":true}"#,
            r#"{"g":1.50,"p":3,"n":7,"d":0,"dt":"1994-3-1"}"#,
            r#"{"g":5,"p":1e3,"n":9007199254740993,"d":0.25,"dt":19940301}"#,
            r#"{"g":null,"p":2.5,"n":4,"d":0,"dt":null}"#,
            r#"{"p":7.25,"n":5,"d":0.5,"dt":"1995-05-05"}"#,
            r#"{"g":"a","h":"x","n":6,"dt":"1995-05-05T10:00:00"}"#,
        ] {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// Documents of groups `g` (half "a", a quarter "b" and "c" each) whose price `p` is
/// missing from a third and null in a tenth, whose integer `n` is missing from a quarter and whose
/// discount `d` from a fifth.
fn sparse_documents(rng: &mut Rng, count: usize) -> String {
    let mut text = String::new();
    for _ in 0..count {
        let mut fields = vec![format!(
            "\"g\":\"{}\"",
            ["a", "a", "b", "c"][rng.below(4) as usize]
        )];
        match rng.below(30) {
            0..10 => {}
            10..13 => fields.push("\"p\":null".into()),
            _ => fields.push(format!(
                "\"p\":{}",
                rng.below(40_000) as f64 / 4.0 - 1_000.0
            )),
        }
        if rng.below(4) > 0 {
            fields.push(format!("\"n\":{}", rng.below(1_000) as i64 - 100));
        }
        if rng.below(5) > 0 {
            fields.push(format!(
                "\"d\":{}",
                ["0", "0.25", "0.5"][rng.below(3) as usize]
            ));
        }
        text.push_str(&format!("{{{}}}\n", fields.join(",")));
    }
    text
}

const PRICE: &str = "json_get_float(j, 'p')";

/// Queries each aggregation rule's part qualifies for: aggregates of doubles and
/// integers; exact filters of each kind; text, integer and two-key groups.
fn queries() -> Vec<String> {
    let revenue = format!("{PRICE} * (1 - json_get_float(j, 'd'))");
    let all =
        format!("count(*), sum({PRICE}), min({PRICE}), max({PRICE}), avg({PRICE}), count({PRICE})");
    let ints = "sum(json_get_int(j, 'n')), min(json_get_int(j, 'n')), \
                max(json_get_int(j, 'n')), count(*)";
    vec![
        format!("SELECT {all} FROM t"),
        format!("SELECT {all} FROM t WHERE {PRICE} < 500.5 AND j->>'g' = 'a'"),
        format!("SELECT {ints} FROM t WHERE json_get_int(j, 'n') >= 3"),
        format!("SELECT sum({revenue}), avg(TRY_CAST(j->>'p' AS DOUBLE)) FROM t"),
        format!(
            "SELECT count(*), sum({PRICE}) FROM t \
             WHERE (j->>'dt')::DATE BETWEEN DATE '1993-01-01' AND DATE '1996-06-30'"
        ),
        format!("SELECT count(*), sum({PRICE}), min({PRICE}) FROM t WHERE {PRICE} > 1e12"),
        format!(
            "SELECT count(*) FROM t \
             WHERE {PRICE} IS NOT NULL AND json_get_int(j, 'n') IS NOT NULL"
        ),
        format!(
            "SELECT j->>'g' AS g, count(*), sum({PRICE}), max(json_get_int(j, 'n')) \
             FROM t GROUP BY g ORDER BY g"
        ),
        format!(
            "SELECT json_get_int(j, 'n') % 4 AS k, count(*), sum({revenue}) FROM t \
             WHERE j->>'g' IN ('a', 'b') GROUP BY k ORDER BY k"
        ),
        format!(
            "SELECT j->>'g' AS g, json_get_str(j, 'h') AS h, count(*), avg({PRICE}) FROM t \
             WHERE j->>'g' IS NOT NULL GROUP BY g, h ORDER BY g, h"
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregates_the_store_computes_equal_the_local_answer() {
    let (_minio, s3, store) = common::minio_bucket(BUCKET);
    let mut rng = Rng(0xa66);
    let first = documents(&mut rng, 6_000, true);
    let second = documents(&mut rng, 6_000, true);
    let clean = documents(&mut rng, 6_000, false);
    common::put(store.as_ref(), "t/a.json", first.into()).await;
    common::put(store.as_ref(), "t/b.json.gz", gzip(second.as_bytes())).await;
    common::put(store.as_ref(), "t/c.json", clean.into()).await;
    // Only the rest of a group-by by `g` fails here (the store writes 1.50 back as 1.5,
    // which `->>` reads otherwise): the scan reads the object whole, and the store's
    // aggregates of it must be dropped.
    let mut misleading = documents(&mut rng, 2_000, false);
    misleading.push_str("{\"g\":1.50,\"h\":\"x\",\"p\":3,\"n\":7,\"d\":0,\"dt\":\"1995-05-05\"}\n");
    common::put(store.as_ref(), "t/d.json", misleading.into()).await;
    // Nulls (the store's aggregates fail on a missing value), and a number written as a
    // string: a condition that let them through (as a filter's store condition may)
    // would count them.
    let mut sparse = documents(&mut rng, 2_000, false);
    sparse.push_str("{\"g\":\"a\",\"p\":null,\"n\":null,\"d\":0,\"dt\":null}\n");
    sparse.push_str("{\"g\":\"b\",\"h\":\"x\",\"p\":null,\"n\":null}\n");
    sparse.push_str("{\"h\":\"y\",\"p\":1.25,\"n\":3,\"d\":0,\"dt\":\"1995-05-05\"}\n");
    // A number written as a string: a read of numbers has it as NULL.
    sparse.push_str("{\"g\":\"c\",\"h\":\"y\",\"p\":\"7\",\"n\":1}\n");
    common::put(store.as_ref(), "t/e.json", sparse.into()).await;
    let options = SessionOptions {
        target_partitions: Some(2),
        ..Default::default()
    };
    let session = TesseraSession::new(s3, options).unwrap();
    let create = format!("CREATE EXTERNAL TABLE t STORED AS NDJSON LOCATION 's3://{BUCKET}/t/'");
    rows(&session, &create).await;
    // A link slow enough for every group to be worth the store's scans.
    rows(&session, "SET tessera.link_mib = 0.01").await;
    let mut aggregated = 0;
    for sql in queries() {
        let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
        assert_eq!(pushed, local, "{sql}\n{plan}");
        assert!(plan.contains("SelectAggregationExec"), "{sql}\n{plan}");
        let objects = metric(&plan, "select_aggregated_objects");
        assert!(
            objects >= 1,
            "the clean object is aggregated: {sql}\n{plan}"
        );
        aggregated += objects;
    }
    // The objects with outliers are aggregated by the store where the outliers do not
    // reach the request (filtered out first, or of another group).
    assert!(aggregated > queries().len() as u64, "{aggregated}");
    // The store counts missing values: a count of a text is left to the scan's rows.
    let sql = "SELECT count(j->>'g'), count(*) FROM t";
    let (local, pushed, plan) = local_and_pushed(&session, sql).await;
    assert_eq!(pushed, local, "{sql}\n{plan}");
    assert!(!plan.contains("SelectAggregationExec"), "{sql}\n{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aggregated_object_returns_a_record_per_group_instead_of_its_documents() {
    let (_minio, s3, store) = common::minio_bucket(BUCKET);
    let mut rng = Rng(0x9b);
    let text = documents(&mut rng, 20_000, false);
    common::put(store.as_ref(), "one/c.json", text.into()).await;
    let options = SessionOptions {
        target_partitions: Some(2),
        ..Default::default()
    };
    let session = TesseraSession::new(s3, options).unwrap();
    rows(&session, "SET tessera.link_mib = 0.01").await;
    let sql = format!(
        "SELECT j->>'g' AS g, count(*), sum({PRICE}) FROM 's3://{BUCKET}/one/c.json' \
         GROUP BY g ORDER BY g"
    );
    let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
    assert_eq!(pushed, local, "{plan}");
    // "a", "b" and "c" hold more than 5% of the sample: three requests; the five rare
    // groups come back as documents.
    assert_eq!(metric(&plan, "select_aggregated_objects"), 1, "{plan}");
    let aggregated = metric(&plan, "select_returned_bytes");
    rows(&session, "SET tessera.select_aggregation = 'off'").await;
    let (_, unaggregated, plan) = local_and_pushed(&session, &sql).await;
    assert_eq!(unaggregated, local);
    assert!(!plan.contains("SelectAggregationExec"), "{plan}");
    let returned = metric(&plan, "select_returned_bytes");
    assert!(aggregated * 5 < returned, "{aggregated} of {returned}");
    rows(&session, "SET tessera.select_aggregation = 'on'").await;
    // Over a fast link the store's three more scans cost more than the documents of
    // the three groups: none is pushed, and the scan returns every document (and the
    // sample, which its counters include).
    rows(&session, "SET tessera.link_mib = 10000").await;
    let (_, fast, plan) = local_and_pushed(&session, &sql).await;
    assert_eq!(fast, local);
    assert_eq!(metric(&plan, "select_aggregated_objects"), 0, "{plan}");
    assert!(metric(&plan, "select_returned_bytes") >= returned, "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_aggregates_sparse_documents_leaving_out_those_without_the_value() {
    let (_minio, s3, store) = common::minio_bucket(BUCKET);
    let mut rng = Rng(0x5ba75e);
    let first = sparse_documents(&mut rng, 3_000);
    let second = sparse_documents(&mut rng, 3_000);
    common::put(store.as_ref(), "s/a.json", first.into()).await;
    common::put(store.as_ref(), "s/b.json.gz", gzip(second.as_bytes())).await;
    // A price written as a string and a double where integers are read: both are NULL
    // to the reads, so leaving them out would be exact too; the store cannot tell them
    // from numbers it should add, so its requests must fail and the scan read them.
    let mut outliers = sparse_documents(&mut rng, 1_000);
    outliers.push_str("{\"g\":\"a\",\"p\":\"7\",\"n\":2.5,\"d\":0}\n");
    common::put(store.as_ref(), "s/c.json", outliers.into()).await;
    let options = SessionOptions {
        target_partitions: Some(2),
        ..Default::default()
    };
    let session = TesseraSession::new(s3, options).unwrap();
    let create = format!("CREATE EXTERNAL TABLE s STORED AS NDJSON LOCATION 's3://{BUCKET}/s/'");
    rows(&session, &create).await;
    rows(&session, "SET tessera.link_mib = 0.01").await;
    let ints = "sum(json_get_int(j, 'n')), min(json_get_int(j, 'n')), \
                max(json_get_int(j, 'n')), count(json_get_int(j, 'n'))";
    let revenue = format!("{PRICE} * (1 - json_get_float(j, 'd'))");
    let sparse = [
        format!("SELECT sum({PRICE}), min({PRICE}), max({PRICE}), avg({PRICE}) FROM s"),
        format!("SELECT {ints} FROM s WHERE j->>'g' IN ('a', 'b')"),
        // The filter's comparison would fail on a missing price: those go first.
        format!("SELECT count({PRICE}), sum({PRICE}) FROM s WHERE {PRICE} < 500.5"),
        format!("SELECT sum({revenue}), avg(json_get_float(j, 'd') * {PRICE}) FROM s"),
        format!(
            "SELECT j->>'g' AS g, sum({PRICE}), max({PRICE}), count({PRICE}) FROM s \
             GROUP BY g ORDER BY g"
        ),
    ];
    for sql in &sparse {
        let (local, pushed, plan) = local_and_pushed(&session, sql).await;
        assert_eq!(pushed, local, "{sql}\n{plan}");
        assert_eq!(
            metric(&plan, "select_aggregated_objects"),
            2,
            "the sparse objects are aggregated, the one with outliers read: {sql}\n{plan}"
        );
    }
    // COUNT(*) counts the documents without a price: nothing can be left out.
    let sql = format!("SELECT count(*), sum({PRICE}) FROM s");
    let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
    assert_eq!(pushed, local, "{sql}\n{plan}");
    assert_eq!(
        metric(&plan, "select_aggregated_objects"),
        0,
        "{sql}\n{plan}"
    );
}
