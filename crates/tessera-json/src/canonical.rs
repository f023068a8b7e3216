//! A document's value as an owned tree that compares by meaning: what two parses of one
//! document, or a document and its round trip through a table, must agree on.
//!
//! Integers compare exactly whatever their size (the integer `-0` is 0), floats by their
//! bits (`-0.0` differs from `0.0`), strings by their unescaped text, and object members
//! by key, a key given twice with its first value (Tessera's rule for raw scans and
//! tables alike). Property tests and fuzz targets compare documents through it.

use std::collections::BTreeMap;

use crate::tape::{Kind, ParseError, Tape, Value};

/// A JSON value, compared by value and kind; see the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub enum Canonical {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer literal of up to 38 digits.
    Int(i128),
    /// A number with a fraction or an exponent, by its `f64` bits.
    Float(u64),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<Canonical>),
    /// An object: each key once, with its first value.
    Obj(BTreeMap<String, Canonical>),
}

impl Canonical {
    /// The value of a tape node.
    pub fn of(value: Value<'_>) -> Self {
        let node = value.node();
        match node.kind() {
            Kind::Null => Canonical::Null,
            Kind::True => Canonical::Bool(true),
            Kind::False => Canonical::Bool(false),
            Kind::Int => Canonical::Int(i128::from(node.int())),
            Kind::UInt => Canonical::Int(i128::from(node.uint())),
            Kind::Decimal => Canonical::Int(value.decimal()),
            Kind::Float => Canonical::Float(node.float().to_bits()),
            Kind::String | Kind::Key => Canonical::Str(value.str().to_string()),
            Kind::Array => Canonical::Arr(value.elements().map(Canonical::of).collect()),
            Kind::Object => {
                let mut members = BTreeMap::new();
                for (key, member) in value.members() {
                    members
                        .entry(key.str().to_string())
                        .or_insert_with(|| Canonical::of(member));
                }
                Canonical::Obj(members)
            }
        }
    }

    /// `text` parsed by the tape, or the tape's error.
    pub fn parse(text: &[u8]) -> Result<Self, ParseError> {
        let mut tape = Tape::default();
        let text = tape.push(text)?;
        Ok(Canonical::of(tape.doc(0, text).root()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_by_meaning_not_by_text() {
        let parse = |text: &str| Canonical::parse(text.as_bytes()).unwrap();
        assert_eq!(
            parse(r#"{"b":1,"a":[1.0,"\u0041"]}"#),
            parse(r#"{ "a": [1.0, "A"], "b": 1 }"#)
        );
        assert_eq!(parse(r#"{"a":1,"a":2}"#), parse(r#"{"a":1}"#));
        assert_eq!(parse("-0"), parse("0"));
        assert_ne!(parse("-0.0"), parse("0.0"));
        assert_ne!(parse("1"), parse("1.0"));
        let big = "123456789012345678901234567890";
        assert_eq!(parse(big), Canonical::Int(big.parse().unwrap()));
        assert_ne!(parse(big), parse("123456789012345678901234567891"));
    }
}
