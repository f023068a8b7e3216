//! Typed leaves, which queries read, are compressed by what reading them costs; the
//! rest of a file for size; string leaves whose values repeat keep their dictionary. Files read
//! back to the documents written either way.

use parquet::basic::{Compression, Encoding};
use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::Value;
use tessera_tiles::{TilesOptions, write_file};

mod common;
use common::read_back;

/// The codec of each column chunk of the first row group, by dotted column path.
fn codecs(parquet: bytes::Bytes) -> Vec<(String, Compression)> {
    let reader = SerializedFileReader::new(parquet).unwrap();
    let group = reader.metadata().row_group(0);
    group
        .columns()
        .iter()
        .map(|c| (c.column_path().string(), c.compression()))
        .collect()
}

fn codec_of(codecs: &[(String, Compression)], path: &str) -> Compression {
    codecs
        .iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("no column {path} in {codecs:?}"))
        .1
}

#[test]
fn typed_leaves_are_compressed_by_read_time() {
    // A 3-valued `kind`, a unique `id` string, steadily rising `at` integers, a float,
    // and a `mixed` path that is mostly strings with some numbers (outliers).
    let docs: Vec<String> = (0..4000)
        .map(|i| {
            let mixed = match i % 10 {
                0 => Value::from(i),
                _ => Value::from(format!("m{}", i % 9)),
            };
            let kind = ["a", "b", "c"][i % 3];
            serde_json::json!({
                "kind": kind,
                "id": format!("did:plc:{:024x}", i * 7919),
                "at": 1_700_000_000_000_000u64 + i as u64 * 1000,
                "score": i as f64 / 7.0,
                "mixed": mixed,
                "note": {"text": format!("free text {i} with words")},
            })
            .to_string()
        })
        .collect();
    let raw: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    let written = write_file(&raw, &TilesOptions::default()).unwrap();
    let codecs = codecs(written.parquet.clone());
    let zstd = Compression::ZSTD(Default::default());
    let expected = [
        // Low-cardinality codes, delta-packed integers, outlier binaries without
        // outliers: uncompressed.
        ("kind.typed_value", Compression::UNCOMPRESSED),
        ("mixed.typed_value", Compression::UNCOMPRESSED),
        ("at.typed_value", Compression::UNCOMPRESSED),
        ("kind.value", Compression::UNCOMPRESSED),
        // Other text by read time: hex identifiers and repetitive text pack smallest
        // with zstd (which codec wins on which values: `compression`'s unit tests).
        ("id.typed_value", zstd),
        ("note.typed_value.text.typed_value", zstd),
        // Outliers, floats, the document's residual binary and its metadata: zstd.
        ("mixed.value", zstd),
        ("score.typed_value", zstd),
    ];
    for (path, codec) in expected {
        let path = format!("j.typed_value.{path}");
        let found = codec_of(&codecs, &path);
        assert_eq!(
            std::mem::discriminant(&found),
            std::mem::discriminant(&codec),
            "{path}"
        );
    }
    for path in ["j.value", "j.metadata"] {
        assert!(
            matches!(codec_of(&codecs, path), Compression::ZSTD(_)),
            "{path}"
        );
    }

    // Every document reads back as written (rows are reordered by clustering).
    let mut back: Vec<Value> = read_back(written.parquet)
        .iter()
        .map(|text| serde_json::from_str(text).unwrap())
        .collect();
    let mut expected: Vec<Value> = docs
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let order = |v: &Value| v["id"].as_str().unwrap().to_string();
    back.sort_by_key(order);
    expected.sort_by_key(order);
    assert_eq!(back, expected);
}

#[test]
fn repeating_strings_keep_their_dictionary() {
    // `user`: 12,000 distinct 100-byte values, each 5 times (a 1.2 MB dictionary, past
    // Parquet's default page limit); `event`: a distinct 100-byte value per document.
    let pad = "x".repeat(90);
    let docs: Vec<String> = (0..60_000)
        .map(|i| {
            serde_json::json!({
                "user": format!("{pad}{:010}", i % 12_000),
                "event": format!("{pad}{i:010}"),
            })
            .to_string()
        })
        .collect();
    let raw: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    let options = TilesOptions {
        row_group_docs: docs.len(),
        ..TilesOptions::default()
    };
    let written = write_file(&raw, &options).unwrap();
    let reader = SerializedFileReader::new(written.parquet).unwrap();
    assert_eq!(reader.metadata().num_row_groups(), 1);
    let all_dictionary = |path: &str| {
        let group = reader.metadata().row_group(0);
        let chunk = group
            .columns()
            .iter()
            .find(|c| c.column_path().string() == path)
            .unwrap_or_else(|| panic!("no column {path}"));
        chunk
            .page_encoding_stats_mask()
            .is_some_and(|mask| mask.is_only(Encoding::RLE_DICTIONARY))
    };
    assert!(all_dictionary("j.typed_value.user.typed_value"));
    assert!(!all_dictionary("j.typed_value.event.typed_value"));
}
