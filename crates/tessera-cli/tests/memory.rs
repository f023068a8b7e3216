//! Bounded memory: results stream to the terminal and to files, `--memory-limit` bounds
//! what operators hold (sorts spill), and a query that cannot fit fails with one
//! sentence about memory.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use common::{Run, run};

/// Rows of the large result: a cross join of two series, each row carrying a 200-byte
/// string, about 1 GB if held in memory at once.
const LEFT_ROWS: u64 = 500;
const RIGHT_ROWS: u64 = 10_000;

/// Peak resident memory allowed while streaming that result: far below what holding
/// the rows takes, far above what a process streaming batches needs.
const PEAK_RSS_BYTES_MAX: u64 = 400 * 1024 * 1024;

fn large_query() -> String {
    format!(
        "SELECT a.value AS a, b.value AS b, repeat('x', 200) AS pad \
         FROM generate_series(1, {LEFT_ROWS}) a, generate_series(1, {RIGHT_ROWS}) b"
    )
}

/// Runs `tessera args...` and returns its outcome and peak resident set size in bytes
/// (`wait4`'s `ru_maxrss` of exactly this child).
#[expect(
    clippy::zombie_processes,
    reason = "wait4 reaps the child, to read its resource usage"
)]
fn run_measured(dir: &Path, args: &[&str]) -> (Run, u64) {
    let mut child = common::tessera(dir, &[])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tessera runs");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            pipe.read_to_end(&mut text).unwrap();
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let mut status = 0;
    // SAFETY: `rusage` is plain data that `wait4` fills; the pid is our unreaped child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; `child` is not waited on elsewhere.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4 failed");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let outcome = Run {
        code,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    (outcome, usage.ru_maxrss as u64 * 1024)
}

#[test]
fn a_large_result_streams_to_a_file_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let q = large_query();
    let args = [
        "sql",
        "--memory-limit",
        "256MB",
        "--format",
        "csv",
        "--output",
        out.to_str().unwrap(),
        &q,
    ];
    let (outcome, peak_bytes) = run_measured(dir.path(), &args);
    outcome.ok();
    let mut lines = 0u64;
    let mut checksum = 0u64;
    let text = std::fs::read_to_string(&out).unwrap();
    for line in text.lines().skip(1) {
        let mut cells = line.split(',');
        let a: u64 = cells.next().unwrap().parse().unwrap();
        let b: u64 = cells.next().unwrap().parse().unwrap();
        assert_eq!(cells.next().unwrap().len(), 200);
        checksum += a * RIGHT_ROWS + b;
        lines += 1;
    }
    let rows = LEFT_ROWS * RIGHT_ROWS;
    assert_eq!(lines, rows);
    let expected: u64 = (1..=LEFT_ROWS)
        .map(|a| a * RIGHT_ROWS * RIGHT_ROWS + RIGHT_ROWS * (RIGHT_ROWS + 1) / 2)
        .sum();
    assert_eq!(checksum, expected);
    assert!(
        peak_bytes < PEAK_RSS_BYTES_MAX,
        "peak RSS {peak_bytes} bytes for a streamed result"
    );
}

/// One partition generates the series in order, so the head and tail are known.
#[test]
fn a_large_result_shows_head_and_tail_on_the_terminal_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let rows = LEFT_ROWS * RIGHT_ROWS;
    let q = format!("SELECT value AS v, repeat('x', 200) AS pad FROM generate_series(1, {rows})");
    let args = ["--threads", "1", "sql", "--memory-limit", "256MB", &q];
    let (outcome, peak_bytes) = run_measured(dir.path(), &args);
    let text = outcome.ok();
    assert!(
        text.ends_with(&format!("({rows} rows, 40 shown)\n")),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
    let shown: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split('|').nth(1)?.trim().parse().ok())
        .collect();
    let expected: Vec<u64> = (1..=20).chain(rows - 19..=rows).collect();
    assert_eq!(shown, expected);
    assert_eq!(text.matches('…').count(), 2, "one elision row: {text}");
    assert!(
        peak_bytes < PEAK_RSS_BYTES_MAX,
        "peak RSS {peak_bytes} bytes for a terminal preview"
    );
}

#[test]
fn small_results_print_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let q = "SELECT value FROM generate_series(1, 40) ORDER BY value";
    let text = run(dir.path(), &[], &["sql", q]).ok().to_string();
    assert!(text.ends_with("(40 rows)\n"), "{text}");
    assert!(!text.contains('…'));
    for v in 1..=40 {
        assert!(text.contains(&format!("| {v:<5} |")), "{v} missing: {text}");
    }
}

/// A sort of about 50 MB under a 40 MB limit (of which each of two partitions keeps
/// 10 MB for merging its spills): it must spill and still be right.
#[test]
fn a_sort_beyond_the_limit_spills_and_is_correct() {
    let dir = tempfile::tempdir().unwrap();
    let n = 3_000_000u64;
    let q = format!(
        "SELECT (value * 7919) % 1000003 AS k, value FROM generate_series(1, {n}) ORDER BY k, value"
    );
    let out = dir.path().join("sorted.csv");
    let args = [
        "--threads",
        "2",
        "sql",
        "--memory-limit",
        "40MB",
        "--format",
        "csv",
    ];
    let sorted = run(
        dir.path(),
        &[],
        &[&args[..], &["--output", out.to_str().unwrap(), &q]].concat(),
    );
    sorted.ok();
    let text = std::fs::read_to_string(&out).unwrap();
    let mut previous = (0u64, 0u64);
    let mut count = 0u64;
    let mut sum = 0u64;
    for line in text.lines().skip(1) {
        let (k, v) = line.split_once(',').unwrap();
        let row: (u64, u64) = (k.parse().unwrap(), v.parse().unwrap());
        assert!(row >= previous, "{row:?} after {previous:?}");
        assert_eq!(row.0, (row.1 * 7919) % 1_000_003);
        previous = row;
        count += 1;
        sum += row.1;
    }
    assert_eq!((count, sum), (n, n * (n + 1) / 2));
    let explain = run(
        dir.path(),
        &[],
        &[&args[..], &[&format!("EXPLAIN ANALYZE {q}")]].concat(),
    );
    let spills: u64 = explain
        .ok()
        .split("spill_count=")
        .skip(1)
        .map(|rest| rest.split(|c: char| !c.is_ascii_digit()).next().unwrap())
        .map(|digits| digits.parse::<u64>().unwrap())
        .sum();
    assert!(spills > 0, "the sort did not spill: {}", explain.stdout);
}

fn assert_memory_sentence(error: &str, limit: &str) {
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.contains("memory limit of")
            && error.contains(limit)
            && error.contains("--memory-limit")
            && error.contains("tessera.memory_limit"),
        "{error}"
    );
}

#[test]
fn an_impossible_query_fails_with_one_sentence_about_memory() {
    let dir = tempfile::tempdir().unwrap();
    // The join's build side holds 2 million values (16 MB) and cannot spill.
    let q = "SELECT max(a.value + b.value) FROM generate_series(1, 2000000) a, generate_series(1, 2000000) b";
    let failed = run(dir.path(), &[], &["sql", "--memory-limit", "8MB", q]);
    assert_memory_sentence(failed.error(), "8.0 MB");
    let script = format!("SET tessera.memory_limit = '4MiB'; {q}");
    let failed = run(dir.path(), &[], &["sql", "--memory-limit", "25%", &script]);
    assert_memory_sentence(failed.error(), "4.0 MiB");
}

#[test]
fn memory_limits_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let bad = run(
        dir.path(),
        &[],
        &["sql", "SET tessera.memory_limit = 'lots'"],
    );
    assert!(bad.error().contains("memory_limit"), "{}", bad.stderr);
    let bad = run(dir.path(), &[], &["--memory-limit", "0", "sql", "SELECT 1"]);
    assert!(
        bad.code != 0 && bad.stderr.contains("memory"),
        "{}",
        bad.stderr
    );
}
