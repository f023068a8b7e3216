//! Exact conversion between JSON documents and Parquet Variant values.
//!
//! Exact means: JSON -> Variant -> JSON gives the same document up to key order and
//! whitespace, with every number keeping its value and its integer/float kind. Integers
//! take the narrowest Variant integer that holds them; integers above `i64::MAX` (up to
//! `u64::MAX`) become scale-0 decimals, which print as integers; every other number is a
//! double, printed in Rust's shortest round-trip form with a fraction or exponent so it
//! stays a float.

use std::fmt::Write as _;

use parquet_variant::{ObjectFieldBuilder, Variant, VariantBuilderExt, VariantDecimal16};
use serde_json::{Number, Value};

use crate::TilesError;

/// Appends `json` to `builder` as a Variant value.
pub fn append_json(json: &Value, builder: &mut impl VariantBuilderExt) -> Result<(), TilesError> {
    match json {
        Value::Null => builder.append_value(Variant::Null),
        Value::Bool(b) => builder.append_value(*b),
        Value::Number(n) => builder.append_value(number(n)?),
        Value::String(s) => builder.append_value(s.as_str()),
        Value::Array(items) => {
            let mut list = builder.try_new_list().map_err(TilesError::variant)?;
            for item in items {
                append_json(item, &mut list)?;
            }
            list.finish();
        }
        Value::Object(fields) => {
            let mut object = builder.try_new_object().map_err(TilesError::variant)?;
            for (key, value) in fields {
                append_json(value, &mut ObjectFieldBuilder::new(key, &mut object))?;
            }
            object.finish();
        }
    }
    Ok(())
}

fn number(n: &Number) -> Result<Variant<'static, 'static>, TilesError> {
    if let Some(i) = n.as_i64() {
        return Ok(if let Ok(v) = i8::try_from(i) {
            v.into()
        } else if let Ok(v) = i16::try_from(i) {
            v.into()
        } else if let Ok(v) = i32::try_from(i) {
            v.into()
        } else {
            i.into()
        });
    }
    if let Some(u) = n.as_u64() {
        let decimal = VariantDecimal16::try_new(i128::from(u), 0).map_err(TilesError::variant)?;
        return Ok(decimal.into());
    }
    n.as_f64()
        .map(Variant::from)
        .ok_or_else(|| TilesError::Number(n.to_string()))
}

/// Writes `variant` as JSON text to `out`.
pub fn write_json(variant: &Variant<'_, '_>, out: &mut String) {
    match variant {
        Variant::Null => out.push_str("null"),
        Variant::BooleanTrue => out.push_str("true"),
        Variant::BooleanFalse => out.push_str("false"),
        Variant::Int8(v) => push_display(out, v),
        Variant::Int16(v) => push_display(out, v),
        Variant::Int32(v) => push_display(out, v),
        Variant::Int64(v) => push_display(out, v),
        Variant::Decimal4(v) => push_display(out, v),
        Variant::Decimal8(v) => push_display(out, v),
        Variant::Decimal16(v) => push_display(out, v),
        Variant::Float(v) => push_float(out, f64::from(*v)),
        Variant::Double(v) => push_float(out, *v),
        Variant::String(s) => push_string(out, s),
        Variant::ShortString(s) => push_string(out, s.as_str()),
        Variant::Object(object) => {
            out.push('{');
            for (i, (key, value)) in object.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_string(out, key);
                out.push(':');
                write_json(&value, out);
            }
            out.push('}');
        }
        Variant::List(list) => {
            out.push('[');
            for (i, item) in list.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(&item, out);
            }
            out.push(']');
        }
        // Never produced from JSON; rendered as strings so output stays valid JSON.
        other => push_string(out, &format!("{other:?}")),
    }
}

fn push_display(out: &mut String, value: &impl std::fmt::Display) {
    let _ = write!(out, "{value}");
}

/// Debug formatting of `f64` is the shortest text that parses back to the same value
/// and always has a `.` or an exponent (`1.0`, `1e308`), so the number stays a float.
fn push_float(out: &mut String, value: f64) {
    assert!(value.is_finite(), "JSON numbers are finite");
    let _ = write!(out, "{value:?}");
}

fn push_string(out: &mut String, text: &str) {
    out.push('"');
    let mut start = 0;
    for (i, byte) in text.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{byte:04x}");
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet_variant::VariantBuilder;

    fn round_trip(text: &str) -> String {
        let value: Value = serde_json::from_str(text).unwrap();
        let mut builder = VariantBuilder::new();
        append_json(&value, &mut builder).unwrap();
        let (metadata, bytes) = builder.finish();
        let variant = Variant::try_new(&metadata, &bytes).unwrap();
        let mut out = String::new();
        write_json(&variant, &mut out);
        out
    }

    #[test]
    fn numbers_keep_value_and_kind() {
        for (input, output) in [
            ("1", "1"),
            ("-129", "-129"),
            ("9223372036854775807", "9223372036854775807"),
            ("-9223372036854775808", "-9223372036854775808"),
            ("9223372036854775808", "9223372036854775808"),
            ("18446744073709551615", "18446744073709551615"),
            ("1.0", "1.0"),
            ("0.1", "0.1"),
            ("-0.0", "-0.0"),
            ("1e308", "1e308"),
            ("5e-324", "5e-324"),
            ("-1.5e2", "-150.0"),
        ] {
            assert_eq!(round_trip(input), output, "{input}");
        }
    }

    #[test]
    fn strings_and_structure_round_trip() {
        let text =
            r#"{"a":"d\u00e9j\u00e0 \"vu\"\n\u0001","b":[],"c":{},"d":[null,true,{"e":"東京😀"}]}"#;
        let back: Value = serde_json::from_str(&round_trip(text)).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(text).unwrap());
    }
}
