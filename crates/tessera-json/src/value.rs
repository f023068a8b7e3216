//! Turning located JSON values ([`Span`]s) into SQL values, with the semantics of each
//! access form (`->`, `->>`, `json_get_str`, `json_get_int` ...).

use std::borrow::Cow;

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
        }
    }
}

/// The text of a value for [`Output::Json`], [`Output::Text`] and [`Output::Str`];
/// `None` for SQL NULL. Borrowed from `doc` unless unescaping was needed.
///
/// `doc` must be valid UTF-8 (scans validate it before scanning).
#[inline]
pub fn text_of<'a>(doc: &'a [u8], span: Span, output: Output) -> Option<Cow<'a, str>> {
    let bytes: Cow<'a, [u8]> = match (output, span.kind) {
        (Output::Json, _) => Cow::Borrowed(span.raw(doc)),
        (Output::Text | Output::Str, Kind::String { escaped: false }) => {
            Cow::Borrowed(span.string_body(doc))
        }
        (Output::Text | Output::Str, Kind::String { escaped: true }) => {
            let mut out = Vec::with_capacity(span.string_body(doc).len());
            crate::escape::unescape_into(span.string_body(doc), &mut out);
            Cow::Owned(out)
        }
        (Output::Text, Kind::Null) => return None,
        (Output::Text, _) => Cow::Borrowed(span.raw(doc)),
        _ => return None,
    };
    // SAFETY: the caller validated the document as UTF-8, the span lies on character
    // boundaries (it starts and ends at ASCII delimiters), and unescaping emits UTF-8.
    Some(match bytes {
        Cow::Borrowed(b) => Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(b) }),
        Cow::Owned(b) => Cow::Owned(unsafe { String::from_utf8_unchecked(b) }),
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
            let got = text_of(doc.as_bytes(), span_of(doc), output);
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
