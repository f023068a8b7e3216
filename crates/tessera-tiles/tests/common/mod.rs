//! Helpers shared by the tiles tests.

// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StructArray};
use arrow::datatypes::{DataType, Field};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet_variant_compute::{VariantArray, unshred_variant};
use tessera_tiles::layout::{METADATA, TYPED_VALUE, VALUE};
use tessera_tiles::read_json;
use tessera_tiles::unshred::ShreddedJson;
use tessera_tiles::unshred::texts_of_dates_and_times;
use tessera_tiles::variant::write_json;

/// The documents of a written JSON tiles file, in row order, as the JSON text
/// [`read_json`] gives back. Every batch is also checked against unshredding: the
/// text written straight from the shredded columns, of whole documents and of every
/// shredded object below them, is the text of the rows unshredded into Variant first.
pub fn read_back(parquet: bytes::Bytes) -> Vec<String> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(parquet)
        .unwrap()
        .build()
        .unwrap();
    let mut back = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let column = batch.column(0).as_struct();
        assert_written_as_unshredded(column, column.column_by_name(METADATA).unwrap());
        let text = read_json(column).unwrap();
        let text = text.as_string::<i32>();
        back.extend((0..text.len()).map(|i| text.value(i).to_string()));
    }
    back
}

/// Checks `pair` (with the column's `metadata`) and every shredded object field below
/// it: [`ShreddedJson`] writes each row as unshredding and [`write_json`] do.
fn assert_written_as_unshredded(pair: &StructArray, metadata: &ArrayRef) {
    let mut fields = vec![Arc::new(Field::new(
        METADATA,
        metadata.data_type().clone(),
        true,
    ))];
    let mut columns = vec![Arc::clone(metadata)];
    for name in [VALUE, TYPED_VALUE] {
        if let Some((_, field)) = pair.fields().find(name) {
            fields.push(Arc::clone(field));
            columns.push(Arc::clone(pair.column_by_name(name).unwrap()));
        }
    }
    let column = StructArray::try_new(fields.into(), columns, None).unwrap();
    let writer = ShreddedJson::new(&column).unwrap();
    let reference = texts_of_dates_and_times(&column).unwrap();
    let reference = VariantArray::try_new(&reference).unwrap();
    let reference = match reference.typed_value_column() {
        Some(_) => unshred_variant(&reference).unwrap(),
        None => reference,
    };
    let (mut got, mut expected) = (String::new(), String::new());
    for row in 0..column.len() {
        got.clear();
        expected.clear();
        let present = writer.write(row, &mut got).unwrap();
        let absent = pair.column_by_name(VALUE).is_none_or(|v| v.is_null(row))
            && pair
                .column_by_name(TYPED_VALUE)
                .is_none_or(|t| t.is_null(row));
        assert_eq!(present, !absent, "row {row}: present or not");
        if present {
            write_json(&reference.value(row), &mut expected);
            assert_eq!(got, expected, "row {row}");
        }
    }
    let Some(typed) = pair.column_by_name(TYPED_VALUE) else {
        return;
    };
    if let DataType::Struct(_) = typed.data_type() {
        for field in typed.as_struct().columns() {
            assert_written_as_unshredded(field.as_struct(), metadata);
        }
    }
}

/// A xorshift generator: deterministic generated documents without a dependency.
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
