//! Helpers shared by the engine's integration tests: answers as sorted text lines,
//! metrics read off `EXPLAIN ANALYZE`, and a deterministic generator for inputs.

pub mod data_sets;
pub mod random_filters;

use arrow::array::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use tessera_engine::{SessionOptions, TesseraSession};

/// The rows of `sql`'s answer as sorted text lines.
pub async fn rows(session: &TesseraSession, sql: &str) -> Vec<String> {
    let batches = session
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    lines(&batches)
}

/// The rows of `batches` as sorted text lines.
pub fn lines(batches: &[RecordBatch]) -> Vec<String> {
    let options = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for batch in batches {
        let formatters: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = formatters
                .iter()
                .map(|f| f.value(row).to_string())
                .collect();
            out.push(cells.join(" | "));
        }
    }
    out.sort();
    out
}

/// The `EXPLAIN ANALYZE` text of `sql`.
pub async fn analyze(session: &TesseraSession, sql: &str) -> String {
    rows(session, &format!("EXPLAIN ANALYZE {sql}"))
        .await
        .join("\n")
}

/// The sum of metric `name` over the plan text, where DataFusion shows counts from a
/// thousand on rounded, as in `59.52 K`.
pub fn metric(plan: &str, name: &str) -> u64 {
    let key = format!("{name}=");
    plan.match_indices(&key)
        .map(|(at, _)| {
            let text = &plan[at + key.len()..];
            let number: String = text
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let scale = match text[number.len()..]
                .strip_prefix(' ')
                .and_then(|t| t.chars().next())
            {
                Some('K') => 1e3,
                Some('M') => 1e6,
                Some('B') => 1e9,
                _ => 1.0,
            };
            (number.parse::<f64>().unwrap_or(0.0) * scale) as u64
        })
        .sum()
}

/// A session on 2 partitions with view `raw`: the documents `j` of `files` (NDJSON)
/// whose rows pass `keep`, the reference the table queries are compared with.
pub async fn session_with_raw(files: &[String], keep: &str) -> TesseraSession {
    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap();
    let options = SessionOptions {
        target_partitions: Some(2),
        ..Default::default()
    };
    let session = TesseraSession::new(s3, options).unwrap();
    let raw = files
        .iter()
        .map(|f| format!("SELECT j FROM '{f}' WHERE {keep}"))
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    rows(&session, &format!("CREATE VIEW raw AS {raw}")).await;
    session
}

/// A xorshift generator: deterministic generated inputs without a dependency.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One NDJSON file `name` in `dir` holding the lines of `parts` in turn (a table of one
/// file, for shares); its path.
pub fn concatenated(dir: &std::path::Path, name: &str, parts: &[String]) -> String {
    let one = dir.join(name);
    let text: String = parts
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    std::fs::write(&one, text).unwrap();
    one.display().to_string()
}

/// `files` NDJSON files `part<file>.json` in `dir` of `rows` lines each, line `row` of
/// file `file` being `line(file, row)`; their paths.
pub fn write_parts(
    dir: &std::path::Path,
    files: usize,
    rows: usize,
    mut line: impl FnMut(usize, usize) -> String,
) -> Vec<String> {
    (0..files)
        .map(|file| {
            let text: String = (0..rows).map(|row| line(file, row) + "\n").collect();
            let path = dir.join(format!("part{file}.json"));
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        })
        .collect()
}

/// Uploads `bytes` to `key` of `store`.
pub async fn put(store: &dyn object_store::ObjectStore, key: &str, bytes: Vec<u8>) {
    use object_store::ObjectStoreExt;
    store
        .put(&key.into(), object_store::PutPayload::from(bytes))
        .await
        .unwrap();
}

/// A MinIO server with bucket `bucket`, the S3 settings that reach it, and the bucket's
/// store (for uploads).
pub fn minio_bucket(
    bucket: &str,
) -> (
    tessera_testkit::MinioServer,
    tessera_blob::S3Config,
    std::sync::Arc<dyn object_store::ObjectStore>,
) {
    let minio = tessera_testkit::MinioServer::start();
    minio.create_bucket(bucket);
    let env = minio.env();
    let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &lookup).unwrap();
    let store = tessera_blob::StoreFactory::new(s3.clone())
        .open(&url::Url::parse(&format!("s3://{bucket}/")).unwrap())
        .unwrap();
    (minio, s3, store)
}

/// `text` gzipped.
pub fn gzip(text: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(text).unwrap();
    encoder.finish().unwrap()
}

/// `sql`'s rows without storage-side pushdown and through S3 Select, and the plan of
/// the pushed run with its metrics.
pub async fn local_and_pushed(
    session: &TesseraSession,
    sql: &str,
) -> (Vec<String>, Vec<String>, String) {
    rows(session, "SET tessera.pushdown = 'off'").await;
    let local = rows(session, sql).await;
    rows(session, "SET tessera.pushdown = 's3select'").await;
    let pushed = rows(session, sql).await;
    let plan = analyze(session, sql).await;
    (local, pushed, plan)
}
