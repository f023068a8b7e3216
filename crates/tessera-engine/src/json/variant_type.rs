//! DuckDB's `VARIANT`: a value of any type, self-described. Planned as Arrow's canonical
//! Parquet Variant extension type (`arrow.parquet.variant`: a struct of the Variant
//! binary's metadata and value), the encoding Tessera's tables already store, so a
//! VARIANT column reads and writes as the tiles crate's Variant columns do.
//!
//! A value of `VARIANT` is written as JSON ([`write_variant_json`]: casts to `JSON`,
//! `to_json`, `json_array`, `json_object`) with the layout `to_json` gives the same
//! values (numbers as DuckDB writes them, dates and times as strings). Casts to
//! `VARIANT` are functions (`functions::variant_cast`).

use std::collections::HashMap;
use std::fmt::Write as _;

use arrow::array::Array;
use arrow::datatypes::{DataType, Field, Fields};
use chrono::Timelike;
use datafusion::common::Result;
use parquet_variant::Variant;
use parquet_variant_compute::VariantArray;
use tessera_json::tree::push_string;

/// The name of Arrow's canonical Parquet Variant extension type.
pub const VARIANT_EXTENSION_NAME: &str = "arrow.parquet.variant";
/// The field metadata key naming an Arrow extension type.
const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
/// The field metadata key of an extension type's parameters (none for Variant).
const EXTENSION_METADATA_KEY: &str = "ARROW:extension:metadata";

/// A nullable field `name` of SQL type `VARIANT`: the struct of binaries that
/// `parquet-variant-compute` builds, marked `arrow.parquet.variant`.
pub fn variant_field(name: &str) -> Field {
    let binaries = Fields::from(vec![
        Field::new("metadata", DataType::BinaryView, false),
        Field::new("value", DataType::BinaryView, false),
    ]);
    Field::new(name, DataType::Struct(binaries), true).with_metadata(HashMap::from([
        (
            EXTENSION_NAME_KEY.to_string(),
            VARIANT_EXTENSION_NAME.to_string(),
        ),
        (EXTENSION_METADATA_KEY.to_string(), String::new()),
    ]))
}

/// Whether `field` holds SQL `VARIANT`: marked `arrow.parquet.variant`, or (where
/// DataFusion dropped the mark: `make_array` rebuilds its item field) exactly the struct
/// of two non-null binary views [`variant_field`] plans, which no other SQL type is.
pub fn is_variant(field: &Field) -> bool {
    let marked = field
        .metadata()
        .get(EXTENSION_NAME_KEY)
        .is_some_and(|name| name == VARIANT_EXTENSION_NAME);
    match field.data_type() {
        DataType::Struct(_) if marked => true,
        DataType::Struct(members) => {
            let planned = variant_field("");
            let DataType::Struct(binaries) = planned.data_type() else {
                return false;
            };
            members == binaries
        }
        _ => false,
    }
}

/// Row `row` of the Variant column `array` as JSON text, appended to `out`; `null` for
/// a NULL row.
pub fn write_variant_json(array: &dyn Array, row: usize, out: &mut String) -> Result<()> {
    let variants = VariantArray::try_new(array)?;
    match variants.is_null(row) {
        true => out.push_str("null"),
        false => write_json(&variants.try_value(row)?, out),
    }
    Ok(())
}

/// Appends `variant` as JSON, its scalars as DuckDB writes a `VARIANT`'s.
fn write_json(variant: &Variant<'_, '_>, out: &mut String) {
    tessera_tiles::variant::write_json_with(variant, out, &write_scalar);
}

/// Writes the scalars JSON text never holds (decimals with their scale, dates, times,
/// UUIDs, binaries) and says whether `variant` was one; the rest are written as JSON's.
fn write_scalar(variant: &Variant<'_, '_>, out: &mut String) -> bool {
    match variant {
        Variant::Decimal4(v) => push_decimal(out, i128::from(v.integer()), v.scale()),
        Variant::Decimal8(v) => push_decimal(out, i128::from(v.integer()), v.scale()),
        Variant::Decimal16(v) => push_decimal(out, v.integer(), v.scale()),
        Variant::Date(d) => push_string(out, &d.to_string()),
        Variant::Time(t) => {
            let text = format!("{}{}", t.format("%H:%M:%S"), fraction(t.nanosecond()));
            push_string(out, &text);
        }
        Variant::TimestampNtzMicros(t) | Variant::TimestampNtzNanos(t) => {
            let text = format!(
                "{}{}",
                t.format("%Y-%m-%d %H:%M:%S"),
                fraction(t.nanosecond())
            );
            push_string(out, &text);
        }
        Variant::TimestampMicros(t) | Variant::TimestampNanos(t) => {
            let text = format!(
                "{}{}+00",
                t.format("%Y-%m-%d %H:%M:%S"),
                fraction(t.nanosecond())
            );
            push_string(out, &text);
        }
        Variant::Uuid(u) => push_string(out, &u.to_string()),
        Variant::Binary(bytes) => push_string(out, &blob_text(bytes)),
        _ => return false,
    }
    true
}

/// A decimal as DuckDB writes a VARIANT's: every digit of its scale kept (`12.50`).
fn push_decimal(out: &mut String, integer: i128, scale: u8) {
    let digits = integer.unsigned_abs().to_string();
    let scale = usize::from(scale);
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    let sign = if integer < 0 { "-" } else { "" };
    let _ = match scale {
        0 => write!(out, "{sign}{whole}"),
        _ => write!(out, "{sign}{whole}.{fraction}"),
    };
}

/// A time's fraction of a second as DuckDB writes it: trailing zeros dropped, none for
/// a whole second.
fn fraction(nanos: u32) -> String {
    match nanos {
        0 => String::new(),
        n => format!(".{n:09}").trim_end_matches('0').to_string(),
    }
}

/// A blob's text as DuckDB casts it to `VARCHAR`: printable ASCII as is, other bytes
/// (and `\`) as `\xNN`.
fn blob_text(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            32..=126 if b != b'\\' => text.push(char::from(b)),
            _ => {
                let _ = write!(text, "\\x{b:02X}");
            }
        }
    }
    text
}
