//! Exact conversion between JSON documents and Parquet Variant values.
//!
//! Exact means: JSON -> Variant -> JSON gives the same document up to key order and
//! whitespace, with every number keeping its value and its integer/float kind. Integers
//! take the narrowest Variant integer that holds them; integers beyond `i64` (up to 38
//! digits, see the tape) become scale-0 `Decimal16`s, which print as integers; every
//! other number is a double, printed in Rust's shortest round-trip form with a fraction
//! or exponent so it stays a float. The integer `-0` is the integer 0; the double `-0.0`
//! prints as `-0.0`. Numbers no Variant type holds exactly never get here: the tape
//! rejects them.
//!
//! A key given twice in one object keeps its first value, as raw scans (and DuckDB)
//! read it: a table stores the object normalized to its first occurrences.

use std::fmt::Write as _;

use parquet_variant::Variant;

use tessera_json::tape::{Kind, Tape, Value};
use tessera_json::tree::{push_float, push_integer, push_string};

/// Variant primitive type ids (spec "Value encoding"), shifted into a header byte.
const NULL: u8 = 0;
const TRUE: u8 = 1 << 2;
const FALSE: u8 = 2 << 2;
const INT8: u8 = 3 << 2;
const INT16: u8 = 4 << 2;
const INT32: u8 = 5 << 2;
const INT64: u8 = 6 << 2;
const DOUBLE: u8 = 7 << 2;
const DECIMAL16: u8 = 10 << 2;
const LONG_STRING: u8 = 16 << 2;
/// Basic types in the low two bits of a header byte.
const SHORT_STRING: u8 = 1;
const OBJECT: u8 = 2;
const ARRAY: u8 = 3;
/// Longest string stored with the one-byte short-string header.
const SHORT_STRING_MAX: usize = 63;

/// Bytes needed to store `n` as an unsigned little-endian integer (1 to 4).
fn int_size(n: usize) -> usize {
    match n {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xff_ffff => 3,
        _ => 4,
    }
}

fn push_uint(out: &mut Vec<u8>, value: usize, size: usize) {
    out.extend_from_slice(&(value as u32).to_le_bytes()[..size]);
}

/// Encodes documents of a tape as Variant values, one row at a time: each row's
/// metadata holds exactly the keys of its document, sorted, so equal key sets give
/// equal metadata bytes (which Parquet's dictionary encoding then stores once), and a
/// field id is the key's position among them.
pub struct RowEncoder<'a> {
    tape: &'a Tape,
    /// Per key id, the key's rank among all the tape's keys in byte order.
    rank: Vec<u32>,
    /// Per rank, the key id.
    by_rank: Vec<u32>,
    /// The current row's keys as ranks, sorted and unique: field id = position.
    row: Vec<u32>,
    /// Object members and array elements being encoded, innermost container last:
    /// (field id, tape index of the value, then its offset once written).
    scratch: Vec<(u32, usize)>,
    header: Vec<u8>,
}

impl<'a> RowEncoder<'a> {
    /// An encoder for the documents of `tape`.
    pub fn new(tape: &'a Tape) -> Self {
        let mut by_rank: Vec<u32> = (0..tape.key_count() as u32).collect();
        by_rank.sort_unstable_by_key(|&id| tape.key_name(id));
        let mut rank = vec![0; by_rank.len()];
        for (r, &id) in by_rank.iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        Self {
            tape,
            rank,
            by_rank,
            row: Vec::new(),
            scratch: Vec::new(),
            header: Vec::new(),
        }
    }

    /// Starts a row: its dictionary is the keys (ids) of its document, written to
    /// `metadata`.
    pub fn start_row(&mut self, keys: impl Iterator<Item = u32>, metadata: &mut Vec<u8>) {
        self.row.clear();
        self.row.extend(keys.map(|id| self.rank[id as usize]));
        self.row.sort_unstable();
        self.row.dedup();
        let name = |rank: u32| self.tape.key_name(self.by_rank[rank as usize]);
        let bytes: usize = self.row.iter().map(|&r| name(r).len()).sum();
        let offset_size = int_size(bytes.max(self.row.len()));
        // An empty dictionary is marked unsorted, as arrow-rs writes it.
        let sorted = u8::from(!self.row.is_empty());
        metadata.push(0x01 | (sorted << 4) | (((offset_size - 1) as u8) << 6));
        push_uint(metadata, self.row.len(), offset_size);
        let mut offset = 0;
        push_uint(metadata, 0, offset_size);
        for &r in &self.row {
            offset += name(r).len();
            push_uint(metadata, offset, offset_size);
        }
        for &r in &self.row {
            metadata.extend_from_slice(name(r));
        }
    }

    /// The field id of key `id` in the current row's dictionary.
    fn field_id(&self, id: u32) -> u32 {
        let position = self
            .row
            .binary_search(&self.rank[id as usize])
            .expect("every key of a row is in its dictionary");
        position as u32
    }

    /// Appends the Variant encoding of `value` to `out`.
    pub fn encode(&mut self, value: Value<'a>, out: &mut Vec<u8>) {
        let node = value.node();
        match node.kind() {
            Kind::Null => out.push(NULL),
            Kind::True => out.push(TRUE),
            Kind::False => out.push(FALSE),
            Kind::Int => encode_int(node.int(), out),
            // Beyond i64: a scale-0 decimal, which prints as an integer.
            Kind::UInt => encode_decimal(i128::from(node.uint()), out),
            Kind::Decimal => encode_decimal(value.decimal(), out),
            Kind::Float => {
                out.push(DOUBLE);
                out.extend_from_slice(&node.float().to_le_bytes());
            }
            Kind::String | Kind::Key => encode_str(value.str_bytes(), out),
            Kind::Array => {
                let start = self.scratch.len();
                self.scratch
                    .extend(value.elements().map(|e| (0, e.index())));
                self.encode_container(value, start, None, out);
            }
            Kind::Object => self.encode_object(value.members(), value, out),
        }
    }

    /// Appends an object made of `members` (a subset of `object`'s members, in
    /// document order) to `out`. A key given twice keeps its first value, as raw scans
    /// read it.
    pub fn encode_object(
        &mut self,
        members: impl Iterator<Item = (Value<'a>, Value<'a>)>,
        object: Value<'a>,
        out: &mut Vec<u8>,
    ) {
        let start = self.scratch.len();
        for (key, value) in members {
            let id = self.field_id(key.key_id());
            self.scratch.push((id, value.index()));
        }
        // Stable sort by id (= by key, the dictionary is sorted), then keep the first
        // of each run of equal keys.
        self.scratch[start..].sort_by_key(|&(id, _)| id);
        let mut write = start;
        for read in start..self.scratch.len() {
            let entry = self.scratch[read];
            if write == start || self.scratch[write - 1].0 != entry.0 {
                self.scratch[write] = entry;
                write += 1;
            }
        }
        self.scratch.truncate(write);
        let max_id = self.scratch[start..].iter().map(|&(id, _)| id).max();
        self.encode_container(object, start, Some(max_id.unwrap_or(0)), out);
    }

    /// Writes the values listed in `scratch[start..]` (tape indexes of `container`'s
    /// document), then splices the container header in front of them. `field_ids`
    /// is the largest field id for an object, `None` for an array.
    fn encode_container(
        &mut self,
        container: Value<'a>,
        start: usize,
        max_field_id: Option<u32>,
        out: &mut Vec<u8>,
    ) {
        let data_start = out.len();
        for i in start..self.scratch.len() {
            let index = self.scratch[i].1;
            self.scratch[i].1 = out.len() - data_start;
            self.encode(container.at(index), out);
        }
        let count = self.scratch.len() - start;
        let data_size = out.len() - data_start;
        let offset_size = int_size(data_size);
        let large = count > 0xff;
        self.header.clear();
        match max_field_id {
            Some(max_id) => {
                let id_size = int_size(max_id as usize);
                self.header.push(
                    OBJECT
                        | ((offset_size as u8 - 1) << 2)
                        | ((id_size as u8 - 1) << 4)
                        | (u8::from(large) << 6),
                );
                push_uint(&mut self.header, count, if large { 4 } else { 1 });
                for &(id, _) in &self.scratch[start..] {
                    push_uint(&mut self.header, id as usize, id_size);
                }
            }
            None => {
                self.header
                    .push(ARRAY | ((offset_size as u8 - 1) << 2) | (u8::from(large) << 4));
                push_uint(&mut self.header, count, if large { 4 } else { 1 });
            }
        }
        for &(_, offset) in &self.scratch[start..] {
            push_uint(&mut self.header, offset, offset_size);
        }
        push_uint(&mut self.header, data_size, offset_size);
        self.scratch.truncate(start);
        out.splice(data_start..data_start, self.header.iter().copied());
    }
}

/// An integer in the narrowest Variant integer type that holds it.
fn encode_int(v: i64, out: &mut Vec<u8>) {
    if let Ok(v) = i8::try_from(v) {
        out.push(INT8);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = i16::try_from(v) {
        out.push(INT16);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = i32::try_from(v) {
        out.push(INT32);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        out.push(INT64);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// An integer as a scale-0 `Decimal16`.
fn encode_decimal(v: i128, out: &mut Vec<u8>) {
    out.push(DECIMAL16);
    out.push(0);
    out.extend_from_slice(&v.to_le_bytes());
}

fn encode_str(s: &[u8], out: &mut Vec<u8>) {
    if s.len() <= SHORT_STRING_MAX {
        out.push(SHORT_STRING | ((s.len() as u8) << 2));
    } else {
        out.push(LONG_STRING);
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(s);
}

/// Writes `variant` as JSON text to `out`, as DuckDB writes JSON (the writers of
/// `tessera_json::tree`), so a table answers with the text the raw file gives.
pub fn write_json(variant: &Variant<'_, '_>, out: &mut String) {
    write_json_with(variant, out, &|_, _| false);
}

/// [`write_json`] with a say over scalars: `scalar` is asked first for every value that
/// is not an object or a list and returns whether it wrote it. A SQL `VARIANT` holds
/// types JSON text never produces (dates, decimals with their scale, binaries), which
/// its writer spells as DuckDB does while the walk over objects and lists stays here.
/// Recursion follows the value's nesting, which its encoding bounds (JSON parsed into a
/// Variant is depth-limited by the parser).
pub fn write_json_with(
    variant: &Variant<'_, '_>,
    out: &mut String,
    scalar: &dyn Fn(&Variant<'_, '_>, &mut String) -> bool,
) {
    match variant {
        Variant::Object(object) => {
            out.push('{');
            for (i, (key, value)) in object.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_string(out, key);
                out.push(':');
                write_json_with(&value, out, scalar);
            }
            out.push('}');
        }
        Variant::List(list) => {
            out.push('[');
            for (i, item) in list.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_with(&item, out, scalar);
            }
            out.push(']');
        }
        _ if scalar(variant, out) => {}
        Variant::Null => out.push_str("null"),
        Variant::BooleanTrue => out.push_str("true"),
        Variant::BooleanFalse => out.push_str("false"),
        Variant::Int8(v) => push_integer(out, *v),
        Variant::Int16(v) => push_integer(out, *v),
        Variant::Int32(v) => push_integer(out, *v),
        Variant::Int64(v) => push_integer(out, *v),
        Variant::Decimal4(v) => push_display(out, v),
        Variant::Decimal8(v) => push_display(out, v),
        Variant::Decimal16(v) => push_display(out, v),
        Variant::Float(v) => push_float(out, f64::from(*v)),
        Variant::Double(v) => push_float(out, *v),
        Variant::String(s) => push_string(out, s),
        Variant::ShortString(s) => push_string(out, s.as_str()),
        // Never produced from JSON; rendered as strings so output stays valid JSON.
        other => push_string(out, &format!("{other:?}")),
    }
}

fn push_display(out: &mut String, value: &impl std::fmt::Display) {
    let _ = write!(out, "{value}");
}

/// The Variant metadata and value of one JSON text, as the writer encodes documents.
#[cfg(test)]
pub(crate) fn encoded(json: &str) -> (Vec<u8>, Vec<u8>) {
    let mut tape = Tape::default();
    let text = tape.push(json.as_bytes()).unwrap();
    let doc = tape.doc(0, text);
    let mut encoder = RowEncoder::new(&tape);
    let (mut metadata, mut value) = (Vec::new(), Vec::new());
    encoder.start_row(doc.keys(), &mut metadata);
    encoder.encode(doc.root(), &mut value);
    (metadata, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value as Json;

    fn round_trip(text: &str) -> String {
        let (metadata, bytes) = encoded(text);
        // `try_new` validates the whole encoding, dictionary and object order included.
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
            ("18446744073709551616", "18446744073709551616"),
            ("-9223372036854775809", "-9223372036854775809"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
            ("-99999999999999999999", "-99999999999999999999"),
            (
                "-99999999999999999999999999999999999999",
                "-99999999999999999999999999999999999999",
            ),
            ("-0", "0"),
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
        let back: Json = serde_json::from_str(&round_trip(text)).unwrap();
        assert_eq!(back, serde_json::from_str::<Json>(text).unwrap());
    }

    #[test]
    fn duplicate_keys_keep_the_first_value_and_large_containers_encode() {
        assert_eq!(round_trip(r#"{"b":1,"a":2,"b":3}"#), r#"{"a":2,"b":1}"#);
        assert_eq!(
            round_trip(r#"{"d":{"x":1,"x":2},"d":3}"#),
            r#"{"d":{"x":1}}"#
        );
        let many: Vec<String> = (0..300).map(|i| format!(r#""k{i:03}":{i}"#)).collect();
        let text = format!("{{{}}}", many.join(","));
        let back: Json = serde_json::from_str(&round_trip(&text)).unwrap();
        assert_eq!(back, serde_json::from_str::<Json>(&text).unwrap());
        let long = format!(r#"["{}",{}]"#, "x".repeat(70_000), vec!["1"; 300].join(","));
        let back: Json = serde_json::from_str(&round_trip(&long)).unwrap();
        assert_eq!(back, serde_json::from_str::<Json>(&long).unwrap());
    }
}
