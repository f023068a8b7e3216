//! Differential: a lateral `json_each`/`json_tree` fills only the columns its query
//! reads, and each such answer must equal the same columns taken from the walk that
//! fills all of them (`e.*` in a derived table reads every column). Generated documents,
//! every entry column and hidden column, read in the select list, only in WHERE, bare or
//! qualified, and not at all (`count(*)`).

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::{Rng, rows};
use tessera_engine::{SessionOptions, TesseraSession};

const DOCS: usize = 60;
const KEYS: [&str; 6] = ["a", "b", "a.b", "x y", "it's", "7"];
const DEPTH_MAX: usize = 4;
const COLUMNS: [&str; 10] = [
    "key", "value", "type", "atom", "id", "parent", "fullkey", "path", "rowid", "root",
];

/// A random JSON value, nested at most [`DEPTH_MAX`] levels.
fn value(rng: &mut Rng, depth: usize, out: &mut String) {
    let kinds = if depth >= DEPTH_MAX { 4 } else { 6 };
    match rng.below(kinds) {
        0 => out.push_str(["null", "true", "false"][rng.below(3) as usize]),
        1 => out.push_str(&(rng.below(2000) as i64 - 1000).to_string()),
        2 => out.push_str(&format!("{}.5", rng.below(100))),
        3 => out.push_str(&format!("\"s{}\"", rng.below(50))),
        4 => {
            out.push('[');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push(',');
                }
                value(rng, depth + 1, out);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push(',');
                }
                let key = KEYS[rng.below(KEYS.len() as u64) as usize].replace('\'', "''");
                out.push_str(&format!("\"{key}\": "));
                value(rng, depth + 1, out);
            }
            out.push('}');
        }
    }
}

async fn session_with_docs() -> TesseraSession {
    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap();
    let session = TesseraSession::new(s3, SessionOptions::default()).unwrap();
    let mut rng = Rng(0x0e4c_4c01);
    let mut values = Vec::with_capacity(DOCS);
    for n in 0..DOCS {
        let mut doc = String::from("{\"top\": ");
        value(&mut rng, 0, &mut doc);
        doc.push('}');
        values.push(format!("({n}, '{doc}')"));
    }
    for sql in [
        "CREATE TABLE docs (n INT, j VARCHAR)".to_string(),
        format!("INSERT INTO docs VALUES {}", values.join(", ")),
    ] {
        session.sql(&sql).await.unwrap().collect().await.unwrap();
    }
    session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_column_read_alone_equals_the_full_walk() {
    let session = session_with_docs().await;
    for walk in ["json_each(d.j, '$.top')", "json_tree(d.j)"] {
        let full = format!("(SELECT d.n, e.*, e.rowid, e.root FROM docs d, {walk} AS e) AS f");
        for column in COLUMNS {
            let alone = rows(
                &session,
                &format!("SELECT d.n, e.{column} FROM docs d, {walk} AS e"),
            )
            .await;
            let expected = rows(&session, &format!("SELECT n, {column} FROM {full}")).await;
            assert_eq!(alone, expected, "{walk}: {column} read alone");
            // Bare where the name is only the walk's (a table has a `rowid` of its own).
            let name = match column {
                "rowid" | "root" => format!("e.{column}"),
                _ => column.to_string(),
            };
            let filtered = rows(
                &session,
                &format!("SELECT count(*) FROM docs d, {walk} AS e WHERE {name} IS NOT NULL"),
            )
            .await;
            let expected = rows(
                &session,
                &format!("SELECT count(*) FROM {full} WHERE {column} IS NOT NULL"),
            )
            .await;
            assert_eq!(filtered, expected, "{walk}: {column} read in WHERE only");
        }
        let counted = rows(
            &session,
            &format!("SELECT count(*) FROM docs d, {walk} AS e"),
        )
        .await;
        let expected = rows(&session, &format!("SELECT count(*) FROM {full}")).await;
        assert_eq!(counted, expected, "{walk}: no column read");
    }
}
