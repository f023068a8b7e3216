//! JSON -> JSON tiles file -> JSON gives the same documents (up to key order and
//! whitespace), numbers keeping value and kind; over random heterogeneous documents,
//! the example documents of Alkowaileet, "Towards Analytics-Optimized Document Stores"
//! (PhD thesis, UC Irvine 2022) and Bluesky events.

use arrow::array::{Array, AsArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Map, Value, json};
use tessera_tiles::summary::{FileSummary, LeafType};
use tessera_tiles::{TilesOptions, WrittenFile, read_json, write_file};

mod common;
use common::read_back;

/// Writes `docs`, reads the file back and checks every document came back exactly.
fn assert_round_trip(docs: &[String], options: &TilesOptions) -> WrittenFile {
    let raw: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    let written = write_file(&raw, options).unwrap();
    let back = read_back(written.parquet.clone());
    assert_eq!(back.len(), docs.len());
    // Documents move between the tiles of a partition, so compare as multisets: the
    // canonical text (sorted keys, serde_json's number spelling) of each document.
    // Equal canonical text means equal numbers of equal kinds (1 vs 1.0, u64 vs i64).
    let canonical = |text: &str, what: &str| {
        let value: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("{what} is not JSON ({e}): {text}"));
        serde_json::to_string(&value).unwrap()
    };
    // The input as a table reads it: the first value of a key given twice, `-0` as 0.
    let as_stored = |text: &str| {
        let mut tape = tessera_json::tape::Tape::default();
        let text = tape.push(text.as_bytes()).unwrap();
        serde_json::to_string(&first_wins(tape.doc(0, text).root())).unwrap()
    };
    let mut expected: Vec<String> = docs.iter().map(|d| as_stored(d)).collect();
    let mut got: Vec<String> = back.iter().map(|d| canonical(d, "output")).collect();
    expected.sort();
    got.sort();
    for (i, (e, g)) in expected.iter().zip(&got).enumerate() {
        assert_eq!(g, e, "sorted document {i} differs");
    }
    assert_eq!(written.summary.rows, docs.len() as u64);
    written
}

/// A tape value as serde_json holds it, with the first value of a key given twice.
fn first_wins(value: tessera_json::tape::Value<'_>) -> Value {
    use tessera_json::tape::Kind;
    let node = value.node();
    match node.kind() {
        Kind::Null => Value::Null,
        Kind::True => json!(true),
        Kind::False => json!(false),
        Kind::Int => json!(node.int()),
        Kind::UInt => json!(node.uint()),
        // serde_json holds no integer beyond u64; the output is read the same way.
        Kind::Decimal => serde_json::from_str(&value.decimal().to_string()).unwrap(),
        Kind::Float => json!(node.float()),
        Kind::String | Kind::Key => json!(value.str()),
        Kind::Array => Value::Array(value.elements().map(first_wins).collect()),
        Kind::Object => {
            let mut members = Map::new();
            for (key, member) in value.members() {
                if !members.contains_key(key.str()) {
                    members.insert(key.str().to_string(), first_wins(member));
                }
            }
            Value::Object(members)
        }
    }
}

/// Options for a few hundred documents: small tiles and row groups, so that tiles,
/// partitions and row groups are many.
fn small_tiles() -> TilesOptions {
    TilesOptions {
        tile_docs: 64,
        row_group_docs: 128,
        ..TilesOptions::default()
    }
}

/// Checks that each path is shredded with its type.
fn assert_shredded(summary: &FileSummary, expected: &[(&str, LeafType)]) {
    for &(path, ty) in expected {
        assert_eq!(
            summary.schema.get(path).map(|p| p.ty),
            Some(ty),
            "{path} in {:?}",
            summary.schema
        );
    }
}

/// `docs` generated Bluesky events, one JSON text each.
fn bluesky(docs: u64, seed: u64) -> Vec<String> {
    let mut out = Vec::new();
    tessera_gen::write_ndjson(&tessera_gen::BlueskyConfig::new(docs, seed), 1, &mut out).unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A small deterministic generator (SplitMix64), so failures reproduce from the seed.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn scalar(&mut self) -> Value {
        match self.below(12) {
            0 => Value::Null,
            1 => Value::Bool(self.below(2) == 0),
            2 => json!(self.next() as i64),
            3 => json!(self.below(1000) as i64 - 500),
            4 => json!(self.next()),
            5 => {
                [json!(i64::MIN), json!(i64::MAX), json!(u64::MAX)][self.below(3) as usize].clone()
            }
            6 => json!(f64::from_bits(self.next() >> 2)),
            7 => json!([0.1, 1.0, -0.0, 1e308, 5e-324, -1.5e-7][self.below(6) as usize]),
            8 => json!(
                [
                    "",
                    "a",
                    "déjà \"vu\"",
                    "東京 😀",
                    "tab\tnew\nline\u{1}",
                    "\\"
                ][self.below(6) as usize]
            ),
            9 => json!(format!("s{}", self.below(50))),
            10 => json!({}),
            _ => json!([]),
        }
    }

    fn value(&mut self, depth: u32) -> Value {
        match self.below(if depth == 0 { 1 } else { 4 }) {
            1 => Value::Array((0..self.below(4)).map(|_| self.value(depth - 1)).collect()),
            2 | 3 => self.object(depth - 1),
            _ => self.scalar(),
        }
    }

    /// Objects over a small key space, so paths repeat across documents (and get
    /// shredded) while their types sometimes change.
    fn object(&mut self, depth: u32) -> Value {
        let mut fields = Map::new();
        for _ in 0..self.below(6) {
            let key = ["a", "b", "c", "kind", "weird key", "a.b", "ü"][self.below(7) as usize];
            fields.insert(key.to_string(), self.value(depth));
        }
        Value::Object(fields)
    }
}

#[test]
fn random_heterogeneous_documents_round_trip() {
    for seed in 0..20 {
        let mut random = Random(seed);
        let docs: Vec<String> = (0..300)
            .map(|i| match i % 10 {
                // Most documents share a shape so that paths get shredded; `$.m` is an
                // integer in most of them and anything else (null, float, string,
                // object, array, u64) in the rest, so it is shredded with outliers.
                0..=7 => {
                    let m = if i % 8 == 3 { random.value(2) } else { json!(i) };
                    json!({"kind": "commit", "n": i, "m": m, "x": {"y": random.scalar(), "z": format!("z{}", i % 7)}, "r": random.object(2)}).to_string()
                }
                8 => random.scalar().to_string(),
                _ => random.object(3).to_string(),
            })
            .collect();
        let written = assert_round_trip(&docs, &small_tiles());
        let summary = &written.summary;
        assert_shredded(
            summary,
            &[
                ("$.n", LeafType::Int),
                ("$.m", LeafType::Int),
                ("$.x.z", LeafType::String),
                ("$.kind", LeafType::String),
            ],
        );
        let stats = |path: &str| summary.stats.iter().find(|s| s.path == path).unwrap();
        assert_eq!(stats("$.n").binary_count, 0, "seed {seed}");
        // Every document with a non-integer `m` holds it as an outlier.
        let outliers = docs
            .iter()
            .filter_map(|d| serde_json::from_str::<Value>(d).ok()?.get("m").cloned())
            .filter(|m| !m.is_i64())
            .count() as u64;
        assert!(outliers > 0, "seed {seed}");
        assert_eq!(stats("$.m").binary_count, outliers, "seed {seed}");
    }
}

/// What one document holds at `$.tags`: mostly short arrays of strings, with elements
/// of every other type, empty arrays, and values that are no array at all.
fn tags(random: &mut Random, i: usize) -> Option<Value> {
    Some(match i % 10 {
        0 => return None,
        1 => random.scalar(),
        2 => json!([]),
        3 => Value::Array((0..random.below(5)).map(|_| random.scalar()).collect()),
        _ => Value::Array(
            (0..1 + random.below(6))
                .map(|k| json!(format!("t{}", (i as u64 + k) % 13)))
                .collect(),
        ),
    })
}

#[test]
fn short_arrays_are_shredded_as_lists_and_round_trip() {
    for seed in 0..10 {
        let mut random = Random(seed);
        let docs: Vec<String> = (0..400)
            .map(|i| {
                let mut doc = json!({
                    "ids": [i, i + 1],
                    // High-cardinality: 40 elements each, kept whole in the binary.
                    "long": (0..40).map(|k| i * 40 + k).collect::<Vec<_>>(),
                    "deep": {"langs": ["en", "de"]},
                });
                if let Some(tags) = tags(&mut random, i) {
                    doc["tags"] = tags;
                }
                doc.to_string()
            })
            .collect();
        let written = assert_round_trip(&docs, &small_tiles());
        let summary = &written.summary;
        assert_shredded(
            summary,
            &[
                ("$.ids[*]", LeafType::Int),
                ("$.tags[*]", LeafType::String),
                ("$.deep.langs[*]", LeafType::String),
            ],
        );
        assert!(summary.schema.get("$.long[*]").is_none(), "seed {seed}");
        assert!(summary.schema.get("$.tags").is_none(), "seed {seed}");
        // The key paths of lists and of whole arrays count as present for filters.
        for path in ["$.tags", "$.long", "$.ids"] {
            assert!(summary.unshredded_paths.may_contain(path), "{path}");
        }
        let stats = |path: &str| summary.stats.iter().find(|s| s.path == path).unwrap();
        let ids = stats("$.ids[*]");
        assert_eq!((ids.typed_count, ids.binary_count), (800, 0));
        assert_eq!(ids.min, Some(tessera_tiles::summary::StatValue::Int(0)));
        // Every element that is no string, and every value that is no array, sits in
        // the binary; string elements are typed.
        let values: Vec<Value> = docs
            .iter()
            .filter_map(|d| {
                serde_json::from_str::<Value>(d)
                    .unwrap()
                    .get("tags")
                    .cloned()
            })
            .collect();
        let elements: Vec<&Value> = values
            .iter()
            .filter_map(Value::as_array)
            .flatten()
            .collect();
        let strings = elements.iter().filter(|e| e.is_string()).count() as u64;
        let binary = (elements.len() as u64 - strings)
            + values.iter().filter(|v| !v.is_array()).count() as u64;
        let tags = stats("$.tags[*]");
        assert_eq!(
            (tags.typed_count, tags.binary_count),
            (strings, binary),
            "seed {seed}"
        );
        let frequency = summary.schema.get("$.tags[*]").unwrap().frequency;
        let arrays = values.iter().filter(|v| v.is_array()).count();
        assert_eq!(frequency, arrays as f64 / docs.len() as f64);
        // Integer elements are delta-encoded like integer leaves.
        let reader = ParquetRecordBatchReaderBuilder::try_new(written.parquet.clone()).unwrap();
        let group = reader.metadata().row_group(0);
        let column = (0..group.num_columns())
            .map(|c| group.column(c))
            .find(|c| {
                c.column_path().string() == "j.typed_value.ids.typed_value.list.element.typed_value"
            })
            .expect("the typed elements of $.ids");
        assert!(
            column
                .encodings()
                .any(|e| e == parquet::basic::Encoding::DELTA_BINARY_PACKED),
            "{:?}",
            column.encodings().collect::<Vec<_>>()
        );
    }
}

/// One element of `$.deps`: mostly `{name, version, op}` objects (keys in varying
/// order, some missing, some with another type or null, an unshredded extra key, a
/// nested object), sometimes a scalar or an array in place of the object.
fn dependency(random: &mut Random, i: usize, k: u64) -> Value {
    let name = format!("pkg{}", (i as u64 * 7 + k) % 29);
    match random.below(20) {
        0 => random.scalar(),
        1 => json!([name]),
        2 => json!({"name": random.scalar(), "op": ">="}),
        3 => json!({"version": format!("1.{k}"), "rare": {"x": k}}),
        4 => json!({"op": "=", "name": name, "extra": random.value(2)}),
        5 => json!({"name": name, "source": {"url": random.scalar(), "id": k}}),
        _ => {
            json!({"name": name, "version": format!("{}.{k}", i % 5), "source": {"url": format!("u{k}"), "id": k}})
        }
    }
}

#[test]
fn arrays_of_objects_are_shredded_as_lists_of_objects_and_round_trip() {
    for seed in 0..10 {
        let mut random = Random(seed);
        let docs: Vec<String> = (0..400)
            .map(|i| {
                let mut doc = json!({"id": i});
                match i % 12 {
                    0 => {}
                    1 => doc["deps"] = random.scalar(),
                    2 => doc["deps"] = json!([]),
                    _ => {
                        let deps = (0..1 + random.below(5)).map(|k| dependency(&mut random, i, k));
                        doc["deps"] = Value::Array(deps.collect());
                    }
                }
                doc.to_string()
            })
            .collect();
        let written = assert_round_trip(&docs, &small_tiles());
        let summary = &written.summary;
        assert_shredded(
            summary,
            &[
                ("$.deps[*].name", LeafType::String),
                ("$.deps[*].version", LeafType::String),
                ("$.deps[*].source.id", LeafType::Int),
            ],
        );
        // Rarer keys of the elements stay in each element's binary.
        for path in ["$.deps[*].op", "$.deps[*].extra", "$.deps[*].rare.x"] {
            assert!(summary.schema.get(path).is_none(), "{path}, seed {seed}");
        }
        // Counted from the input: every element that is an object with a string
        // `name` holds it typed; every other `name` of an object element is an outlier.
        let elements: Vec<Value> = docs
            .iter()
            .filter_map(|d| {
                serde_json::from_str::<Value>(d)
                    .unwrap()
                    .get("deps")
                    .cloned()
            })
            .filter_map(|v| v.as_array().cloned())
            .flatten()
            .collect();
        let names: Vec<&Value> = elements.iter().filter_map(|e| e.get("name")).collect();
        let strings = names.iter().filter(|n| n.is_string()).count() as u64;
        let stats = summary
            .stats
            .iter()
            .find(|s| s.path == "$.deps[*].name")
            .unwrap();
        assert_eq!(
            (stats.typed_count, stats.binary_count),
            (strings, names.len() as u64 - strings),
            "seed {seed}"
        );
    }
}

#[test]
fn outliers_of_every_kind_round_trip_at_nested_paths() {
    // `$.a.b` is a string in most documents; the others hold every other JSON type
    // there, an object or a scalar in place of `$.a`, or nothing at all.
    let mut docs: Vec<String> = (0..20)
        .map(|i| format!(r#"{{"a":{{"b":"s{i}","c":{i}}},"d":true}}"#))
        .collect();
    docs.extend(
        [
            r#"{"a":{"b":null,"c":1}}"#,
            r#"{"a":{"b":1.5,"c":"one"},"d":false}"#,
            r#"{"a":{"b":18446744073709551615,"e":[1,{"f":2}]}}"#,
            r#"{"a":{"b":{"deep":[]},"c":-0.0}}"#,
            r#"{"a":{"b":["x"],"b":"first wins"}}"#,
            r#"{"a":"not an object","d":null}"#,
            r#"{"a":null}"#,
            r#"{"a":{}}"#,
            r#"{}"#,
            r#"[{"a":{"b":"x"}}]"#,
            r#""top-level string""#,
            r#"{"a":{"c":true,"b":"y","z":{"b":1}}}"#,
            // An escaped key and its plain spelling are one key.
            r#"{"a":{"b":"e\"sc","c":3},"k\u0041":[1],"kA":2}"#,
        ]
        .map(str::to_string),
    );
    let written = assert_round_trip(&docs, &TilesOptions::default());
    let schema = &written.summary.schema;
    assert_eq!(schema.get("$.a.b").map(|p| p.ty), Some(LeafType::String));
    assert_eq!(schema.get("$.a.c").map(|p| p.ty), Some(LeafType::Int));
    let b = written
        .summary
        .stats
        .iter()
        .find(|s| s.path == "$.a.b")
        .unwrap();
    assert_eq!((b.typed_count, b.binary_count), (22, 5));
}

#[test]
fn document_store_thesis_examples_round_trip() {
    // The running examples of Alkowaileet's thesis (extended Dremel, Fig 5.1 and 5.3): nested
    // objects, arrays of objects and of arrays, a field whose type changes.
    let docs: Vec<String> = [
        r#"{"id": 1, "name": "Ann", "games": [{"title": "NBA", "consoles": ["PS4", "PC"]}, {"title": "FIFA", "consoles": ["XBOX"]}]}"#,
        r#"{"id": 2, "name": {"first": "John", "last": "Smith"}, "games": [{"title": "NFL"}]}"#,
        r#"{"id": 3, "games": [], "name": null}"#,
        r#"{"id": 4, "name": "Kat", "games": [{"title": "Halo", "consoles": []}], "old": [[1, 2], [3]]}"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let written = assert_round_trip(&docs, &TilesOptions::default());
    // $.id is an integer everywhere; $.name mixes string and object, so it stays binary.
    let schema = &written.summary.schema;
    assert_eq!(schema.get("$.id").map(|p| p.ty), Some(LeafType::Int));
    assert!(schema.get("$.name").is_none());
    assert!(written.summary.unshredded_paths.may_contain("$.games"));
}

#[test]
fn bluesky_documents_are_shredded_and_round_trip() {
    let docs = bluesky(3_000, 7);
    let written = assert_round_trip(&docs, &TilesOptions::default());
    let summary = &written.summary;
    assert_shredded(
        summary,
        &[
            ("$.kind", LeafType::String),
            ("$.did", LeafType::String),
            ("$.time_us", LeafType::Int),
            ("$.commit.collection", LeafType::String),
            ("$.commit.operation", LeafType::String),
            ("$.commit.record.createdAt", LeafType::DateTime),
        ],
    );
    let created = summary.schema.get("$.commit.record.createdAt").unwrap();
    assert_eq!(created.format.as_deref(), Some("%Y-%m-%dT%H:%M:%S%.3fZ"));
    let kind = summary.stats.iter().find(|s| s.path == "$.kind").unwrap();
    assert_eq!(kind.typed_count, docs.len() as u64);
    assert!(kind.distinct.estimate() <= 4);
}

#[test]
fn reordering_clusters_bluesky_shapes_into_tiles() {
    // Likes (subject.cid/uri), follows (subject as a string) and posts interleave, so
    // in input order no shape reaches 60% of a tile; reordering a partition groups
    // them and their paths get typed columns.
    let docs = bluesky(8_192, 3);
    let in_order = TilesOptions {
        partition_tiles: 1,
        ..TilesOptions::default()
    };
    let plain = assert_round_trip(&docs, &in_order);
    let reordered = assert_round_trip(&docs, &TilesOptions::default());
    let uri = "$.commit.record.subject.uri";
    assert!(
        plain.summary.schema.get(uri).is_none(),
        "{:?}",
        plain.summary.schema
    );
    assert_eq!(
        reordered.summary.schema.get(uri).map(|p| p.ty),
        Some(LeafType::String),
        "{:?}",
        reordered.summary.schema
    );
    let typed = |w: &WrittenFile| w.summary.stats.iter().map(|s| s.typed_count).sum::<u64>();
    assert!(typed(&reordered) > typed(&plain));
}

/// Date and time strings come back exactly: paths written one way get a typed date or
/// timestamp column; values written any other way (another precision, impossible
/// dates, leap seconds, other types) stay outliers with their text; text paths that
/// only sometimes hold dates stay strings.
#[test]
fn dates_and_times_are_typed_and_read_back_exactly() {
    let mut random = Random(7);
    // (path, expected format); per path the documents whose value must be typed.
    let formats = [
        ("at", "%Y-%m-%dT%H:%M:%S%.3fZ"),
        ("day", "%Y-%m-%d"),
        ("local", "%Y-%m-%d %H:%M:%S%.6f"),
        ("east", "%Y-%m-%dT%H:%M:%S+05:30"),
        ("nanos", "%Y-%m-%dT%H:%M:%S%.9fZ"),
    ];
    let mut typed = [0u64; 5];
    let odd = [
        json!("2023-02-29"),
        json!("2024-01-01T23:59:60Z"),
        json!("2024-04-31T00:00:00.000Z"),
        json!("2024-01-01T00:00:00Z"),
        json!("soon"),
        json!(20240101),
        Value::Null,
    ];
    let docs: Vec<String> = (0..3_000)
        .map(|i| {
            let mut doc = Map::new();
            let (y, mo, d) = (
                1900 + random.below(400),
                1 + random.below(12),
                1 + random.below(28),
            );
            let (h, mi, sec) = (random.below(24), random.below(60), random.below(60));
            let date = format!("{y:04}-{mo:02}-{d:02}");
            let time = format!("{h:02}:{mi:02}:{sec:02}");
            // Nanoseconds since the epoch reach 1677..2262 only.
            let nano_date = format!("{:04}-{mo:02}-{d:02}", 1700 + random.below(500));
            let values = [
                format!("{date}T{time}.{:03}Z", random.below(1000)),
                date.clone(),
                format!("{date} {time}.{:06}", random.below(1_000_000)),
                format!("{date}T{time}+05:30"),
                format!("{nano_date}T{time}.{:09}Z", random.below(1_000_000_000)),
            ];
            for (k, ((path, _), value)) in formats.iter().zip(values).enumerate() {
                match random.below(100) {
                    0..2 => {
                        let outlier = odd[random.below(odd.len() as u64) as usize].clone();
                        doc.insert(path.to_string(), outlier);
                    }
                    2..4 => {}
                    _ => {
                        typed[k] += 1;
                        doc.insert(path.to_string(), json!(value));
                    }
                }
            }
            // Free text that holds a date only now and then.
            let text = if i % 3 == 0 {
                date
            } else {
                format!("note {i}")
            };
            doc.insert("text".into(), json!(text));
            Value::Object(doc).to_string()
        })
        .collect();
    let written = assert_round_trip(&docs, &TilesOptions::default());
    for (k, (path, format)) in formats.iter().enumerate() {
        let path = format!("$.{path}");
        let shredded = written.summary.schema.get(&path).unwrap();
        assert_eq!(
            (shredded.ty, shredded.format.as_deref()),
            (LeafType::DateTime, Some(*format)),
            "{path}"
        );
        let stats = written
            .summary
            .stats
            .iter()
            .find(|s| s.path == path)
            .unwrap();
        assert_eq!(stats.typed_count, typed[k], "{path}");
    }
    assert_shredded(&written.summary, &[("$.text", LeafType::String)]);
}

#[test]
fn malformed_documents_and_options_are_clear_errors() {
    let docs: Vec<&[u8]> = vec![br#"{"a":1}"#, b"{\"a\":\n  [1,}"];
    let error = write_file(&docs, &TilesOptions::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "document 1 is not valid JSON (line 2, column 6): expected a value"
    );
    let options = TilesOptions {
        threshold: 1.5,
        ..TilesOptions::default()
    };
    let error = write_file(&docs[..1], &options).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid tiles options: the threshold is a share in (0, 1]"
    );
}

/// Relational columns move with their documents when reordering moves the documents:
/// each row's `seq` column equals the `seq` inside its document, and the summary holds
/// each column's bounds and nulls.
#[test]
fn relational_columns_stay_with_their_reordered_documents() {
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Int64Type, Schema};
    use tessera_tiles::summary::StatValue;
    use tessera_tiles::write_file_with_columns;

    let texts = bluesky(8_192, 3);
    let docs: Vec<String> = texts
        .iter()
        .enumerate()
        .map(|(i, d)| format!(r#"{{"seq":{i},{}"#, &d[1..]))
        .collect();
    let raw: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("seq", DataType::Int64, false),
        Field::new("label", DataType::Utf8, true),
    ]));
    let labels: Vec<Option<String>> = (0..docs.len())
        .map(|i| (i % 7 != 0).then(|| format!("label-{:05}", i)))
        .collect();
    let columns = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..docs.len() as i64)),
            Arc::new(StringArray::from(labels)),
        ],
    )
    .unwrap();
    let written = write_file_with_columns(&raw, Some(&columns), &TilesOptions::default()).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(written.parquet.clone())
        .unwrap()
        .build()
        .unwrap();
    let mut moved = 0;
    let mut seen = 0;
    for batch in reader {
        let batch = batch.unwrap();
        assert_eq!(batch.schema().field(0).name(), "j");
        let text = read_json(batch.column(0).as_ref()).unwrap();
        let text = text.as_string::<i32>();
        let seq = batch
            .column_by_name("seq")
            .unwrap()
            .as_primitive::<Int64Type>();
        let label = batch.column_by_name("label").unwrap().as_string::<i32>();
        for row in 0..batch.num_rows() {
            let doc: Value = serde_json::from_str(text.value(row)).unwrap();
            let inside = doc["seq"].as_i64().unwrap();
            assert_eq!(seq.value(row), inside, "row {}", seen + row);
            let expected = (inside % 7 != 0).then(|| format!("label-{inside:05}"));
            assert_eq!(
                label.is_valid(row).then(|| label.value(row).to_string()),
                expected
            );
            moved += usize::from(inside != (seen + row) as i64);
        }
        seen += batch.num_rows();
    }
    assert_eq!(seen, docs.len());
    assert!(
        moved > 0,
        "reordering moved no document, so the test proves nothing"
    );
    let stats = &written.summary.columns;
    assert_eq!(stats.len(), 2);
    assert_eq!(
        (
            stats[0].min.clone(),
            stats[0].max.clone(),
            stats[0].null_count
        ),
        (
            Some(StatValue::Int(0)),
            Some(StatValue::Int(docs.len() as i64 - 1)),
            0
        )
    );
    assert_eq!(stats[1].min, Some(StatValue::String("label-00001".into())));
    assert_eq!(stats[1].null_count, docs.len().div_ceil(7) as u64);

    let short = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("j", DataType::Int64, false)])),
        vec![Arc::new(Int64Array::from(vec![1]))],
    )
    .unwrap();
    let error =
        write_file_with_columns(&raw[..1], Some(&short), &TilesOptions::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "relational columns: 'j' names the document column of data files"
    );
    let error = write_file_with_columns(
        &raw[..2],
        Some(&columns.slice(0, 1)),
        &TilesOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "relational columns: 1 rows for 2 documents"
    );
}
