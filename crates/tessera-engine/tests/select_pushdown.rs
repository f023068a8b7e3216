//! S3 Select pushdown (`SET tessera.pushdown = 's3select'`) against a real MinIO: over
//! randomized filter workloads on generated NDJSON with type outliers, NULLs and missing
//! paths, and over documents written to mislead a store's rendering (numbers written
//! `1.50`, `1e3` or past 2^53, strings that look like numbers, escapes), every answer
//! with pushdown equals the answer without it. The scans really ask S3 Select (requests
//! counted, fewer bytes over the link); an object S3 Select cannot answer exactly is read
//! by the scan itself (fallbacks counted); malformed lines are reported at the same place
//! or skipped the same way; an answer cut by the network is an error or the whole
//! answer, never a short one.

use object_store::ObjectStore;
use tessera_blob::S3Config;
use tessera_engine::{SessionOptions, TesseraSession};
use tessera_testkit::{Direction, MinioServer, Toxic, Toxiproxy};

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::data_sets::{DataSet, OUTLIERS, bluesky, bounds, events};
use common::random_filters::query;
use common::{Rng, gzip, local_and_pushed, metric, rows};

const BUCKET: &str = "pushdown";
/// Random queries per data set.
const QUERIES: usize = 40;

/// Documents whose fields a store writes back otherwise than they are written.
const RENDERED: &str = r#"{"k":"x","n":1.50,"i":7,"big":9007199254740993,"e":1e3,"s":"\u0063afe","d":"1994-03-01"}
{"k":"x","n":2,"i":1.0,"big":12345678901234567890,"e":-0.0,"s":"5","d":"1994-3-1"}
{"k":"y","n":"3","i":"8","big":null,"e":true,"s":{"a":1},"d":"19940301"}
{"k":"5","n":null,"i":null,"d":null}
{"n":4.25,"i":-3,"s":"caf\u00e9","d":"1995-01-01"}
{"k":5,"n":6,"d":"1996-12-31"}
"#;

struct Fixture {
    _minio: MinioServer,
    s3: S3Config,
    store: std::sync::Arc<dyn ObjectStore>,
}

async fn fixture() -> Fixture {
    let (minio, s3, store) = common::minio_bucket(BUCKET);
    Fixture {
        _minio: minio,
        s3,
        store,
    }
}

impl Fixture {
    async fn put(&self, key: &str, bytes: Vec<u8>) {
        common::put(self.store.as_ref(), key, bytes).await;
    }

    /// A session on 2 partitions without the caches.
    fn session(&self) -> TesseraSession {
        let options = SessionOptions {
            target_partitions: Some(2),
            ..Default::default()
        };
        TesseraSession::new(self.s3.clone(), options).unwrap()
    }
}

/// What the pushed runs of a workload did.
#[derive(Debug, Default)]
struct Counts {
    queries: usize,
    with_condition: usize,
    requests: u64,
    fallbacks: u64,
    retries: u64,
}

/// Uploads `data`'s parts (the second gzipped, and again without its outliers, whose
/// values a store writes otherwise) and runs random queries both ways.
async fn differential(fixture: &Fixture, data: DataSet, rng: &mut Rng) -> Counts {
    let prefix = data.name;
    let first = std::fs::read(&data.parts[0]).unwrap();
    let second = std::fs::read_to_string(&data.parts[1]).unwrap();
    let clean = second.strip_suffix(OUTLIERS).unwrap().to_string();
    fixture.put(&format!("{prefix}/a.json"), first).await;
    fixture
        .put(&format!("{prefix}/b.json.gz"), gzip(second.as_bytes()))
        .await;
    fixture.put(&format!("{prefix}/c.json"), clean.into()).await;
    let session = fixture.session();
    let create =
        format!("CREATE EXTERNAL TABLE t STORED AS NDJSON LOCATION 's3://{BUCKET}/{prefix}/'");
    rows(&session, &create).await;
    let bounds = bounds(&session, &data).await;
    let mut counts = Counts::default();
    for _ in 0..QUERIES {
        let (select, where_) = query(&data, rng, &bounds);
        let sql = format!("SELECT {select} FROM t WHERE {where_}");
        let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
        assert_eq!(pushed, local, "{}: {sql}\n{plan}", data.name);
        counts.queries += 1;
        counts.with_condition += usize::from(plan.contains("s3object s WHERE"));
        counts.requests += metric(&plan, "select_requests");
        counts.fallbacks += metric(&plan, "select_fallbacks");
        counts.retries += metric(&plan, "select_retries");
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushed_answers_equal_local_answers_over_random_filters() {
    let fixture = fixture().await;
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x5e1ec7);
    for data in [bluesky(dir.path(), 3_000), events(dir.path(), 2_000)] {
        let name = data.name;
        let counts = differential(&fixture, data, &mut rng).await;
        println!("{name}: {counts:?}");
        // Every query asks S3 Select (three objects each), most push a condition, and
        // at least the objects without outliers are answered.
        let objects = 3 * counts.queries as u64;
        assert!(counts.requests >= objects, "{name}: {counts:?}");
        assert!(
            objects - counts.fallbacks >= counts.queries as u64,
            "{name}: {counts:?}"
        );
        assert!(
            counts.with_condition >= counts.queries / 2,
            "{name}: {counts:?}"
        );
        // The outliers make some requests fail and be asked again without comparisons.
        assert!(counts.retries > 0, "{name}: {counts:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_a_store_writes_otherwise_are_read_from_the_object() {
    let fixture = fixture().await;
    fixture.put("rendered/r.json", RENDERED.into()).await;
    fixture
        .put(
            "rendered/r.json.zst",
            zstd::encode_all(RENDERED.as_bytes(), 1).unwrap(),
        )
        .await;
    let session = fixture.session();
    let from = format!("FROM 's3://{BUCKET}/rendered/*'");
    // (query, whether S3 Select answers it; otherwise the scan reads the object)
    let cases = [
        // Text of numbers, containers and escapes: the store writes them anew.
        (
            format!("SELECT j->>'n', j->>'s' {from} WHERE j->>'k' = 'x'"),
            false,
        ),
        (
            format!("SELECT j->>'e' {from} WHERE j->>'k' IN ('x', 'y')"),
            false,
        ),
        // Integers past 2^53; integers read from `1.0`, which the store writes `1`
        // (json_get_int gives NULL for a double); a string where integers are read.
        (format!("SELECT json_get_int(j, 'big') {from}"), false),
        (
            format!("SELECT json_get_int(j, 'i') {from} WHERE j->>'k' = 'x'"),
            false,
        ),
        (
            format!(
                "SELECT json_get_int(j, 'i'), CAST(j->>'i' AS BIGINT) {from} WHERE j->>'k' = 'y'"
            ),
            false,
        ),
        // Doubles and strings keep their meaning.
        (
            format!(
                "SELECT json_get_float(j, 'n'), json_get_str(j, 's') {from} WHERE json_get_float(j, 'n') > 1.6"
            ),
            true,
        ),
        (
            format!("SELECT CAST(j->>'n' AS DOUBLE) {from} WHERE CAST(j->>'n' AS DOUBLE) >= 2"),
            true,
        ),
        // A constant a number's text equals is not pushed (the store compares types), and
        // the number 5 at `k` is then returned and written anew.
        (
            format!("SELECT j->>'k', json_get_float(j, 'n') {from} WHERE j->>'k' = '5'"),
            false,
        ),
        // Dates written otherwise pass the store's condition; the local filter decides.
        (
            format!(
                "SELECT json_get_str(j, 'k') {from} WHERE TRY_CAST(j->>'d' AS DATE) >= DATE '1994-02-01'"
            ),
            true,
        ),
        // A text only tested for NULL (the number 5 at `k` too) keeps its meaning.
        (
            format!("SELECT count(*) {from} WHERE j->>'k' IS NOT NULL"),
            true,
        ),
    ];
    for (sql, answered) in cases {
        let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
        assert_eq!(pushed, local, "{sql}\n{plan}");
        // One of the two objects is zstd, which S3 Select does not read.
        let fallbacks = metric(&plan, "select_fallbacks");
        let expected = if answered { 1 } else { 2 };
        assert_eq!(fallbacks, expected, "{sql}\n{plan}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_lines_are_reported_and_skipped_as_without_pushdown() {
    let fixture = fixture().await;
    let text = "{\"k\":\"a\",\"n\":1}\n{\"k\":\"b\",\"n\":2}\n{\"k\":\"a\",\"n\":3,}\n{\"k\":\"a\",\"n\":4}\n";
    fixture.put("bad/x.json", text.into()).await;
    let session = fixture.session();
    let sql =
        format!("SELECT json_get_int(j, 'n') FROM 's3://{BUCKET}/bad/x.json' WHERE j->>'k' = 'a'");
    let mut errors = Vec::new();
    for mode in ["off", "s3select"] {
        rows(&session, &format!("SET tessera.pushdown = '{mode}'")).await;
        let err = session
            .sql(&sql)
            .await
            .unwrap()
            .collect()
            .await
            .unwrap_err();
        errors.push(err.to_string());
    }
    assert!(errors[0].contains("line 3"), "{errors:?}");
    assert_eq!(errors[0], errors[1]);
    rows(&session, "SET tessera.on_error = 'skip'").await;
    let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
    assert_eq!(local, vec!["1", "4"]);
    assert_eq!(pushed, local);
    assert_eq!(metric(&plan, "lines_rejected"), 1, "{plan}");
    assert_eq!(metric(&plan, "select_fallbacks"), 1, "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_answer_is_never_a_short_result() {
    let fixture = fixture().await;
    let dir = tempfile::tempdir().unwrap();
    let data = bluesky(dir.path(), 20_000);
    fixture
        .put("cut/a.json", std::fs::read(&data.parts[0]).unwrap())
        .await;
    let toxiproxy = Toxiproxy::start();
    let proxy = toxiproxy.proxy("minio", fixture._minio.port());
    let mut s3 = fixture.s3.clone();
    s3.endpoint = Some(proxy.endpoint());
    let options = SessionOptions {
        target_partitions: Some(2),
        ..Default::default()
    };
    let session = TesseraSession::new(s3, options).unwrap();
    let sql = format!(
        "SELECT j->>'did', j->'commit'->>'collection' FROM 's3://{BUCKET}/cut/a.json' \
         WHERE j->>'kind' = 'commit'"
    );
    let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
    assert_eq!(pushed, local);
    assert!(metric(&plan, "select_returned_bytes") > 64 * 1024, "{plan}");
    proxy.add(
        "cut",
        Direction::Downstream,
        Toxic::LimitData { bytes: 64 * 1024 },
    );
    for _ in 0..3 {
        match session.sql(&sql).await.unwrap().collect().await {
            Ok(batches) => assert_eq!(common::lines(&batches), local, "a short answer"),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

/// Customers (the build side, `acctbal` spread over -1000..1000) and orders (the probe
/// side, in two objects), and a third with keys no filter holds: strings (one a number's
/// text), a float, a key past 2^31, a null, a missing key and a negative one.
async fn customers_and_orders(fixture: &Fixture) {
    let mut rng = Rng(0xb100);
    let customers: String = (0..2_000)
        .map(|k| {
            format!(
                "{{\"c_custkey\":{k},\"c_acctbal\":{}}}\n",
                rng.below(2_000) as i64 - 1_000
            )
        })
        .collect();
    let order = |rng: &mut Rng| {
        format!(
            "{{\"o_custkey\":{},\"o_totalprice\":{}.5}}\n",
            rng.below(2_000),
            rng.below(100_000)
        )
    };
    let first: String = (0..20_000).map(|_| order(&mut rng)).collect();
    let second: String = (0..20_000).map(|_| order(&mut rng)).collect();
    let mut odd: String = [
        "\"17\"",
        "\"abc\"",
        "17.0",
        "3000000000",
        "null",
        "-5",
        "42",
    ]
    .iter()
    .map(|key| format!("{{\"o_custkey\":{key},\"o_totalprice\":1.5}}\n"))
    .collect();
    odd.push_str("{\"o_totalprice\":2.5}\n");
    fixture.put("join/customer.json", customers.into()).await;
    fixture.put("join/orders/a.json", first.into()).await;
    fixture.put("join/orders/b.json", second.into()).await;
    fixture.put("join/orders/c.json", odd.into()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bloom_join_returns_the_joined_rows_and_little_of_the_probe_side() {
    let fixture = fixture().await;
    customers_and_orders(&fixture).await;
    let session = fixture.session();
    let tables = format!(
        "CREATE EXTERNAL TABLE customer STORED AS NDJSON LOCATION 's3://{BUCKET}/join/customer.json';\
         CREATE EXTERNAL TABLE orders STORED AS NDJSON LOCATION 's3://{BUCKET}/join/orders/'"
    );
    for statement in tables.split(';') {
        rows(&session, statement).await;
    }
    rows(&session, "SET tessera.bloom_join = 'on'").await;
    let joins = [
        "SELECT count(*), sum(json_get_float(o.j, 'o_totalprice')) FROM customer c JOIN orders o \
         ON json_get_int(o.j, 'o_custkey') = json_get_int(c.j, 'c_custkey') \
         WHERE json_get_float(c.j, 'c_acctbal') <= {bound}",
        "SELECT count(*) FROM (SELECT json_get_int(j, 'c_custkey') AS k FROM customer \
         WHERE json_get_float(j, 'c_acctbal') <= {bound}) c \
         JOIN orders o ON TRY_CAST(o.j->>'o_custkey' AS BIGINT) = c.k",
    ];
    for join in joins {
        let mut returned = Vec::new();
        for bound in [-950, -500, 0, 1_000] {
            let sql = join.replace("{bound}", &bound.to_string());
            let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
            assert_eq!(pushed, local, "{sql}\n{plan}");
            assert!(plan.contains("bloom_join=$.o_custkey"), "{sql}\n{plan}");
            assert_eq!(metric(&plan, "select_bloom_requests"), 3, "{plan}");
            // The third object's odd keys fail the filter's test: asked again without it.
            assert!(metric(&plan, "select_retries") >= 1, "{plan}");
            returned.push(metric(&plan, "select_returned_bytes"));
        }
        // The more selective the build side, the less of the probe side comes back.
        assert!(returned.windows(2).all(|w| w[0] <= w[1]), "{returned:?}");
        rows(&session, "SET tessera.bloom_join = 'off'").await;
        let sql = join.replace("{bound}", "-950");
        let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
        assert_eq!(pushed, local);
        assert!(!plan.contains("bloom_join="), "{plan}");
        let unfiltered = metric(&plan, "select_returned_bytes");
        assert!(
            returned[0] * 5 < unfiltered,
            "{} of {unfiltered}",
            returned[0]
        );
        rows(&session, "SET tessera.bloom_join = 'on'").await;
    }
}

/// Documents with a number `p` (integers and fractions, ties, negative) and an `id`; in
/// the objects but the last, documents whose `p` is missing, null, a string, a boolean
/// or written `1e3`.
fn priced(rng: &mut Rng, documents: usize, outliers: bool) -> String {
    let mut text = String::new();
    for id in 0..documents {
        let p = match rng.below(4) {
            0 => format!("{}", rng.below(50) as i64 - 10),
            _ => format!("{}.{}", rng.below(100_000), rng.below(100)),
        };
        let group = if rng.below(3) == 0 { "a" } else { "b" };
        text.push_str(&format!("{{\"id\":{id},\"g\":\"{group}\",\"p\":{p}}}\n"));
    }
    if outliers {
        for (at, p) in ["null", "\"abc\"", "\"99999999\"", "true", "1e3"]
            .iter()
            .enumerate()
        {
            text.push_str(&format!(
                "{{\"id\":{},\"g\":\"a\",\"p\":{p}}}\n",
                documents + at
            ));
        }
        text.push_str(&format!("{{\"id\":{},\"g\":\"a\"}}\n", documents + 9));
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampled_top_k_returns_the_top_k_rows_and_little_else() {
    let fixture = fixture().await;
    let mut rng = Rng(0x70b4);
    for (name, outliers) in [("a", true), ("b", true), ("c", false)] {
        let text = priced(&mut rng, 20_000, outliers);
        fixture.put(&format!("top/{name}.json"), text.into()).await;
    }
    let session = fixture.session();
    rows(
        &session,
        &format!("CREATE EXTERNAL TABLE t STORED AS NDJSON LOCATION 's3://{BUCKET}/top/'"),
    )
    .await;
    let keys = [
        "json_get_float(j, 'p')",
        "json_get_int(j, 'p')",
        "TRY_CAST(j->>'p' AS DOUBLE)",
    ];
    let orders = ["DESC", "ASC", "DESC NULLS LAST", "ASC NULLS FIRST"];
    let mut thresholds = 0;
    for k in [1, 7, 100, 5_000] {
        for (at, order) in orders.iter().enumerate() {
            let key = keys[(k + at) % keys.len()];
            let filter = if at % 2 == 0 {
                ""
            } else {
                "WHERE j->>'g' = 'a'"
            };
            let sql = format!(
                "SELECT json_get_int(j, 'id') AS id, {key} AS p FROM t {filter} \
                 ORDER BY p {order}, id LIMIT {k}"
            );
            let (local, pushed, plan) = local_and_pushed(&session, &sql).await;
            assert_eq!(pushed, local, "{sql}\n{plan}");
            assert!(plan.contains("TopKThresholdExec"), "{sql}\n{plan}");
            thresholds += metric(&plan, "select_top_k_requests");
        }
    }
    assert!(thresholds > 0, "no request carried a threshold");
    // The clean object's answer shrinks to about the K best and the sample.
    let sql = "SELECT json_get_int(j, 'id') AS id, json_get_float(j, 'p') AS p \
               FROM 's3://pushdown/top/c.json' ORDER BY p DESC, id LIMIT 10";
    let (local, pushed, plan) = local_and_pushed(&session, sql).await;
    assert_eq!(pushed, local, "{plan}");
    assert_eq!(metric(&plan, "select_top_k_requests"), 1, "{plan}");
    let sampled = metric(&plan, "select_returned_bytes");
    rows(&session, "SET tessera.top_k_sampling = 'off'").await;
    let (_, whole, plan) = local_and_pushed(&session, sql).await;
    assert_eq!(whole, local);
    let returned = metric(&plan, "select_returned_bytes");
    assert!(sampled * 4 < returned, "{sampled} of {returned}");
    rows(&session, "SET tessera.top_k_sampling = 'on'").await;
}
