//! A Tessera table scan states the rows it expects, from the manifest alone: its files'
//! rows, scaled by the share of documents holding the paths its filters need. Here,
//! DataFusion's join selection then builds a hash join on the smaller side; on a
//! cluster, Ballista's planner broadcasts a join's build side only when it can size it
//! (an unsized one made it shuffle the whole probe side).

use tessera_engine::TesseraSession;

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::{rows, session_with_raw, write_parts};

/// A table of two files: in the first, 2,000 of 3,000 documents hold `a`; the others,
/// and every document of the second, hold `b`.
async fn session(dir: &std::path::Path) -> TesseraSession {
    let files = write_parts(dir, 2, 3_000, |file, row| match (file, row) {
        (0, row) if row < 2_000 => format!("{{\"a\":{row}}}"),
        (_, row) => format!("{{\"b\":{row}}}"),
    });
    let session = session_with_raw(&files, "true").await;
    let table = dir.join("table").display().to_string();
    rows(
        &session,
        &format!("CREATE EXTERNAL TABLE t STORED AS TESSERA LOCATION '{table}'"),
    )
    .await;
    for file in &files {
        rows(&session, &format!("INSERT INTO t SELECT j FROM '{file}'")).await;
    }
    rows(&session, "SET datafusion.explain.show_statistics = true").await;
    session
}

/// The statistics of the table scan in the plan of `sql`.
async fn scan_rows(session: &TesseraSession, sql: &str) -> String {
    let plan = rows(session, &format!("EXPLAIN {sql}")).await.join("\n");
    let scan = plan
        .lines()
        .find(|line| line.contains("file_type=tessera"))
        .unwrap_or_else(|| panic!("no table scan:\n{plan}"));
    let at = scan.rfind("statistics=[Rows=").expect("statistics shown");
    scan[at..].split(',').next().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_here_and_sent_to_a_cluster_state_the_rows_they_expect() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path()).await;
    let holding_a = "SELECT json_get_int(j, 'a') FROM t WHERE json_get_int(j, 'a') IS NOT NULL";
    let all = "SELECT j->>'b' FROM t";
    // A text test must keep the second file (`a` could be an object there, whose text
    // is not null), but it holds no `a` as a scalar, so it expects none.
    let text_of_a = "SELECT j->>'a' FROM t WHERE j->>'a' IS NOT NULL";
    // Nothing listens at the cluster's address: EXPLAIN only plans what would be sent.
    for cluster in ["", "df://127.0.0.1:9"] {
        rows(&session, &format!("SET tessera.cluster = '{cluster}'")).await;
        // The first file's 2,000 documents holding `a`; the second holds none.
        assert_eq!(
            scan_rows(&session, holding_a).await,
            "statistics=[Rows=Inexact(2000)",
            "{cluster}"
        );
        assert_eq!(
            scan_rows(&session, text_of_a).await,
            "statistics=[Rows=Inexact(2000)",
            "{cluster}"
        );
        assert_eq!(
            scan_rows(&session, all).await,
            "statistics=[Rows=Inexact(6000)",
            "{cluster}"
        );
    }
    // Deleted rows are not expected; a file's deletions scale its paths' shares evenly
    // (2,900 live rows of which two thirds held `a`).
    rows(&session, "SET tessera.cluster = ''").await;
    rows(&session, "DELETE FROM t WHERE json_get_int(j, 'a') < 100").await;
    assert_eq!(
        scan_rows(&session, holding_a).await,
        "statistics=[Rows=Inexact(1933)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_builds_on_the_side_expected_smaller() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path()).await;
    // The 4,000 documents holding `b` are listed first, the 2,000 holding `a` second.
    let sql = "SELECT count(*) FROM \
        (SELECT json_get_int(j, 'b') AS k FROM t WHERE json_get_int(j, 'b') IS NOT NULL) b \
        JOIN (SELECT json_get_int(j, 'a') AS k FROM t WHERE json_get_int(j, 'a') IS NOT NULL) a \
        ON a.k = b.k";
    let plan = rows(&session, &format!("EXPLAIN {sql}")).await.join("\n");
    let join = plan
        .find("HashJoinExec")
        .unwrap_or_else(|| panic!("{plan}"));
    // The build side is the join's first input, shown first below it.
    let build = plan[join..]
        .lines()
        .find(|line| line.contains("file_type=tessera"))
        .unwrap_or_else(|| panic!("{plan}"));
    assert!(build.contains("json_paths=[$.a"), "{plan}");
    // Keys 0..2000 of `a` meet the second file's keys 0..3000 of `b` (the first file's
    // are 2000..3000).
    assert_eq!(rows(&session, sql).await, ["2000"]);
}
