//! Helpers shared by the tiles tests.

// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use arrow::array::{Array, AsArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tessera_tiles::read_json;

/// The documents of a written JSON tiles file, in row order, as the JSON text
/// [`read_json`] gives back.
pub fn read_back(parquet: bytes::Bytes) -> Vec<String> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(parquet)
        .unwrap()
        .build()
        .unwrap();
    let mut back = Vec::new();
    for batch in reader {
        let text = read_json(batch.unwrap().column(0).as_ref()).unwrap();
        let text = text.as_string::<i32>();
        back.extend((0..text.len()).map(|i| text.value(i).to_string()));
    }
    back
}
