//! The tape parser against `serde_json` (arbitrary precision numbers, first value of a
//! key given twice, the same nesting limit): the same documents are accepted, with the
//! same values, except the numbers a table cannot store exactly (integers of more than
//! 38 digits, doubles beyond `f64`), which the tape alone rejects.
#![no_main]

use std::collections::BTreeMap;
use std::fmt;

use libfuzzer_sys::fuzz_target;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use tessera_json::limits::MAX_NESTING;

use tessera_json::canonical::Canonical as J;

/// serde_json's marker key of an arbitrary precision number.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// A value as serde_json reads it, numbers as their text.
enum Oracle {
    Value(J),
    /// A number no Variant type holds exactly.
    Unstorable,
}

struct OracleVisitor;

impl<'de> Deserialize<'de> for Oracle {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(OracleVisitor)
    }
}

fn number(text: &str) -> Oracle {
    let integral = !text.contains(['.', 'e', 'E']);
    let digits = text.trim_start_matches('-').len();
    match integral {
        true if digits > 38 => Oracle::Unstorable,
        true => Oracle::Value(J::Int(text.parse().expect("38 digits fit i128"))),
        false => match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Oracle::Value(J::Float(v.to_bits())),
            _ => Oracle::Unstorable,
        },
    }
}

impl<'de> Visitor<'de> for OracleVisitor {
    type Value = Oracle;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_unit<E>(self) -> Result<Oracle, E> {
        Ok(Oracle::Value(J::Null))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Oracle, E> {
        Ok(Oracle::Value(J::Bool(v)))
    }
    // serde_json hands numbers over as their text (`arbitrary_precision`), except some
    // integers (`{"k\u0041":1}`'s) that arrive as native integers, exact all the same.
    fn visit_i64<E>(self, v: i64) -> Result<Oracle, E> {
        Ok(Oracle::Value(J::Int(i128::from(v))))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Oracle, E> {
        Ok(Oracle::Value(J::Int(i128::from(v))))
    }
    fn visit_str<E>(self, v: &str) -> Result<Oracle, E> {
        Ok(Oracle::Value(J::Str(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Oracle, E> {
        Ok(Oracle::Value(J::Str(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Oracle, A::Error> {
        let mut items = Vec::new();
        let mut unstorable = false;
        while let Some(item) = seq.next_element::<Oracle>()? {
            match item {
                Oracle::Value(v) => items.push(v),
                Oracle::Unstorable => unstorable = true,
            }
        }
        Ok(if unstorable { Oracle::Unstorable } else { Oracle::Value(J::Arr(items)) })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Oracle, A::Error> {
        let mut members = BTreeMap::new();
        let mut unstorable = false;
        let mut first = true;
        while let Some(key) = map.next_key::<String>()? {
            if first && key == NUMBER_TOKEN {
                return Ok(number(&map.next_value::<String>()?));
            }
            first = false;
            match map.next_value::<Oracle>()? {
                Oracle::Value(v) => {
                    members.entry(key).or_insert(v);
                }
                Oracle::Unstorable => unstorable = true,
            }
        }
        Ok(if unstorable { Oracle::Unstorable } else { Oracle::Value(J::Obj(members)) })
    }
}

/// Deepest nesting of arrays and objects outside strings (an upper bound when the text
/// is malformed).
fn nesting(text: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0, false, false);
    for &b in text {
        match (in_string, b) {
            (true, _) if escaped => escaped = false,
            (true, b'\\') => escaped = true,
            (true, b'"') | (false, b'"') => in_string = !in_string,
            (false, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

fuzz_target!(|data: &[u8]| {
    let tape = J::parse(data);
    if nesting(data) > MAX_NESTING {
        assert!(tape.is_err(), "nested deeper than the limit, yet accepted");
        return;
    }
    let mut deserializer = serde_json::Deserializer::from_slice(data);
    deserializer.disable_recursion_limit();
    let oracle = Oracle::deserialize(&mut deserializer).and_then(|v| deserializer.end().map(|()| v));
    match (oracle, tape) {
        (Ok(Oracle::Value(expected)), Ok(got)) => assert_eq!(got, expected),
        (Ok(Oracle::Value(_)), Err(e)) => panic!("serde_json accepts, the tape rejects: {e}"),
        (Ok(Oracle::Unstorable), result) => assert!(result.is_err(), "unstorable number accepted"),
        (Err(e), Ok(got)) => panic!("serde_json rejects ({e}), the tape accepts {got:?}"),
        (Err(_), Err(_)) => {}
    }
});
