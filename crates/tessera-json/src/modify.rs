//! Changing documents: RFC 7396 merge patches and setting, inserting, replacing or
//! removing the value at a path, with DuckDB's answers on the cases the RFC leaves
//! open (duplicate keys, indexes past the end).

use std::collections::HashSet;

use crate::tree::Json;

/// One step of a modification path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An object member; the first one of a duplicated key.
    Key(String),
    /// An array element; negative counts from the end (`-1` is the last). The index
    /// one past the end names the place an element would be appended.
    Index(i64),
    /// The place after an array's last element (`$[#]`).
    Append,
    /// A JSON Pointer token (RFC 6901): a key of an object; of an array, the element
    /// its canonical decimal digits name, or with `-` the place after the last element.
    /// Where nothing exists yet, it creates an object member.
    Token(String),
}

/// Which of `json_set`, `json_insert` and `json_replace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Replace the value if the path exists, add it if not.
    Set,
    /// Only add a value where the path does not exist.
    Insert,
    /// Only replace a value where the path exists.
    Replace,
}

impl Mode {
    fn replaces(self) -> bool {
        self != Mode::Insert
    }

    fn adds(self) -> bool {
        self != Mode::Replace
    }
}

/// Applies `patch` to `target` as RFC 7396 says: an object patch merges member by
/// member (a `null` member removes the key), anything else replaces the target.
///
/// A patched key is moved to the end of the object and its duplicates in the target
/// are dropped; duplicate keys of the patch are each appended (DuckDB's answers).
pub fn merge_patch(target: Json, patch: Json) -> Json {
    let Json::Object(patch_members) = patch else {
        return patch;
    };
    let target_members = match target {
        Json::Object(members) => members,
        _ => Vec::new(),
    };
    let patched: HashSet<&str> = patch_members.iter().map(|(k, _)| k.as_str()).collect();
    let (replaced, mut out): (Vec<_>, Vec<_>) = target_members
        .into_iter()
        .partition(|(k, _)| patched.contains(k.as_str()));
    for (key, value) in &patch_members {
        if *value == Json::Null {
            continue;
        }
        let base = replaced
            .iter()
            .find(|(k, _)| k == key)
            .map_or(Json::Null, |(_, v)| v.clone());
        out.push((key.clone(), merge_patch(base, value.clone())));
    }
    Json::Object(out)
}

/// [`merge_patch`] of a whole document as DuckDB's `json_merge_patch` applies it: a
/// document that is not an object is replaced by the patch as written, `null` members
/// included (RFC 7396 would drop them); below the top level the RFC holds.
pub fn merge_patch_document(target: Json, patch: Json) -> Json {
    match target {
        Json::Object(_) => merge_patch(target, patch),
        _ => patch,
    }
}

/// Sets, inserts or replaces (per `mode`) the value at `path` of `root`. Missing
/// object members on the way are created when `mode` adds values; a path through a
/// scalar, or an index beyond the end, changes nothing.
pub fn set_path(root: &mut Json, path: &[Step], value: &Json, mode: Mode) {
    let Some((step, rest)) = path.split_first() else {
        if mode.replaces() {
            *root = value.clone();
        }
        return;
    };
    match (root, step) {
        (Json::Object(members), Step::Key(key) | Step::Token(key)) => {
            let Some(first) = members.iter().position(|(k, _)| k == key) else {
                if mode.adds()
                    && let Some(fresh) = fresh(rest, value)
                {
                    members.push((key.clone(), fresh));
                }
                return;
            };
            if !rest.is_empty() {
                return set_path(&mut members[first].1, rest, value, mode);
            }
            if mode.replaces() {
                members[first].1 = value.clone();
                // The key now has one value: its later duplicates go.
                let mut seen = 0usize;
                members.retain(|(k, _)| {
                    seen += usize::from(k == key);
                    k != key || seen == 1
                });
            }
        }
        (Json::Array(items), Step::Index(_) | Step::Append | Step::Token(_)) => {
            match element(items.len(), step) {
                Some(at) if at < items.len() => set_path(&mut items[at], rest, value, mode),
                Some(_) if mode.adds() => items.extend(fresh(rest, value)),
                _ => {}
            }
        }
        _ => {}
    }
}

/// Removes the value at `path` (every member of a duplicated key); returns false when
/// `path` is empty, since the root itself cannot be removed from its document.
pub fn remove_path(root: &mut Json, path: &[Step]) -> bool {
    let Some((step, rest)) = path.split_first() else {
        return false;
    };
    match (root, step) {
        (Json::Object(members), Step::Key(key) | Step::Token(key)) if rest.is_empty() => {
            members.retain(|(k, _)| k != key);
        }
        (Json::Object(members), Step::Key(key) | Step::Token(key)) => {
            if let Some((_, child)) = members.iter_mut().find(|(k, _)| k == key) {
                remove_path(child, rest);
            }
        }
        (Json::Array(items), Step::Index(_) | Step::Token(_)) => match element(items.len(), step) {
            Some(at) if at < items.len() && rest.is_empty() => {
                items.remove(at);
            }
            Some(at) if at < items.len() => {
                remove_path(&mut items[at], rest);
            }
            _ => {}
        },
        _ => {}
    }
    true
}

/// Where `step` points in an array of `len` elements: an element, `len` (the place
/// to append), or nowhere.
fn element(len: usize, step: &Step) -> Option<usize> {
    match step {
        Step::Append => Some(len),
        Step::Index(i) if *i >= 0 => usize::try_from(*i).ok().filter(|&at| at <= len),
        Step::Index(i) => len.checked_sub(usize::try_from(i.unsigned_abs()).ok()?),
        Step::Token(token) if token == "-" => Some(len),
        Step::Token(token) => {
            let canonical = token == "0"
                || (!token.starts_with('0') && token.bytes().all(|b| b.is_ascii_digit()));
            token.parse().ok().filter(|&at| canonical && at <= len)
        }
        Step::Key(_) => None,
    }
}

/// The value to add where `path` leads from a place that does not exist yet: objects
/// for keys, one-element arrays for the first index; `None` when the path cannot be
/// created (a later index of an empty array).
fn fresh(path: &[Step], value: &Json) -> Option<Json> {
    let Some((step, rest)) = path.split_first() else {
        return Some(value.clone());
    };
    match step {
        Step::Key(key) | Step::Token(key) => {
            Some(Json::Object(vec![(key.clone(), fresh(rest, value)?)]))
        }
        Step::Index(0) | Step::Append => Some(Json::Array(vec![fresh(rest, value)?])),
        Step::Index(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::Tape;

    fn json(text: &str) -> Json {
        Json::parse(text.as_bytes(), &mut Tape::default()).unwrap()
    }

    fn path(text: &str) -> Vec<Step> {
        text.split('.')
            .filter(|s| !s.is_empty())
            .map(|s| match s {
                "#" => Step::Append,
                s => s.parse().map_or(Step::Key(s.to_string()), Step::Index),
            })
            .collect()
    }

    fn set(doc: &str, at: &str, value: &str, mode: Mode) -> String {
        let mut doc = json(doc);
        set_path(&mut doc, &path(at), &json(value), mode);
        doc.to_text()
    }

    #[test]
    fn merge_patch_follows_rfc_7396_and_duckdb_on_duplicates() {
        // Answers of DuckDB 2.0.0's json_merge_patch.
        for (target, patch, merged) in [
            (r#"{"a":1}"#, r#"{"a":null,"b":{"c":null}}"#, r#"{"b":{}}"#),
            (r#"{"a":1,"b":2}"#, r#"{"a":3}"#, r#"{"b":2,"a":3}"#),
            (
                r#"{"a":1,"b":2,"a":5}"#,
                r#"{"b":3}"#,
                r#"{"a":1,"a":5,"b":3}"#,
            ),
            (
                r#"{"a":{"x":1},"b":2}"#,
                r#"{"a":{"y":1}}"#,
                r#"{"b":2,"a":{"x":1,"y":1}}"#,
            ),
            (r#"{"b":2}"#, r#"{"a":1,"a":2}"#, r#"{"b":2,"a":1,"a":2}"#),
            ("[1]", r#"{"a":1}"#, r#"{"a":1}"#),
            (r#"{"a":1}"#, "[1]", "[1]"),
            ("{}", "null", "null"),
            (
                r#"{"x":2}"#,
                r#"{"x":{"a":null,"b":{"c":null}}}"#,
                r#"{"x":{"b":{}}}"#,
            ),
        ] {
            assert_eq!(merge_patch(json(target), json(patch)).to_text(), merged);
        }
        let patch = r#"{"a":null,"b":{"c":null}}"#;
        for target in ["1", "[1]", "null"] {
            assert_eq!(
                merge_patch_document(json(target), json(patch)).to_text(),
                patch
            );
        }
    }

    #[test]
    fn set_insert_and_replace_differ_only_in_what_they_may_do() {
        // Answers of DuckDB 2.0.0's json_set, json_insert and json_replace.
        use Mode::*;
        for (doc, at, mode, out) in [
            (
                r#"{"b":1,"a":1,"c":2,"a":2}"#,
                "a",
                Set,
                r#"{"b":1,"a":3,"c":2}"#,
            ),
            (r#"{"a":1,"a":2}"#, "a", Insert, r#"{"a":1,"a":2}"#),
            ("{}", "a.b.c", Set, r#"{"a":{"b":{"c":3}}}"#),
            ("{}", "a.b", Replace, "{}"),
            ("{}", "a.0", Set, r#"{"a":[3]}"#),
            ("{}", "a.2", Set, "{}"),
            ("[]", "0.x", Set, r#"[{"x":3}]"#),
            ("[1,2]", "2", Insert, "[1,2,3]"),
            ("[1,2]", "5", Set, "[1,2]"),
            ("[1,2]", "#", Replace, "[1,2]"),
            ("[1,2]", "-1", Set, "[1,3]"),
            ("[1,2]", "-3", Set, "[1,2]"),
            (r#"{"a":5}"#, "a.b", Set, r#"{"a":5}"#),
            (r#"{"a":1}"#, "", Insert, r#"{"a":1}"#),
            (r#"{"a":1}"#, "", Replace, "3"),
        ] {
            assert_eq!(set(doc, at, "3", mode), out, "{doc} {at} {mode:?}");
        }
    }

    #[test]
    fn pointer_tokens_index_arrays_and_name_keys() {
        // Answers of DuckDB 2.0.0's json_set and json_remove on JSON Pointer paths.
        let tokens = |text: &str| -> Vec<Step> {
            text.split('/')
                .map(|t| Step::Token(t.to_string()))
                .collect()
        };
        for (doc, at, out) in [
            ("{}", "a/0", r#"{"a":{"0":1}}"#),
            (r#"{"a":[]}"#, "a/0", r#"{"a":[1]}"#),
            ("[]", "0/b", r#"[{"b":1}]"#),
            ("[1,2]", "01", "[1,2]"),
            ("{}", "-", r#"{"-":1}"#),
            ("[1]", "-/x", r#"[1,{"x":1}]"#),
            ("[]", "-/-", r#"[{"-":1}]"#),
            (r#"{"0":5}"#, "0", r#"{"0":1}"#),
        ] {
            let mut value = json(doc);
            set_path(&mut value, &tokens(at), &json("1"), Mode::Set);
            assert_eq!(value.to_text(), out, "{doc} {at}");
        }
        for (doc, at, out) in [
            ("[1,2]", "-", "[1,2]"),
            (r#"{"1":2}"#, "1", "{}"),
            ("[1,2]", "1", "[1]"),
        ] {
            let mut value = json(doc);
            remove_path(&mut value, &tokens(at));
            assert_eq!(value.to_text(), out, "{doc} {at}");
        }
    }

    #[test]
    fn remove_drops_every_duplicate_and_ignores_missing_paths() {
        for (doc, at, out) in [
            (r#"{"a":1,"a":2}"#, "a", "{}"),
            ("[1,2,3]", "-1", "[1,2]"),
            ("[1,2,3]", "#", "[1,2,3]"),
            (r#"{"a":[1,[2,3],4]}"#, "a.1.0", r#"{"a":[1,[3],4]}"#),
            ("[1,2]", "5", "[1,2]"),
            ("1", "a", "1"),
        ] {
            let mut value = json(doc);
            assert!(remove_path(&mut value, &path(at)));
            assert_eq!(value.to_text(), out, "{doc} {at}");
        }
        assert!(!remove_path(&mut json("{}"), &[]));
    }
}
