//! Merging and diffing documents beyond RFC 7396 (`modify::merge_patch`): DuckDB's
//! coalescing deep merge, where a `null` in the patch means "unknown" and keeps the
//! target's value, and the merge patch that turns one document into another.
//!
//! Duplicate keys get DuckDB 2.0.0's answers: a lookup by key takes the first member of
//! that name, and every member is still carried to the output.

use std::collections::{HashMap, HashSet};

use crate::tree::Json;

/// Merges `patch` into `target`: objects merge member by member, recursively; a `null`
/// patch (or patch member) keeps the target's value; any other patch replaces the target
/// (so arrays are replaced, not concatenated).
///
/// Target members the patch names with a value other than `null` move to the end, in
/// the patch's order, as DuckDB's `json_deep_merge` writes them.
pub fn deep_merge(target: Json, patch: Json) -> Json {
    match (target, patch) {
        (target, Json::Null) => target,
        (Json::Object(target), Json::Object(patch)) => merge_objects(target, patch),
        (_, patch) => patch,
    }
}

fn merge_objects(target: Vec<(String, Json)>, patch: Vec<(String, Json)>) -> Json {
    let patched = first_values(&patch);
    // Each patch member that is not `null` merges into the target's first member of
    // its key, even where the patch's first member of that key is `null`.
    let merging: HashSet<&str> = patch
        .iter()
        .filter(|(_, v)| *v != Json::Null)
        .map(|(k, _)| k.as_str())
        .collect();
    let mut bases: HashMap<String, Json> = HashMap::new();
    for (key, value) in &target {
        if merging.contains(key.as_str()) && !bases.contains_key(key) {
            bases.insert(key.clone(), value.clone());
        }
    }
    let mut out = Vec::with_capacity(target.len() + patch.len());
    for (key, value) in target {
        if matches!(patched.get(key.as_str()), Some(Json::Null) | None) {
            out.push((key, value));
        }
    }
    for (key, value) in patch {
        if value == Json::Null {
            continue;
        }
        // A target member absent merges like `null`: the patch value as written, its
        // `null` members included.
        let base = bases.get(&key).cloned().unwrap_or(Json::Null);
        out.push((key, deep_merge(base, value)));
    }
    Json::Object(out)
}

/// The merge patch (RFC 7396) that turns `old` into `new`: for two objects, the members
/// that changed (removed ones as `null`, `{}` when nothing did); for anything else,
/// `new` itself.
pub fn merge_patch_diff(old: &Json, new: &Json) -> Json {
    match (old, new) {
        (Json::Object(old), Json::Object(new)) => {
            diff_objects(old, new).unwrap_or(Json::Object(Vec::new()))
        }
        _ => new.clone(),
    }
}

/// The patch from `old` to `new` below the top level; `None` when they are the same.
fn diff(old: &Json, new: &Json) -> Option<Json> {
    match (old, new) {
        (Json::Object(old), Json::Object(new)) => diff_objects(old, new),
        _ if equal(old, new) => None,
        _ => Some(new.clone()),
    }
}

fn diff_objects(old: &[(String, Json)], new: &[(String, Json)]) -> Option<Json> {
    let old_values = first_values(old);
    let new_keys: HashSet<&str> = new.iter().map(|(k, _)| k.as_str()).collect();
    let mut out: Vec<(String, Json)> = old
        .iter()
        .filter(|(k, _)| !new_keys.contains(k.as_str()))
        .map(|(k, _)| (k.clone(), Json::Null))
        .collect();
    for (key, value) in new {
        let change = match old_values.get(key.as_str()) {
            None => Some(value.clone()),
            Some(before) => diff(before, value),
        };
        out.extend(change.map(|change| (key.clone(), change)));
    }
    (!out.is_empty()).then_some(Json::Object(out))
}

/// The first value of each key of an object's members.
fn first_values(members: &[(String, Json)]) -> HashMap<&str, &Json> {
    let mut out = HashMap::with_capacity(members.len());
    for (key, value) in members {
        out.entry(key.as_str()).or_insert(value);
    }
    out
}

/// Whether two values are the same as DuckDB's diff compares them: numbers of the same
/// kind and value (`1` is not `1.0`; doubles bit for bit, so `-0.0` is not `0.0`),
/// strings byte for byte, arrays element by element, objects of the same size whose
/// members match by key in any order.
///
/// An object's members are matched as DuckDB matches them: each key is looked up from
/// just after the previous match, wrapping around, so duplicate keys pair in order.
pub fn equal(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Float(x), Json::Float(y)) => x.to_bits() == y.to_bits(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal(x, y))
        }
        (Json::Object(x), Json::Object(y)) => x.len() == y.len() && members_equal(x, y),
        (Json::Null, Json::Null) => true,
        (Json::Bool(x), Json::Bool(y)) => x == y,
        (Json::Int(x), Json::Int(y)) => x == y,
        (Json::UInt(x), Json::UInt(y)) => x == y,
        (Json::BigInt(x), Json::BigInt(y)) => x == y,
        (Json::String(x), Json::String(y)) => x == y,
        _ => false,
    }
}

fn members_equal(x: &[(String, Json)], y: &[(String, Json)]) -> bool {
    let mut cursor = 0;
    for (key, value) in x {
        let found = (cursor..y.len())
            .chain(0..cursor)
            .find(|&at| y[at].0 == *key);
        let Some(at) = found else {
            return false;
        };
        if !equal(value, &y[at].1) {
            return false;
        }
        cursor = at + 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::Tape;

    fn json(text: &str) -> Json {
        Json::parse(text.as_bytes(), &mut Tape::default()).unwrap()
    }

    #[test]
    fn deep_merge_keeps_values_a_null_patch_leaves_unknown() {
        // Answers of DuckDB 2.0.0's json_deep_merge.
        for (target, patch, merged) in [
            (r#"{"a":1,"b":2}"#, r#"{"b":null}"#, r#"{"a":1,"b":2}"#),
            (
                r#"{"a":1,"b":2}"#,
                r#"{"a":3,"c":4}"#,
                r#"{"b":2,"a":3,"c":4}"#,
            ),
            (
                r#"{"a":{"x":1}}"#,
                r#"{"a":{"x":null,"y":2}}"#,
                r#"{"a":{"x":1,"y":2}}"#,
            ),
            ("42", r#"{"a":1,"b":null}"#, r#"{"a":1,"b":null}"#),
            (r#"{"a":1}"#, r#"{"a":{"b":null}}"#, r#"{"a":{"b":null}}"#),
            ("[1,2]", "null", "[1,2]"),
            ("null", "null", "null"),
            (r#"{"a":1,"a":2}"#, r#"{"a":null}"#, r#"{"a":1,"a":2}"#),
            (r#"{"a":1}"#, r#"{"a":3,"a":2}"#, r#"{"a":3,"a":2}"#),
            (
                r#"{"a":{"x":1},"a":2}"#,
                r#"{"a":{"y":1}}"#,
                r#"{"a":{"x":1,"y":1}}"#,
            ),
            (
                r#"{"a":{"x":1}}"#,
                r#"{"a":null,"a":{"y":2}}"#,
                r#"{"a":{"x":1},"a":{"x":1,"y":2}}"#,
            ),
        ] {
            let out = deep_merge(json(target), json(patch)).to_text();
            assert_eq!(out, merged, "{target} {patch}");
        }
    }

    #[test]
    fn diff_is_the_smallest_merge_patch() {
        // Answers of DuckDB 2.0.0's json_merge_patch_diff.
        for (old, new, patch) in [
            (
                r#"{"a":1,"b":2,"c":3}"#,
                r#"{"a":1,"b":99,"d":4}"#,
                r#"{"c":null,"b":99,"d":4}"#,
            ),
            (r#"{"a":1,"b":2}"#, r#"{"b":2,"a":1}"#, "{}"),
            (r#"{"x":{"a":1}}"#, r#"{"x":{}}"#, r#"{"x":{"a":null}}"#),
            ("[1]", "[1]", "[1]"),
            (r#"{"x":1}"#, r#"{"x":1.0}"#, r#"{"x":1.0}"#),
            (r#"{"x":-0.0}"#, r#"{"x":0.0}"#, r#"{"x":0.0}"#),
            (r#"{"x":[{"a":1,"b":2}]}"#, r#"{"x":[{"b":2,"a":1}]}"#, "{}"),
            (
                r#"{"x":[{"a":1,"a":1}]}"#,
                r#"{"x":[{"a":1,"a":2}]}"#,
                r#"{"x":[{"a":1,"a":2}]}"#,
            ),
            (
                r#"{"x":[{"a":1,"a":2}]}"#,
                r#"{"x":[{"a":1,"a":1}]}"#,
                r#"{"x":[{"a":1,"a":1}]}"#,
            ),
            (
                r#"{"a":1,"a":3}"#,
                r#"{"b":1}"#,
                r#"{"a":null,"a":null,"b":1}"#,
            ),
            // Found by the json_merge fuzz target: a duplicate is compared with the
            // first member of its name, so a document differs from itself.
            (
                r#"{"c":null,"c":""}"#,
                r#"{"c":null,"c":""}"#,
                r#"{"c":""}"#,
            ),
            (
                r#"{"x":{"a":1,"a":1}}"#,
                r#"{"x":{"a":1,"a":2}}"#,
                r#"{"x":{"a":2}}"#,
            ),
        ] {
            let out = merge_patch_diff(&json(old), &json(new)).to_text();
            assert_eq!(out, patch, "{old} {new}");
        }
    }
}
