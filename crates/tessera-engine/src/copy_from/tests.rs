//! COPY FROM over generated files: every record a row of the table's columns by name,
//! malformed ones failing the statement or counted, and the text rewrite itself.

use arrow::array::RecordBatch;
use datafusion::sql::sqlparser::dialect::DuckDbDialect;

use super::prepare;
use crate::TesseraSession;
use crate::test_support::{duckdb_session, text_rows};

/// A small deterministic generator (xorshift), so that failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

async fn run(session: &TesseraSession, sql: &str) -> Result<Vec<RecordBatch>, String> {
    let frame = session.sql(sql).await.map_err(|e| e.to_string())?;
    frame.collect().await.map_err(|e| e.to_string())
}

/// The rows of `sql`, cells as text (`NULL` for NULL).
async fn rows(session: &TesseraSession, sql: &str) -> Vec<Vec<String>> {
    let batches = run(session, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    text_rows(&batches)
}

/// `count` records with keys in random order, some missing, some extra, ids sometimes
/// as strings; the rows `(id, name, score)` the table should hold, sorted by id.
fn generated(rng: &mut Rng, count: usize) -> (Vec<String>, Vec<Vec<String>>) {
    let mut records = Vec::new();
    let mut expected = Vec::new();
    for id in 0..count {
        let mut members = vec![match rng.next(3) {
            0 => format!("\"id\":\"{id}\""),
            _ => format!("\"id\":{id}"),
        }];
        let name = (rng.next(4) != 0).then(|| format!("n{}", rng.next(50)));
        if let Some(name) = &name {
            members.push(format!("\"name\":\"{name}\""));
        }
        let score = (rng.next(4) != 0).then(|| rng.next(1000) as f64 / 4.0);
        if let Some(score) = score {
            members.push(format!("\"score\":{score}"));
        }
        if rng.next(2) == 0 {
            members.push(format!("\"extra\":[{}]", rng.next(9)));
        }
        let turn = rng.next(members.len() as u64) as usize;
        members.rotate_left(turn);
        records.push(format!("{{{}}}", members.join(",")));
        let text = |v: Option<String>| v.unwrap_or_else(|| "NULL".into());
        expected.push(vec![
            id.to_string(),
            text(name),
            text(score.map(|s| format!("{s:?}"))),
        ]);
    }
    (records, expected)
}

#[tokio::test]
async fn records_fill_the_tables_columns_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (records, expected) = generated(&mut Rng(0x2545_f491_4f6c_dd1d), 300);
    let lines = dir.path().join("records.ndjson");
    std::fs::write(&lines, records.join("\n")).unwrap();
    let array = dir.path().join("records.json");
    std::fs::write(&array, format!("[{}]", records.join(",\n"))).unwrap();
    let session = duckdb_session();
    let (lines, array) = (lines.display(), array.display());
    run(
        &session,
        "CREATE TABLE t (score DOUBLE, name VARCHAR, id BIGINT)",
    )
    .await
    .unwrap();
    for copy in [
        format!("COPY t FROM '{lines}'"),
        format!("COPY t FROM '{array}' (FORMAT JSON, ARRAY true)"),
        format!("copy t from '{array}'"),
    ] {
        run(&session, "DELETE FROM t").await.unwrap();
        run(&session, &copy)
            .await
            .unwrap_or_else(|e| panic!("{copy}: {e}"));
        let seen = rows(&session, "SELECT id, name, score FROM t ORDER BY id").await;
        assert_eq!(seen, expected, "{copy}");
    }
    for wrong in [
        format!("COPY t FROM '{array}' (ARRAY false)"),
        format!("COPY t FROM '{array}' (AUTO_DETECT false)"),
        format!("COPY t FROM '{lines}' (FORMAT CSV)"),
    ] {
        let error = run(&session, &wrong).await.unwrap_err();
        assert!(
            error.contains("records.json") || error.contains("CSV"),
            "{wrong}: {error}"
        );
    }
    // One column: an array record is no row of it either (DuckDB's test_json_copy).
    run(&session, "CREATE TABLE one (id BIGINT)").await.unwrap();
    for wrong in [
        format!("COPY one FROM '{array}' (ARRAY false)"),
        format!("COPY one FROM '{array}' (AUTO_DETECT false)"),
    ] {
        let error = run(&session, &wrong).await.unwrap_err();
        assert!(error.contains("records.json"), "{wrong}: {error}");
    }
}

#[tokio::test]
async fn malformed_records_fail_or_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.ndjson");
    std::fs::write(&file, "{\"id\":1}\n{\"id\":\n{\"id\":3}\n").unwrap();
    let file = file.display();
    let session = duckdb_session();
    run(&session, "CREATE TABLE t (id BIGINT)").await.unwrap();
    let error = run(&session, &format!("COPY t FROM '{file}'"))
        .await
        .unwrap_err();
    assert!(
        error.contains("bad.ndjson") && error.contains("line 2"),
        "{error}"
    );
    run(
        &session,
        &format!("COPY t FROM '{file}' (IGNORE_ERRORS true)"),
    )
    .await
    .unwrap();
    assert_eq!(session.take_rejects().count, 1);
    let seen = rows(&session, "SELECT count(*), count(id), sum(id) FROM t").await;
    assert_eq!(seen, [["3", "2", "4"]]);
}

#[tokio::test]
async fn geojson_features_fill_geometry_and_pseudo_columns() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.geojsonl");
    let features: Vec<String> = (0..20)
        .map(|i| {
            format!(
                r#"{{"type":"Feature","id":"F{i}","geometry":{{"type":"Point","coordinates":[{i},{}]}},"properties":{{"id":"P{i}","name":"n{i}"}}}}"#,
                i * 2
            )
        })
        .collect();
    std::fs::write(&file, features.join("\n")).unwrap();
    let session = duckdb_session();
    run(
        &session,
        "CREATE TABLE g (name VARCHAR, geometry GEOMETRY, id VARCHAR)",
    )
    .await
    .unwrap();
    let copy = format!("COPY g FROM '{}' (FORMAT GEOJSON)", file.display());
    run(&session, &copy).await.unwrap();
    let seen = rows(&session, "SELECT ST_AsText(geometry), id, name FROM g").await;
    let expected: Vec<Vec<String>> = (0..20)
        .map(|i| {
            vec![
                format!("POINT ({i} {})", i * 2),
                format!("F{i}"),
                format!("n{i}"),
            ]
        })
        .collect();
    assert_eq!(seen, expected);
}

#[test]
fn copy_statements_become_inserts() {
    let prepared = |sql: &str| prepare(sql, &DuckDbDialect {}).into_owned();
    assert_eq!(
        prepared(
            "COPY t FROM 'a.json'; copy s.t from 'b.json' (FORMAT GEOJSON, ARRAY true, HEADER)"
        ),
        "INSERT INTO t SELECT * FROM __tessera_copy_from( 'a.json'); \
         INSERT INTO s.t SELECT * FROM __tessera_copy_from( 'b.json' ,FORMAT =GEOJSON, ARRAY =true, HEADER=TRUE)"
    );
    for other in [
        "COPY t TO 'a.json'",
        "COPY (SELECT 1) TO 'a.json'",
        "COPY t FROM x",
        "COPY t (a) FROM 'a.json'",
        "SELECT 'COPY t FROM ''a.json'''",
        "COPY t FROM 'a.json' (FORMAT JSON",
    ] {
        assert_eq!(prepared(other), other);
    }
}
