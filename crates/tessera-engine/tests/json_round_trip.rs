//! Property: for generated documents, `json_transform(j, json_structure(j))` written back
//! with `to_json` is `j` minified. The documents are those whose structure describes
//! them without loss: the elements of an array share one shape (so merging widens no
//! type and adds no key), and integers fit 64 bits.

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::Rng;
use tessera_engine::{SessionOptions, TesseraSession};
use tessera_json::tape::Tape;
use tessera_json::tree::{Json, push_float, push_string};

const DOCS: usize = 150;
const KEYS: [&str; 7] = ["a", "b", "id", "é", "k\"q", "x y", "it's"];

/// The shape every value at one place of a document has.
enum Shape {
    Bool,
    Unsigned,
    Negative,
    Double,
    Text,
    Array(Box<Shape>),
    Object(Vec<(String, Shape)>),
}

fn shape(rng: &mut Rng, depth: usize) -> Shape {
    match rng.below(if depth < 3 { 7 } else { 5 }) {
        0 => Shape::Bool,
        1 => Shape::Unsigned,
        2 => Shape::Negative,
        3 => Shape::Double,
        4 => Shape::Text,
        5 => Shape::Array(Box::new(shape(rng, depth + 1))),
        _ => {
            let mut keys: Vec<&str> = KEYS.to_vec();
            let count = rng.below(4) as usize;
            let members = (0..count)
                .map(|_| {
                    let key = keys.remove(rng.below(keys.len() as u64) as usize);
                    (key.to_string(), shape(rng, depth + 1))
                })
                .collect();
            Shape::Object(members)
        }
    }
}

/// A value of `shape` as JSON text; below the top, sometimes `null`.
fn value(rng: &mut Rng, shape: &Shape, top: bool, out: &mut String) {
    if !top && rng.below(8) == 0 {
        out.push_str("null");
        return;
    }
    match shape {
        Shape::Bool => out.push_str(if rng.below(2) == 0 { "true" } else { "false" }),
        Shape::Unsigned => out.push_str(&(rng.next() >> rng.below(64)).to_string()),
        Shape::Negative => {
            out.push_str(&(-1 - (rng.next() >> (1 + rng.below(63))) as i64).to_string())
        }
        Shape::Double => push_float(out, (rng.next() as i64 as f64) / 1024.0 + 0.5),
        Shape::Text => {
            let text: String = (0..rng.below(6))
                .map(|_| ['a', '"', '\\', '\n', 'é', '😀', '\u{1}', '/'][rng.below(8) as usize])
                .collect();
            push_string(out, &text);
        }
        Shape::Array(item) => {
            out.push('[');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push(',');
                }
                value(rng, item, false, out);
            }
            out.push(']');
        }
        Shape::Object(members) => {
            out.push('{');
            for (i, (key, member)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_string(out, key);
                out.push(':');
                value(rng, member, false, out);
            }
            out.push('}');
        }
    }
}

async fn one_text(session: &TesseraSession, sql: &str) -> String {
    let mut statements = session.parse(sql).unwrap();
    let frame = session.execute(statements.remove(0)).await.unwrap();
    let batches = frame.collect().await.unwrap();
    let column = batches[0].column(0);
    arrow::util::display::ArrayFormatter::try_new(column.as_ref(), &Default::default())
        .unwrap()
        .value(0)
        .to_string()
}

fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transform_by_its_own_structure_gives_the_document_back() {
    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap();
    let session = TesseraSession::new(s3, SessionOptions::default()).unwrap();
    let mut rng = Rng(0x5eed_1701);
    let mut tape = Tape::default();
    for _ in 0..DOCS {
        let mut doc = String::new();
        let shape = shape(&mut rng, 0);
        value(&mut rng, &shape, true, &mut doc);
        let minified = Json::parse(doc.as_bytes(), &mut tape).unwrap().to_text();
        let structure = one_text(
            &session,
            &format!("SELECT json_structure({})", quoted(&doc)),
        )
        .await;
        let sql = format!(
            "SELECT to_json(json_transform({}, {}))",
            quoted(&doc),
            quoted(&structure)
        );
        assert_eq!(
            one_text(&session, &sql).await,
            minified,
            "{doc} as {structure}"
        );
    }
}
