//! Rows of a written file are ordered by its low-cardinality shredded paths, chosen from
//! the data: the file's pages then hold runs of one value, which page statistics skip.

use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::serialized_reader::ReadOptionsBuilder;
use serde_json::Value;
use tessera_tiles::{TilesOptions, write_file};

mod common;
use common::read_back;

/// Documents with a 3-valued `kind`, a 5-valued `op` (absent from every 7th document),
/// a unique `id` and a unique `name`, in an order that mixes all of them.
fn mixed_docs(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let kind = ["zeta", "alpha", "mid"][(i * 7 + i / 3) % 3];
            let op = (i % 7 != 0).then(|| format!("op{}", (i * 13) % 5));
            let mut doc = serde_json::json!({"kind": kind, "id": i, "name": format!("n{i}")});
            if let Some(op) = op {
                doc["op"] = Value::from(op);
            }
            doc.to_string()
        })
        .collect()
}

/// The documents of a written file, in row order, as JSON values.
fn rows(parquet: bytes::Bytes) -> Vec<Value> {
    read_back(parquet)
        .iter()
        .map(|text| serde_json::from_str(text).unwrap())
        .collect()
}

/// A row's sort key as the writer should order it: `kind` first (3 values), then `op`
/// (5 values) with documents lacking it after the others.
fn key(doc: &Value) -> (String, bool, String) {
    let op = doc.get("op").and_then(Value::as_str);
    (
        doc["kind"].as_str().unwrap().to_string(),
        op.is_none(),
        op.unwrap_or_default().to_string(),
    )
}

#[test]
fn rows_are_ordered_by_low_cardinality_paths_fewest_values_first() {
    let docs = mixed_docs(5000);
    let raw: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    let written = write_file(&raw, &TilesOptions::default()).unwrap();
    let back = rows(written.parquet);
    assert_eq!(back.len(), docs.len());
    let keys: Vec<_> = back.iter().map(key).collect();
    assert!(
        keys.windows(2).all(|w| w[0] <= w[1]),
        "rows are not ordered by (kind, op)"
    );
    // The unique paths are no keys: within one (kind, op) run they keep varying.
    let ids: Vec<i64> = back.iter().map(|d| d["id"].as_i64().unwrap()).collect();
    assert!(!ids.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn without_cluster_keys_rows_keep_the_tiles_order() {
    let docs = mixed_docs(3000);
    let raw: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    let options = TilesOptions {
        cluster_keys: 0,
        partition_tiles: 1,
        ..TilesOptions::default()
    };
    let back = rows(write_file(&raw, &options).unwrap().parquet);
    let ids: Vec<i64> = back.iter().map(|d| d["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, (0..3000).collect::<Vec<i64>>());
}

#[test]
fn clustered_pages_hold_runs_of_one_value() {
    let docs = mixed_docs(100_000);
    let raw: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    let written = write_file(&raw, &TilesOptions::default()).unwrap();
    let options = ReadOptionsBuilder::new().with_page_index().build();
    let reader = SerializedFileReader::new_with_options(written.parquet, options).unwrap();
    let metadata = reader.metadata();
    let group = metadata.row_group(0);
    let kind = (0..group.num_columns())
        .find(|&c| group.column(c).column_path().string() == "j.typed_value.kind.typed_value")
        .expect("kind is shredded");
    let ColumnIndexMetaData::BYTE_ARRAY(index) = &metadata.column_index().unwrap()[0][kind] else {
        panic!("kind has a byte array page index");
    };
    let pages = index.min_values_iter().count();
    let mixed = (0..pages)
        .filter(|&p| index.min_value(p) != index.max_value(p))
        .count();
    // Three values in order: only the pages where one value ends and the next begins
    // hold two, every other page holds one and is skipped by a filter on another.
    assert!(pages >= 3, "{pages} pages");
    assert!(mixed <= 2, "{mixed} of {pages} pages hold several kinds");
}
