//! Turning located JSON values ([`Span`]s) into SQL values, with the semantics of each
//! access form (`->`, `->>`, `json_get_str`, `json_get_int` ...).

use std::borrow::Cow;

use crate::escape::{Policy, unescape_str};
use crate::scanner::{Kind, Span};

/// What an access returns, which decides both its SQL type and how each JSON value maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Output {
    /// `->` / `json_get`: the value as JSON text; absent paths are NULL.
    Json,
    /// `->>` / `json_get_text`: strings unescaped, other scalars and containers as JSON
    /// text, JSON `null` as SQL NULL (PostgreSQL's `->>`).
    Text,
    /// `json_get_str`: strings only; any other type is NULL.
    Str,
    /// `json_get_int`: integer literals that fit in 64 bits; anything else is NULL.
    Int,
    /// `json_get_float`: any number as a double; anything else is NULL.
    Float,
    /// `json_get_bool`: `true`/`false`; anything else is NULL.
    Bool,
    /// `json_array_length` of the value: an array's element count, 0 for any other
    /// value (JSON `null` included); absent paths are NULL. Computed where the value
    /// lies, so a table answers it from a list's offsets without writing the list.
    ArrayLength,
}

#[cfg(feature = "arrow")]
impl Output {
    /// The SQL type of an access with this output.
    pub fn data_type(self) -> arrow::datatypes::DataType {
        use arrow::datatypes::DataType;
        match self {
            Output::Json | Output::Text | Output::Str => DataType::Utf8View,
            Output::Int => DataType::Int64,
            Output::Float => DataType::Float64,
            Output::Bool => DataType::Boolean,
            Output::ArrayLength => DataType::UInt64,
        }
    }
}

/// The text of a value for [`Output::Json`], [`Output::Text`] and [`Output::Str`];
/// `None` for SQL NULL. Borrowed from `doc` unless unescaping was needed.
///
/// `doc` is the scanned document as `str` (scans validate UTF-8 in bulk before they
/// scan), so the text is UTF-8 by construction: the span's bounds are checked with
/// `str::get`, which costs two byte comparisons and never rereads the value. A span
/// that does not lie on `doc`'s character boundaries (one of another document) gives
/// `None`.
#[inline]
pub fn text_of<'a>(doc: &'a str, span: Span, output: Output) -> Option<Cow<'a, str>> {
    let raw = doc.get(span.start as usize..span.end as usize)?;
    let body = || raw.get(1..raw.len().saturating_sub(1));
    Some(match (output, span.kind) {
        (Output::Json, _) => Cow::Borrowed(raw),
        (Output::Text | Output::Str, Kind::String { escaped: false }) => Cow::Borrowed(body()?),
        (Output::Text | Output::Str, Kind::String { escaped: true }) => {
            let body = body()?;
            let mut out = String::with_capacity(body.len());
            unescape_str(body, Policy::Validated, &mut out).ok()?;
            Cow::Owned(out)
        }
        (Output::Text, Kind::Null) => return None,
        (Output::Text, _) => Cow::Borrowed(raw),
        _ => return None,
    })
}

/// The value as a 64-bit integer for [`Output::Int`].
#[inline]
pub fn int_of(doc: &[u8], span: Span) -> Option<i64> {
    match span.kind {
        Kind::Number { integer: true } => parse_i64(span.raw(doc)),
        _ => None,
    }
}

/// The value as a double for [`Output::Float`].
#[inline]
pub fn float_of(doc: &[u8], span: Span) -> Option<f64> {
    match span.kind {
        Kind::Number { integer: true } => parse_i64(span.raw(doc))
            .map(|v| v as f64)
            .or_else(|| std::str::from_utf8(span.raw(doc)).ok()?.parse().ok()),
        Kind::Number { integer: false } => std::str::from_utf8(span.raw(doc)).ok()?.parse().ok(),
        _ => None,
    }
}

/// The element count of an array (0 for any other value) for [`Output::ArrayLength`].
#[inline]
pub fn array_length_of(doc: &[u8], span: Span) -> u64 {
    let mut count = 0;
    if span.kind == Kind::Array {
        crate::scanner::for_each_member(doc, span, |_, _| count += 1);
    }
    count
}

/// The value as a boolean for [`Output::Bool`].
#[inline]
pub fn bool_of(span: Span) -> Option<bool> {
    match span.kind {
        Kind::Bool(b) => Some(b),
        _ => None,
    }
}

/// The PostgreSQL name of a value's JSON type, as `json_typeof` returns it.
pub fn type_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Null => "null",
        Kind::Bool(_) => "boolean",
        Kind::Number { .. } => "number",
        Kind::String { .. } => "string",
        Kind::Object => "object",
        Kind::Array => "array",
    }
}

/// Parses a validated JSON integer literal; `None` when it does not fit in an `i64`.
#[inline]
fn parse_i64(raw: &[u8]) -> Option<i64> {
    let (negative, digits) = match raw.first() {
        Some(b'-') => (true, &raw[1..]),
        _ => (false, raw),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut value: i64 = 0;
    for &d in digits {
        value = value.checked_mul(10)?;
        let digit = (d - b'0') as i64;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::PathTrie;
    use crate::scanner::Scanner;

    fn span_of(doc: &str) -> Span {
        let mut scanner = Scanner::new(std::sync::Arc::new(PathTrie::single(&[])));
        scanner.scan(doc.as_bytes()).unwrap();
        scanner.get(0).unwrap()
    }

    #[test]
    fn text_semantics_follow_postgres() {
        let cases = [
            ("\"a\\\"b\"", Output::Text, Some("a\"b")),
            ("\"a\\\"b\"", Output::Json, Some("\"a\\\"b\"")),
            ("\"plain\"", Output::Str, Some("plain")),
            ("12.50", Output::Text, Some("12.50")),
            ("12", Output::Str, None),
            ("null", Output::Text, None),
            ("null", Output::Json, Some("null")),
            ("{\"k\": [1]}", Output::Text, Some("{\"k\": [1]}")),
            ("true", Output::Text, Some("true")),
        ];
        for (doc, output, expected) in cases {
            let got = text_of(doc, span_of(doc), output);
            assert_eq!(got.as_deref(), expected, "{doc} as {output:?}");
        }
    }

    #[test]
    fn numbers_convert_exactly_or_not_at_all() {
        let int = |d: &str| int_of(d.as_bytes(), span_of(d));
        let float = |d: &str| float_of(d.as_bytes(), span_of(d));
        assert_eq!(int("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(int("9223372036854775807"), Some(i64::MAX));
        assert_eq!(int("9223372036854775808"), None);
        assert_eq!(int("1.0"), None);
        assert_eq!(int("\"1\""), None);
        assert_eq!(float("1e3"), Some(1000.0));
        assert_eq!(float("-0.25"), Some(-0.25));
        assert_eq!(float("18446744073709551616"), Some(18446744073709551616.0));
        assert_eq!(float("true"), None);
        assert_eq!(bool_of(span_of("false")), Some(false));
        assert_eq!(bool_of(span_of("0")), None);
    }

    #[test]
    fn a_span_of_another_document_yields_no_invalid_text() {
        // The body of this span is bytes 1..4; in "é€" (C3 A9 E2 82 AC) neither bound
        // is a character boundary.
        let span = span_of(r#""abc""#);
        let other = "é€";
        for output in [Output::Text, Output::Str] {
            let got = text_of(other, span, output);
            assert!(got.is_none(), "{output:?} of a foreign span");
        }
    }

    #[test]
    fn type_names_match_json_typeof() {
        let names: Vec<_> = ["null", "true", "1", "\"s\"", "{}", "[]"]
            .iter()
            .map(|d| type_name(span_of(d).kind))
            .collect();
        assert_eq!(
            names,
            ["null", "boolean", "number", "string", "object", "array"]
        );
    }
}
