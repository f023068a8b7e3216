//! The storage-side worker (`tessera serve --storage-side`, `SET tessera.pushdown =
//! 'worker'`) against a real MinIO, over Arrow Flight on loopback: over randomized
//! filter and aggregate workloads on generated NDJSON with type outliers, NULLs and
//! missing paths, every answer the worker computes equals the local one, and the
//! worker really computed it (its requests counted, no fallbacks). A worker that is
//! down or saturated leaves the partition to the client; a wrong token, a malformed
//! line or a link cut mid-answer is an error in one sentence, never a short answer.

use std::sync::Arc;

use object_store::{ObjectStore, ObjectStoreExt};
use tessera_blob::S3Config;
use tessera_engine::{SAMPLE_BYTES, SessionOptions, TesseraSession, WorkerToken};
use tessera_server::storage_side::{self, WorkerConfig};
use tessera_testkit::{Direction, MinioServer, Toxic, Toxiproxy};
use tokio::sync::oneshot;

// The engine's test helpers: data sets, random filters, answers as sorted lines. This
// test uses a part of them.
#[allow(dead_code)]
#[path = "../../tessera-engine/tests/common/mod.rs"]
mod common;

use common::data_sets::{DataSet, bluesky, bounds, events};
use common::random_filters::query;
use common::{Rng, analyze, metric, rows};

const BUCKET: &str = "worker";
const TOKEN: &str = "s3cr3t-worker-token";
/// Random queries per data set.
const QUERIES: usize = 24;

/// MinIO with the test's bucket, and a worker reading it.
struct Fixture {
    _minio: MinioServer,
    s3: S3Config,
    store: Arc<dyn ObjectStore>,
    worker: Worker,
}

/// A worker serving on loopback until dropped.
struct Worker {
    endpoint: String,
    port: u16,
    _stop: oneshot::Sender<()>,
}

impl Worker {
    async fn start(s3: &S3Config, streams_max: usize) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let session = TesseraSession::new(s3.clone(), SessionOptions::default()).unwrap();
        let config = WorkerConfig {
            token: WorkerToken::new(TOKEN),
            streams_max,
        };
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(storage_side::serve(listener, config, session, async move {
            let _ = stopped.await;
        }));
        Self {
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
            _stop: stop,
        }
    }
}

async fn fixture() -> Fixture {
    let (minio, s3, store) = common::minio_bucket(BUCKET);
    let worker = Worker::start(&s3, 32).await;
    Fixture {
        _minio: minio,
        s3,
        store,
        worker,
    }
}

impl Fixture {
    async fn put(&self, key: &str, bytes: Vec<u8>) {
        common::put(self.store.as_ref(), key, bytes).await;
    }

    /// A client session on 2 partitions presenting `token`, sending to `endpoint`.
    async fn session(&self, endpoint: &str, token: &str) -> TesseraSession {
        let options = SessionOptions {
            target_partitions: Some(2),
            worker_token: Some(WorkerToken::new(token)),
            ..Default::default()
        };
        let session = TesseraSession::new(self.s3.clone(), options).unwrap();
        rows(&session, &format!("SET tessera.worker = '{endpoint}'")).await;
        session
    }
}

/// `sql`'s rows computed here and on the worker, and the plan of the worker's run.
async fn both(session: &TesseraSession, sql: &str) -> (Vec<String>, Vec<String>, String) {
    pushed_as(session, sql, "worker").await
}

/// `sql`'s rows computed here and under `tessera.pushdown = mode`, and the plan of the
/// pushed run.
async fn pushed_as(
    session: &TesseraSession,
    sql: &str,
    mode: &str,
) -> (Vec<String>, Vec<String>, String) {
    rows(session, "SET tessera.pushdown = 'off'").await;
    let local = rows(session, sql).await;
    rows(session, &format!("SET tessera.pushdown = '{mode}'")).await;
    let pushed = rows(session, sql).await;
    let plan = analyze(session, sql).await;
    (local, pushed, plan)
}

/// A random query of one of three shapes: rows, an aggregate per group, a top-K.
fn random_sql(data: &DataSet, rng: &mut Rng, bounds: &[(i64, i64)]) -> String {
    let (select, where_) = query(data, rng, bounds);
    let (group, _) = &data.texts[rng.below(data.texts.len() as u64) as usize];
    let number = data.integers[rng.below(data.integers.len() as u64) as usize];
    match rng.below(3) {
        0 => format!("SELECT {select} FROM t WHERE {where_}"),
        1 => format!(
            "SELECT {group} AS g, count(*), sum(TRY_CAST({number} AS BIGINT)), \
             min({number}) FROM t WHERE {where_} GROUP BY 1"
        ),
        _ => format!(
            "SELECT {select}, TRY_CAST({number} AS BIGINT) AS n FROM t WHERE {where_} \
             ORDER BY n DESC NULLS LAST, 1, 2 LIMIT 7"
        ),
    }
}

/// What the queries of a test read: `data`'s raw NDJSON objects, or a Tessera table
/// in the bucket ingested from them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stored {
    Raw,
    Table,
}

/// `data`'s parts put under `worker/{name}/`, read as table `t` of a session sending
/// to the fixture's worker: the raw objects, or a Tessera table of them at
/// `worker/tables/{name}`, in one file per part.
async fn stored_session(fixture: &Fixture, data: &DataSet, stored: Stored) -> TesseraSession {
    let prefix = data.name;
    for (at, part) in data.parts.iter().enumerate() {
        let bytes = std::fs::read(part).unwrap();
        fixture.put(&format!("{prefix}/{at}.json"), bytes).await;
    }
    let session = fixture.session(&fixture.worker.endpoint, TOKEN).await;
    let raw = format!("'s3://{BUCKET}/{prefix}/'");
    if stored == Stored::Raw {
        rows(
            &session,
            &format!("CREATE EXTERNAL TABLE t STORED AS NDJSON LOCATION {raw}"),
        )
        .await;
        return session;
    }
    let table = format!("s3://{BUCKET}/tables/{prefix}");
    rows(
        &session,
        &format!("CREATE EXTERNAL TABLE t STORED AS TESSERA LOCATION '{table}'"),
    )
    .await;
    for at in 0..data.parts.len() {
        let part = format!("s3://{BUCKET}/{prefix}/{at}.json");
        rows(&session, &format!("INSERT INTO t SELECT j FROM '{part}'")).await;
    }
    session
}

/// Random queries over each data set stored as `stored`, answered here, on the worker
/// and under auto: the same rows, and the worker's requests all answered by it.
async fn differential(stored: Stored, seed: u64) {
    let fixture = fixture().await;
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(seed);
    for data in [bluesky(dir.path(), 3_000), events(dir.path(), 2_000)] {
        let name = data.name;
        let (requests, fallbacks) = differential_over(&fixture, data, &mut rng, stored).await;
        println!("{name}: {requests} requests, {fallbacks} fallbacks");
        assert!(requests >= QUERIES as u64, "{name}: {requests} requests");
        assert_eq!(fallbacks, 0, "{name}");
    }
}

/// The worker's requests and fallbacks over [`QUERIES`] random queries of `data`.
async fn differential_over(
    fixture: &Fixture,
    data: DataSet,
    rng: &mut Rng,
    stored: Stored,
) -> (u64, u64) {
    let session = stored_session(fixture, &data, stored).await;
    let bounds = bounds(&session, &data).await;
    let (mut requests, mut fallbacks) = (0, 0);
    for _ in 0..QUERIES {
        let sql = random_sql(&data, rng, &bounds);
        let (local, pushed, plan) = both(&session, &sql).await;
        assert_eq!(pushed, local, "{}: {sql}\n{plan}", data.name);
        assert!(plan.contains("WorkerExec"), "{sql}\n{plan}");
        let table_scan = plan.contains("file_type=tessera");
        assert_eq!(table_scan, stored == Stored::Table, "{sql}\n{plan}");
        requests += metric(&plan, "worker_requests");
        fallbacks += metric(&plan, "worker_fallbacks");
        let (_, chosen, plan) = pushed_as(&session, &sql, "auto").await;
        assert_eq!(chosen, local, "{}: {sql} (auto)\n{plan}", data.name);
        assert!(
            plan.contains("PushdownChoiceExec: choice="),
            "{sql}\n{plan}"
        );
    }
    (requests, fallbacks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_answers_equal_local_answers_over_random_queries() {
    differential(Stored::Raw, 0x3a7e5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_answers_over_tessera_tables_equal_local_answers() {
    // The worker reads the version the client planned on, with its own credentials.
    differential(Stored::Table, 0x7ab1e).await;
}

/// Bluesky events per part of the table [`bluesky_table`] makes.
const TABLE_DOCS: u64 = 20_000;
/// A grouped count over table `t`.
const GROUPED_KINDS: &str = "SELECT j->>'kind', count(*) FROM t GROUP BY 1";

/// A session sending to the fixture's worker, reading Bluesky events as Tessera table `t`.
async fn bluesky_table(fixture: &Fixture) -> TesseraSession {
    let dir = tempfile::tempdir().unwrap();
    let data = bluesky(dir.path(), TABLE_DOCS);
    stored_session(fixture, &data, Stored::Table).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_samples_a_tessera_table_for_what_its_scan_reads() {
    let fixture = fixture().await;
    let session = bluesky_table(&fixture).await;
    let grouped = GROUPED_KINDS;
    rows(&session, "SET tessera.link_mib = 1").await;
    assert_eq!(choice(&session, grouped).await, "worker");
    let (local, chosen, plan) = pushed_as(&session, grouped, "auto").await;
    assert_eq!(chosen, local, "{plan}");
    assert_eq!(metric(&plan, "worker_fallbacks"), 0, "{plan}");
    // The local plan's estimate is of the leaves it reads, not of the files' bytes.
    rows(&session, "SET tessera.pushdown = 'off'").await;
    let read = metric(&analyze(&session, grouped).await, "bytes_scanned") as f64;
    let (plan, _) = planned(&session, grouped).await;
    let local_s = estimated_local_s(&plan);
    let expected_s = read / f64::from(1u32 << 20) / 2.0;
    assert!(
        (local_s / expected_s - 1.0).abs() < 0.5,
        "{local_s} s against {expected_s} s for {read} bytes\n{plan}"
    );
    // A link wider than the scan decodes gains nothing by sending the plan away.
    rows(&session, "SET tessera.link_mib = 100000").await;
    assert_eq!(choice(&session, grouped).await, "local");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_waits_the_link_s_latency_for_each_table_footer_fetched_here() {
    let fixture = fixture().await;
    let session = bluesky_table(&fixture).await;
    let grouped = GROUPED_KINDS;
    let worker = format!("SET tessera.worker = '{}'", fixture.worker.endpoint);
    // A link wider than the scan decodes, but slow to answer: bytes cost nothing, and
    // reading here waits for each file's footer, then its leaves.
    rows(&session, "SET tessera.link_mib = 100000").await;
    rows(&session, "SET tessera.link_latency_ms = 500").await;
    rows(&session, "SET tessera.worker = ''").await;
    let (unread, _) = planned(&session, grouped).await;
    // The worker, beside the store, answers one call per partition.
    rows(&session, &worker).await;
    assert_eq!(choice(&session, grouped).await, "worker");
    let (local, chosen, plan) = pushed_as(&session, grouped, "auto").await;
    assert_eq!(chosen, local, "{plan}");
    // Once this process holds the footers (read above), reading here saves a wait per
    // file. (Without a worker nothing is sampled, so only the footers differ.)
    rows(&session, "SET tessera.pushdown = 'off'").await;
    let files = metric(&analyze(&session, grouped).await, "files_scanned") as f64;
    rows(&session, "SET tessera.worker = ''").await;
    let (read, _) = planned(&session, grouped).await;
    let saved_s = estimated_local_s(&unread) - estimated_local_s(&read);
    let expected_s = files * 0.5 / 2.0;
    assert!(
        files >= 2.0 && (saved_s - expected_s).abs() < 0.002,
        "{saved_s} s saved, {expected_s} s expected for {files} files\n{unread}\n{read}"
    );
    // Without the latency, the wide link leaves the scan here.
    rows(&session, &worker).await;
    rows(&session, "SET tessera.link_latency_ms = 0").await;
    assert_eq!(choice(&session, grouped).await, "local");
}

/// The local estimate of the first choice in `plan`.
fn estimated_local_s(plan: &str) -> f64 {
    let at = plan.find("estimated_s=[local=").expect(plan) + "estimated_s=[local=".len();
    let end = plan[at..].find([',', ']']).unwrap();
    plan[at..at + end].parse().unwrap()
}

/// Bluesky documents at `worker/cut/a.json`; a query returning many of their rows.
async fn many_rows(fixture: &Fixture) -> String {
    let dir = tempfile::tempdir().unwrap();
    let data = bluesky(dir.path(), 20_000);
    fixture
        .put("cut/a.json", std::fs::read(&data.parts[0]).unwrap())
        .await;
    format!(
        "SELECT j->>'did', j->'commit'->>'collection' FROM 's3://{BUCKET}/cut/a.json' \
         WHERE j->>'kind' = 'commit'"
    )
}

/// The address of a worker that was started and stopped: nothing listens on it.
async fn stopped_worker(fixture: &Fixture) -> String {
    let worker = Worker::start(&fixture.s3, 1).await;
    worker.endpoint.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_a_worker_cannot_take_are_computed_here() {
    let fixture = fixture().await;
    let sql = many_rows(&fixture).await;
    let session = fixture
        .session(&stopped_worker(&fixture).await, TOKEN)
        .await;
    let (local, pushed, plan) = both(&session, &sql).await;
    assert_eq!(pushed, local);
    assert_eq!(
        metric(&plan, "worker_fallbacks"),
        metric(&plan, "worker_requests"),
        "{plan}"
    );
    assert!(metric(&plan, "worker_requests") > 0, "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_analyze_shows_what_the_worker_read_and_spent() {
    let fixture = fixture().await;
    let sql = many_rows(&fixture).await;
    let session = fixture.session(&fixture.worker.endpoint, TOKEN).await;
    rows(&session, "SET tessera.pushdown = 'off'").await;
    let local = analyze(&session, &sql).await;
    let (read, billed) = (
        metric(&local, "bytes_scanned"),
        metric(&local, "request_cost_nanodollars"),
    );
    // Each ranged read of the object is a GET at $0.0004 per 1,000.
    assert_eq!(billed, 400 * metric(&local, "requests"), "{local}");
    assert!(billed > 0, "{local}");
    rows(&session, "SET tessera.pushdown = 'worker'").await;
    let pushed = analyze(&session, &sql).await;
    assert_eq!(metric(&pushed, "worker_fallbacks"), 0, "{pushed}");
    // The worker read what this session read (EXPLAIN rounds to four digits)...
    let store_bytes = metric(&pushed, "worker_store_bytes");
    assert!(
        store_bytes.abs_diff(read) * 100 <= read,
        "{store_bytes} of {read}\n{pushed}"
    );
    // ...with the same GETs, and its time on top.
    assert!(
        metric(&pushed, "worker_cost_nanodollars") > billed,
        "{pushed}"
    );
}

/// The choice `tessera.pushdown = 'auto'` shows for `sql` in `session`.
async fn choice(session: &TesseraSession, sql: &str) -> String {
    rows(session, "SET tessera.pushdown = 'auto'").await;
    let plan = analyze(session, sql).await;
    let at = plan
        .find("choice=")
        .unwrap_or_else(|| panic!("no choice:\n{plan}"));
    plan[at + "choice=".len()..]
        .split(',')
        .next()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_sends_what_the_link_would_slow_down() {
    let fixture = fixture().await;
    let sql = many_rows(&fixture).await;
    let counted = format!("SELECT j->>'kind', count(*) FROM 's3://{BUCKET}/cut/a.json' GROUP BY 1");
    let session = fixture.session(&fixture.worker.endpoint, TOKEN).await;
    // A thin link: the aggregate's few rows beat the document bytes.
    rows(&session, "SET tessera.link_mib = 1").await;
    assert_eq!(choice(&session, &counted).await, "worker");
    // A link wider than Tessera parses: nothing is gained by sending the plan away.
    rows(&session, "SET tessera.link_mib = 100000").await;
    assert_eq!(choice(&session, &sql).await, "local");
    // Without a worker, the thin link makes S3 Select worth its slower scan.
    let alone = fixture.session("", TOKEN).await;
    rows(&alone, "SET tessera.link_mib = 1").await;
    assert_eq!(choice(&alone, &sql).await, "s3select");
    let (local, chosen, plan) = pushed_as(&alone, &sql, "auto").await;
    assert_eq!(chosen, local, "{plan}");
    assert!(metric(&plan, "select_requests") > 0, "{plan}");
}

/// `EXPLAIN sql` under `tessera.pushdown = 'auto'` in `session`, and the bytes the
/// session read from the store meanwhile: what sampling cost it.
async fn planned(session: &TesseraSession, sql: &str) -> (String, u64) {
    rows(session, "SET tessera.pushdown = 'auto'").await;
    let before = session.stores().stats().snapshot();
    let plan = rows(session, &format!("EXPLAIN {sql}")).await.join("\n");
    let read = session.stores().stats().snapshot().since(&before);
    (plan, read.bytes_received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_samples_where_it_costs_least() {
    let fixture = fixture().await;
    let sql = many_rows(&fixture).await;
    let counted = format!("SELECT j->>'kind', count(*) FROM 's3://{BUCKET}/cut/a.json' GROUP BY 1");
    let session = fixture.session(&fixture.worker.endpoint, TOKEN).await;
    rows(&session, "SET tessera.link_mib = 1").await;
    // The worker reads the sample beside the store; only its few rows come back.
    let (plan, read) = planned(&session, &counted).await;
    assert!(plan.contains("choice=worker"), "{plan}");
    assert!(!plan.contains("sampled_share=[plan=none"), "{plan}");
    assert!(
        read < SAMPLE_BYTES / 4,
        "{read} bytes read to plan:\n{plan}"
    );
    // S3 Select's scan alone is slower than the worker here: its sample is not taken.
    assert!(plan.contains("s3select>="), "{plan}");
    assert!(plan.contains("scan=none"), "{plan}");
    // Without a worker the sample is read here, once.
    let alone = fixture.session("", TOKEN).await;
    rows(&alone, "SET tessera.link_mib = 1").await;
    let (plan, read) = planned(&alone, &sql).await;
    assert!(plan.contains("choice=s3select"), "{plan}");
    assert!(!plan.contains("scan=none"), "{plan}");
    assert!(
        (SAMPLE_BYTES..2 * SAMPLE_BYTES).contains(&read),
        "{read} bytes read to plan:\n{plan}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_samples_a_version_of_an_object_once() {
    let fixture = fixture().await;
    let sql = many_rows(&fixture).await;
    let session = fixture.session("", TOKEN).await;
    rows(&session, "SET tessera.link_mib = 1").await;
    let (first, read) = planned(&session, &sql).await;
    assert!(read >= SAMPLE_BYTES, "{read} bytes read to plan:\n{first}");
    // The same query again: the sample is remembered, the same choice made.
    let (again, read) = planned(&session, &sql).await;
    assert!(
        read < SAMPLE_BYTES / 4,
        "{read} bytes read to plan:\n{again}"
    );
    assert_eq!(again, first);
    // The object written anew (another entity tag): sampled again.
    let mut bytes = fixture
        .store
        .get(&"cut/a.json".into())
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec();
    bytes.extend_from_slice(b"{\"kind\": \"commit\"}\n");
    fixture.put("cut/a.json", bytes).await;
    let (_, read) = planned(&session, &sql).await;
    assert!(read >= SAMPLE_BYTES, "{read} bytes read to plan");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_leaves_out_a_worker_that_is_down() {
    let fixture = fixture().await;
    let sql = many_rows(&fixture).await;
    let session = fixture
        .session(&stopped_worker(&fixture).await, TOKEN)
        .await;
    rows(&session, "SET tessera.link_mib = 1").await;
    let (plan, _) = planned(&session, &sql).await;
    assert!(
        !plan.contains("worker="),
        "a worker that is down was estimated:\n{plan}"
    );
    assert!(plan.contains("choice=s3select"), "{plan}");
}

/// The error of `sql` in `session`.
async fn error(session: &TesseraSession, sql: &str) -> String {
    let answer = session.sql(sql).await.unwrap().collect().await;
    answer.expect_err("an error").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_or_a_malformed_line_is_one_sentence() {
    let fixture = fixture().await;
    let sql = many_rows(&fixture).await;
    let session = fixture.session(&fixture.worker.endpoint, "wrong").await;
    rows(&session, "SET tessera.pushdown = 'worker'").await;
    let refused = error(&session, &sql).await;
    assert!(refused.contains("refused the plan"), "{refused}");
    // Settings go in any order; only a scan sent without an address is an error.
    let unset = fixture.session("", TOKEN).await;
    rows(&unset, "SET tessera.pushdown = 'worker'").await;
    rows(&unset, "SELECT 1").await;
    let nowhere = error(&unset, &sql).await;
    assert!(nowhere.contains("needs tessera.worker"), "{nowhere}");
    assert!(refused.contains("token is missing or wrong"), "{refused}");
    assert!(!refused.contains(TOKEN), "{refused}");

    let text = "{\"k\":\"a\",\"n\":1}\n{\"k\":\"b\",\"n\":2}\n{\"k\":\"a\",\"n\":3,}\n";
    fixture.put("bad/x.json", text.into()).await;
    let session = fixture.session(&fixture.worker.endpoint, TOKEN).await;
    let bad = format!("SELECT json_get_int(j, 'n') FROM 's3://{BUCKET}/bad/x.json'");
    rows(&session, "SET tessera.pushdown = 'worker'").await;
    let remote = error(&session, &bad).await;
    rows(&session, "SET tessera.pushdown = 'off'").await;
    let local = error(&session, &bad).await;
    assert!(local.contains("line 3"), "{local}");
    assert!(remote.contains("line 3"), "{remote}");
    assert!(remote.contains("bad/x.json"), "{remote}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_mid_stream_is_never_a_short_result() {
    let fixture = fixture().await;
    let sql = many_rows(&fixture).await;
    let toxiproxy = Toxiproxy::start();
    let proxy = toxiproxy.proxy("worker", fixture.worker.port);
    let session = fixture.session(&proxy.endpoint(), TOKEN).await;
    let (local, pushed, plan) = both(&session, &sql).await;
    assert_eq!(pushed, local);
    assert!(metric(&plan, "worker_bytes") > 64 * 1024, "{plan}");
    proxy.add(
        "cut",
        Direction::Downstream,
        Toxic::LimitData { bytes: 64 * 1024 },
    );
    let cut = error(&session, &sql).await;
    assert!(cut.contains("stopped mid-answer"), "{cut}");
    assert!(cut.contains("no partial answer"), "{cut}");
    // MinIO is untouched by the cut: the same session computes the answer itself.
    rows(&session, "SET tessera.pushdown = 'off'").await;
    assert_eq!(rows(&session, &sql).await, local);
}

/// `count` CSV rows after a header: an id, one of a few kinds, and a price.
fn csv_rows(rng: &mut Rng, count: usize) -> Vec<u8> {
    let mut text = String::from("id,kind,price\n");
    for id in 0..count {
        let kind = ["commit", "identity", "account"][rng.below(3) as usize];
        let price = rng.below(100_000) as f64 / 4.0;
        text.push_str(&format!("{id},{kind},{price}\n"));
    }
    text.into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_goes_to_the_worker_or_to_s3_select_as_ndjson_does() {
    let fixture = fixture().await;
    let mut rng = Rng(0xc5f);
    let mut object_bytes = 0;
    for part in 0..2 {
        let bytes = csv_rows(&mut rng, 20_000);
        object_bytes += bytes.len() as u64;
        fixture.put(&format!("csv/part{part}.csv"), bytes).await;
    }
    let table = format!("'s3://{BUCKET}/csv/*.csv'");
    let grouped = format!("SELECT kind, count(*), sum(price) FROM {table} GROUP BY kind");
    let few = format!("SELECT id, price FROM {table} WHERE price < 100");
    let top = format!("SELECT id, price FROM {table} ORDER BY price DESC, id LIMIT 5");
    let session = fixture.session(&fixture.worker.endpoint, TOKEN).await;
    for sql in [&grouped, &few, &top] {
        let (local, pushed, plan) = both(&session, sql).await;
        assert!(!local.is_empty(), "{sql}");
        assert_eq!(pushed, local, "{sql}\n{plan}");
        assert!(metric(&plan, "worker_requests") > 0, "{sql}\n{plan}");
        assert_eq!(metric(&plan, "worker_fallbacks"), 0, "{sql}\n{plan}");
    }
    // What the scans read and spent shows as the NDJSON scan's does: here, each
    // object read whole with its GETs priced...
    rows(&session, "SET tessera.pushdown = 'off'").await;
    let local = analyze(&session, &grouped).await;
    let (read, billed) = (
        metric(&local, "bytes_scanned"),
        metric(&local, "request_cost_nanodollars"),
    );
    assert!(
        read.abs_diff(object_bytes) * 1_000 <= object_bytes,
        "{read} of {object_bytes}\n{local}"
    );
    assert_eq!(billed, 400 * metric(&local, "requests"), "{local}");
    assert!(billed > 0, "{local}");
    // ...and on the worker, which read the same (EXPLAIN rounds to four digits) with the
    // same GETs, and its time on top.
    rows(&session, "SET tessera.pushdown = 'worker'").await;
    let pushed = analyze(&session, &grouped).await;
    assert_eq!(metric(&pushed, "worker_fallbacks"), 0, "{pushed}");
    let store_bytes = metric(&pushed, "worker_store_bytes");
    assert!(
        store_bytes.abs_diff(object_bytes) * 100 <= object_bytes,
        "{store_bytes} of {object_bytes}\n{pushed}"
    );
    assert!(
        metric(&pushed, "worker_cost_nanodollars") > billed,
        "{pushed}"
    );
    // A thin link: the aggregate's few rows beat the rows.
    rows(&session, "SET tessera.link_mib = 1").await;
    assert_eq!(choice(&session, &grouped).await, "worker");
    let (local, chosen, plan) = pushed_as(&session, &grouped, "auto").await;
    assert_eq!(chosen, local, "{plan}");
    // Without a worker, the thin link makes S3 Select worth its slower scan.
    let alone = fixture.session("", TOKEN).await;
    rows(&alone, "SET tessera.link_mib = 1").await;
    assert_eq!(choice(&alone, &few).await, "s3select");
    let (local, chosen, plan) = pushed_as(&alone, &few, "auto").await;
    assert_eq!(chosen, local, "{plan}");
    assert!(metric(&plan, "select_requests") > 0, "{plan}");
    // A link wider than Tessera parses: the rows are read here.
    rows(&alone, "SET tessera.link_mib = 100000").await;
    assert_eq!(choice(&alone, &few).await, "local");
    let (local, chosen, plan) = pushed_as(&alone, &few, "auto").await;
    assert_eq!(chosen, local, "{plan}");
    assert_eq!(metric(&plan, "select_requests"), 0, "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzipped_csv_is_read_here_under_the_worker() {
    // DataFusion's plan encoding of a CSV scan drops its compression: the worker would
    // read the gzip bytes as text.
    let fixture = fixture().await;
    let mut rng = Rng(0x92c5f);
    fixture
        .put("gz/part0.csv.gz", common::gzip(&csv_rows(&mut rng, 5_000)))
        .await;
    let sql =
        format!("SELECT kind, count(*), sum(price) FROM 's3://{BUCKET}/gz/*.csv.gz' GROUP BY kind");
    let session = fixture.session(&fixture.worker.endpoint, TOKEN).await;
    let (local, pushed, plan) = both(&session, &sql).await;
    assert_eq!(local.len(), 3, "{local:?}");
    assert_eq!(pushed, local, "{plan}");
    assert_eq!(metric(&plan, "worker_requests"), 0, "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_sends_the_filter_over_a_one_object_table_with_its_scan() {
    // One object is one partition, which DataFusion deals round-robin to the filter
    // above: the filter must still leave with the scan, or every row crosses the link.
    let fixture = fixture().await;
    let mut rng = Rng(0x0b1ec7);
    let bytes = csv_rows(&mut rng, 60_000);
    let object_bytes = bytes.len() as u64;
    fixture.put("one/part0.csv", bytes).await;
    let sql = format!("SELECT id, kind FROM 's3://{BUCKET}/one/*.csv' WHERE price < 100");
    let session = fixture.session(&fixture.worker.endpoint, TOKEN).await;
    rows(&session, "SET tessera.link_mib = 1").await;
    assert_eq!(choice(&session, &sql).await, "worker");
    let (local, chosen, plan) = pushed_as(&session, &sql, "auto").await;
    assert!(!local.is_empty());
    assert_eq!(chosen, local, "{plan}");
    let sent = metric(&plan, "worker_bytes");
    assert!(
        sent > 0 && sent * 20 < object_bytes,
        "{sent} of {object_bytes}\n{plan}"
    );
    // And the object is read in byte ranges, a request each, as it is without S3 Select.
    assert_eq!(metric(&plan, "worker_requests"), 2, "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_sends_an_aggregate_without_groups_unsampled() {
    // Whatever it reads, it returns a row per partition: a sample would tell nothing.
    let fixture = fixture().await;
    let mut rng = Rng(0x5a3);
    for part in 0..2 {
        let bytes = csv_rows(&mut rng, 20_000);
        fixture.put(&format!("sum/part{part}.csv"), bytes).await;
    }
    let sql = format!(
        "SELECT count(*), sum(price), max(kind) FROM 's3://{BUCKET}/sum/*.csv' WHERE price < 9000"
    );
    let session = fixture.session(&fixture.worker.endpoint, TOKEN).await;
    rows(&session, "SET tessera.link_mib = 1").await;
    let (plan, _) = planned(&session, &sql).await;
    assert!(plan.contains("choice=worker"), "{plan}");
    assert!(
        plan.contains("sampled_share=[plan=none, scan=none]"),
        "{plan}"
    );
    let (local, chosen, plan) = pushed_as(&session, &sql, "auto").await;
    assert_eq!(chosen, local, "{plan}");
    assert_eq!(metric(&plan, "worker_fallbacks"), 0, "{plan}");
    // A grouped one is sampled: its groups could be as many as its rows.
    let grouped = format!("SELECT kind, count(*) FROM 's3://{BUCKET}/sum/*.csv' GROUP BY kind");
    let (plan, _) = planned(&session, &grouped).await;
    assert!(!plan.contains("sampled_share=[plan=none"), "{plan}");
}

/// `count` random ids of `csv_rows`' (some beyond them), each with a tag.
fn csv_keys(rng: &mut Rng, count: usize, ids_max: u64) -> Vec<u8> {
    let mut text = String::from("id,tag\n");
    for at in 0..count {
        text.push_str(&format!("{},t{at}\n", rng.below(ids_max + ids_max / 10)));
    }
    text.into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_s_build_keys_filter_its_probe_side_on_the_worker() {
    let fixture = fixture().await;
    let mut rng = Rng(0xb100);
    for part in 0..2 {
        let bytes = csv_rows(&mut rng, 20_000);
        fixture
            .put(&format!("join/items/part{part}.csv"), bytes)
            .await;
    }
    let items = format!("'s3://{BUCKET}/join/items/*.csv'");
    let session = fixture.session(&fixture.worker.endpoint, TOKEN).await;
    rows(&session, "SET tessera.pushdown = 'worker'").await;
    rows(&session, "SET tessera.link_mib = 1").await;
    let whole = analyze(&session, &format!("SELECT id, price FROM {items}")).await;
    let whole_bytes = metric(&whole, "worker_bytes");
    // The answer crossed the link compressed: 40,000 ids and prices are 640 KB of Arrow.
    assert!(whole_bytes * 2 < 16 * 40_000, "{whole_bytes}\n{whole}");
    for (round, count) in [40, 200, 3].into_iter().enumerate() {
        let key = format!("join/keys/k{round}.csv");
        fixture.put(&key, csv_keys(&mut rng, count, 20_000)).await;
        let keys = format!("'s3://{BUCKET}/{key}'");
        let joined = format!(
            "SELECT count(*), sum(i.price), min(k.tag) FROM {keys} k JOIN {items} i ON i.id = k.id"
        );
        let grouped = format!(
            "SELECT i.kind, count(*), max(i.price) FROM {keys} k JOIN {items} i \
             ON i.id = k.id WHERE k.tag < 't30' GROUP BY i.kind"
        );
        // Listed first, the items are still the probe side: their files are larger.
        let reversed =
            format!("SELECT count(*), sum(i.price) FROM {items} i JOIN {keys} k ON k.id = i.id");
        for sql in [&joined, &grouped, &reversed] {
            for mode in ["worker", "auto"] {
                let (local, pushed, plan) = pushed_as(&session, sql, mode).await;
                assert_eq!(pushed, local, "{mode}: {sql}\n{plan}");
                // Auto's samples know nothing of the build keys: where the items' Arrow
                // rows outweigh their text, it reads them here.
                if mode == "auto" && sql == &grouped {
                    continue;
                }
                assert!(plan.contains("BloomProbeExec"), "{mode}: {sql}\n{plan}");
                assert_eq!(metric(&plan, "worker_fallbacks"), 0, "{plan}");
                // Only the items that may join crossed the link.
                let sent = metric(&plan, "worker_bytes");
                assert!(
                    sent * 10 < whole_bytes,
                    "{sent} of {whole_bytes}: {sql}\n{plan}"
                );
            }
        }
    }
}
