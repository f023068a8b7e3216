//! The column types of `read_json`, inferred as DuckDB infers them: the sampled records'
//! structures merged by `json_structure`'s kernel, then read as DuckDB's `read_json`
//! reads them (integers `BIGINT`, conflicts `JSON`, ISO dates and timestamps in strings
//! `DATE`/`TIMESTAMP`, nothing typed below `maximum_depth`), written as the structure
//! text `json_transform` takes.
//!
//! Objects whose keys look like data become `MAP(VARCHAR, T)`, by DuckDB's rules: an
//! object whose keys appear in too few of its values (on average, below
//! `field_appearance_threshold`) is a map of its values' merged type, and so is one with
//! at least `map_inference_threshold` keys whose types are alike (on average at least
//! [`SIMILARITY_MIN`] similar to the merged type). A structure holding a map is not one
//! `json_transform` reads: a map is written as the two-element array `[key, value]`
//! (`json_transform`'s arrays hold one element), and [`structure_field`] gives the Arrow
//! field such a structure converts to.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, TimeUnit};
use datafusion::common::{Result, plan_err};
use tessera_json::tree::Json;

use crate::functions::json_structure::Structure;
use crate::json::json_type::json_field;

/// How alike (0 to 1) an object's member types must be, on average, to the merged type
/// of all its members for the object to be a map, as in DuckDB.
pub const SIMILARITY_MIN: f64 = 0.8;

/// Nesting deeper than this is typed `JSON` (each level of a structure is a recursion).
const NESTING_MAX: usize = 256;

/// How strings are typed.
#[derive(Debug, Clone, Copy, Default)]
pub struct StringTypes {
    /// ISO dates and timestamps become `DATE`/`TIMESTAMP`.
    pub dates: bool,
    /// Strings that all hold integers become `BIGINT` (`convert_strings_to_integers`).
    pub integers: bool,
}

/// What inference is asked for.
#[derive(Debug, Clone, Copy)]
pub struct Inference {
    /// Levels typed (`None`: all); below, values stay `JSON` (`maximum_depth`).
    pub depth: Option<usize>,
    /// How strings are typed.
    pub strings: StringTypes,
    /// Objects with at least this many keys of alike types become maps (`None`: no
    /// object becomes a map; DuckDB's `map_inference_threshold`).
    pub map_keys_min: Option<usize>,
    /// Least average share of an object's values holding each of its keys, below which
    /// the object is a map (DuckDB's `field_appearance_threshold`).
    pub appearance_min: f64,
}

/// The structure text (`{"id":"BIGINT","tags":["VARCHAR"]}`) of `values` for
/// `json_transform`, maps written `["VARCHAR", value]`.
pub fn transform_type(values: &[&Json], inference: &Inference) -> Json {
    let structure = values.iter().fold(Structure::Null, |acc, value| {
        acc.merge(Structure::of(value))
    });
    let depth = inference.depth.unwrap_or(NESTING_MAX).min(NESTING_MAX);
    type_of(&structure, values, Some(depth), inference)
}

fn name(n: &str) -> Json {
    Json::String(n.to_string())
}

fn map_of(value: Json) -> Json {
    Json::Array(vec![name("VARCHAR"), value])
}

fn type_of(structure: &Structure, values: &[&Json], depth: Option<usize>, how: &Inference) -> Json {
    if depth == Some(0) {
        return name("JSON");
    }
    let deeper = depth.map(|d| d - 1);
    let strings = how.strings;
    match structure {
        Structure::Null => name("NULL"),
        Structure::Boolean => name("BOOLEAN"),
        Structure::UBigint | Structure::Bigint | Structure::Hugeint => name("BIGINT"),
        Structure::Double => name("DOUBLE"),
        Structure::Varchar if strings.integers && all_integers(values) => name("BIGINT"),
        Structure::Varchar if strings.dates => name(temporal_type(values).unwrap_or("VARCHAR")),
        Structure::Varchar => name("VARCHAR"),
        Structure::Json => name("JSON"),
        // DuckDB's generic container for objects without keys, when maps are inferred.
        Structure::Object(members) if members.is_empty() => match how.map_keys_min {
            Some(_) => map_of(name("JSON")),
            None => name("JSON"),
        },
        Structure::Array(item) => {
            let items: Vec<&Json> = values
                .iter()
                .filter_map(|v| match v {
                    Json::Array(items) => Some(items.iter()),
                    _ => None,
                })
                .flatten()
                .collect();
            Json::Array(vec![type_of(item, &items, deeper, how)])
        }
        Structure::Object(members) => object_type(members, values, depth, how),
    }
}

/// An object's type: a map when its keys appear too rarely or are many and alike, else
/// a struct of its members' types. `depth` is above 0.
fn object_type(
    members: &[(String, Structure)],
    values: &[&Json],
    depth: Option<usize>,
    how: &Inference,
) -> Json {
    let deeper = depth.map(|d| d - 1);
    let Some(keys_min) = how.map_keys_min else {
        return struct_type(members, values, deeper, how);
    };
    // DuckDB types a map's values two levels below the object.
    let merged = || merged_type(members, values, depth.map(|d| d.saturating_sub(2)), how);
    if appearance(members, values) < how.appearance_min {
        return map_of(merged());
    }
    let fields = struct_type(members, values, deeper, how);
    if members.len() < keys_min {
        return fields;
    }
    let Json::Object(children) = &fields else {
        return fields;
    };
    let value = merged();
    let mut total = 0.0;
    for (_, child) in children {
        let alike = similarity(&value, child, deeper);
        if alike < 0.0 {
            return fields;
        }
        total += alike;
    }
    match total / children.len() as f64 >= SIMILARITY_MIN {
        true => map_of(value),
        false => fields,
    }
}

/// The struct of an object's members, each typed from its values.
fn struct_type(
    members: &[(String, Structure)],
    values: &[&Json],
    deeper: Option<usize>,
    how: &Inference,
) -> Json {
    // Each key's values in one pass over the objects (the first of a repeated key).
    let index: HashMap<&str, usize> = members
        .iter()
        .enumerate()
        .rev()
        .map(|(i, (key, _))| (key.as_str(), i))
        .collect();
    let mut at_key: Vec<Vec<&Json>> = vec![Vec::new(); members.len()];
    for value in values {
        let Json::Object(pairs) = value else { continue };
        let mut seen = vec![false; members.len()];
        for (key, member) in pairs {
            if let Some(&i) = index.get(key.as_str())
                && !std::mem::replace(&mut seen[i], true)
            {
                at_key[i].push(member);
            }
        }
    }
    Json::Object(
        members
            .iter()
            .zip(&at_key)
            .map(|((key, member), values)| (key.clone(), type_of(member, values, deeper, how)))
            .collect(),
    )
}

/// The average share of an object's (non-null) values that hold each key: the keys
/// held per object over the keys of all of them.
fn appearance(members: &[(String, Structure)], values: &[&Json]) -> f64 {
    let (mut objects, mut pairs) = (0usize, 0usize);
    for value in values {
        if let Json::Object(members) = value {
            objects += 1;
            pairs += members.len();
        }
    }
    pairs as f64 / objects.max(1) as f64 / members.len() as f64
}

/// The type of all members' values of an object together: a map's value type.
fn merged_type(
    members: &[(String, Structure)],
    values: &[&Json],
    depth: Option<usize>,
    how: &Inference,
) -> Json {
    let structure = members
        .iter()
        .fold(Structure::Null, |acc, (_, s)| acc.merge(s.clone()));
    let all: Vec<&Json> = values
        .iter()
        .filter_map(|v| match v {
            Json::Object(pairs) => Some(pairs.iter().map(|(_, value)| value)),
            _ => None,
        })
        .flatten()
        .collect();
    type_of(&structure, &all, depth, how)
}

/// How alike (0 to 1) `member`'s type is to a map's value type `merged`; negative when
/// a value of `member`'s type cannot be one of `merged`'s (DuckDB's measure: NULL and
/// `JSON` members are alike to anything, structs by the share of keys that are alike).
fn similarity(merged: &Json, member: &Json, depth: Option<usize>) -> f64 {
    let is = |t: &Json, n: &str| matches!(t, Json::String(s) if s == n);
    if depth == Some(0) || is(merged, "NULL") || is(member, "NULL") {
        return 1.0;
    }
    if is(merged, "JSON") {
        return -1.0;
    }
    if is(member, "JSON") || merged == member {
        return 1.0;
    }
    let deeper = depth.map(|d| d - 1);
    match (merged, member) {
        (Json::Object(fields), Json::Object(others)) => {
            let mut total = 0.0;
            for (key, other) in others {
                let Some((_, field)) = fields.iter().find(|(k, _)| k == key) else {
                    return -1.0;
                };
                let alike = similarity(field, other, deeper);
                if alike < 0.0 {
                    return alike;
                }
                total += alike;
            }
            total / fields.len() as f64
        }
        (Json::Object(fields), Json::Array(pair)) if pair.len() == 2 => {
            map_struct_similarity(&pair[1], fields, true, depth)
        }
        (Json::Array(pair), Json::Array(others)) if pair.len() == 2 && others.len() == 2 => {
            similarity(&pair[1], &others[1], deeper)
        }
        (Json::Array(pair), Json::Object(fields)) if pair.len() == 2 => {
            map_struct_similarity(&pair[1], fields, false, depth)
        }
        (Json::Array(item), Json::Array(other)) if item.len() == 1 && other.len() == 1 => {
            similarity(&item[0], &other[0], deeper)
        }
        (Json::Object(_) | Json::Array(_), _) => -1.0,
        // Scalars that differ only in the types strings were read as.
        _ => 1.0,
    }
}

/// How alike a map's value type is to a struct's members, on average.
fn map_struct_similarity(
    value: &Json,
    fields: &[(String, Json)],
    swapped: bool,
    depth: Option<usize>,
) -> f64 {
    let deeper = depth.map(|d| d.saturating_sub(1));
    let mut total = 0.0;
    for (_, field) in fields {
        let alike = match swapped {
            true => similarity(field, value, deeper),
            false => similarity(value, field, deeper),
        };
        if alike < 0.0 {
            return alike;
        }
        total += alike;
    }
    total / fields.len() as f64
}

/// Whether a structure holds a map (which `json_transform` does not read).
pub fn has_map(structure: &Json) -> bool {
    match structure {
        Json::Array(items) => items.len() == 2 || items.iter().any(has_map),
        Json::Object(members) => members.iter().any(|(_, v)| has_map(v)),
        _ => false,
    }
}

/// The Arrow field named `name` an inferred structure converts to.
pub fn structure_field(name: &str, structure: &Json) -> Result<Field> {
    let data_type = match structure {
        Json::String(t) if t == "JSON" => return Ok(json_field(name)),
        Json::String(t) => match t.as_str() {
            "NULL" => DataType::Null,
            "BOOLEAN" => DataType::Boolean,
            "BIGINT" => DataType::Int64,
            "DOUBLE" => DataType::Float64,
            "VARCHAR" => DataType::Utf8,
            "DATE" => DataType::Date32,
            "TIMESTAMP" => DataType::Timestamp(TimeUnit::Microsecond, None),
            other => return plan_err!("read_json: no inferred type is named {other}"),
        },
        Json::Array(items) => match items.as_slice() {
            [item] => DataType::List(Arc::new(structure_field("item", item)?)),
            [key, value] => {
                let pair = Fields::from(vec![
                    structure_field("key", key)?.with_nullable(false),
                    structure_field("value", value)?,
                ]);
                let entries = Field::new("entries", DataType::Struct(pair), false);
                DataType::Map(Arc::new(entries), false)
            }
            _ => return plan_err!("read_json: an inferred list has one item type"),
        },
        Json::Object(members) => DataType::Struct(
            members
                .iter()
                .map(|(k, v)| structure_field(k, v))
                .collect::<Result<Fields>>()?,
        ),
        other => return plan_err!("read_json: no inferred type is {}", other.to_text()),
    };
    Ok(Field::new(name, data_type, true))
}

/// Whether every string holds an integer `BIGINT` reads.
fn all_integers(values: &[&Json]) -> bool {
    values.iter().all(|v| match v {
        Json::String(text) => text.trim().parse::<i64>().is_ok(),
        _ => true,
    })
}

/// `DATE` or `TIMESTAMP` when every string shares one ISO 8601 layout, as DuckDB
/// detects one format for a column (a column mixing `T` and space stays text).
fn temporal_type(values: &[&Json]) -> Option<&'static str> {
    let mut shape: Option<String> = None;
    for value in values {
        let Json::String(text) = value else { continue };
        let this = layout(text);
        match &shape {
            Some(seen) if *seen != this => return None,
            Some(_) => {}
            None => shape = Some(this),
        }
    }
    let shape = shape?;
    if shape == "d-d-d" {
        return Some("DATE");
    }
    let time = shape
        .strip_prefix("d-d-d")
        .and_then(|rest| rest.strip_prefix(['T', ' ']))?;
    let time = time.strip_suffix('Z').unwrap_or(time);
    matches!(time, "d:d:d" | "d:d:d.d").then_some("TIMESTAMP")
}

/// The text with each run of digits written `d`, after checking the ISO digit counts
/// of the date part (4-2-2).
fn layout(text: &str) -> String {
    let digits_ok = text.len() >= 10
        && text.as_bytes()[..10].iter().enumerate().all(|(i, b)| {
            matches!(i, 4 | 7) == (*b == b'-') && (matches!(i, 4 | 7) || b.is_ascii_digit())
        });
    if !digits_ok {
        return String::from("?");
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c.is_ascii_digit() {
            true if out.ends_with('d') => {}
            true => out.push('d'),
            false => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_json::tape::Tape;

    fn infer(lines: &[&str], depth: Option<usize>) -> String {
        let values: Vec<Json> = lines
            .iter()
            .map(|l| Json::parse(l.as_bytes(), &mut Tape::default()).unwrap())
            .collect();
        let refs: Vec<&Json> = values.iter().collect();
        let inference = Inference {
            depth,
            strings: StringTypes {
                dates: true,
                integers: false,
            },
            map_keys_min: Some(200),
            appearance_min: 0.1,
        };
        transform_type(&refs, &inference).to_text()
    }

    #[test]
    fn types_as_duckdb_reads_them() {
        let lines = [
            r#"{"a":1,"b":"x","d":[1,2],"e":{"x":1},"f":"2023-01-02","g":"2023-01-02 10:00:00"}"#,
            r#"{"a":2.5,"b":3,"d":[],"e":{"y":"s"},"f":"2023-01-03","g":"2023-01-02T10:00:00"}"#,
        ];
        assert_eq!(
            infer(&lines, None),
            r#"{"a":"DOUBLE","b":"JSON","d":["BIGINT"],"e":{"x":"BIGINT","y":"VARCHAR"},"f":"DATE","g":"VARCHAR"}"#
        );
        assert_eq!(
            infer(&lines, Some(2)),
            r#"{"a":"DOUBLE","b":"JSON","d":["JSON"],"e":{"x":"JSON","y":"JSON"},"f":"DATE","g":"VARCHAR"}"#
        );
        assert_eq!(infer(&lines, Some(0)), r#""JSON""#);
    }

    #[test]
    fn timestamps_need_one_layout() {
        let same = [
            r#""2023-01-02T10:00:00.5Z""#,
            r#""2024-11-30T01:02:03.123456Z""#,
        ];
        assert_eq!(infer(&same, None), r#""TIMESTAMP""#);
        let not_dates = [r#""2023-1-02""#, r#""20230102""#];
        assert_eq!(infer(&not_dates, None), r#""VARCHAR""#);
    }

    /// Records `{"a": {...}}` whose object holds `keys` keys `k0..`, `per_record` of
    /// them in each record (in turn), each value made by `value`.
    fn keyed_records(
        keys: usize,
        per_record: usize,
        value: impl Fn(usize) -> String,
    ) -> Vec<String> {
        let records = keys.div_ceil(per_record);
        (0..records)
            .map(|r| {
                let members: Vec<String> = (r * per_record..((r + 1) * per_record).min(keys))
                    .map(|k| format!(r#""k{k}":{}"#, value(k)))
                    .collect();
                format!(r#"{{"a":{{{}}}}}"#, members.join(","))
            })
            .collect()
    }

    fn infer_with(lines: &[String], keys_min: Option<usize>, appearance_min: f64) -> String {
        let values: Vec<Json> = lines
            .iter()
            .map(|l| Json::parse(l.as_bytes(), &mut Tape::default()).unwrap())
            .collect();
        let refs: Vec<&Json> = values.iter().collect();
        let inference = Inference {
            depth: None,
            strings: StringTypes::default(),
            map_keys_min: keys_min,
            appearance_min,
        };
        transform_type(&refs, &inference).to_text()
    }

    #[test]
    fn objects_with_many_alike_keys_are_maps() {
        for keys in [3, 9, 10, 11, 40] {
            let lines = keyed_records(keys, keys, |k| k.to_string());
            let got = infer_with(&lines, Some(10), 0.1);
            let is_map = got == r#"{"a":["VARCHAR","BIGINT"]}"#;
            assert_eq!(is_map, keys >= 10, "{keys} keys: {got}");
            assert!(
                !infer_with(&lines, None, 0.1).contains("VARCHAR"),
                "{keys} keys"
            );
        }
        // Members of different kinds are not alike: a struct, however many keys.
        let mixed = keyed_records(40, 40, |k| match k % 2 {
            0 => k.to_string(),
            _ => format!("[{k}]"),
        });
        assert!(infer_with(&mixed, Some(10), 0.1).starts_with(r#"{"a":{"k0":"BIGINT""#));
    }

    #[test]
    fn objects_whose_keys_appear_rarely_are_maps() {
        // Each record holds `per_record` of 30 keys: each key appears in per_record/30
        // of the objects on average.
        for per_record in [1, 2, 3, 4, 10, 30] {
            let lines = keyed_records(30, per_record, |k| format!(r#"{{"b":{k}}}"#));
            let got = infer_with(&lines, Some(1000), 0.1);
            let share = per_record as f64 / 30.0;
            let is_map = got == r#"{"a":["VARCHAR",{"b":"BIGINT"}]}"#;
            assert_eq!(is_map, share < 0.1, "{per_record} per record: {got}");
        }
    }

    #[test]
    fn map_values_are_typed_two_levels_down() {
        let at = |per_record: usize, depth: usize| {
            let lines = keyed_records(20, per_record, |k| k.to_string());
            let values: Vec<Json> = lines
                .iter()
                .map(|l| Json::parse(l.as_bytes(), &mut Tape::default()).unwrap())
                .collect();
            let refs: Vec<&Json> = values.iter().collect();
            let inference = Inference {
                depth: Some(depth),
                strings: StringTypes::default(),
                map_keys_min: Some(10),
                appearance_min: 0.1,
            };
            transform_type(&refs, &inference).to_text()
        };
        // Keys in separate records (a map by appearance): the value is typed two levels
        // below the object, JSON at maximum_depth 3.
        assert_eq!(at(1, 1), r#"{"a":"JSON"}"#);
        assert_eq!(at(1, 3), r#"{"a":["VARCHAR","JSON"]}"#);
        assert_eq!(at(1, 4), r#"{"a":["VARCHAR","BIGINT"]}"#);
        // All keys in one record: JSON values are not alike the members' BIGINT.
        assert!(at(20, 3).starts_with(r#"{"a":{"k0":"BIGINT""#));
        assert_eq!(at(20, 4), r#"{"a":["VARCHAR","BIGINT"]}"#);
        let field = structure_field(
            "a",
            &Json::parse(br#"["VARCHAR",{"b":["DATE"]}]"#, &mut Tape::default()).unwrap(),
        )
        .unwrap();
        assert_eq!(
            crate::json::sql_types::duckdb_type_name(&field),
            "MAP(VARCHAR, STRUCT(b DATE[]))"
        );
    }
}
