//! The column types of `read_json`, inferred as DuckDB infers them: the sampled records'
//! structures merged by `json_structure`'s kernel, then read as DuckDB's `read_json`
//! reads them (integers `BIGINT`, conflicts `JSON`, ISO dates and timestamps in strings
//! `DATE`/`TIMESTAMP`, nothing typed below `maximum_depth`), written as the structure
//! text `json_transform` takes.

use tessera_json::tree::Json;

use crate::functions::json_structure::Structure;

/// How strings are typed.
#[derive(Debug, Clone, Copy, Default)]
pub struct StringTypes {
    /// ISO dates and timestamps become `DATE`/`TIMESTAMP`.
    pub dates: bool,
    /// Strings that all hold integers become `BIGINT` (`convert_strings_to_integers`).
    pub integers: bool,
}

/// The structure text (`{"id":"BIGINT","tags":["VARCHAR"]}`) of `values` for
/// `json_transform`, typed `depth` levels deep (`None`: all the way).
pub fn transform_type(values: &[&Json], depth: Option<usize>, strings: StringTypes) -> Json {
    let structure = values.iter().fold(Structure::Null, |acc, value| {
        acc.merge(Structure::of(value))
    });
    type_of(&structure, values, depth, strings)
}

fn type_of(
    structure: &Structure,
    values: &[&Json],
    depth: Option<usize>,
    dates: StringTypes,
) -> Json {
    let name = |n: &str| Json::String(n.to_string());
    if depth == Some(0) {
        return name("JSON");
    }
    let deeper = depth.map(|d| d - 1);
    match structure {
        Structure::Null => name("NULL"),
        Structure::Boolean => name("BOOLEAN"),
        Structure::UBigint | Structure::Bigint | Structure::Hugeint => name("BIGINT"),
        Structure::Double => name("DOUBLE"),
        Structure::Varchar if dates.integers && all_integers(values) => name("BIGINT"),
        Structure::Varchar if dates.dates => name(temporal_type(values).unwrap_or("VARCHAR")),
        Structure::Varchar => name("VARCHAR"),
        Structure::Json => name("JSON"),
        Structure::Object(members) if members.is_empty() => name("JSON"),
        Structure::Array(item) => {
            let items: Vec<&Json> = values
                .iter()
                .filter_map(|v| match v {
                    Json::Array(items) => Some(items.iter()),
                    _ => None,
                })
                .flatten()
                .collect();
            Json::Array(vec![type_of(item, &items, deeper, dates)])
        }
        Structure::Object(members) => Json::Object(
            members
                .iter()
                .map(|(key, member)| {
                    let at_key: Vec<&Json> = values.iter().filter_map(|v| v.get(key)).collect();
                    (key.clone(), type_of(member, &at_key, deeper, dates))
                })
                .collect(),
        ),
    }
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
        transform_type(
            &refs,
            depth,
            StringTypes {
                dates: true,
                integers: false,
            },
        )
        .to_text()
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
}
