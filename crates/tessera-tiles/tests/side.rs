//! Side relations of high-cardinality arrays (Tiles-*): every element of every array at a
//! side path comes back from the side file, at its document's row (in the data file's
//! final order, after tiles and clustering moved the rows) and its position, with its
//! exact value; paths that hold anything but arrays, short arrays, or arrays the data
//! file shreds as lists get no side file.

use arrow::array::AsArray;
use arrow::datatypes::UInt32Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Value, json};
use tessera_tiles::side::{POS, ROW, VALUE_KEY};
use tessera_tiles::summary::FileSummary;
use tessera_tiles::{TilesOptions, WrittenFile, read_json, write_file};

mod common;
use common::{Rng, read_back};

/// Documents with long arrays of strings (`tags`) and of objects of three kinds, none
/// frequent enough for the data file to shred (`order.items`), whose elements break
/// the common structure now and then (nulls, numbers, nested arrays, other field
/// types), documents without the arrays, and empty arrays.
fn documents(count: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed | 1);
    (0..count)
        .map(|i| {
            let kind = ["a", "b", "c"][rng.below(3) as usize];
            let mut doc = json!({"id": i, "kind": kind});
            if rng.below(10) < 9 {
                let n = rng.below(41);
                let tags: Vec<Value> = (0..n)
                    .map(|_| json!(format!("t{}", rng.below(60))))
                    .collect();
                doc["tags"] = Value::Array(tags);
            }
            if rng.below(10) < 8 {
                let n = 17 + rng.below(30);
                let items: Vec<Value> = (0..n)
                    .map(|_| match rng.below(50) {
                        0 => Value::Null,
                        1 => json!(7),
                        2 => json!([1, {"deep": true}]),
                        3 => json!({"sku": rng.below(9), "qty": "many"}),
                        4..25 => {
                            json!({"sku": format!("s{}", rng.below(500)), "qty": rng.below(9)})
                        }
                        25..40 => json!({"link": format!("l{}", rng.below(99)), "rel": "next"}),
                        _ => json!({"tag": format!("t{}", rng.below(30))}),
                    })
                    .collect();
                doc["order"] = json!({ "items": items });
            }
            doc.to_string()
        })
        .collect()
}

/// The JSONPath spellings of the paths a file shreds.
fn shredded_paths(summary: &FileSummary) -> Vec<&str> {
    summary
        .schema
        .paths
        .iter()
        .map(|p| p.path.as_str())
        .collect()
}

fn small_tiles() -> TilesOptions {
    TilesOptions {
        tile_docs: 64,
        partition_tiles: 4,
        row_group_docs: 500,
        page_rows: 100,
        ..TilesOptions::default()
    }
}

fn write(docs: &[String], options: &TilesOptions) -> WrittenFile {
    let raw: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    write_file(&raw, options).unwrap()
}

/// The arrays the side file of `path` holds, per data file row: `(row, pos, element)`
/// gathered and put in position order.
fn side_arrays(written: &WrittenFile, path: &[&str]) -> Vec<Vec<Value>> {
    let side = written
        .sides
        .iter()
        .find(|s| s.path == path)
        .unwrap_or_else(|| panic!("no side file for {path:?}"));
    assert_eq!(side.file.summary.rows as usize, {
        let reader = ParquetRecordBatchReaderBuilder::try_new(side.file.parquet.clone()).unwrap();
        reader.metadata().file_metadata().num_rows() as usize
    });
    let mut arrays: Vec<Vec<(u32, Value)>> = vec![Vec::new(); written.summary.rows as usize];
    let reader = ParquetRecordBatchReaderBuilder::try_new(side.file.parquet.clone())
        .unwrap()
        .build()
        .unwrap();
    for batch in reader {
        let batch = batch.unwrap();
        let texts = read_json(batch.column(0).as_struct()).unwrap();
        let texts = texts.as_string::<i32>();
        let rows = batch
            .column_by_name(ROW)
            .unwrap()
            .as_primitive::<UInt32Type>();
        let positions = batch
            .column_by_name(POS)
            .unwrap()
            .as_primitive::<UInt32Type>();
        for i in 0..batch.num_rows() {
            let mut doc: Value = serde_json::from_str(texts.value(i)).unwrap();
            let element = doc[VALUE_KEY].take();
            arrays[rows.value(i) as usize].push((positions.value(i), element));
        }
    }
    arrays
        .into_iter()
        .map(|mut elements| {
            elements.sort_by_key(|(pos, _)| *pos);
            let positions: Vec<u32> = elements.iter().map(|(pos, _)| *pos).collect();
            assert!(
                positions.iter().enumerate().all(|(i, &p)| p as usize == i),
                "positions are 0..n without gaps: {positions:?}"
            );
            elements.into_iter().map(|(_, e)| e).collect()
        })
        .collect()
}

/// The value at `path` of each document read back from the data file, in row order.
fn main_arrays(written: &WrittenFile, path: &[&str]) -> Vec<Option<Value>> {
    read_back(written.parquet.clone())
        .iter()
        .map(|text| {
            let doc: Value = serde_json::from_str(text).unwrap();
            path.iter().try_fold(&doc, |v, k| v.get(*k)).cloned()
        })
        .collect()
}

#[test]
fn every_element_comes_back_at_its_row_and_position() {
    for seed in [1, 2, 3] {
        let docs = documents(1500, seed);
        let written = write(&docs, &small_tiles());
        let paths: Vec<&[String]> = written.sides.iter().map(|s| s.path.as_slice()).collect();
        assert_eq!(
            paths,
            [
                vec!["order".to_string(), "items".to_string()],
                vec!["tags".to_string()]
            ]
        );
        for path in [&["tags"][..], &["order", "items"]] {
            let sides = side_arrays(&written, path);
            let main = main_arrays(&written, path);
            assert_eq!(sides.len(), main.len());
            for (row, (side, main)) in sides.iter().zip(&main).enumerate() {
                let expected = match main {
                    Some(Value::Array(elements)) => elements.clone(),
                    None => Vec::new(),
                    Some(other) => panic!("row {row} holds {other} at {path:?}"),
                };
                assert_eq!(side, &expected, "row {row}, {path:?}, seed {seed}");
            }
        }
        // The elements' structure is mined over tiles of elements, reordered so that each
        // kind of item fills tiles of its own: every kind's keys are typed in the side
        // file, though none is frequent among the documents' leading elements.
        let items = written.sides.iter().find(|s| s.path[0] == "order").unwrap();
        let shredded = shredded_paths(&items.file.summary);
        for key in ["sku", "qty", "link", "rel", "tag"] {
            assert!(
                shredded.contains(&format!("$.value.{key}").as_str()),
                "{shredded:?}"
            );
        }
    }
}

#[test]
fn the_data_file_keeps_side_arrays_whole_in_its_binary() {
    let docs = documents(1500, 4);
    let written = write(&docs, &small_tiles());
    assert!(!written.sides.is_empty());
    let shredded = shredded_paths(&written.summary);
    assert!(
        shredded
            .iter()
            .all(|p| !p.starts_with("$.tags") && !p.starts_with("$.order.items")),
        "{shredded:?}"
    );
}

#[test]
fn no_side_for_a_path_holding_something_else_or_short_arrays() {
    let mut docs = documents(1500, 5);
    // One document holds an object where the others hold arrays of tags.
    docs[700] = json!({"id": 700, "tags": {"not": "an array"}}).to_string();
    // Short arrays of objects, and long ones of one kind, are shredded in the data file
    // as lists.
    docs.extend((0..1500).map(|i| json!({"id": i, "short": [{"k": i}, {"k": i + 1}]}).to_string()));
    docs.extend((0..1500).map(|i| {
        let long: Vec<Value> = (0..20 + i % 9).map(|k| json!({"k": k})).collect();
        json!({"id": i, "long": long}).to_string()
    }));
    let written = write(&docs, &small_tiles());
    let paths: Vec<Vec<String>> = written.sides.iter().map(|s| s.path.clone()).collect();
    assert_eq!(paths, [vec!["order".to_string(), "items".to_string()]]);
    // An empty object mining cannot see is caught when the elements are gathered.
    let mut docs = documents(1500, 6);
    docs[3] = json!({"id": 3, "tags": {}}).to_string();
    let written = write(&docs, &small_tiles());
    assert!(written.sides.iter().all(|s| s.path != ["tags"]));
}

#[test]
fn side_arrays_can_be_turned_off_and_never_change_the_data_file() {
    let docs = documents(1500, 7);
    let options = TilesOptions {
        side_arrays: false,
        ..small_tiles()
    };
    let flat = write(&docs, &options);
    assert!(flat.sides.is_empty());
    let written = write(&docs, &small_tiles());
    assert_eq!(written.sides.len(), 2);
    assert_eq!(written.parquet, flat.parquet);
}
