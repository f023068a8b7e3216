//! A JSON tiles table reads every document back as the raw scan of the same file does
//! (issue 16 items 3 and 4): whole documents, every key path and array element with
//! `->` and `->>`, and casts of them, compared value by value with numbers by value and
//! kind (integer or float) and strings exactly. Documents are generated from seeded
//! random numbers: extreme numbers, duplicate keys, unicode edge cases, nesting up to
//! the limit, and mixed types at one path, so that shredding writes typed columns with
//! outliers next to them.
//!
//! Decisions the comparison encodes: the integer `-0` is the integer 0 (DuckDB reads it
//! so); a key given twice keeps its first value (the raw scan's `j` is the text as
//! written, a table's `j` the object with first occurrences only).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use arrow::array::{Array, AsArray};
use arrow::datatypes::DataType;
use tessera_engine::{OnError, SessionOptions, TesseraSession};
use tessera_json::canonical::Canonical;
use tessera_json::limits::MAX_NESTING;

/// `text` parsed as JSON, `None` when it is none.
fn parse(text: &str) -> Option<Canonical> {
    Canonical::parse(text.as_bytes()).ok()
}

/// SplitMix64: a seeded generator, so a failure repeats with its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// How the generator mixes documents.
#[derive(Clone, Copy)]
struct Settings {
    seed: u64,
    documents: usize,
    /// Out of 100: how often a value of a regular path has another type than usual.
    outliers_percent: usize,
    /// Out of 100: how often a document carries a value nested to the limit.
    deep_percent: usize,
}

/// Numbers at the edges of every Variant type, as written in JSON.
const EXTREME_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-0.0",
    "0.0",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "123456789012345678901234567890",
    "-99999999999999999999",
    "99999999999999999999999999999999999999",
    "-99999999999999999999999999999999999999",
    "1e308",
    "-1.7976931348623157e308",
    "5e-324",
    "2.2250738585072014e-308",
    "1E2",
    "1.5e-7",
    "0.1000000000000000000001",
    "12345678901234567890.5",
    "127",
    "-128",
    "32768",
    "2147483648",
];

/// String pieces with every escape and character class JSON text has.
const STRING_PIECES: &[&str] = &[
    "a",
    "plain text",
    r"\n",
    r"\t\r\b\f",
    r#"\""#,
    r"\\",
    r"\/",
    r"\u0000",
    r"\u001f",
    r"\ud83d\ude00",
    "😀",
    "\u{ffff}",
    r"\uffff",
    "é東京",
    r"\u00e9",
    " | ",
    "-0",
    "",
];

fn string(rng: &mut Rng) -> String {
    let pieces = 1 + rng.below(4);
    let body: String = (0..pieces).map(|_| rng.pick(STRING_PIECES)).collect();
    format!("\"{body}\"")
}

fn integer_of_digits(rng: &mut Rng, digits: usize) -> String {
    let mut text = String::from(if rng.below(2) == 0 { "-" } else { "" });
    text.push(char::from(b'1' + rng.below(9) as u8));
    (1..digits).for_each(|_| text.push(char::from(b'0' + rng.below(10) as u8)));
    text
}

fn number(rng: &mut Rng) -> String {
    match rng.below(5) {
        0 => rng.pick(EXTREME_NUMBERS).to_string(),
        1 => {
            let digits = 20 + rng.below(19);
            integer_of_digits(rng, digits)
        }
        2 => format!("{:?}", f64::from_bits(rng.next()) % 1e300).replace("NaN", "1.5"),
        3 => format!("{}e{}", rng.below(1000), rng.below(600) as i64 - 300),
        _ => (rng.next() as i64 >> rng.below(64)).to_string(),
    }
}

/// A random value below `depth` levels of nesting.
fn value(rng: &mut Rng, depth: usize) -> String {
    let choice = if depth >= 6 {
        rng.below(5)
    } else {
        rng.below(8)
    };
    match choice {
        0 => rng.pick(&["null", "true", "false"]).to_string(),
        1 | 2 => number(rng),
        3 | 4 => string(rng),
        5 => {
            let n = rng.below(4);
            let items: Vec<String> = (0..n).map(|_| value(rng, depth + 1)).collect();
            format!("[{}]", items.join(","))
        }
        _ => object(rng, depth + 1),
    }
}

fn object(rng: &mut Rng, depth: usize) -> String {
    let n = rng.below(5);
    let mut members: Vec<String> = (0..n)
        .map(|_| format!("{}:{}", key(rng), value(rng, depth + 1)))
        .collect();
    if n > 0 && rng.below(4) == 0 {
        // A key given twice, with another value.
        let first = members[0].split_once(':').map(|(k, _)| k.to_string());
        members.push(format!("{}:{}", first.unwrap(), value(rng, depth + 1)));
    }
    format!("{{{}}}", members.join(","))
}

fn key(rng: &mut Rng) -> String {
    match rng.below(12) {
        0 => string(rng),
        _ => format!("\"k{}\"", rng.below(6)),
    }
}

/// A value nested `levels` deep in arrays and objects.
fn deep(rng: &mut Rng, levels: usize) -> String {
    let mut text = value(rng, 6);
    for level in 0..levels {
        text = match level % 2 {
            0 => format!("[{text}]"),
            _ => format!("{{\"d\":{text}}}"),
        };
    }
    text
}

/// Generates the usual value of a regular path.
type Generator = fn(&mut Rng) -> String;

/// One document: regular paths (mostly one type, sometimes another) for shredding, a
/// random subtree, sometimes a duplicated regular key, sometimes a value nested to the
/// limit (the document's own object is one level).
fn document(rng: &mut Rng, id: usize, settings: Settings) -> String {
    let outlier = |rng: &mut Rng| rng.below(100) < settings.outliers_percent;
    let mut members = vec![format!("\"id\":{id}")];
    let regular: [(&str, Generator); 5] = [
        ("n", |rng| (rng.next() as i32).to_string()),
        ("f", |rng| format!("{}.5", rng.below(1000))),
        ("s", |rng| string(rng)),
        ("b", |rng| rng.pick(&["true", "false"]).to_string()),
        ("o", |rng| {
            format!("{{\"x\":{},\"y\":{}}}", rng.below(100), string(rng))
        }),
    ];
    for (name, usual) in regular {
        if rng.below(10) == 0 {
            continue;
        }
        let text = match outlier(rng) {
            true => value(rng, 2),
            false => usual(rng),
        };
        members.push(format!("\"{name}\":{text}"));
    }
    let element = |rng: &mut Rng| match outlier(rng) {
        true => value(rng, 3),
        false => rng.below(50).to_string(),
    };
    let list: Vec<String> = (0..rng.below(4)).map(|_| element(rng)).collect();
    members.push(format!("\"l\":[{}]", list.join(",")));
    // An array of objects, shredded as a list of objects: element keys missing, of
    // another type, JSON null, elements that are no object.
    let dependency = |rng: &mut Rng| match outlier(rng) {
        true => value(rng, 2),
        false => format!(
            "{{\"name\":{},\"v\":{},\"src\":{{\"u\":{}}}}}",
            string(rng),
            rng.below(9),
            match outlier(rng) {
                true => value(rng, 1),
                false => string(rng),
            }
        ),
    };
    if rng.below(10) > 0 {
        let deps: Vec<String> = (0..rng.below(5)).map(|_| dependency(rng)).collect();
        members.push(format!("\"deps\":[{}]", deps.join(",")));
    }
    members.push(format!("\"r\":{}", object(rng, 1)));
    if rng.below(20) == 0 {
        members.push(format!("\"n\":{}", number(rng)));
    }
    if rng.below(100) < settings.deep_percent {
        members.push(format!("\"deep\":{}", deep(rng, MAX_NESTING - 1)));
    }
    format!("{{{}}}", members.join(","))
}

fn write_documents(path: &Path, settings: Settings) -> Vec<String> {
    let mut rng = Rng(settings.seed);
    let docs: Vec<String> = (0..settings.documents)
        .map(|id| document(&mut rng, id, settings))
        .collect();
    std::fs::write(path, docs.join("\n") + "\n").unwrap();
    docs
}

async fn session(on_error: OnError) -> TesseraSession {
    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap();
    let options = SessionOptions {
        target_partitions: Some(2),
        on_error: Some(on_error),
        ..SessionOptions::default()
    };
    TesseraSession::new(s3, options).unwrap()
}

async fn ingest(
    session: &TesseraSession,
    file: &Path,
    table: &Path,
) -> tessera_engine::IngestOutcome {
    let location = table.display().to_string() + "/";
    let opened = session.open_table(&location).await.unwrap();
    session
        .ingest(opened, &location, &[file.display().to_string()])
        .await
        .unwrap_or_else(|e| panic!("ingest: {e}"))
}

/// The rows of `sql`'s answer, each cell as text (NULL as `None`), by the first cell.
async fn answer(session: &TesseraSession, sql: &str) -> HashMap<String, Vec<Option<String>>> {
    let batches = session
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = HashMap::new();
    for batch in &batches {
        let columns: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| arrow::compute::cast(c, &DataType::Utf8).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            let cells: Vec<Option<String>> = columns
                .iter()
                .map(|c| {
                    let c = c.as_string::<i32>();
                    c.is_valid(row).then(|| c.value(row).to_string())
                })
                .collect();
            let id = cells[0].clone().expect("every row has an id");
            out.insert(id, cells[1..].to_vec());
        }
    }
    out
}

/// One access step: a key or an array index.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every path of `value` below `prefix`, up to `depth_max` steps.
fn paths(
    value: &Canonical,
    prefix: &mut Vec<Step>,
    depth_max: usize,
    out: &mut BTreeSet<Vec<Step>>,
) {
    if prefix.len() >= depth_max {
        return;
    }
    let children: Vec<(Step, &Canonical)> = match value {
        Canonical::Obj(members) => members
            .iter()
            .map(|(k, v)| (Step::Key(k.clone()), v))
            .collect(),
        Canonical::Arr(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (Step::Index(i), v))
            .collect(),
        _ => return,
    };
    for (step, child) in children {
        prefix.push(step);
        out.insert(prefix.clone());
        paths(child, prefix, depth_max, out);
        prefix.pop();
    }
}

/// SQL of the access `path` of `j`, with `->>` as the last step when `text`.
fn access(path: &[Step], text: bool) -> String {
    let mut sql = String::from("j");
    for (i, step) in path.iter().enumerate() {
        sql.push_str(if text && i + 1 == path.len() {
            "->>"
        } else {
            "->"
        });
        match step {
            Step::Key(k) => sql.push_str(&format!("'{}'", k.replace('\'', "''"))),
            Step::Index(i) => sql.push_str(&i.to_string()),
        }
    }
    sql
}

/// Whether two answers of one access agree: equal text, or JSON texts of equal values
/// (`->>` of a number and `->` of anything).
fn agree(raw: &Option<String>, table: &Option<String>) -> bool {
    match (raw, table) {
        (None, None) => true,
        (Some(a), Some(b)) if a == b => true,
        (Some(a), Some(b)) => matches!((parse(a), parse(b)), (Some(x), Some(y)) if x == y),
        _ => false,
    }
}

/// Whether two answers of a cast agree: equal, or equal as numbers (a cast to DOUBLE of
/// the integer `-0` is 0.0 from a table, which stores it as the integer 0, and -0.0
/// from the text `-0`).
fn agree_cast(raw: &Option<String>, table: &Option<String>) -> bool {
    agree(raw, table)
        || matches!((raw, table), (Some(a), Some(b))
            if matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y))
}

/// Most paths compared per table.
const PATHS_MAX: usize = 240;

/// Ingests generated documents and compares the table's answers with the raw scan's.
async fn table_reads_like_the_scan(settings: Settings) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("docs.json");
    let docs = write_documents(&file, settings);
    let session = session(OnError::Fail).await;
    let outcome = ingest(&session, &file, &dir.path().join("table")).await;
    assert_eq!(outcome.documents, docs.len() as u64);
    let raw = format!("'{}'", file.display());
    let table = format!("'{}/table/'", dir.path().display());

    let whole = |from: &str| format!("SELECT j->>'id', j FROM {from}");
    let (raw_docs, table_docs) = (
        answer(&session, &whole(&raw)).await,
        answer(&session, &whole(&table)).await,
    );
    assert_eq!(raw_docs.len(), docs.len());
    let mut all_paths = BTreeSet::new();
    for (id, raw_row) in &raw_docs {
        let expected = parse(raw_row[0].as_deref().unwrap()).expect("the scan's j is JSON");
        let got = table_docs.get(id).and_then(|r| parse(r[0].as_deref()?));
        assert_eq!(
            got.as_ref(),
            Some(&expected),
            "seed {} document {id}",
            settings.seed
        );
        paths(&expected, &mut Vec::new(), 12, &mut all_paths);
    }
    // Every path when there are few; an even sample of them otherwise, so the queries
    // stay bounded.
    let every = all_paths.len().div_ceil(PATHS_MAX);
    let all_paths: Vec<Vec<Step>> = all_paths.into_iter().step_by(every).collect();
    for group in all_paths.chunks(60) {
        let mut exprs = Vec::new();
        for path in group {
            let text = access(path, true);
            exprs.extend([
                access(path, false),
                text.clone(),
                format!("TRY_CAST({text} AS BIGINT)"),
                format!("TRY_CAST({text} AS DOUBLE)"),
            ]);
        }
        let aliased: Vec<String> = exprs
            .iter()
            .enumerate()
            .map(|(i, e)| format!("{e} AS c{i}"))
            .collect();
        let select = |from: &str| format!("SELECT j->>'id', {} FROM {from}", aliased.join(", "));
        let raw_rows = answer(&session, &select(&raw)).await;
        let table_rows = answer(&session, &select(&table)).await;
        for (id, raw_row) in &raw_rows {
            let table_row = &table_rows[id];
            let doc = &docs[id.parse::<usize>().unwrap()];
            for (i, expr) in exprs.iter().enumerate() {
                let same = match i % 4 {
                    0 | 1 => agree(&raw_row[i], &table_row[i]),
                    _ => agree_cast(&raw_row[i], &table_row[i]),
                };
                assert!(
                    same,
                    "seed {} document {id}: {expr}: scan {:?}, table {:?}\n{doc}",
                    settings.seed, raw_row[i], table_row[i],
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_documents_read_back_as_the_scan_reads_them() {
    for settings in [
        Settings {
            seed: 1,
            documents: 3000,
            outliers_percent: 3,
            deep_percent: 1,
        },
        Settings {
            seed: 2,
            documents: 2000,
            outliers_percent: 30,
            deep_percent: 5,
        },
        Settings {
            seed: 3,
            documents: 3000,
            outliers_percent: 0,
            deep_percent: 0,
        },
    ] {
        table_reads_like_the_scan(settings).await;
    }
}

/// The document of issue 16: `-0`, integers beyond 64 bits, a duplicate key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_document_reads_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v.json");
    let doc = r#"{"a":-0,"b":123456789012345678901234567890,"c":-99999999999999999999,"d":{"x":1,"x":2},"e":-0.0}"#;
    std::fs::write(&file, format!("{doc}\n")).unwrap();
    let session = session(OnError::Fail).await;
    ingest(&session, &file, &dir.path().join("tv")).await;
    let select = |from: String| {
        format!(
            "SELECT 1, j->>'a' AS a, TRY_CAST(j->>'a' AS BIGINT) AS ai, j->>'b' AS b, \
             j->>'c' AS c, j->'d' AS d, j->'e' AS e, TRY_CAST(j->>'b' AS DECIMAL(38,0)) AS bd, \
             j FROM {from}"
        )
    };
    let table = answer(&session, &select(format!("'{}/tv/'", dir.path().display()))).await;
    let raw = answer(&session, &select(format!("'{}'", file.display()))).await;
    let (table, raw) = (&table["1"], &raw["1"]);
    let cell = |row: &[Option<String>], i: usize| row[i].clone().unwrap_or_default();
    assert_eq!(cell(table, 0), "0");
    assert_eq!(cell(table, 1), "0");
    assert_eq!(cell(table, 2), cell(raw, 2));
    assert_eq!(cell(table, 2), "123456789012345678901234567890");
    assert_eq!(cell(table, 3), "-99999999999999999999");
    assert_eq!(cell(table, 4), r#"{"x":1}"#);
    assert_eq!(cell(table, 5), "-0.0");
    assert_eq!(cell(table, 6), cell(raw, 6));
    for i in 0..8 {
        assert!(
            agree_cast(&raw[i], &table[i]),
            "column {i}: {:?} {:?}",
            raw[i],
            table[i]
        );
    }
}

/// Values no Variant holds exactly are bad lines: `on_error = fail` names the file, line
/// and byte offset once; `skip` counts them, writes them to the reject file and commits
/// the good lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unstorable_values_are_bad_lines_with_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    let long = "1".repeat(39);
    let lines = [
        r#"{"a":1}"#.to_string(),
        r#"{"a":1e400}"#.to_string(),
        format!(r#"{{"a":{long}}}"#),
        r#"{"a":"\ud800"}"#.to_string(),
        r#"{"a":[-1e400]}"#.to_string(),
        r#"{"a":2}"#.to_string(),
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let failing = session(OnError::Fail).await;
    let location = dir.path().join("failed").display().to_string() + "/";
    let table = failing.open_table(&location).await.unwrap();
    let error = failing
        .ingest(table, &location, &[file.display().to_string()])
        .await
        .unwrap_err()
        .to_string();
    let place = format!("{} line 2 (byte offset 8)", file.display());
    assert!(error.contains(&place), "{error}");
    assert!(error.contains("range of a double"), "{error}");
    assert_eq!(error.matches("line 2").count(), 1, "{error}");

    let skipping = session(OnError::Skip).await;
    let outcome = ingest(&skipping, &file, &dir.path().join("skipped")).await;
    assert_eq!(outcome.documents, 2);
    assert_eq!(outcome.rejects.count, 4);
    let reject_file = outcome.reject_file.expect("a reject file");
    let rejected: Vec<serde_json::Value> = std::fs::read_to_string(&reject_file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut offset = 0;
    let starts: Vec<usize> = lines
        .iter()
        .map(|l| {
            let start = offset;
            offset += l.len() + 1;
            start
        })
        .collect();
    let mut seen: Vec<(u64, u64)> = rejected
        .iter()
        .map(|r| (r["line"].as_u64().unwrap(), r["offset"].as_u64().unwrap()))
        .collect();
    seen.sort();
    let expected: Vec<(u64, u64)> = [2, 3, 4, 5]
        .iter()
        .map(|&line| (line, starts[line as usize - 1] as u64))
        .collect();
    assert_eq!(seen, expected);
    for r in &rejected {
        let line = r["line"].as_u64().unwrap() as usize;
        assert_eq!(r["text"].as_str().unwrap(), lines[line - 1]);
        assert!(!r["reason"].as_str().unwrap().is_empty());
    }
}
