//! Rewriting a document into a canonical or leaner form: keys sorted at every level (so
//! that equal documents written in different orders compare and hash equal as text),
//! and object members whose value is `null` dropped.

use crate::tree::Json;

/// Sorts every object's members by key, byte by byte (`"B"` before `"a"`, `"ä"` after
/// `"z"`), at every level, arrays included. The sort is stable: duplicate keys keep their
/// order.
pub fn sort_keys(value: &mut Json) {
    match value {
        Json::Object(members) => {
            members.sort_by(|(a, _), (b, _)| a.as_bytes().cmp(b.as_bytes()));
            members.iter_mut().for_each(|(_, v)| sort_keys(v));
        }
        Json::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

/// Drops every object member whose value is `null`, at every level. Array elements stay
/// (a `null` element keeps the indexes of the others), and so does a `null` document.
pub fn strip_nulls(value: &mut Json) {
    match value {
        Json::Object(members) => {
            members.retain(|(_, v)| *v != Json::Null);
            members.iter_mut().for_each(|(_, v)| strip_nulls(v));
        }
        Json::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::Tape;

    fn apply(text: &str, f: fn(&mut Json)) -> String {
        let mut value = Json::parse(text.as_bytes(), &mut Tape::default()).unwrap();
        f(&mut value);
        value.to_text()
    }

    #[test]
    fn keys_sort_by_bytes_at_every_level() {
        // Answers of DuckDB 2.0.0's json_normalize.
        for (text, sorted) in [
            (
                r#"{"zzz":3,"äbc":1,"abc":2}"#,
                r#"{"abc":2,"zzz":3,"äbc":1}"#,
            ),
            (r#"{"2":2,"10":10,"1":1}"#, r#"{"1":1,"10":10,"2":2}"#),
            (
                r#"[{"b":[{"d":1,"c":2}],"a":0}]"#,
                r#"[{"a":0,"b":[{"c":2,"d":1}]}]"#,
            ),
            (
                r#"{"b":1,"a":2,"a":3,"a":1,"a":0,"ab":0}"#,
                r#"{"a":2,"a":3,"a":1,"a":0,"ab":0,"b":1}"#,
            ),
            ("null", "null"),
        ] {
            assert_eq!(apply(text, sort_keys), sorted, "{text}");
        }
    }

    #[test]
    fn nulls_go_from_objects_only() {
        // Answers of DuckDB 2.0.0's json_strip_nulls.
        for (text, stripped) in [
            (
                r#"{"a":null,"a":1,"b":[null,{"c":null}]}"#,
                r#"{"a":1,"b":[null,{}]}"#,
            ),
            (r#"{"a":{"b":{"c":null}}}"#, r#"{"a":{"b":{}}}"#),
            ("null", "null"),
            ("[null]", "[null]"),
        ] {
            assert_eq!(apply(text, strip_nulls), stripped, "{text}");
        }
    }
}
