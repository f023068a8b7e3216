//! The canonical text form of values that the ported DuckDB suite compares: the same form
//! `scripts/port_duckdb_json.py` writes from DuckDB's Python results (its docstring is the
//! specification; keep the two in step). Every rule keeps distinct values distinct: floats
//! print in their shortest round-trip form, strings inside nested values are quoted.

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Date32Type, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, IntervalMonthDayNanoType, IntervalUnit, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow::temporal_conversions::{as_datetime, time64ns_to_time, time64us_to_time};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use parquet_variant::Variant;
use parquet_variant_compute::VariantArray;

/// A float widened to f64, as Rust's `{:?}` prints it: the shortest digits that read back
/// to the same double, exponential below 1e-4 and from 1e16 on (`1.0`, `1e20`, `NaN`).
pub fn float(value: f64) -> String {
    format!("{value:?}")
}

/// A string inside a list, struct or map: quoted, `\` and `'` escaped.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A blob: printable ASCII as is, other bytes and `\` as `\xNN`.
fn blob(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            32..=126 if b != b'\\' => (b as char).to_string(),
            _ => format!("\\x{b:02X}"),
        })
        .collect()
}

/// A time of day's or timestamp's fraction of a second, without trailing zeros.
fn fraction(nanos: u32) -> String {
    match nanos {
        0 => String::new(),
        n => format!(".{n:09}").trim_end_matches('0').to_string(),
    }
}

fn timestamp(array: &dyn Array, row: usize, unit: &TimeUnit, zoned: bool) -> Option<String> {
    let value = match unit {
        TimeUnit::Second => as_datetime::<TimestampSecondType>(
            array.as_primitive::<TimestampSecondType>().value(row),
        ),
        TimeUnit::Millisecond => as_datetime::<TimestampMillisecondType>(
            array.as_primitive::<TimestampMillisecondType>().value(row),
        ),
        TimeUnit::Microsecond => as_datetime::<TimestampMicrosecondType>(
            array.as_primitive::<TimestampMicrosecondType>().value(row),
        ),
        TimeUnit::Nanosecond => as_datetime::<TimestampNanosecondType>(
            array.as_primitive::<TimestampNanosecondType>().value(row),
        ),
    }?;
    let nanos = chrono::Timelike::nanosecond(&value);
    let zone = if zoned { "+00" } else { "" };
    Some(format!(
        "{}{}{zone}",
        value.format("%Y-%m-%d %H:%M:%S"),
        fraction(nanos)
    ))
}

/// Row `row` of `array` in canonical form; `nested` inside a list, struct or map.
pub fn value(array: &dyn Array, row: usize, nested: bool) -> String {
    if array.is_null(row) {
        return "NULL".to_string();
    }
    let text = |s: &str| if nested { quote(s) } else { s.to_string() };
    match array.data_type() {
        DataType::Boolean => array.as_boolean().value(row).to_string(),
        DataType::Int8 => array.as_primitive::<Int8Type>().value(row).to_string(),
        DataType::Int16 => array.as_primitive::<Int16Type>().value(row).to_string(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(row).to_string(),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(row).to_string(),
        DataType::UInt8 => array.as_primitive::<UInt8Type>().value(row).to_string(),
        DataType::UInt16 => array.as_primitive::<UInt16Type>().value(row).to_string(),
        DataType::UInt32 => array.as_primitive::<UInt32Type>().value(row).to_string(),
        DataType::UInt64 => array.as_primitive::<UInt64Type>().value(row).to_string(),
        DataType::Float16 => float(array.as_primitive::<Float16Type>().value(row).to_f64()),
        DataType::Float32 => float(f64::from(array.as_primitive::<Float32Type>().value(row))),
        DataType::Float64 => float(array.as_primitive::<Float64Type>().value(row)),
        DataType::Utf8 => text(array.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => text(array.as_string::<i64>().value(row)),
        DataType::Utf8View => text(array.as_string_view().value(row)),
        DataType::Binary => text(&blob(array.as_binary::<i32>().value(row))),
        DataType::LargeBinary => text(&blob(array.as_binary::<i64>().value(row))),
        DataType::BinaryView => text(&blob(array.as_binary_view().value(row))),
        DataType::Date32 => {
            let days = array.as_primitive::<Date32Type>().value(row);
            arrow::temporal_conversions::date32_to_datetime(days)
                .map(|d| d.format("%Y-%m-%d").to_string())
                .unwrap_or_else(|| display(array, row))
        }
        DataType::Timestamp(unit, zone) => {
            timestamp(array, row, unit, zone.is_some()).unwrap_or_else(|| display(array, row))
        }
        DataType::Time64(unit) => time(array, row, unit).unwrap_or_else(|| display(array, row)),
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let value = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
            interval(value.months, value.days, value.nanoseconds)
        }
        _ => nested_value(array, row, nested),
    }
}

/// An interval as Python prints the `timedelta` DuckDB returns for it (a month is 30
/// days, microseconds kept): `1 day, 0:00:00`, `-1 day, 23:00:00`, `0:00:01.500000`.
fn interval(months: i32, days: i32, nanos: i64) -> String {
    const MICROS_PER_DAY: i128 = 86_400_000_000;
    let total =
        (i128::from(months) * 30 + i128::from(days)) * MICROS_PER_DAY + i128::from(nanos / 1_000);
    let (days, micros) = (
        total.div_euclid(MICROS_PER_DAY),
        total.rem_euclid(MICROS_PER_DAY),
    );
    let seconds = micros / 1_000_000;
    let clock = format!(
        "{}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    let fraction = match micros % 1_000_000 {
        0 => String::new(),
        f => format!(".{f:06}"),
    };
    match days {
        0 => format!("{clock}{fraction}"),
        1 | -1 => format!("{days} day, {clock}{fraction}"),
        _ => format!("{days} days, {clock}{fraction}"),
    }
}

fn time(array: &dyn Array, row: usize, unit: &TimeUnit) -> Option<String> {
    use arrow::datatypes::{Time64MicrosecondType, Time64NanosecondType};
    let value = match unit {
        TimeUnit::Microsecond => {
            time64us_to_time(array.as_primitive::<Time64MicrosecondType>().value(row))
        }
        TimeUnit::Nanosecond => {
            time64ns_to_time(array.as_primitive::<Time64NanosecondType>().value(row))
        }
        _ => None,
    }?;
    let nanos = chrono::Timelike::nanosecond(&value);
    Some(format!("{}{}", value.format("%H:%M:%S"), fraction(nanos)))
}

/// Whether a struct of `fields` is a tuple: its members named `v1`, `v2`, ... in order,
/// as Tessera names a struct's unnamed members.
fn is_tuple(fields: &arrow::datatypes::Fields) -> bool {
    !fields.is_empty()
        && fields
            .iter()
            .enumerate()
            .all(|(i, f)| f.name() == &format!("v{}", i + 1))
}

/// Lists, structs, maps, dictionaries and unions (the member's value, as DuckDB's Python
/// client returns it); any other type in Arrow's display form.
fn nested_value(array: &dyn Array, row: usize, nested: bool) -> String {
    let list = |values: &dyn Array| -> String {
        let items: Vec<String> = (0..values.len()).map(|i| value(values, i, true)).collect();
        format!("[{}]", items.join(", "))
    };
    match array.data_type() {
        DataType::List(_) => list(array.as_list::<i32>().value(row).as_ref()),
        DataType::LargeList(_) => list(array.as_list::<i64>().value(row).as_ref()),
        DataType::FixedSizeList(..) => list(array.as_fixed_size_list().value(row).as_ref()),
        // A tuple (members `v1`, `v2`, ...: DuckDB's unnamed struct, a Python tuple)
        // prints as a list, as the port prints a tuple.
        DataType::Struct(fields) if is_tuple(fields) => {
            let columns = array.as_struct().columns();
            let items: Vec<String> = columns
                .iter()
                .map(|c| value(c.as_ref(), row, true))
                .collect();
            format!("[{}]", items.join(", "))
        }
        DataType::Struct(fields) => {
            let columns = array.as_struct().columns();
            let items: Vec<String> = fields
                .iter()
                .zip(columns)
                .map(|(f, c)| format!("{}: {}", quote(f.name()), value(c.as_ref(), row, true)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        DataType::Map(..) => {
            let entries = array.as_map().value(row);
            let (keys, values) = (entries.column(0), entries.column(1));
            let items: Vec<String> = (0..entries.len())
                .map(|i| format!("{}={}", value(keys, i, true), value(values, i, true)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        DataType::Union(..) => {
            let union = array.as_union();
            let member = union.child(union.type_id(row));
            value(member.as_ref(), union.value_offset(row), nested)
        }
        DataType::Dictionary(_, value_type) => {
            match arrow::compute::cast(&array.slice(row, 1), value_type) {
                Ok(plain) => value(plain.as_ref(), 0, nested),
                Err(_) => display(array, row),
            }
        }
        _ => display(array, row),
    }
}

/// Arrow's display form: decimals (fixed-point with their scale, as DuckDB prints them),
/// intervals and anything rarer.
fn display(array: &dyn Array, row: usize) -> String {
    let options = FormatOptions::default().with_null("NULL");
    ArrayFormatter::try_new(array, &options)
        .map(|f| f.value(row).to_string())
        .unwrap_or_else(|e| format!("<unprintable: {e}>"))
}

/// A `VARIANT` (Arrow's `arrow.parquet.variant`) as the value it holds, in the form of
/// the Arrow value DuckDB's Python client would return for it.
fn variant(value: &Variant<'_, '_>, nested: bool) -> String {
    let text = |s: &str| if nested { quote(s) } else { s.to_string() };
    match value {
        Variant::Null => "NULL".to_string(),
        Variant::BooleanTrue => "true".to_string(),
        Variant::BooleanFalse => "false".to_string(),
        Variant::Int8(v) => v.to_string(),
        Variant::Int16(v) => v.to_string(),
        Variant::Int32(v) => v.to_string(),
        Variant::Int64(v) => v.to_string(),
        Variant::Float(v) => float(f64::from(*v)),
        Variant::Double(v) => float(*v),
        Variant::String(s) => text(s),
        Variant::ShortString(s) => text(s.as_str()),
        Variant::Object(object) => {
            let items: Vec<String> = object
                .iter()
                .map(|(k, v)| format!("{}: {}", quote(k), variant(&v, true)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Variant::List(list) => {
            let items: Vec<String> = list.iter().map(|v| variant(&v, true)).collect();
            format!("[{}]", items.join(", "))
        }
        other => format!("{other:?}"),
    }
}

/// Row `row` of column `column` of `batch` in canonical form.
fn cell(batch: &RecordBatch, column: usize, row: usize) -> String {
    let array = batch.column(column);
    let field = batch.schema_ref().field(column);
    let is_variant = field
        .metadata()
        .get("ARROW:extension:name")
        .is_some_and(|n| n == "arrow.parquet.variant");
    match is_variant.then(|| VariantArray::try_new(array.as_ref())) {
        Some(Ok(variants)) if variants.is_valid(row) => variant(&variants.value(row), false),
        _ => value(array.as_ref(), row, false),
    }
}

/// Every row of `batch` as canonical cells.
pub fn rows(batch: &RecordBatch) -> Vec<Vec<String>> {
    (0..batch.num_rows())
        .map(|row| {
            (0..batch.num_columns())
                .map(|c| cell(batch, c, row))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, ListArray, StringArray};
    use arrow::datatypes::Int32Type;

    use super::*;

    /// Intervals as DuckDB 2.0.0's Python API prints them (`str` of its `timedelta`).
    #[test]
    fn intervals_print_as_python_timedeltas() {
        let second = 1_000_000_000;
        assert_eq!(interval(1, 0, 0), "30 days, 0:00:00");
        assert_eq!(interval(0, 0, -3600 * second), "-1 day, 23:00:00");
        assert_eq!(interval(0, 1, second * 3 / 2), "1 day, 0:00:01.500000");
        assert_eq!(interval(0, 2, 0), "2 days, 0:00:00");
        assert_eq!(interval(0, 0, 0), "0:00:00");
    }

    /// Floats of generated bit patterns print in a form that reads back to the same
    /// double, so no two doubles share a form.
    #[test]
    fn floats_read_back_exactly() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..100_000 {
            // xorshift64: many exponents, signs, subnormals and NaN payloads.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let v = f64::from_bits(state);
            let back: f64 = float(v).parse().unwrap();
            assert!(
                back.to_bits() == v.to_bits() || v.is_nan() && back.is_nan(),
                "{v:?}"
            );
        }
        for (v, text) in [
            (1.0, "1.0"),
            (1e20, "1e20"),
            (1e-5, "1e-5"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(float(v), text);
        }
    }

    /// Strings inside lists are quoted, so the separator cannot be faked.
    #[test]
    fn nested_strings_stay_distinct() {
        let one: ArrayRef = Arc::new(StringArray::from(vec!["a, b"]));
        let two: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let as_list = |values: ArrayRef| {
            let offsets = arrow::buffer::OffsetBuffer::from_lengths([values.len()]);
            let field = Arc::new(arrow::datatypes::Field::new("item", DataType::Utf8, true));
            ListArray::new(field, offsets, values, None)
        };
        let (one, two) = (as_list(one), as_list(two));
        assert_eq!(value(&one, 0, false), "['a, b']");
        assert_eq!(value(&two, 0, false), "['a', 'b']");
        let quoted: ArrayRef = Arc::new(StringArray::from(vec!["it's \\"]));
        assert_eq!(value(&as_list(quoted), 0, false), r"['it\'s \\']");
        let ints = ListArray::from_iter_primitive::<Int32Type, _, _>([Some(vec![Some(1), None])]);
        assert_eq!(value(&ints, 0, false), "[1, NULL]");
    }
}
