//! The `tessera` command end to end, on local files.

mod common;

use common::{fixtures, run, run_with_input};

fn data(name: &str) -> String {
    fixtures().join(name).display().to_string()
}

#[test]
fn sql_prints_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let q = format!(
        "SELECT (j->>'id')::BIGINT AS id, j->>'name' AS name FROM '{}' WHERE (j->>'id')::BIGINT <= 2 ORDER BY id",
        data("docs.json")
    );
    let csv = run(dir.path(), &[], &["sql", "--format", "csv", &q]);
    assert_eq!(csv.ok(), "id,name\n1,alice\n2,bob\n");
    let ndjson = run(dir.path(), &[], &["sql", "--format", "ndjson", &q]);
    assert_eq!(
        ndjson.ok(),
        "{\"id\":1,\"name\":\"alice\"}\n{\"id\":2,\"name\":\"bob\"}\n"
    );
    let json = run(dir.path(), &[], &["sql", "--format", "json", &q]);
    assert_eq!(
        json.ok(),
        "[{\"id\":1,\"name\":\"alice\"},{\"id\":2,\"name\":\"bob\"}]\n"
    );
    let table = run(dir.path(), &[], &["sql", &q]);
    assert!(table.ok().contains("| 2  | bob   |"), "{}", table.stdout);
    assert!(table.stdout.ends_with("(2 rows)\n"));
}

#[test]
fn parquet_output_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet");
    let q = format!(
        "SELECT j->>'name' AS name, json_get_int(j, 'age') AS age FROM '{}'",
        data("docs.json")
    );
    run(
        dir.path(),
        &[],
        &[
            "sql",
            "--format",
            "parquet",
            "--output",
            out.to_str().unwrap(),
            &q,
        ],
    )
    .ok();
    let back = run(
        dir.path(),
        &[],
        &[
            "sql",
            "--format",
            "csv",
            "SELECT count(*) AS n, sum(age) AS s FROM 'out.parquet'",
        ],
    );
    assert_eq!(back.ok(), "n,s\n6,74\n");
}

#[test]
fn scripts_run_statement_after_statement() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "CREATE EXTERNAL TABLE d STORED AS NDJSON LOCATION '{}'; SELECT count(*) AS n FROM d; SELECT max(j->>'id') AS m FROM d",
        data("docs.json")
    );
    assert_eq!(
        run(dir.path(), &[], &["sql", "--format", "csv", &script]).ok(),
        "n\n6\nm\n6\n"
    );
}

#[test]
fn malformed_lines_fail_with_file_line_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let failed = run(
        dir.path(),
        &[],
        &[
            "sql",
            &format!("SELECT count(*) FROM '{}'", data("bad.json")),
        ],
    );
    let message = failed.error();
    assert!(
        message.contains(
            "bad.json line 2 (byte offset 9): expected a string key at byte 8 of the line"
        ),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
}

#[test]
fn skipped_lines_are_counted_and_located() {
    let dir = tempfile::tempdir().unwrap();
    let q = format!(
        "SET tessera.validation = 'full'; SELECT count(*) AS n FROM '{}'",
        data("bad.json")
    );
    let skipped = run(
        dir.path(),
        &[],
        &["--on-error", "skip", "sql", "--format", "csv", &q],
    );
    assert_eq!(skipped.ok(), "n\n3\n");
    assert!(
        skipped
            .stderr
            .starts_with("warning: skipped 2 malformed lines"),
        "{}",
        skipped.stderr
    );
    let file = data("bad.json");
    assert!(
        skipped
            .stderr
            .contains(&format!("  {file} line 2 (byte offset 9)")),
        "{}",
        skipped.stderr
    );
    assert!(
        skipped.stderr.contains("bad.json line 4 (byte offset 28)"),
        "{}",
        skipped.stderr
    );
}

#[test]
fn skipped_lines_are_numbered_across_byte_range_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.json");
    let mut text = String::new();
    let mut bad = Vec::new();
    let mut offset = 0;
    for line in 1..=5000 {
        let doc = if line % 997 == 0 {
            bad.push((line, offset));
            format!("{{\"n\":{line},\"s\":\"oops}}\n")
        } else {
            format!("{{\"n\":{line},\"pad\":\"{}\"}}\n", "x".repeat(line % 40))
        };
        offset += doc.len();
        text.push_str(&doc);
    }
    std::fs::write(&path, text).unwrap();
    let script = format!(
        "SET datafusion.optimizer.repartition_file_min_size = 1; SELECT count(*) AS n FROM '{}'",
        path.display()
    );
    let out = run(
        dir.path(),
        &[],
        &[
            "--threads",
            "4",
            "--on-error",
            "skip",
            "sql",
            "--format",
            "csv",
            &script,
        ],
    );
    assert_eq!(out.ok(), format!("n\n{}\n", 5000 - bad.len()));
    for (line, offset) in bad {
        let expected = format!("many.json line {line} (byte offset {offset})");
        assert!(
            out.stderr.contains(&expected),
            "missing {expected} in {}",
            out.stderr
        );
    }
}

#[test]
fn errors_are_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let syntax = run(dir.path(), &[], &["sql", "SELEC 1"]);
    assert!(syntax.error().contains("SELEC"), "{}", syntax.stderr);
    let missing = run(dir.path(), &[], &["sql", "SELECT * FROM 'nope/*.json'"]);
    assert!(
        missing.error().contains("no files found at"),
        "{}",
        missing.stderr
    );
    let table = run(dir.path(), &[], &["sql", "SELECT * FROM nosuchtable"]);
    assert!(table.error().contains("nosuchtable"), "{}", table.stderr);
}

#[test]
fn shell_runs_multi_line_statements_and_dot_commands() {
    let dir = tempfile::tempdir().unwrap();
    let input = format!(
        ".timer on\nCREATE EXTERNAL TABLE d STORED AS NDJSON\n  LOCATION '{}';\nSELECT count(*) AS n\nFROM d;\n.tables\n.schema d\n.bogus\n.quit\n",
        data("docs.json")
    );
    let out = run_with_input(dir.path(), &["shell"], &input);
    let stdout = out.ok();
    assert!(stdout.contains("| 6 |"), "{stdout}");
    assert!(
        stdout.contains("Run Time:") || out.stderr.contains("Run Time:"),
        "{stdout}"
    );
    assert!(stdout.contains("| d          |"), "{stdout}");
    assert!(stdout.contains("Utf8View"), "{stdout}");
    assert!(
        out.stderr.contains("unknown command .bogus"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_piped_shell_script_with_a_failing_statement_exits_nonzero() {
    let dir = tempfile::tempdir().unwrap();
    let input = "SELECT 41 + 1 AS before;\nSELECT * FROM nosuchtable;\nSELECT 43 AS after;\n";
    let out = run_with_input(dir.path(), &["shell"], input);
    assert_eq!(
        out.code, 1,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert!(out.stderr.contains("nosuchtable"), "{}", out.stderr);
    // The statements around the failing one still ran.
    assert!(
        out.stdout.contains("42") && out.stdout.contains("43"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_table_directory_is_named_with_or_without_a_path_prefix() {
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        &[],
        &["ingest", &data("docs.json"), "--table", "events"],
    )
    .ok();
    for name in ["events", "./events", "events/"] {
        let out = run(
            dir.path(),
            &[],
            &[
                "sql",
                "--format",
                "csv",
                &format!("SELECT count(*) AS n FROM '{name}'"),
            ],
        );
        assert_eq!(out.ok().trim(), "n\n6", "FROM '{name}'");
    }
}

#[test]
fn a_chain_of_thousands_of_arrows_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let chain = "->'a'".repeat(5000);
    let sql = format!("SELECT j{chain} FROM '{}'", data("docs.json"));
    let out = run(dir.path(), &[], &["sql", &sql]);
    assert!(out.error().contains("at most 64"), "{}", out.stderr);
}

#[test]
fn gen_is_deterministic_and_queryable() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.json", "b.json", "c.json.zst", "d.json.gz"] {
        run(
            dir.path(),
            &[],
            &[
                "gen", "bluesky", "--docs", "2000", "--seed", "7", "--out", name,
            ],
        )
        .ok();
    }
    let a = std::fs::read(dir.path().join("a.json")).unwrap();
    assert_eq!(a, std::fs::read(dir.path().join("b.json")).unwrap());
    assert_eq!(a.iter().filter(|&&b| b == b'\n').count(), 2000);
    let counts = run(
        dir.path(),
        &[],
        &[
            "sql",
            "--format",
            "csv",
            "SELECT (SELECT count(*) FROM 'a.json') AS a, (SELECT count(*) FROM 'c.json.zst') AS c, (SELECT count(*) FROM 'd.json.gz') AS d",
        ],
    );
    assert_eq!(counts.ok(), "a,c,d\n2000,2000,2000\n");
}

/// `gen events` and `gen models` give the same bytes for a seed, other bytes for
/// another, files the engine reads, and clear errors for settings out of range.
#[test]
fn gen_events_and_models_are_deterministic_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, seed, name) in [
        ("events", "3", "a.json"),
        ("events", "3", "b.json.zst"),
        ("events", "4", "c.json"),
        ("models", "3", "m.json"),
        ("models", "3", "n.json"),
    ] {
        let args = ["gen", kind, "--docs", "500", "--seed", seed, "--out", name];
        run(dir.path(), &[], &args).ok();
    }
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    assert_eq!(read("m.json"), read("n.json"));
    assert_ne!(read("a.json"), read("c.json"));
    let counts = run(
        dir.path(),
        &[],
        &[
            "sql",
            "--format",
            "csv",
            "SELECT (SELECT count(*) FROM 'a.json') AS a, (SELECT count(*) FROM 'b.json.zst') AS b, \
             (SELECT count(*) FROM 'm.json') AS m, \
             (SELECT count(*) FROM (SELECT j->>'id', j->>'created_at' FROM 'a.json' \
              EXCEPT SELECT j->>'id', j->>'created_at' FROM 'b.json.zst') AS d) AS differ",
        ],
    );
    assert_eq!(counts.ok(), "a,b,m,differ\n500,500,500,0\n");
    for (args, flag) in [
        (&["events", "--outlier-share", "1.5"][..], "--outlier-share"),
        (&["events", "--commits-max", "0"][..], "--commits-max"),
        (&["models", "--keys", "0"][..], "--keys"),
    ] {
        let out = run(
            dir.path(),
            &[],
            &[&["gen"], args, &["--out", "x.json"]].concat(),
        );
        assert!(out.error().contains(flag), "{}", out.stderr);
    }
}

/// `gen tpch-json` writes the eight TPC-H tables as one stream with the specification's
/// cardinality ratios, the same bytes every time and through compression alike.
#[test]
fn tpch_json_has_every_table_in_proportion() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.json", "b.json.zst"] {
        run(
            dir.path(),
            &[],
            &["gen", "tpch-json", "--sf", "0.01", "--out", name],
        )
        .ok();
    }
    let keys = [
        "r_regionkey",
        "n_nationkey",
        "s_suppkey",
        "c_custkey",
        "p_partkey",
        "ps_partkey",
        "o_orderkey",
        "l_orderkey",
    ];
    let counts: Vec<String> = keys
        .iter()
        .map(|k| format!("count(j->'{k}') AS {k}"))
        .collect();
    let query = |file: &str| format!("SELECT {}, count(*) FROM '{file}'", counts.join(", "));
    let plain = run(
        dir.path(),
        &[],
        &["sql", "--format", "csv", &query("a.json")],
    );
    let zstd = run(
        dir.path(),
        &[],
        &["sql", "--format", "csv", &query("b.json.zst")],
    );
    assert_eq!(plain.ok(), zstd.ok());
    let row: Vec<u64> = plain
        .ok()
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    // SF 0.01: 5 regions, 25 nations, 100 suppliers, 1,500 customers, 2,000 parts,
    // 8,000 part suppliers, 15,000 orders, and 1 to 7 line items per order.
    assert_eq!(&row[..7], &[5, 25, 100, 1_500, 2_000, 8_000, 15_000]);
    assert!((15_000..=105_000).contains(&row[7]), "{row:?}");
    assert_eq!(
        row[8],
        row[..8].iter().sum::<u64>(),
        "one table per document"
    );
}

/// Each cause once, without DataFusion's "External error:" or "Execution error:" prefix:
/// a wrapped error's text repeats its source's, and printing the chain doubled it.
#[test]
fn command_errors_name_each_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"a\":1}\n{\"a\":1e400}\n{\"a\":\n").unwrap();
    let not_a_dir = dir.path().join("file.json");
    std::fs::write(&not_a_dir, "{\"a\":1}\n").unwrap();
    let failures = [
        run(
            dir.path(),
            &[],
            &["ingest", bad.to_str().unwrap(), "--table", "t"],
        ),
        run(
            dir.path(),
            &[],
            &[
                "ingest",
                bad.to_str().unwrap(),
                "--table",
                not_a_dir.to_str().unwrap(),
            ],
        ),
    ];
    for failed in &failures {
        let error = failed.error();
        assert_eq!(error.lines().count(), 1, "{error}");
        assert!(
            !error.contains("External error") && !error.contains("Execution error"),
            "{error}"
        );
        let causes: Vec<&str> = error.trim_start_matches("Error: ").split(": ").collect();
        for (i, cause) in causes.iter().enumerate() {
            assert!(
                !causes[i + 1..].iter().any(|later| later.contains(cause)),
                "{cause:?} repeated in {error}"
            );
        }
    }
}
