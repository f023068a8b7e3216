//! Relational columns of Tessera tables: answers equal those over the raw documents,
//! filters on relational columns skip files by the manifest's statistics (and only
//! files that cannot match), and filters on JSON paths still reach the scan when the
//! table has relational columns.

use std::path::Path;

use tessera_engine::TesseraSession;

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::{analyze, metric, rows, session_with_raw};

/// Three NDJSON files of 2000 documents each; file `f` holds ids `f*10000 ..`, a
/// `group` string and a number `n`.
fn write_files(dir: &Path) -> Vec<String> {
    (0..3)
        .map(|file| {
            let text: String = (0..2000)
                .map(|row| {
                    let id = file * 10_000 + row;
                    format!(
                        r#"{{"id":{id},"group":"g{}","n":{},"tag":"{}"}}"#,
                        file,
                        (row * 7) % 300,
                        ["x", "y"][row % 2]
                    ) + "\n"
                })
                .collect();
            let path = dir.join(format!("part{file}.json"));
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        })
        .collect()
}

/// A session with the raw files as view `raw`, and table `t` (columns `id`, `grp`, `j`)
/// filled by one INSERT per file, so each file of the table holds one id range.
async fn session_with_table(dir: &Path) -> TesseraSession {
    let files = write_files(dir);
    let session = session_with_raw(&files, "true").await;
    let table = dir.join("table").display().to_string();
    session
        .sql(&format!(
            "CREATE EXTERNAL TABLE t (id BIGINT, grp VARCHAR, j VARCHAR) STORED AS TESSERA LOCATION '{table}'"
        ))
        .await
        .unwrap();
    for file in &files {
        rows(
            &session,
            &format!("INSERT INTO t SELECT json_get_int(j, 'id'), j->>'group', j FROM '{file}'"),
        )
        .await;
    }
    session
}

/// Pairs of (query over `raw`, the same over `t`).
const PAIRS: &[(&str, &str)] = &[
    (
        "SELECT count(*) FROM raw WHERE json_get_int(j, 'id') >= 20000",
        "SELECT count(*) FROM t WHERE id >= 20000",
    ),
    (
        "SELECT json_get_int(j, 'id'), j->>'tag' FROM raw WHERE json_get_int(j, 'id') BETWEEN 10990 AND 11010",
        "SELECT id, j->>'tag' FROM t WHERE id >= 10990 AND id <= 11010",
    ),
    (
        "SELECT j->>'group', count(*), sum(json_get_int(j, 'n')) FROM raw GROUP BY 1",
        "SELECT grp, count(*), sum(json_get_int(j, 'n')) FROM t GROUP BY grp",
    ),
    (
        "SELECT json_get_int(j, 'id') FROM raw WHERE j->>'group' = 'g1' AND json_get_int(j, 'n') = 7",
        "SELECT id FROM t WHERE grp = 'g1' AND json_get_int(j, 'n') = 7",
    ),
    (
        "SELECT json_get_int(j, 'id') FROM raw WHERE json_get_int(j, 'n') > 297",
        "SELECT id FROM t WHERE json_get_int(j, 'n') > 297",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relational_columns_answer_like_documents_and_skip_files() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_with_table(dir.path()).await;
    for (raw, table) in PAIRS {
        let expected = rows(&session, raw).await;
        assert!(!expected.is_empty(), "{raw} selects nothing");
        assert_eq!(rows(&session, table).await, expected, "{table}");
        session
            .sql("SET tessera.typed_reads = false")
            .await
            .unwrap();
        assert_eq!(rows(&session, table).await, expected, "{table} untyped");
        session.sql("SET tessera.typed_reads = true").await.unwrap();
    }

    // One file holds ids >= 20000: the other two never reach the scan.
    let plan = analyze(&session, "SELECT count(*) FROM t WHERE id >= 20000").await;
    assert_eq!(metric(&plan, "files_scanned"), 1, "{plan}");
    let plan = analyze(
        &session,
        "SELECT count(*) FROM t WHERE grp = 'g1' AND id < 15000",
    )
    .await;
    assert_eq!(metric(&plan, "files_scanned"), 1, "{plan}");
    let plan = analyze(&session, "SELECT count(*) FROM t WHERE id > 5").await;
    assert_eq!(metric(&plan, "files_scanned"), 3, "{plan}");
    session
        .sql("SET tessera.typed_reads = false")
        .await
        .unwrap();
    let plan = analyze(&session, "SELECT count(*) FROM t WHERE id >= 20000").await;
    assert_eq!(metric(&plan, "files_scanned"), 3, "{plan}");
    session.sql("SET tessera.typed_reads = true").await.unwrap();

    // A filter on a JSON path reaches the scan: typed columns answer it.
    let plan = analyze(
        &session,
        "SELECT id FROM t WHERE json_get_int(j, 'n') > 297",
    )
    .await;
    assert!(metric(&plan, "values_typed") > 0, "{plan}");
    assert!(
        plan.contains("pruning=["),
        "the JSON filter was not pushed: {plan}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_refuses_a_table_with_relational_columns() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_with_table(dir.path()).await;
    let location = dir.path().join("table").display().to_string();
    let table = session.open_table(&location).await.unwrap();
    let source = dir.path().join("part0.json").display().to_string();
    let error = session
        .ingest(table, &location, &[source])
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("has relational columns besides its documents"),
        "{error}"
    );
    assert_eq!(rows(&session, "SELECT count(*) FROM t").await, vec!["6000"]);
}
