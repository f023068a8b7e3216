//! `tessera demo` end to end on a small data set: raw-file queries, the ingest into a
//! table, JSONBench over the table with the same answers, the scan's cost in `EXPLAIN
//! ANALYZE`, the Python snippet, and a second run that reuses what the first made.

mod common;

use common::run;

#[test]
fn the_demo_queries_the_raw_file_then_the_table_it_ingests() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["demo", "--docs", "2000", "--dir", "d"];
    let first = run(dir.path(), &[], &args);
    let stdout = first.ok();
    for step in 1..=6 {
        assert!(stdout.contains(&format!("\n[{step}/6] ")), "{stdout}");
    }
    assert!(
        first
            .stderr
            .contains("ingested 2000 documents into version 1"),
        "{}",
        first.stderr
    );
    // Every JSONBench query answers over the table as over the raw file.
    assert_eq!(stdout.matches("same rows").count(), 5, "{stdout}");
    assert!(!stdout.contains("rows differ"), "{stdout}");
    assert!(stdout.contains("bytes_scanned="), "{stdout}");
    assert!(stdout.contains("requests: $0.00"), "{stdout}");
    let table = dir
        .path()
        .canonicalize()
        .unwrap()
        .join("d/bluesky-table-2000-s1");
    assert!(
        stdout.contains(&format!("FROM '{}' GROUP BY event", table.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("import tessera\n  con = tessera.connect()\n"),
        "{stdout}"
    );

    let again = run(dir.path(), &[], &args);
    assert!(
        again.ok().contains("(already ingested)"),
        "{}",
        again.stdout
    );
    assert!(!again.stderr.contains("ingested 2000"), "{}", again.stderr);
    assert_eq!(
        again.stdout.matches("same rows").count(),
        5,
        "{}",
        again.stdout
    );
}
