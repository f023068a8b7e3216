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
            Json::Int(v) => push_integer(out, *v),
            Json::UInt(v) => push_integer(out, *v),
            Json::BigInt(v) => push_integer(out, *v),
            Json::Float(v) => push_float(out, *v),
            Json::String(s) => push_string(out, s),
            Json::Array(_) | Json::Object(_) => self.write(out),
        }
    }
}

/// Appends an integer's decimal digits (without the formatting machinery, which is
/// most of the cost of writing a number element by element).
pub fn push_integer(out: &mut String, value: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(value));
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
    // Ryū gives the shortest digits that read back as the same double and, between two
    // such equally near (279248847377553.625: .62 or .63), the even one, as DuckDB does.
    let mut buffer = ryu::Buffer::new();
    let (digits, point) = shortest_digits(buffer.format_finite(magnitude));
    push_decimal(out, digits.as_str(), point);
}

/// The significant digits of Ryū's text of a positive finite double (`59.84`, `1e16`,
/// `1.5e-10`) and where its decimal point falls: the value is 0.DIGITS times ten to
/// `point`. Leading and trailing zeros are dropped, so the digits are the shortest.
fn shortest_digits(text: &str) -> (Digits, i32) {
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().expect("Ryū writes an integer exponent")),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits = Digits::default();
    let mut point = exponent + whole.len() as i32;
    for byte in whole.bytes().chain(fraction.bytes()) {
        match byte {
            b'0' if digits.len == 0 => point -= 1,
            _ => digits.push(byte),
        }
    }
    digits.trim_zeros();
    (digits, point)
}

/// Significant digits of a double, in a fixed buffer so writing one allocates nothing.
#[derive(Default)]
struct Digits {
    bytes: [u8; DIGITS_MAX],
    len: usize,
}

/// Ryū writes at most 17 significant digits.
const DIGITS_MAX: usize = 17;

impl Digits {
    fn push(&mut self, digit: u8) {
        assert!(digit.is_ascii_digit(), "Ryū writes decimal digits");
        self.bytes[self.len] = digit;
        self.len += 1;
    }

    fn trim_zeros(&mut self) {
        while self.len > 1 && self.bytes[self.len - 1] == b'0' {
            self.len -= 1;
        }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).expect("ASCII digits")
    }
}

/// Writes `digits` (the value is 0.DIGITS times ten to `point`) positionally when the
/// decimal point falls in -5..=21 (with `.0` when integral), otherwise as `1.5e-10`
/// (ECMAScript's Number::toString, which DuckDB's writer follows).
fn push_decimal(out: &mut String, digits: &str, point: i32) {
    let count = digits.len() as i32;
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

    /// The digits of `value` by the standard library: its shortest `{:e}`, except that
    /// where two shortest digit strings read back equally (a tie, which `{:e}` breaks
    /// upwards) the even one, as the exact `{:.Ne}` at the same length rounds.
    fn std_digits(value: f64) -> String {
        let shortest = format!("{value:e}");
        let precision = shortest.split_once('e').unwrap().0.len().saturating_sub(2);
        let even = format!("{value:.precision$e}");
        match even.parse::<f64>() {
            Ok(back) if back == value => even,
            _ => shortest,
        }
    }

    #[test]
    fn digits_are_the_shortest_with_ties_to_even() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let ties = [279_248_847_377_553.62, 0.3, 1e23, 9_007_199_254_740_993.0];
        let random = std::iter::repeat_with(|| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            f64::from_bits(state)
        });
        for value in ties.into_iter().chain(random.take(200_000)) {
            let value = value.abs();
            if !value.is_finite() || value == 0.0 {
                continue;
            }
            let mut ours = String::new();
            push_float(&mut ours, value);
            let mut expected = String::new();
            let parsed = std_digits(value).parse::<f64>().unwrap();
            assert_eq!(parsed.to_bits(), value.to_bits());
            let (digits, point) = shortest_digits(&std_digits(value));
            push_decimal(&mut expected, digits.as_str(), point);
            assert_eq!(ours, expected, "{value:e}");
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
