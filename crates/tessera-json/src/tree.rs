//! An owned JSON value for the functions that build or change documents (`json_set`,
//! `json_merge_patch`, ...), and the one writer of JSON text those functions share.
//!
//! Documents are parsed by the [`tape`](crate::tape) (so the nesting limit, exact
//! integers of up to 38 digits and `-0` read as the integer 0 hold here too) and then
//! copied into a [`Json`] tree, which the modifiers can change in place. Duplicate keys
//! are kept as written: DuckDB keeps them when it re-serialises a document, and lookups
//! ([`Json::get`]) take the first.
//!
//! Text is written as DuckDB writes it: no whitespace, control characters escaped
//! (`\n`, `\u001F`), `/` and non-ASCII characters as they are, and doubles in their
//! shortest round-trip digits laid out as JavaScript lays out numbers (decimal notation
//! for exponents from -7 to 21, scientific beyond: `0.000001`, `1e-7`, `1e21`), always
//! with a fraction or an exponent (`100.0`) so that a double stays a double.

use std::fmt::Write as _;

use crate::tape::{Kind, ParseError, Tape, Value};

/// Most distinct keys a reused [`Tape`] interns before [`Json::parse`] starts a fresh
/// one: the tape's key dictionary outlives the documents it parsed.
const TAPE_KEYS_MAX: usize = 1 << 16;

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer that fits `i64`.
    Int(i64),
    /// An integer above `i64::MAX` that fits `u64`.
    UInt(u64),
    /// An integer of up to 38 digits beyond `i64` and `u64`.
    BigInt(i128),
    /// Any other number.
    Float(f64),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object's members in document order, duplicate keys included.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Parses one document with `tape` (cleared first, reused across calls to keep its
    /// allocations).
    pub fn parse(text: &[u8], tape: &mut Tape) -> Result<Json, ParseError> {
        if tape.key_count() > TAPE_KEYS_MAX {
            *tape = tape.emptied();
        }
        tape.clear();
        let source = tape.push(text)?;
        Ok(Self::from_tape(tape.doc(0, source).root()))
    }

    /// Copies a tape value; recursion is bounded by the tape's nesting limit.
    pub fn from_tape(value: Value<'_>) -> Json {
        let node = value.node();
        match node.kind() {
            Kind::Null => Json::Null,
            Kind::True => Json::Bool(true),
            Kind::False => Json::Bool(false),
            Kind::Int => Json::Int(node.int()),
            Kind::UInt => Json::UInt(node.uint()),
            Kind::Decimal => Json::BigInt(value.decimal()),
            Kind::Float => Json::Float(node.float()),
            Kind::String | Kind::Key => Json::String(value.str().to_string()),
            Kind::Array => Json::Array(value.elements().map(Json::from_tape).collect()),
            Kind::Object => Json::Object(
                value
                    .members()
                    .map(|(k, v)| (k.str().to_string(), Json::from_tape(v)))
                    .collect(),
            ),
        }
    }

    /// The value of the first member named `key`, if this is an object that has one.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value as minified JSON text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// Appends the value as minified JSON text.
    pub fn write(&self, out: &mut String) {
        match self {
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    push_string(out, key);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
            scalar => scalar.write_scalar(out),
        }
    }

    /// Appends the value as indented JSON text (four spaces a level, `"key": value`),
    /// as DuckDB's `json_pretty` writes it.
    pub fn write_pretty(&self, out: &mut String, depth: usize) {
        let indent = |out: &mut String, depth: usize| {
            out.push('\n');
            out.extend(std::iter::repeat_n("    ", depth));
        };
        match self {
            Json::Array(items) if !items.is_empty() => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    out.push_str(if i > 0 { "," } else { "" });
                    indent(out, depth + 1);
                    item.write_pretty(out, depth + 1);
                }
                indent(out, depth);
                out.push(']');
            }
            Json::Object(members) if !members.is_empty() => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    out.push_str(if i > 0 { "," } else { "" });
                    indent(out, depth + 1);
                    push_string(out, key);
                    out.push_str(": ");
                    value.write_pretty(out, depth + 1);
                }
                indent(out, depth);
                out.push('}');
            }
            other => other.write(out),
        }
    }

    fn write_scalar(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(v) => push_display(out, v),
            Json::UInt(v) => push_display(out, v),
            Json::BigInt(v) => push_display(out, v),
            Json::Float(v) => push_float(out, *v),
            Json::String(s) => push_string(out, s),
            Json::Array(_) | Json::Object(_) => self.write(out),
        }
    }
}

fn push_display(out: &mut String, value: &impl std::fmt::Display) {
    let _ = write!(out, "{value}");
}

/// Appends `text` as a JSON string: quotes, backslashes and control characters escaped
/// (`\b \t \n \f \r` by name, the others as `\u00XX` in upper case), nothing else.
pub fn push_string(out: &mut String, text: &str) {
    out.push('"');
    let mut start = 0;
    for (i, byte) in text.bytes().enumerate() {
        let named = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[start..i]);
        if named.is_empty() {
            let _ = write!(out, "\\u{byte:04X}");
        } else {
            out.push_str(named);
        }
        start = i + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// Appends a double as DuckDB writes it (see the module documentation). NaN and the
/// infinities, which JSON cannot spell, are written `NaN`, `Infinity` and `-Infinity`
/// as DuckDB's `to_json` writes them.
pub fn push_float(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
        return;
    }
    if value.is_sign_negative() {
        out.push('-');
    }
    let magnitude = value.abs();
    if magnitude.is_infinite() {
        out.push_str("Infinity");
        return;
    }
    if magnitude == 0.0 {
        out.push_str("0.0");
        return;
    }
    // `{:e}` gives the shortest digits that read back as the same double, but breaks a
    // tie between two such (279248847377553.625: .62 or .63) upwards; DuckDB takes the
    // even one, as `{:.Ne}` (exact, ties to even) at the same length does.
    let shortest = Scientific::of(format_args!("{magnitude:e}"));
    let precision = shortest.mantissa().len().saturating_sub(2);
    let even = Scientific::of(format_args!("{magnitude:.precision$e}"));
    let scientific = match even.as_str().parse::<f64>() {
        Ok(back) if back == magnitude => even,
        _ => shortest,
    };
    push_decimal(out, &scientific);
}

/// Writes the digits of `scientific` positionally when its decimal point falls in
/// -5..=21 (with `.0` when integral), otherwise as `1.5e-10` (ECMAScript's
/// Number::toString, which DuckDB's writer follows).
fn push_decimal(out: &mut String, scientific: &Scientific) {
    let mut digits = [0u8; SCIENTIFIC_BYTES_MAX];
    let mut count = 0;
    for byte in scientific.mantissa().bytes().filter(|b| *b != b'.') {
        digits[count] = byte;
        count += 1;
    }
    let digits = std::str::from_utf8(&digits[..count]).expect("ASCII digits");
    // The value is 0.DIGITS times ten to the `point`.
    let point = scientific.exponent() + 1;
    let count = count as i32;
    if count <= point && point <= 21 {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', (point - count) as usize));
        out.push_str(".0");
    } else if 0 < point && point <= 21 {
        let (whole, fraction) = digits.split_at(point as usize);
        out.push_str(whole);
        out.push('.');
        out.push_str(fraction);
    } else if -6 < point && point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let _ = write!(out, "e{}", point - 1);
    }
}

/// Room for `{:e}` of a positive double at up to 17 significant digits
/// (`1.2345678901234567e-308`: 23 bytes).
const SCIENTIFIC_BYTES_MAX: usize = 32;

/// A number formatted `{:e}` into a fixed buffer, so writing it allocates nothing.
struct Scientific {
    bytes: [u8; SCIENTIFIC_BYTES_MAX],
    len: usize,
}

impl std::fmt::Write for Scientific {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let end = self.len + text.len();
        let room = self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        room.copy_from_slice(text.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl Scientific {
    fn of(args: std::fmt::Arguments<'_>) -> Self {
        let mut text = Self {
            bytes: [0; SCIENTIFIC_BYTES_MAX],
            len: 0,
        };
        text.write_fmt(args)
            .expect("`{:e}` of a double fits SCIENTIFIC_BYTES_MAX");
        text
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).expect("formatted text is UTF-8")
    }

    /// The digits before the `e`.
    fn mantissa(&self) -> &str {
        self.as_str().split_once('e').map_or("", |(m, _)| m)
    }

    /// The decimal exponent after the `e`.
    fn exponent(&self) -> i32 {
        let exponent = self.as_str().split_once('e').map_or("0", |(_, e)| e);
        exponent.parse().expect("`{:e}` writes an integer exponent")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minify(text: &str) -> String {
        Json::parse(text.as_bytes(), &mut Tape::default())
            .unwrap()
            .to_text()
    }

    #[test]
    fn doubles_are_written_as_duckdb_writes_them() {
        // Answers of DuckDB 2.0.0's to_json on the same doubles.
        for (value, text) in [
            (1.5, "1.5"),
            (1e300, "1e300"),
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (1e-7, "1e-7"),
            (1e16, "10000000000000000.0"),
            (1e21, "1e21"),
            (1.25e20, "125000000000000000000.0"),
            (1e-6, "0.000001"),
            (1.23e-8, "1.23e-8"),
            (-2.5e-9, "-2.5e-9"),
            (1.5e22, "1.5e22"),
            (f64::from(0.1f32), "0.10000000149011612"),
            (5e-324, "5e-324"),
            (279_248_847_377_553.62, "279248847377553.62"),
            (1.797_693_134_862_315_7e308, "1.7976931348623157e308"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            let mut out = String::new();
            push_float(&mut out, value);
            assert_eq!(out, text, "{value:e}");
        }
    }

    #[test]
    fn written_doubles_read_back_exactly() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value = f64::from_bits(state);
            if !value.is_finite() {
                continue;
            }
            let mut out = String::new();
            push_float(&mut out, value);
            assert_eq!(
                out.parse::<f64>().unwrap().to_bits(),
                value.to_bits(),
                "{out}"
            );
        }
    }

    #[test]
    fn strings_escape_only_what_json_requires() {
        let mut out = String::new();
        push_string(&mut out, "a\"b\\\n\u{1f}\u{8}\u{c}\0/é\u{7f}");
        assert_eq!(
            out,
            r#""a\"b\\\n\u001F\b\f\u0000/é""#.replace('é', "é\u{7f}")
        );
    }

    #[test]
    fn minified_text_keeps_duplicates_and_reads_numbers_as_duckdb() {
        assert_eq!(minify(r#" { "a" : 1 , "a":2} "#), r#"{"a":1,"a":2}"#);
        assert_eq!(
            minify("[1E2, -0, 0.1e1, -0.0, 1.00000]"),
            "[100.0,0,1.0,-0.0,1.0]"
        );
        assert_eq!(
            minify("[18446744073709551616, 123456789012345678901234567890]"),
            "[18446744073709551616,123456789012345678901234567890]"
        );
    }

    #[test]
    fn pretty_text_indents_four_spaces() {
        let json = Json::parse(br#"[1,{"a":43,"g":[true]},{},[]]"#, &mut Tape::default()).unwrap();
        let mut out = String::new();
        json.write_pretty(&mut out, 0);
        assert_eq!(
            out,
            "[\n    1,\n    {\n        \"a\": 43,\n        \"g\": [\n            true\n        ]\n    },\n    {},\n    []\n]"
        );
    }

    #[test]
    fn a_tape_started_afresh_keeps_reading_as_it_was_asked_to() {
        let mut tape = Tape::default()
            .with_non_finite_numbers(true)
            .with_trailing_commas(true);
        let members: Vec<String> = (0..=TAPE_KEYS_MAX)
            .map(|i| format!("\"k{i}\":{i}"))
            .collect();
        let many_keys = format!("{{{}}}", members.join(","));
        Json::parse(many_keys.as_bytes(), &mut tape).unwrap();
        assert!(tape.key_count() > TAPE_KEYS_MAX);
        // The next parse starts a fresh tape, which must still take NaN and `,]`.
        let json = Json::parse(b"[NaN,1,]", &mut tape).unwrap();
        assert_eq!(json.to_text(), "[NaN,1]");
        assert!(tape.key_count() <= TAPE_KEYS_MAX);
    }
}
