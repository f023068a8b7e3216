//! DESCRIBE and SUMMARIZE through a session, checked against what the described
//! queries give when run themselves (`typeof`, plain aggregates).

use crate::TesseraSession;
use crate::test_support::{duckdb_session, text_rows};

/// Every row of the answer to `sql`, cells as text (`NULL` for NULL).
async fn rows(session: &TesseraSession, sql: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for statement in session.parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}")) {
        let frame = session.execute(statement).await;
        let batches = frame
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .collect()
            .await;
        out = text_rows(&batches.unwrap_or_else(|e| panic!("{sql}: {e}")));
    }
    out
}

/// Expressions of many types, each alone and all nested in a struct and a list.
fn generated_expressions() -> Vec<String> {
    let scalars = [
        "42",
        "42::BIGINT",
        "1.5",
        "1.5::DOUBLE",
        "'x'",
        "true",
        "DATE '2020-01-02'",
        "'{\"a\":1}'::JSON",
        "ST_GeomFromText('POINT (1 2)')",
        "NULL",
        "12::HUGEINT",
        "[1, 2]",
        "{'k': 'v', 'type': 1}",
    ];
    let mut out: Vec<String> = scalars.iter().map(|s| s.to_string()).collect();
    out.push(format!(
        "{{{}}}",
        scalars
            .iter()
            .enumerate()
            .map(|(i, s)| format!("f{i}: {s}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out.extend(
        scalars
            .iter()
            .filter(|s| !s.starts_with("NULL"))
            .map(|s| format!("[{s}]")),
    );
    out
}

#[tokio::test]
async fn describe_names_the_types_typeof_names() {
    let session = duckdb_session();
    let expressions = generated_expressions();
    let items: Vec<String> = expressions
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{e} AS c{i}"))
        .collect();
    let query = format!("SELECT {}", items.join(", "));
    let typeofs: Vec<String> = expressions
        .iter()
        .enumerate()
        .map(|(i, e)| format!("typeof({e}) AS t{i}"))
        .collect();
    let expected = rows(&session, &format!("SELECT {}", typeofs.join(", "))).await;
    let nested = rows(
        &session,
        &format!("SELECT column_name, column_type, \"null\" FROM (DESCRIBE {query})"),
    )
    .await;
    let top = rows(&session, &format!("DESCRIBE {query}")).await;
    assert_eq!(nested.len(), expressions.len());
    for (i, row) in nested.iter().enumerate() {
        assert_eq!(
            row,
            &[format!("c{i}"), expected[0][i].clone(), "YES".into()]
        );
        assert_eq!(top[i][..3], row[..], "{}", expressions[i]);
        assert_eq!(top[i][3..], ["NULL", "NULL", "NULL"]);
    }
}

#[tokio::test]
async fn describe_of_a_table_shows_not_null_and_the_primary_key() {
    let session = duckdb_session();
    rows(
        &session,
        "CREATE TABLE t (a INTEGER NOT NULL PRIMARY KEY, b VARCHAR, g GEOMETRY, j JSON)",
    )
    .await;
    let expected = [
        ["a", "INTEGER", "NO", "PRI"],
        ["b", "VARCHAR", "YES", "NULL"],
        ["g", "GEOMETRY", "YES", "NULL"],
        ["j", "JSON", "YES", "NULL"],
    ];
    for sql in [
        "DESCRIBE t",
        "SELECT * FROM (DESCRIBE t)",
        "SELECT * FROM (DESC t)",
    ] {
        let seen = rows(&session, sql).await;
        let seen: Vec<Vec<String>> = seen.into_iter().map(|r| r[..4].to_vec()).collect();
        assert_eq!(seen, expected, "{sql}");
    }
    let nested = rows(
        &session,
        "SELECT count(*) FROM (DESCRIBE SELECT * FROM (DESCRIBE t) WHERE key IS NULL)",
    )
    .await;
    assert_eq!(nested, [["6"]]);
}

#[tokio::test]
async fn summarize_agrees_with_plain_aggregates() {
    let session = duckdb_session();
    rows(
        &session,
        "CREATE TABLE g AS SELECT CASE WHEN range % 7 = 3 THEN NULL ELSE (range * 7919) % 101 END AS n, \
         CASE WHEN range % 5 = 1 THEN NULL ELSE 'v' || (range % 13) END AS s FROM range(200)",
    )
    .await;
    let plain = rows(
        &session,
        "SELECT min(n)::VARCHAR, max(n)::VARCHAR, count(DISTINCT n), avg(n)::VARCHAR, stddev(n)::VARCHAR, count(*), \
         round(100.0 * (count(*) - count(n)) / count(*), 2)::DECIMAL(9,2)::VARCHAR, \
         min(s), max(s), count(DISTINCT s), count(*), \
         round(100.0 * (count(*) - count(s)) / count(*), 2)::DECIMAL(9,2)::VARCHAR FROM g",
    )
    .await;
    let p = &plain[0];
    let columns =
        "column_name, column_type, min, max, approx_unique, avg, std, count, null_percentage";
    for sql in [
        format!("SELECT {columns} FROM (SUMMARIZE g)"),
        format!("SELECT {columns} FROM (SUMMARIZE SELECT * FROM g)"),
    ] {
        let seen = rows(&session, &sql).await;
        assert_eq!(
            seen,
            [
                vec![
                    "n", "BIGINT", &p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &p[6]
                ],
                vec![
                    "s", "VARCHAR", &p[7], &p[8], &p[9], "NULL", "NULL", &p[10], &p[11]
                ],
            ],
            "{sql}"
        );
    }
    let statement = rows(&session, "SUMMARIZE g").await;
    assert_eq!(statement.len(), 2);
    assert_eq!(statement[0].len(), 12);
}
