//! JSON values as the fuzz targets compare them: integers exact whatever their size,
//! floats by their bits, the integer `-0` as 0, and an object's key given twice with its
//! first value (Tessera's rule for raw scans and tables alike).

use std::collections::BTreeMap;

use tessera_json::tape::{Kind, Tape, Value};

/// A JSON value, compared by value and kind.
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    Int(i128),
    Float(u64),
    Str(String),
    Arr(Vec<J>),
    Obj(BTreeMap<String, J>),
}

/// The value of a tape node.
pub fn from_tape(value: Value<'_>) -> J {
    let node = value.node();
    match node.kind() {
        Kind::Null => J::Null,
        Kind::True => J::Bool(true),
        Kind::False => J::Bool(false),
        Kind::Int => J::Int(i128::from(node.int())),
        Kind::UInt => J::Int(i128::from(node.uint())),
        Kind::Decimal => J::Int(value.decimal()),
        Kind::Float => J::Float(node.float().to_bits()),
        Kind::String | Kind::Key => J::Str(value.str().to_string()),
        Kind::Array => J::Arr(value.elements().map(from_tape).collect()),
        Kind::Object => {
            let mut members = BTreeMap::new();
            for (key, member) in value.members() {
                members
                    .entry(key.str().to_string())
                    .or_insert_with(|| from_tape(member));
            }
            J::Obj(members)
        }
    }
}

/// `text` parsed by the tape, or the tape's error.
pub fn parse_tape(text: &[u8]) -> Result<J, tessera_json::tape::ParseError> {
    let mut tape = Tape::default();
    let text = tape.push(text)?;
    Ok(from_tape(tape.doc(0, text).root()))
}
