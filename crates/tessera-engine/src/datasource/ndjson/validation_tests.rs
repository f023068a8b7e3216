//! Whether a line is malformed must not depend on what a query reads of it: `count(*)`
//! (no path read), a query reading whole documents and one reading a path reject the
//! same lines, under both validation levels and both `on_error` settings.

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::Int64Type;

use crate::rejects::RejectSummary;
use crate::test_support::session_with;
use crate::{SessionOptions, TesseraSession};

/// Queries that read nothing, the whole document, and one path of it.
const QUERIES: [&str; 3] = [
    "SELECT count(*) FROM '{file}'",
    "SELECT count(*) FROM '{file}' WHERE j IS NOT NULL",
    "SELECT count(*) FROM '{file}' WHERE j->>'a' IS NULL OR j->>'a' IS NOT NULL",
];

/// A pseudo-random generator (xorshift), so the lines are generated, not hand-picked.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// `lines` documents, about half of them with a byte deleted, inserted or replaced.
fn lines(rng: &mut Rng, lines: usize) -> String {
    const VALUES: &[&str] = &[
        "1",
        "-0",
        "2.5e3",
        "true",
        "null",
        r#""s""#,
        r#""\u00e9""#,
        r#"[1,{"c":[]}]"#,
        r#"{"d":"x"}"#,
    ];
    const BYTES: &[u8] = b"{}[]:,\" 0-.eEtnu\\";
    let mut out = String::new();
    for _ in 0..lines {
        let (first, second) = (
            VALUES[rng.below(VALUES.len())],
            VALUES[rng.below(VALUES.len())],
        );
        let mut line = format!(r#"{{"b":{second},"a":{first},"z":{second}}}"#).into_bytes();
        if rng.below(2) == 0 {
            let at = rng.below(line.len());
            let byte = BYTES[rng.below(BYTES.len())];
            match rng.below(3) {
                0 => {
                    line.remove(at);
                }
                1 => line[at] = byte,
                _ => line.insert(at, byte),
            }
        }
        out.push_str(std::str::from_utf8(&line).expect("ASCII"));
        out.push('\n');
    }
    out
}

fn session() -> TesseraSession {
    session_with(SessionOptions {
        target_partitions: Some(1),
        ..Default::default()
    })
}

/// The rows counted and the lines rejected by `sql`, or its error.
async fn run(session: &TesseraSession, sql: &str) -> Result<(i64, RejectSummary), String> {
    let frame = session.sql(sql).await.map_err(|e| e.to_string())?;
    let batches: Vec<RecordBatch> = frame.collect().await.map_err(|e| e.to_string())?;
    let count = batches[0].column(0).as_primitive::<Int64Type>().value(0);
    Ok((count, session.take_rejects()))
}

#[tokio::test]
async fn every_query_rejects_the_same_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("generated.json");
    let text = lines(&mut Rng(0x9e37_79b9_7f4a_7c15), 400);
    std::fs::write(&file, &text).unwrap();
    let file = file.display().to_string();
    let session = session();
    for validation in ["structure", "full"] {
        for on_error in ["skip", "fail"] {
            let set = format!(
                "SET tessera.validation = '{validation}'; SET tessera.on_error = '{on_error}'"
            );
            for statement in session.parse(&set).unwrap() {
                session.execute(statement).await.unwrap();
            }
            let mut outcomes = Vec::new();
            for query in QUERIES {
                outcomes.push(run(&session, &query.replace("{file}", &file)).await);
            }
            let context = format!("{validation} {on_error}");
            let counts: Vec<_> = outcomes
                .iter()
                .map(|o| o.as_ref().map(|(rows, rejects)| (rows, rejects.count)))
                .collect();
            assert!(
                outcomes.iter().all(|o| *o == outcomes[0]),
                "{context}: {counts:?}"
            );
            match (on_error, &outcomes[0]) {
                ("skip", Ok((rows, rejects))) => {
                    assert!(*rows > 100 && rejects.count > 100, "{context}: {counts:?}");
                    assert_eq!(*rows as u64 + rejects.count, 400, "{context}");
                }
                ("fail", Err(e)) => assert!(e.contains("malformed JSON"), "{context}: {e}"),
                _ => panic!("{context}: {counts:?}"),
            }
        }
    }
}
