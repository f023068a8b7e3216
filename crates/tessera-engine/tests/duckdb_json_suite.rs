//! DuckDB's JSON tests, ported by `scripts/port_duckdb_json.py` to `test/duckdb_json/**.slt`
//! with DuckDB 2.0.0's answers: the specification of DuckDB's JSON SQL in Tessera.
//!
//! Every record (statement or query) is a case, run one by one against a fresh session per
//! file from `test/data`. The pass rate is printed and a per-case report written to
//! `$CARGO_TARGET_DIR/duckdb_json_report.txt`. Cases may fail only when listed: in
//! `test/duckdb_json/differences.toml` (Tessera answers otherwise on purpose, with the
//! reason) or in `test/duckdb_json/not_yet.txt` (not built yet; regenerated with
//! `TESSERA_UPDATE_NOT_YET=1`). The test fails on a failure on neither list, on a listed
//! case that passes and on a listed id that no longer exists, so every regression and
//! every stale list shows.

#[path = "common/canonical.rs"]
mod canonical;
#[path = "common/slt.rs"]
mod slt;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use futures::FutureExt;
use slt::Db;
use sqllogictest::{DefaultColumnType, QueryExpect, Record, Runner, StatementExpect};

/// Statements run before each file, as the first records of every file: DuckDB's query
/// text means what it means in DuckDB only under the DuckDB dialect.
const SETUP: &[&str] = &["SET tessera.dialect = 'duckdb'"];

/// Where the ported files and both lists live, below the repository root.
const SUITE_DIR: &str = "test/duckdb_json";

/// What a case expects, for the breakdown of the pass rate: an expected error "passes"
/// whatever the error, so those cases are counted apart.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Answer,
    Statement,
    Error,
}

impl Kind {
    fn of(record: &Record<DefaultColumnType>) -> Option<Self> {
        match record {
            Record::Statement { expected, .. } => Some(match expected {
                StatementExpect::Error(_) => Kind::Error,
                _ => Kind::Statement,
            }),
            Record::Query { expected, .. } => Some(match expected {
                QueryExpect::Error(_) => Kind::Error,
                QueryExpect::Results { .. } => Kind::Answer,
            }),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Answer => "queries with an answer",
            Kind::Statement => "statements expected to succeed",
            Kind::Error => "statements expected to fail",
        }
    }
}

/// The outcome of one case.
struct Outcome {
    id: String,
    kind: Kind,
    /// `None` when it answered as DuckDB 2.0.0 did; otherwise what differed.
    failure: Option<String>,
}

/// FNV-1a of the SQL text, so that a list entry names the case it was written for: an
/// edited or renumbered case gets a new id and the old entry shows as stale.
fn sql_hash(sql: &str) -> String {
    let hash = sql.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("{hash:08x}")
}

/// The cells as DuckDB's answers are written: canonical text, tab-separated.
fn rows_match(
    _normalizer: sqllogictest::Normalizer,
    actual: &[Vec<String>],
    expected: &[String],
) -> bool {
    actual.len() == expected.len() && actual.iter().zip(expected).all(|(a, e)| a.join("\t") == *e)
}

fn new_runner() -> Runner<Db, impl sqllogictest::MakeConnection<Conn = Db>> {
    let mut runner = Runner::new(|| async { Db::new(Box::new(|b| Ok(canonical::rows(b)))) });
    runner.with_validator(rows_match);
    // Types are not compared (Tessera's may be wider), the number of columns is.
    runner.with_column_validator(|actual, expected| actual.len() == expected.len());
    runner
}

/// Runs one file's cases in order; a panic is a failed case, not the end of the suite.
async fn run_file(file: &Path, name: &str) -> Vec<Outcome> {
    let mut runner = new_runner();
    let setup: String = SETUP
        .iter()
        .map(|s| format!("statement ok\n{s}\n\n"))
        .collect();
    for record in sqllogictest::parse::<DefaultColumnType>(&setup).unwrap() {
        runner.run_async(record).await.expect("setup statement");
    }
    let records = sqllogictest::parse_file::<DefaultColumnType>(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut outcomes = Vec::new();
    for record in records {
        let (sql, kind) = match (&record, Kind::of(&record)) {
            (Record::Statement { sql, .. } | Record::Query { sql, .. }, Some(kind)) => {
                (sql.clone(), kind)
            }
            _ => continue,
        };
        let id = format!("{name}:{}:{}", outcomes.len() + 1, sql_hash(&sql));
        let failure = match AssertUnwindSafe(runner.run_async(record))
            .catch_unwind()
            .await
        {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(format!("PANIC running:\n{sql}")),
        };
        outcomes.push(Outcome { id, kind, failure });
    }
    outcomes
}

/// The ids of `differences.toml`: `id = "..."` lines of `[[difference]]` tables, each
/// with a `reason`, read without a TOML library since that is all the file holds.
fn differences(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let value = |line: &str, key: &str| {
        let rest = line
            .trim()
            .strip_prefix(key)?
            .trim_start()
            .strip_prefix('=')?;
        Some(rest.trim().trim_matches('"').to_string())
    };
    let mut out = BTreeMap::new();
    let mut id = None;
    for line in text.lines() {
        if let Some(v) = value(line, "id") {
            id = Some(v);
        } else if let Some(reason) = value(line, "reason") {
            let id = id
                .take()
                .expect("differences.toml: a reason without an id before it");
            assert!(!reason.is_empty(), "differences.toml: {id} has no reason");
            out.insert(id, reason);
        }
    }
    assert!(id.is_none(), "differences.toml: {id:?} has no reason");
    out
}

fn not_yet(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

const NOT_YET_HEADER: &str = "# Cases of the ported DuckDB JSON suite that fail because the feature is not built yet.\n\
# Generated: TESSERA_UPDATE_NOT_YET=1 cargo test -p tessera-engine --test duckdb_json_suite\n";

fn report_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            // The test binary is target/<profile>/deps/<name>.
            let exe = std::env::current_exe().ok()?;
            Some(exe.ancestors().nth(3)?.to_path_buf())
        })
        .expect("a target directory");
    target.join("duckdb_json_report.txt")
}

/// The report: the pass rate, then every case with its outcome and list.
fn report(
    outcomes: &[Outcome],
    diffs: &BTreeMap<String, String>,
    pending: &BTreeSet<String>,
) -> String {
    let passed = outcomes.iter().filter(|o| o.failure.is_none()).count();
    let mut text = pass_rate(outcomes);
    let _ = writeln!(text, "{passed} passed, {} failed", outcomes.len() - passed);
    for o in outcomes {
        let status = match (&o.failure, diffs.get(&o.id), pending.contains(&o.id)) {
            (None, ..) => "PASS".to_string(),
            (Some(_), Some(reason), _) => format!("DIFFERENCE ({reason})"),
            (Some(_), None, true) => "NOT YET".to_string(),
            (Some(_), None, false) => "FAIL".to_string(),
        };
        let _ = writeln!(text, "{status} {}", o.id);
        if let Some(failure) = &o.failure {
            for line in failure.lines() {
                let _ = writeln!(text, "    {line}");
            }
        }
    }
    text
}

/// The pass rate of all cases, then of each kind of case.
fn pass_rate(outcomes: &[Outcome]) -> String {
    let rate = |of: &dyn Fn(&Outcome) -> bool| {
        let total = outcomes.iter().filter(|o| of(o)).count();
        let passed = outcomes
            .iter()
            .filter(|o| of(o) && o.failure.is_none())
            .count();
        let percent = 100.0 * passed as f64 / total.max(1) as f64;
        format!("{passed} of {total} cases ({percent:.1}%)")
    };
    let mut text = format!(
        "duckdb json suite: {} answer as DuckDB 2.0.0\n",
        rate(&|_| true)
    );
    for kind in [Kind::Answer, Kind::Statement, Kind::Error] {
        let _ = writeln!(text, "  {}: {}", kind.name(), rate(&|o| o.kind == kind));
    }
    text
}

/// What is wrong with the lists given the outcomes: unlisted failures, listed passes,
/// listed ids that no longer exist.
fn list_problems(
    outcomes: &[Outcome],
    diffs: &BTreeMap<String, String>,
    pending: &BTreeSet<String>,
) -> Vec<String> {
    let ids: BTreeSet<&str> = outcomes.iter().map(|o| o.id.as_str()).collect();
    let mut problems = Vec::new();
    for o in outcomes {
        let listed = diffs.contains_key(&o.id) || pending.contains(&o.id);
        match (&o.failure, listed) {
            (Some(f), false) => problems.push(format!("FAILS, on neither list: {}\n{f}", o.id)),
            (None, true) => problems.push(format!("PASSES, yet listed: {}", o.id)),
            _ => {}
        }
    }
    for id in diffs.keys().chain(pending.iter()) {
        if !ids.contains(id.as_str()) {
            problems.push(format!("LISTED, no such case (stale id): {id}"));
        }
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duckdb_json_suite() {
    let root = slt::repo_root();
    let suite = root.join(SUITE_DIR);
    let files = slt::slt_files(&suite);
    assert!(!files.is_empty(), "no .slt files in {}", suite.display());
    std::env::set_current_dir(root.join("test/data")).unwrap();
    let mut outcomes = Vec::new();
    for file in &files {
        let name = file.strip_prefix(&suite).unwrap().display().to_string();
        outcomes.extend(run_file(file, &name).await);
    }
    let diffs = differences(&suite.join("differences.toml"));
    let not_yet_path = suite.join("not_yet.txt");
    if std::env::var_os("TESSERA_UPDATE_NOT_YET").is_some() {
        let failing: String = outcomes
            .iter()
            .filter(|o| o.failure.is_some() && !diffs.contains_key(&o.id))
            .map(|o| format!("{}\n", o.id))
            .collect();
        std::fs::write(&not_yet_path, format!("{NOT_YET_HEADER}{failing}")).unwrap();
    }
    let pending = not_yet(&not_yet_path);
    let report_text = report(&outcomes, &diffs, &pending);
    let report_file = report_path();
    std::fs::write(&report_file, &report_text).unwrap();
    print!("{}", pass_rate(&outcomes));
    println!("per-case report: {}", report_file.display());
    let problems = list_problems(&outcomes, &diffs, &pending);
    assert!(
        problems.is_empty(),
        "{} problems with the ported DuckDB JSON suite (report: {}); if the lists are stale, \
         regenerate not_yet.txt with TESSERA_UPDATE_NOT_YET=1 cargo test -p tessera-engine \
         --test duckdb_json_suite:\n{}",
        problems.len(),
        report_file.display(),
        problems.join("\n\n")
    );
}
