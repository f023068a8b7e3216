//! The shell's dot commands (`.mode`, `.output`, `.read`, `.explain`) driven through
//! the real binary with a script on stdin, and the progress line kept off stderr when
//! stderr is not a terminal.

mod common;

use std::path::Path;

use common::{Run, fixtures, run, run_with_input, run_with_input_and_env};

/// The shell's output without its greeting line.
fn results(run: &Run) -> &str {
    let stdout = run.ok();
    assert!(stdout.starts_with("Tessera "), "{stdout}");
    stdout.split_once('\n').map_or("", |(_, rest)| rest)
}

fn shell(dir: &Path, input: &str) -> Run {
    run_with_input(dir, &["shell"], input)
}

/// Two rows of the fixture, ordered.
fn two_rows() -> String {
    format!(
        "SELECT (j->>'id')::BIGINT AS id, j->>'name' AS name FROM '{}' ORDER BY id LIMIT 2;",
        fixtures().join("docs.json").display()
    )
}

#[test]
fn each_mode_writes_its_format() {
    let dir = tempfile::tempdir().unwrap();
    let q = two_rows();
    let input = format!(".mode csv\n{q}\n.mode json\n{q}\n.mode markdown\n{q}\n.mode line\n{q}\n");
    let out = shell(dir.path(), &input);
    assert_eq!(
        results(&out),
        "id,name\n1,alice\n2,bob\n\
         [{\"id\":1,\"name\":\"alice\"},{\"id\":2,\"name\":\"bob\"}]\n\
         | id | name |\n|---:|---|\n| 1 | alice |\n| 2 | bob |\n\
         \x20 id = 1\nname = alice\n\n  id = 2\nname = bob\n"
    );
    let table = shell(dir.path(), &format!(".mode csv\n.mode table\n{q}\n"));
    assert!(
        results(&table).contains("| 2  | bob   |"),
        "{}",
        table.stdout
    );
}

#[test]
fn an_unknown_mode_lists_the_choices_and_keeps_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let out = shell(dir.path(), ".mode csv\n.mode yaml\nSELECT 1 AS a;\n");
    assert_eq!(results(&out), "a\n1\n");
    assert_eq!(
        out.stderr,
        "Error: unknown mode yaml; the modes are table, csv, json, markdown, line\n"
    );
}

#[test]
fn output_sends_results_to_a_file_until_it_is_reset() {
    let dir = tempfile::tempdir().unwrap();
    let input = ".mode csv\nSELECT 1 AS a;\n.output out.csv\nSELECT 2 AS b;\nSELECT 3 AS c;\n\
                 .output\nSELECT 4 AS d;\n";
    let out = shell(dir.path(), input);
    assert_eq!(results(&out), "a\n1\nd\n4\n");
    let file = std::fs::read_to_string(dir.path().join("out.csv")).unwrap();
    assert_eq!(file, "b\n2\nc\n3\n");
}

#[test]
fn output_to_an_unwritable_place_is_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let out = shell(dir.path(), ".output no/such/dir/out.csv\nSELECT 1 AS a;\n");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "Error: cannot write no/such/dir/out.csv: no such file or directory\n"
    );
    // Results stay on stdout.
    assert!(out.stdout.contains("| 1 |"), "{}", out.stdout);
}

#[test]
fn read_runs_the_statements_and_commands_of_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("inner.sql"), ".mode csv\nSELECT 1 AS a;\n").unwrap();
    let outer = "CREATE TEMP TABLE t AS SELECT 2 AS b;\n.read inner.sql\nSELECT b\nFROM t";
    std::fs::write(dir.path().join("outer.sql"), outer).unwrap();
    let out = shell(dir.path(), ".read outer.sql\nSELECT 3 AS c;\n");
    // The file's last statement runs though it has no ';', and `.mode` stays set.
    assert_eq!(results(&out), "a\n1\nb\n2\nc\n3\n");
}

#[test]
fn reading_a_missing_file_is_one_sentence_and_fails_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let out = shell(dir.path(), ".read missing.sql\n.mode csv\nSELECT 1 AS a;\n");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "Error: cannot read missing.sql: no such file or directory\n"
    );
    assert_eq!(results_unchecked(&out), "a\n1\n");
}

#[test]
fn a_file_reading_itself_stops() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("loop.sql"), ".read loop.sql\n").unwrap();
    let out = shell(dir.path(), ".read loop.sql\n");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("more than 16 deep"), "{}", out.stderr);
}

/// The output without the greeting, whatever the exit code.
fn results_unchecked(run: &Run) -> &str {
    run.stdout.split_once('\n').map_or("", |(_, rest)| rest)
}

#[test]
fn explain_shows_plans_of_queries_until_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let input = ".mode csv\n.explain\nCREATE TEMP TABLE t AS SELECT 41 AS x;\n\
                 SELECT x + 1 AS y FROM t;\n.explain off\nSELECT x + 1 AS y FROM t;\n\
                 .explain on\nSELECT 7 AS z;\n.explain\nSELECT 8 AS w;\n";
    let out = shell(dir.path(), input);
    let stdout = results(&out);
    let plans: Vec<&str> = stdout.split("plan_type,plan\n").collect();
    // DDL still ran under .explain (the table exists); two queries were explained.
    assert_eq!(plans.len(), 3, "{stdout}");
    assert!(plans[1].contains("physical_plan"), "{stdout}");
    assert!(plans[1].ends_with("y\n42\n"), "{stdout}");
    assert!(
        plans[2].contains("7 as z") && plans[2].ends_with("w\n8\n"),
        "{stdout}"
    );
    assert!(out.stderr.is_empty(), "{}", out.stderr);
}

#[test]
fn help_lists_the_new_commands() {
    let dir = tempfile::tempdir().unwrap();
    let out = shell(dir.path(), ".help\n");
    for command in [".mode", ".explain", ".read FILE", ".output [FILE]"] {
        assert!(out.stdout.contains(command), "{}", out.stdout);
    }
}

/// With the progress line asked for at once, a query whose stderr is a pipe still
/// prints nothing there: no line, no carriage return, no terminal escape.
#[test]
fn no_progress_line_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        &[],
        &["gen", "bluesky", "--docs", "20000", "--out", "ev.json"],
    )
    .ok();
    let now = [("TESSERA_PROGRESS_AFTER_MS", "0".to_string())];
    let q = "SELECT count(DISTINCT j->>'did') AS users FROM 'ev.json'";
    let sql = run(dir.path(), &now, &["sql", "--format", "csv", q]);
    assert!(sql.ok().starts_with("users\n"), "{}", sql.stdout);
    assert_eq!(sql.stderr, "");
    let shell = run_with_input_and_env(dir.path(), &now, &["shell"], &format!("{q};\n"));
    assert!(shell.ok().contains("users"), "{}", shell.stdout);
    assert_eq!(shell.stderr, "");
}
