//! JSON -> Variant -> JSON gives the document back (compared as values: numbers by value
//! and kind, the first value of a key given twice): each line through the row encoder,
//! and all lines together through the shredding file writer and its reader.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet_variant::Variant;
use tessera_json::tape::Tape;
use tessera_tiles::variant::{RowEncoder, write_json};
use tessera_tiles::writer::COLUMN;
use tessera_tiles::{TilesOptions, read_json, write_file};

use tessera_json::canonical::Canonical as J;

/// The document through the row encoder and back to JSON text.
fn through_variant(doc: &[u8]) -> String {
    let mut tape = Tape::default();
    let text = tape.push(doc).expect("parsed before");
    let doc = tape.doc(0, text);
    let mut encoder = RowEncoder::new(&tape);
    let (mut metadata, mut value) = (Vec::new(), Vec::new());
    encoder.start_row(doc.keys(), &mut metadata);
    encoder.encode(doc.root(), &mut value);
    let variant = Variant::try_new(&metadata, &value).expect("a valid Variant");
    let mut out = String::new();
    write_json(&variant, &mut out);
    out
}

/// The documents through a shredded file and back, in file order.
fn through_file(docs: &[&[u8]]) -> Vec<String> {
    let options = TilesOptions {
        tile_docs: 4,
        row_group_docs: 8,
        ..TilesOptions::default()
    };
    let written = write_file(docs, &options).expect("parsed documents are written");
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(written.parquet))
        .expect("a readable file")
        .build()
        .expect("a reader");
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.expect("a batch");
        let json = read_json(batch.column_by_name(COLUMN).expect("the column").as_ref())
            .expect("JSON back");
        let json = json.as_any().downcast_ref::<arrow_array::StringArray>().expect("text");
        out.extend(json.iter().map(|t| t.expect("a document").to_string()));
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let docs: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|line| J::parse(line).is_ok())
        .take(64)
        .collect();
    let mut expected = Vec::new();
    for doc in &docs {
        let value = J::parse(doc).expect("parsed above");
        let back = through_variant(doc);
        assert_eq!(J::parse(back.as_bytes()).ok().as_ref(), Some(&value), "{back}");
        expected.push(value);
    }
    if docs.is_empty() {
        return;
    }
    // Documents move between tiles; compare as multisets.
    let mut got: Vec<String> = through_file(&docs)
        .iter()
        .map(|t| format!("{:?}", J::parse(t.as_bytes()).expect("JSON out")))
        .collect();
    let mut expected: Vec<String> = expected.iter().map(|v: &J| format!("{v:?}")).collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
});
