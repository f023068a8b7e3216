//! The predicate cache (`SET tessera.cache_dir`, `tessera.predicate_cache`), with the
//! region cache off so that the scans themselves answer: over randomized filter workloads
//! on generated tables of many small row groups (with NULLs, missing paths and type
//! outliers), across an append and a delete, every answer with the cache equals the
//! answer without it, each query run twice either way (the second run with the cache
//! reads what the first recorded), and repeats really skip row groups and select rows.

use std::path::Path;
use std::sync::Arc;

use datafusion::physical_plan::collect;
use tessera_engine::physical_plan::subtree_metric_sum;
use tessera_engine::{SessionOptions, TesseraSession};

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::data_sets::{DataSet, bounds, events};
use common::{Rng, lines, rows};

/// Queries per data set and round.
const QUERIES: usize = 12;

/// Rows per row group of the tables written (many groups from few documents).
const ROW_GROUP_ROWS: usize = 300;

/// Bluesky events, deleting more than the region cache's test does (a file's rows
/// recorded before a delete must stay right after it).
fn bluesky(dir: &Path) -> DataSet {
    DataSet {
        delete: "j->>'kind' = 'identity' OR j->'commit'->>'operation' = 'delete'",
        ..common::data_sets::bluesky(dir, 2400)
    }
}

/// A random comparison on one of the data set's paths (LIKE never translates: such a
/// filter only reads cached rows, it records none).
fn atom(data: &DataSet, rng: &mut Rng, bounds: &[(i64, i64)]) -> String {
    let ops = ["=", "<>", "<", "<=", ">", ">="];
    let op = ops[rng.below(ops.len() as u64) as usize];
    match rng.below(10) {
        0..=3 => {
            let (path, values) = &data.texts[rng.below(data.texts.len() as u64) as usize];
            let value = values[rng.below(values.len() as u64) as usize];
            match rng.below(6) {
                0 => format!("{path} IS NULL"),
                1 => format!("{path} IN ('{value}', '{}')", values[0]),
                2 => format!("{path} LIKE '%{}%'", &value[..1.min(value.len())]),
                3 => format!("'{value}' {op} {path}"),
                _ => format!("{path} {op} '{value}'"),
            }
        }
        4..=8 => {
            let at = rng.below(data.integers.len() as u64) as usize;
            let (low, high) = bounds[at];
            // Few distinct points, so that queries repeat and contain one another.
            let value = low + (high - low) / 8 * rng.below(9) as i64;
            format!("{} {op} {value}", data.integers[at])
        }
        _ => format!("{} IS NOT NULL", data.integers[0]),
    }
}

/// A random filter: a conjunction of disjunctions of (sometimes negated) comparisons.
fn filter(data: &DataSet, rng: &mut Rng, bounds: &[(i64, i64)]) -> String {
    let conjuncts: Vec<String> = (0..1 + rng.below(2))
        .map(|_| {
            let disjuncts: Vec<String> = (0..1 + rng.below(2))
                .map(|_| {
                    let a = atom(data, rng, bounds);
                    match rng.below(6) {
                        0 => format!("NOT ({a})"),
                        _ => a,
                    }
                })
                .collect();
            format!("({})", disjuncts.join(" OR "))
        })
        .collect();
    conjuncts.join(" AND ")
}

/// Queries under one random filter: its rows, a count (grouped on codes where it can
/// be), a LIMIT (whose read stops early and must record nothing), and a stronger filter.
fn queries(data: &DataSet, rng: &mut Rng, bounds: &[(i64, i64)]) -> Vec<String> {
    let mut paths: Vec<&str> = data.texts.iter().map(|(p, _)| *p).collect();
    paths.extend(data.integers.iter().copied());
    let picked: Vec<&str> = (0..2 + rng.below(2))
        .map(|_| paths[rng.below(paths.len() as u64) as usize])
        .collect();
    let select = picked.join(", ");
    let where_ = filter(data, rng, bounds);
    let (path, values) = &data.texts[0];
    let group = data.texts[rng.below(data.texts.len() as u64) as usize].0;
    vec![
        format!("SELECT {select} FROM t WHERE {where_}"),
        format!("SELECT {group}, count(*) FROM t WHERE {where_} GROUP BY 1"),
        format!("SELECT count(*) FROM (SELECT {select} FROM t WHERE {where_} LIMIT 7) s"),
        format!(
            "SELECT {select} FROM t WHERE {where_} AND {path} <> '{}'",
            values[0]
        ),
    ]
}

/// What running a query showed.
struct Run {
    rows: Vec<String>,
    skipped: u64,
    selected: u64,
}

/// `sql` planned and run, with the predicate cache's metrics.
async fn run(session: &TesseraSession, sql: &str) -> Run {
    let frame = session
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let plan = frame.create_physical_plan().await.unwrap();
    let batches = collect(Arc::clone(&plan), session.context().task_ctx())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    Run {
        rows: lines(&batches),
        skipped: subtree_metric_sum(&plan, "row_groups_skipped_by_predicate_cache"),
        selected: subtree_metric_sum(&plan, "rows_selected_by_predicate_cache"),
    }
}

/// Counts over one data set's workload.
#[derive(Debug, Default)]
struct Counts {
    queries: usize,
    row_groups_skipped: u64,
    rows_selected: u64,
}

/// Runs `q` twice without the cache and twice with it; asserts equal answers and that
/// the cache is used only when on.
async fn compare(session: &TesseraSession, data: &DataSet, q: &str, counts: &mut Counts) {
    rows(session, "SET tessera.predicate_cache = 'off'").await;
    let expected = run(session, q).await;
    let again = run(session, q).await;
    assert_eq!(again.rows, expected.rows, "{}: {q}", data.name);
    assert_eq!((expected.skipped, expected.selected), (0, 0), "{q}");
    rows(session, "SET tessera.predicate_cache = 'on'").await;
    for _ in 0..2 {
        let cached = run(session, q).await;
        assert_eq!(cached.rows, expected.rows, "{}: {q}", data.name);
        counts.row_groups_skipped += cached.skipped;
        counts.rows_selected += cached.selected;
    }
    counts.queries += 1;
}

async fn round(session: &TesseraSession, data: &DataSet, rng: &mut Rng, counts: &mut Counts) {
    let bounds = bounds(session, data).await;
    for _ in 0..QUERIES {
        for q in queries(data, rng, &bounds) {
            compare(session, data, &q, counts).await;
        }
    }
}

fn session() -> TesseraSession {
    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap();
    let options = SessionOptions {
        target_partitions: Some(2),
        ..Default::default()
    };
    TesseraSession::new(s3, options).unwrap()
}

/// A session over a new table `t` of `data`'s first part, in row groups of
/// [`ROW_GROUP_ROWS`], with the predicate cache in `cache` and the region cache off.
async fn table_session(data: &DataSet, cache: &Path) -> TesseraSession {
    let table = cache.parent().unwrap().join(format!("{}_table", data.name));
    let session = session();
    for set in [
        format!("SET tessera.row_group_rows = {ROW_GROUP_ROWS}"),
        "SET tessera.region_cache = 'off'".to_string(),
        // The tables here are local files.
        "SET tessera.cache_local_tables = 'on'".to_string(),
        format!("SET tessera.cache_dir = '{}'", cache.display()),
        format!(
            "CREATE EXTERNAL TABLE t (j VARCHAR) STORED AS TESSERA LOCATION '{}'",
            table.display()
        ),
        format!("INSERT INTO t SELECT j FROM '{}'", data.parts[0]),
    ] {
        rows(&session, &set).await;
    }
    session
}

async fn differential(data: DataSet, cache: &Path) -> Counts {
    let session = table_session(&data, cache).await;
    let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ data.name.len() as u64);
    let mut counts = Counts::default();
    round(&session, &data, &mut rng, &mut counts).await;
    let insert = format!("INSERT INTO t SELECT j FROM '{}'", data.parts[1]);
    rows(&session, &insert).await;
    round(&session, &data, &mut rng, &mut counts).await;
    rows(&session, &format!("DELETE FROM t WHERE {}", data.delete)).await;
    round(&session, &data, &mut rng, &mut counts).await;
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_answers_equal_uncached_ones_across_appends_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    for data in [bluesky(dir.path()), events(dir.path(), 1500)] {
        let name = data.name;
        let cache = dir.path().join(format!("{name}_cache"));
        let counts = differential(data, &cache).await;
        eprintln!("{name}: {counts:?}");
        // Without these the equalities above would prove nothing about the cache.
        assert!(counts.row_groups_skipped > 0, "{name}: {counts:?}");
        assert!(counts.rows_selected > 0, "{name}: {counts:?}");
        let persisted = cache.join("predicates").join("predicates.json");
        assert!(persisted.exists(), "{name}: nothing persisted");
    }
}

/// A scan whose filters do not all translate (LIKE) reads cached rows but records none:
/// its passing rows are fewer than its translated part's, which a later scan of that
/// part alone would otherwise read; so is a scan stopped by a LIMIT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_filters_and_limits_record_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = bluesky(dir.path());
    let session = table_session(&data, &dir.path().join("cache")).await;
    // Half of the rows of every row group, so statistics skip nothing.
    let base = "j->>'did' >= 'did:plc:m'";
    let whole = format!("SELECT j->>'did' FROM t WHERE {base}");
    let narrower = [
        format!("{whole} AND j->>'kind' LIKE '%o%'"),
        format!("SELECT count(*) FROM ({whole} LIMIT 3) s"),
    ];
    let mut counts = Counts::default();
    for q in &narrower {
        compare(&session, &data, q, &mut counts).await;
    }
    assert_eq!((counts.rows_selected, counts.row_groups_skipped), (0, 0));
    compare(&session, &data, &whole, &mut counts).await;
    // The whole filter recorded its rows: a stronger one reads only those.
    let stronger = format!("{whole} AND TRY_CAST(j->>'time_us' AS BIGINT) > 0");
    let before = counts.rows_selected;
    compare(&session, &data, &stronger, &mut counts).await;
    assert!(counts.rows_selected > before, "{counts:?}");
}
