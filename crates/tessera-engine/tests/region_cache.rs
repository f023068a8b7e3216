//! The semantic region cache (`SET tessera.cache_dir`, `tessera.region_cache`): over
//! randomized filter workloads on generated tables (with NULLs, missing paths and type
//! outliers), across an append and a delete, every answer read from or written into a
//! region equals the answer without the cache, and regions really answer: after the
//! append, regions of the first version answer with a scan of only the new files; after
//! the delete, regions of earlier versions are dropped; requests OR-ing what two regions
//! hold are answered by both (disjoint pieces), with a remote scan of what neither
//! holds. A region torn on disk (sidecar missing, Parquet truncated) is dropped at
//! startup, never served. The workload runs twice: with the requested-region cache
//! alone (`tessera.region_oracle = 'off'`: the paths above are counted), and with the
//! oracle, whose background runs write regions no query requested as such (merged
//! ones) while the queries run, and those answer.

use std::path::Path;

use datafusion::physical_plan::{collect, displayable};
use tessera_engine::{SessionOptions, TesseraSession};

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::data_sets::{DataSet, bluesky, bounds, events};
use common::random_filters::query;
use common::{Rng, lines, rows};

/// Queries per data set and round.
const QUERIES: usize = 10;
/// The tables here are local files, which the caches serve only when told to.
const LOCAL_TABLES: &str = "SET tessera.cache_local_tables = 'on'";

/// What running a query showed.
struct Run {
    rows: Vec<String>,
    from_region: bool,
    wrote_region: bool,
    /// Regions read (pieces of a cover).
    pieces: usize,
    /// Whether a remote table scan ran next to a region read.
    remote: bool,
    /// Whether a region of an earlier version answered, next to a scan of new files.
    appended: bool,
    /// The table versions of the regions read.
    versions: Vec<u64>,
}

/// `sql` planned and run, with what its plan did with regions.
async fn run(session: &TesseraSession, sql: &str) -> Run {
    let frame = session
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let plan = frame.create_physical_plan().await.unwrap();
    let text = displayable(plan.as_ref()).indent(true).to_string();
    let batches = collect(plan, session.context().task_ctx())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let pieces = text.matches("RegionScan:").count();
    Run {
        rows: lines(&batches),
        from_region: pieces > 0,
        wrote_region: text.contains("RegionWrite:"),
        pieces,
        remote: pieces > 0 && text.contains("file_type=tessera"),
        appended: text.contains("appended_files="),
        versions: region_scan_versions(&text),
    }
}

/// The `version=` of every `RegionScan` line of a plan's text.
fn region_scan_versions(plan: &str) -> Vec<u64> {
    plan.lines()
        .filter_map(|line| line.split_once("RegionScan:"))
        .filter_map(|(_, rest)| rest.split_once(" version="))
        .filter_map(|(_, rest)| rest.split(' ').next()?.parse().ok())
        .collect()
}

fn session() -> TesseraSession {
    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap();
    let options = SessionOptions {
        target_partitions: Some(2),
        ..Default::default()
    };
    TesseraSession::new(s3, options).unwrap()
}

/// Counts over one data set's workload.
#[derive(Debug, Default)]
struct Counts {
    queries: usize,
    from_region: usize,
    written: usize,
    /// Answers from two regions or more.
    many_pieces: usize,
    /// Answers from regions and a remote scan of the remainder (same version).
    with_remainder: usize,
    /// Answers from a region of an earlier version and a scan of the appended files.
    appended: usize,
    /// The most oracle regions seen on disk after a round.
    oracle_regions: usize,
}

/// A comparison of an integer path with one of five points of its range, the literal on
/// either side: such queries often contain one another, so regions answer queries other
/// than the one that wrote them (and a region's predicate must be right for that).
fn range(data: &DataSet, rng: &mut Rng, bounds: &[(i64, i64)]) -> String {
    let at = rng.below(data.integers.len() as u64) as usize;
    let (low, high) = bounds[at];
    let value = low + (high - low) / 4 * rng.below(5) as i64;
    let ops = ["<", "<=", ">", ">=", "<>"];
    let op = ops[rng.below(ops.len() as u64) as usize];
    match rng.below(2) {
        0 => format!("{} {op} {value}", data.integers[at]),
        _ => format!("{value} {op} {}", data.integers[at]),
    }
}

/// Runs `q` without and then with the cache; asserts equal answers and counts.
async fn compare(session: &TesseraSession, data: &DataSet, q: &str, counts: &mut Counts) -> Run {
    rows(session, "SET tessera.region_cache = 'off'").await;
    let expected = run(session, q).await;
    assert!(!expected.from_region && !expected.wrote_region, "{q}");
    rows(session, "SET tessera.region_cache = 'on'").await;
    let cached = run(session, q).await;
    assert_eq!(cached.rows, expected.rows, "{}: {q}", data.name);
    counts.queries += 1;
    counts.from_region += usize::from(cached.from_region);
    counts.written += usize::from(cached.wrote_region);
    counts.many_pieces += usize::from(cached.pieces >= 2);
    counts.with_remainder += usize::from(cached.remote && !cached.appended);
    counts.appended += usize::from(cached.appended);
    cached
}

/// One round: each query without the cache, then three times with it (the first is
/// remembered, the second writes its region, the third reads it), then a narrower query
/// the region also contains, once; then families of range queries the same way, each
/// followed by another range query that a region may or may not contain; then covers
/// from several regions; every answer equal to the uncached one. Returns the queries
/// a region answered.
async fn round(
    session: &TesseraSession,
    data: &DataSet,
    rng: &mut Rng,
    counts: &mut Counts,
) -> Vec<String> {
    let bounds = bounds(session, data).await;
    let mut answered = Vec::new();
    for _ in 0..QUERIES {
        let (select, where_) = query(data, rng, &bounds);
        let sql = format!("SELECT {select} FROM t WHERE {where_}");
        let (path, values) = &data.texts[0];
        let narrower = format!(
            "SELECT {select} FROM t WHERE {where_} AND {path} <> '{}'",
            values[0]
        );
        for q in [&sql, &sql, &sql, &narrower] {
            if compare(session, data, q, counts).await.from_region {
                answered.push(q.clone());
            }
        }
    }
    let select = data.integers.join(", ");
    for _ in 0..QUERIES {
        let q = format!("SELECT {select} FROM t WHERE {}", range(data, rng, &bounds));
        for _ in 0..3 {
            if compare(session, data, &q, counts).await.from_region {
                answered.push(q.clone());
            }
        }
        let other = format!("SELECT {select} FROM t WHERE {}", range(data, rng, &bounds));
        compare(session, data, &other, counts).await;
    }
    covers(session, data, rng, &bounds, counts).await;
    answered.sort();
    answered.dedup();
    answered
}

/// Regions of an integer range and of a text value (each written on its second
/// request), then requests OR-ing a narrower range with the value: answered by both
/// regions as disjoint pieces (the second keeps rows where the range is not TRUE, NULL
/// included); OR-ing also a range neither holds: a remote scan of that remainder too.
async fn covers(
    session: &TesseraSession,
    data: &DataSet,
    rng: &mut Rng,
    bounds: &[(i64, i64)],
    counts: &mut Counts,
) {
    let (text, values) = &data.texts[0];
    let int = data.integers[0];
    let select = format!("{int}, {text}");
    let (low, high) = bounds[0];
    let step = ((high - low) / 4).max(2);
    for _ in 0..QUERIES / 2 {
        let top = low + step * (1 + rng.below(3) as i64);
        let value = values[rng.below(values.len() as u64) as usize];
        let range = format!("SELECT {select} FROM t WHERE {int} < {top}");
        let equal = format!("SELECT {select} FROM t WHERE {text} = '{value}'");
        for q in [&range, &range, &equal, &equal] {
            compare(session, data, q, counts).await;
        }
        let narrower = top - step / 2;
        let both = format!("{int} < {narrower} OR {text} = '{value}'");
        let rest = format!("{both} OR {int} > {}", high - step / 2);
        for where_ in [both, rest] {
            let q = format!("SELECT {select} FROM t WHERE {where_}");
            compare(session, data, &q, counts).await;
        }
    }
}

/// The sidecars of the regions under `cache`.
fn sidecars(cache: &Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(cache.join("regions")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            // A sidecar an oracle run deletes meanwhile is skipped.
            if let Ok(bytes) = std::fs::read(&path) {
                out.push(serde_json::from_slice(&bytes).unwrap());
            }
        }
    }
    out
}

/// The table versions of the regions under `cache`.
fn region_versions(cache: &Path) -> Vec<u64> {
    let versions = sidecars(cache).into_iter();
    versions.map(|s| s["version"].as_u64().unwrap()).collect()
}

/// Counts the oracle's regions under `cache` into `counts`.
fn count_oracle_regions(cache: &Path, counts: &mut Counts) {
    let oracle = sidecars(cache)
        .iter()
        .filter(|s| s["oracle"] == true)
        .count();
    counts.oracle_regions = counts.oracle_regions.max(oracle);
}

async fn differential(data: DataSet, cache: &Path, oracle: bool) -> Counts {
    let table = cache.parent().unwrap().join(format!("{}_table", data.name));
    let session = session();
    let create = format!(
        "CREATE EXTERNAL TABLE t (j VARCHAR) STORED AS TESSERA LOCATION '{}'",
        table.display()
    );
    rows(&session, &create).await;
    let oracle = if oracle { "on" } else { "off" };
    rows(&session, &format!("SET tessera.region_oracle = '{oracle}'")).await;
    rows(&session, LOCAL_TABLES).await;
    let set = format!("SET tessera.cache_dir = '{}'", cache.display());
    rows(&session, &set).await;
    let insert = |part: &String| format!("INSERT INTO t SELECT j FROM '{part}'");
    rows(&session, &insert(&data.parts[0])).await;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ data.name.len() as u64);
    let mut counts = Counts::default();
    let first = round(&session, &data, &mut rng, &mut counts).await;
    count_oracle_regions(cache, &mut counts);
    rows(&session, &insert(&data.parts[1])).await;
    // The append only added files: the first version's regions still answer.
    for q in &first {
        compare(&session, &data, q, &mut counts).await;
    }
    let second = round(&session, &data, &mut rng, &mut counts).await;
    count_oracle_regions(cache, &mut counts);
    let newest = region_versions(cache).into_iter().max().unwrap_or(0);
    rows(&session, &format!("DELETE FROM t WHERE {}", data.delete)).await;
    // The delete changed deletion vectors: no earlier region answers, all are dropped.
    for q in &second {
        let answer = compare(&session, &data, q, &mut counts).await;
        assert!(
            answer.versions.iter().all(|&v| v > newest),
            "{}: {q}",
            data.name
        );
    }
    // An oracle run that began before the delete may still write a region of an earlier
    // version (never served: the answers above read none); without the oracle none is left.
    if oracle == "off" {
        let left = region_versions(cache);
        assert!(left.iter().all(|&v| v > newest), "{}: {left:?}", data.name);
    }
    round(&session, &data, &mut rng, &mut counts).await;
    count_oracle_regions(cache, &mut counts);
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_answers_equal_uncached_ones_across_appends_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    for data in [bluesky(dir.path(), 1500), events(dir.path(), 800)] {
        let name = data.name;
        let cache = dir.path().join(format!("{name}_cache"));
        let counts = differential(data, &cache, false).await;
        eprintln!("{name}: {counts:?}");
        assert_eq!(counts.oracle_regions, 0, "{name}: {counts:?}");
        // Without these the equalities above would prove nothing about regions.
        assert!(counts.written >= QUERIES, "{name}: {counts:?}");
        assert!(counts.from_region >= QUERIES, "{name}: {counts:?}");
        assert!(counts.appended >= QUERIES / 2, "{name}: {counts:?}");
        assert!(counts.many_pieces >= QUERIES / 2, "{name}: {counts:?}");
        assert!(counts.with_remainder >= 3, "{name}: {counts:?}");
    }
}

/// A session whose table `t` at `table` holds the documents of the file `data`.
async fn table_session(table: &Path, data: &str) -> TesseraSession {
    let session = session();
    let create = format!(
        "CREATE EXTERNAL TABLE t (j VARCHAR) STORED AS TESSERA LOCATION '{}'",
        table.display()
    );
    rows(&session, &create).await;
    rows(&session, LOCAL_TABLES).await;
    rows(&session, &format!("INSERT INTO t SELECT j FROM '{data}'")).await;
    session
}

/// A region written by the engine under `cache`, for `sql` over a new table in `dir`.
async fn write_region(dir: &Path, cache: &Path, sql: &str) -> TesseraSession {
    let data = bluesky(dir, 1500);
    let session = table_session(&dir.join("table"), &data.parts[0]).await;
    rows(
        &session,
        &format!("SET tessera.cache_dir = '{}'", cache.display()),
    )
    .await;
    assert!(!run(&session, sql).await.wrote_region);
    assert!(run(&session, sql).await.wrote_region);
    assert!(run(&session, sql).await.from_region);
    session
}

/// A copy of the regions directory of `from` as the cache directory `to`.
fn copy_regions(from: &Path, to: &Path) {
    let regions = to.join("regions");
    std::fs::create_dir_all(&regions).unwrap();
    for entry in std::fs::read_dir(from.join("regions")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, regions.join(path.file_name().unwrap())).unwrap();
    }
}

fn names(cache: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(cache.join("regions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_regions_are_dropped_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let sql = "SELECT j->>'did' FROM t WHERE j->>'kind' = 'commit'";
    let session = write_region(dir.path(), &first, sql).await;
    let expected = run(&session, sql).await.rows;
    let whole = names(&first);
    assert!(whole.iter().any(|n| n.ends_with(".json")), "{whole:?}");

    // A whole copy is served by a store opened on it (so the checks below can fail).
    let intact = dir.path().join("intact");
    copy_regions(&first, &intact);
    rows(
        &session,
        &format!("SET tessera.cache_dir = '{}'", intact.display()),
    )
    .await;
    let answer = run(&session, sql).await;
    assert!(answer.from_region);
    assert_eq!(answer.rows, expected);

    let no_sidecar = dir.path().join("no_sidecar");
    copy_regions(&first, &no_sidecar);
    for name in whole.iter().filter(|n| n.ends_with(".json")) {
        std::fs::remove_file(no_sidecar.join("regions").join(name)).unwrap();
    }
    let truncated = dir.path().join("truncated");
    copy_regions(&first, &truncated);
    let part = whole.iter().find(|n| n.ends_with(".parquet")).unwrap();
    let file = truncated.join("regions").join(part);
    let length = std::fs::metadata(&file).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(length / 2)
        .unwrap();
    for torn in [no_sidecar, truncated] {
        rows(
            &session,
            &format!("SET tessera.cache_dir = '{}'", torn.display()),
        )
        .await;
        let answer = run(&session, sql).await;
        assert!(!answer.from_region, "{}", torn.display());
        assert_eq!(answer.rows, expected);
        // Only the lock and the lifetime count of answers stay.
        let left = names(&torn);
        assert!(left.iter().all(|n| n == "LOCK" || n == "HITS"), "{left:?}");
    }
}

/// A table dropped and made again at the same location starts again at version 1: the
/// regions of the first table's version 1 must not answer for the second's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_made_again_is_not_answered_from_the_first_ones_regions() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let sql = "SELECT j->>'did' FROM t WHERE j->>'kind' = 'commit'";
    let first = write_region(dir.path(), &cache, sql).await;
    let old = run(&first, sql).await;
    assert!(old.from_region);
    let table = dir.path().join("table");
    std::fs::remove_dir_all(&table).unwrap();
    let other = dir.path().join("bluesky2.json");
    let again = table_session(&table, &other.display().to_string()).await;
    let expected = run(&again, sql).await.rows;
    assert_ne!(expected, old.rows, "the second table must answer otherwise");
    rows(
        &again,
        &format!("SET tessera.cache_dir = '{}'", cache.display()),
    )
    .await;
    let answer = run(&again, sql).await;
    assert_eq!(
        answer.versions,
        Vec::<u64>::new(),
        "a region of the first table answered"
    );
    assert_eq!(answer.rows, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_regions_and_answers_and_explain_analyze_shows_savings() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let sql = "SELECT j->>'did' FROM t WHERE j->>'kind' = 'commit'";
    let session = write_region(dir.path(), &cache, sql).await;
    let stats = tessera_engine::RegionDirStats::read(&cache).unwrap();
    assert_eq!(stats.regions, 1, "{stats:?}");
    assert!(
        stats.bytes > 0 && stats.hits >= 1 && stats.in_use,
        "{stats:?}"
    );
    // This process has the regions open: clearing them is refused.
    assert!(tessera_engine::clear_regions(&cache).is_err());
    let explained = rows(&session, &format!("EXPLAIN ANALYZE {sql}"))
        .await
        .join("\n");
    assert!(explained.contains("RegionScan:"), "{explained}");
    assert!(
        explained.contains("request_cost_saved_nanodollars="),
        "{explained}"
    );
    let after = tessera_engine::RegionDirStats::read(&cache).unwrap();
    assert!(after.hits > stats.hits, "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oracle_regions_answer_and_equal_uncached_answers_across_appends_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    for data in [bluesky(dir.path(), 1500), events(dir.path(), 800)] {
        let name = data.name;
        let cache = dir.path().join(format!("{name}_cache"));
        let counts = differential(data, &cache, true).await;
        eprintln!("{name}: {counts:?}");
        assert!(counts.oracle_regions >= 1, "{name}: {counts:?}");
        // Requested regions are written only for the exact repeats of a round; the
        // oracle's answer most other queries too.
        assert!(
            counts.from_region > 2 * counts.written,
            "{name}: {counts:?}"
        );
    }
}
