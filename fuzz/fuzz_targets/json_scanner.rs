//! The scanner against `serde_json` as the oracle, at both validation levels: the same
//! documents accepted, and for accepted ones every path's value where the oracle finds
//! it (compared as parsed values: strings unescaped, numbers by their text, containers
//! by re-parsing the span).
//!
//! The elements of an array in one pass (`Scanner::scan_elements`) are checked against
//! the same oracle: accepted exactly when the oracle parses an array, each element's
//! span parsing to the oracle's element.
//!
//! Input: optional JSONPaths, one per line, then a NUL byte, then the document; with no
//! NUL the whole input is the document. Like every caller of the scanner, the target
//! checks UTF-8 first.
#![no_main]

use std::fmt;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use tessera_json::{Kind, MAX_NESTING, PathElem, PathTrie, Scanner, Validation, parse_json_path};

/// The paths a run asks for, at most this many.
const PATHS_MAX: usize = 4;

/// The key under which `serde_json` with `arbitrary_precision` hands over a number's text.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// A parsed JSON value; objects keep every member in order (duplicates included).
#[derive(Debug, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The value at `path`, with the scanner's rules: the first of duplicate keys wins,
    /// negative indexes count from the end.
    fn at(&self, path: &[PathElem]) -> Option<&Json> {
        let Some((first, rest)) = path.split_first() else {
            return Some(self);
        };
        let child = match (self, first) {
            (Json::Object(members), PathElem::Key(k)) => {
                members.iter().find(|(key, _)| key == k).map(|(_, v)| v)
            }
            (Json::Array(items), PathElem::Index(i)) => {
                let i = if *i < 0 { items.len() as i64 + i } else { *i };
                usize::try_from(i).ok().and_then(|i| items.get(i))
            }
            _ => None,
        }?;
        child.at(rest)
    }

    /// Whether the scanner's kind describes this value.
    fn has_kind(&self, kind: Kind) -> bool {
        match (self, kind) {
            (Json::Null, Kind::Null) => true,
            (Json::Bool(a), Kind::Bool(b)) => *a == b,
            (Json::Number(text), Kind::Number { integer }) => {
                integer == !text.contains(['.', 'e', 'E'])
            }
            (Json::String(_), Kind::String { .. }) => true,
            (Json::Array(_), Kind::Array) => true,
            (Json::Object(_), Kind::Object) => true,
            _ => false,
        }
    }
}

/// Deserializes a value whose enclosing containers number `depth`.
struct Level(usize);

impl<'de> DeserializeSeed<'de> for Level {
    type Value = Json;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        d.deserialize_any(self)
    }
}

impl Level {
    fn enter<E: Error>(&self) -> Result<Level, E> {
        if self.0 >= MAX_NESTING {
            return Err(E::custom("nesting deeper than MAX_NESTING"));
        }
        Ok(Level(self.0 + 1))
    }
}

impl<'de> Visitor<'de> for Level {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    // Numbers that fit 64 bits come as integers, the others as a map (see
    // NUMBER_TOKEN); both sides of a comparison go through the same conversion.
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.to_string()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.to_string()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_string()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let inner = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Level(inner.0))? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        let mut inner = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == NUMBER_TOKEN && members.is_empty() && inner.is_none() {
                return Ok(Json::Number(map.next_value::<String>()?));
            }
            let level = match inner {
                Some(level) => level,
                None => self.enter()?.0,
            };
            inner = Some(level);
            members.push((key, map.next_value_seed(Level(level))?));
        }
        if inner.is_none() {
            self.enter::<A::Error>()?;
        }
        Ok(Json::Object(members))
    }
}

/// The oracle's parse of `text`: `None` when it is not one JSON document.
fn oracle(text: &str) -> Option<Json> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = Level(0).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}

/// `Scanner::scan_elements` against the oracle's parse of `doc` (`expected`).
fn check_elements(doc: &str, expected: Option<&Json>) {
    let mut scanner = Scanner::new(Arc::new(PathTrie::new()));
    let mut spans = Vec::new();
    let result = scanner.scan_elements(doc.as_bytes(), |span| spans.push(span));
    match (expected, result) {
        (Some(Json::Array(items)), Ok(true)) => {
            assert_eq!(items.len(), spans.len(), "{doc:?}");
            for (item, span) in items.iter().zip(&spans) {
                let raw = std::str::from_utf8(span.raw(doc.as_bytes())).expect("a span on UTF-8");
                assert_eq!(oracle(raw).as_ref(), Some(item), "{doc:?}");
            }
        }
        (Some(Json::Array(_)), other) => panic!("scan_elements on {doc:?}: {other:?}"),
        (None, Ok(true)) => panic!("scan_elements accepts {doc:?}"),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let (paths, doc) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (&data[..nul], &data[nul + 1..]),
        None => (&data[..0], data),
    };
    let Ok(doc) = std::str::from_utf8(doc) else {
        return;
    };
    let paths: Vec<Vec<PathElem>> = String::from_utf8_lossy(paths)
        .lines()
        .filter_map(|p| parse_json_path(p).ok())
        .take(PATHS_MAX)
        .collect();
    let mut trie = PathTrie::new();
    let slots: Vec<_> = paths.iter().map(|p| trie.add(p)).collect();
    let trie = Arc::new(trie);
    let expected = oracle(doc);
    check_elements(doc, expected.as_ref());
    for validation in [Validation::Full, Validation::Structure] {
        let mut scanner = Scanner::new(Arc::clone(&trie)).with_validation(validation);
        let result = scanner.scan(doc.as_bytes());
        let Some(value) = &expected else {
            assert!(result.is_err(), "{validation:?} accepts {doc:?}");
            continue;
        };
        result.unwrap_or_else(|e| panic!("{validation:?} rejects {doc:?}: {e}"));
        for (path, &slot) in paths.iter().zip(&slots) {
            let want = value.at(path);
            let got = scanner.get(slot);
            let (Some(want), Some(span)) = (want, got) else {
                assert!(
                    want.is_none() && got.is_none(),
                    "{path:?} in {doc:?}: {got:?}"
                );
                continue;
            };
            assert!(want.has_kind(span.kind), "{path:?} in {doc:?}: {span:?}");
            let raw = std::str::from_utf8(span.raw(doc.as_bytes())).expect("a span on UTF-8");
            assert_eq!(oracle(raw).as_ref(), Some(want), "{path:?} in {doc:?}");
        }
    }
});
