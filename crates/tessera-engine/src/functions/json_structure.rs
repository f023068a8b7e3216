//! `json_structure(j)`: the structure of a JSON value as DuckDB 2.0.0 describes it
//! (a JSON text of type names, arrays and objects), with DuckDB's rules for merging the
//! structures of the elements of an array or the values of a repeated key: `NULL`
//! gives way to anything, `UBIGINT` and `BIGINT` make `HUGEINT`, integers and doubles
//! make `DOUBLE`, arrays merge their elements, objects their keys (in order of first
//! appearance), and anything else that differs is `JSON`. An object without keys is
//! `JSON` unless it merges with one that has keys. The same merge serves
//! `json_group_structure` (in `json_aggregate`).

use std::sync::{Arc, LazyLock};

use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::scalar_doc_sections::DOC_SECTION_OTHER;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use tessera_json::tree::{Json, push_string};

use super::json_build::{TextColumn, map_rows, parse_json};
use crate::json::json_type::json_field;

/// `json_structure`, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    vec![Arc::new(ScalarUDF::from(JsonStructure {
        signature: Signature::user_defined(Volatility::Immutable),
    }))]
}

/// The structure of a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Structure {
    /// Only `null` seen.
    Null,
    /// `true` or `false`.
    Boolean,
    /// A non-negative integer.
    UBigint,
    /// A negative integer.
    Bigint,
    /// Both signs seen.
    Hugeint,
    /// A number with a fraction or an exponent, or an integer beyond 64 bits.
    Double,
    /// A string.
    Varchar,
    /// Values whose structures do not merge.
    Json,
    /// An array whose elements have this structure.
    Array(Box<Structure>),
    /// An object's keys, each with the merged structure of its values.
    Object(Vec<(String, Structure)>),
}

impl Structure {
    /// The structure of `value`.
    pub fn of(value: &Json) -> Structure {
        match value {
            Json::Null => Structure::Null,
            Json::Bool(_) => Structure::Boolean,
            Json::Int(v) if *v < 0 => Structure::Bigint,
            Json::Int(_) | Json::UInt(_) => Structure::UBigint,
            Json::BigInt(_) | Json::Float(_) => Structure::Double,
            Json::String(_) => Structure::Varchar,
            Json::Array(items) => Structure::Array(Box::new(
                items
                    .iter()
                    .fold(Structure::Null, |acc, item| acc.merge(Structure::of(item))),
            )),
            Json::Object(members) => {
                let mut out = Structure::Object(Vec::new());
                for (key, value) in members {
                    out = out.merge(Structure::Object(vec![(key.clone(), Structure::of(value))]));
                }
                out
            }
        }
    }

    /// The structure of values of either structure.
    pub fn merge(self, other: Structure) -> Structure {
        use Structure::*;
        match (self, other) {
            (Null, x) | (x, Null) => x,
            (Json, _) | (_, Json) => Json,
            (a, b) if a == b => a,
            (UBigint | Bigint | Hugeint, UBigint | Bigint | Hugeint) => Hugeint,
            (UBigint | Bigint | Hugeint | Double, UBigint | Bigint | Hugeint | Double) => Double,
            (Array(a), Array(b)) => Array(Box::new(a.merge(*b))),
            (Object(mut a), Object(b)) => {
                for (key, value) in b {
                    match a.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, mine)) => *mine = std::mem::replace(mine, Null).merge(value),
                        None => a.push((key, value)),
                    }
                }
                Object(a)
            }
            _ => Json,
        }
    }

    /// The number of type names, arrays and object keys in the structure: what it
    /// costs to hold.
    pub fn node_count(&self) -> usize {
        match self {
            Structure::Array(item) => 1 + item.node_count(),
            Structure::Object(members) => {
                1 + members
                    .iter()
                    .map(|(_, v)| 1 + v.node_count())
                    .sum::<usize>()
            }
            _ => 1,
        }
    }

    /// The structure as DuckDB writes it (an object without keys is `"JSON"`).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, false);
        out
    }

    /// Writes the structure; `exact` keeps an object without keys as `{}` so that
    /// [`Structure::parse`] reads back the same structure (aggregate states need it).
    pub fn write(&self, out: &mut String, exact: bool) {
        match self {
            Structure::Array(item) => {
                out.push('[');
                item.write(out, exact);
                out.push(']');
            }
            Structure::Object(members) if exact || !members.is_empty() => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    push_string(out, key);
                    out.push(':');
                    value.write(out, exact);
                }
                out.push('}');
            }
            scalar => push_string(out, scalar.type_name()),
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Structure::Null => "NULL",
            Structure::Boolean => "BOOLEAN",
            Structure::UBigint => "UBIGINT",
            Structure::Bigint => "BIGINT",
            Structure::Hugeint => "HUGEINT",
            Structure::Double => "DOUBLE",
            Structure::Varchar => "VARCHAR",
            Structure::Json | Structure::Array(_) | Structure::Object(_) => "JSON",
        }
    }

    /// Reads back what [`Structure::write`] wrote; `None` for anything else.
    pub fn parse(value: &Json) -> Option<Structure> {
        Some(match value {
            Json::String(name) => match name.as_str() {
                "NULL" => Structure::Null,
                "BOOLEAN" => Structure::Boolean,
                "UBIGINT" => Structure::UBigint,
                "BIGINT" => Structure::Bigint,
                "HUGEINT" => Structure::Hugeint,
                "DOUBLE" => Structure::Double,
                "VARCHAR" => Structure::Varchar,
                "JSON" => Structure::Json,
                _ => return None,
            },
            Json::Array(items) if items.len() == 1 => {
                Structure::Array(Box::new(Structure::parse(&items[0])?))
            }
            Json::Object(members) => Structure::Object(
                members
                    .iter()
                    .map(|(k, v)| Some((k.clone(), Structure::parse(v)?)))
                    .collect::<Option<_>>()?,
            ),
            _ => return None,
        })
    }
}

/// `json_structure(j)`; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct JsonStructure {
    signature: Signature,
}

static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION_OTHER,
        "The structure of a JSON value as DuckDB describes it: type names, arrays and \
         objects, array elements merged into one structure.",
        "json_structure('[{\"a\": 1}, {\"a\": -1, \"b\": \"x\"}]')",
    )
    .build()
});

impl ScalarUDFImpl for JsonStructure {
    fn name(&self) -> &str {
        "json_structure"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View] => Ok(arg_types.to_vec()),
            [DataType::Null] => Ok(vec![DataType::Utf8]),
            _ => plan_err!("json_structure() takes one JSON text argument"),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(json_field("json_structure")))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let mut tape = crate::json::function_tape();
        map_rows(&args, |arrays, row, out| {
            let Some(text) = TextColumn::new("json_structure", &arrays[0])?.get(row) else {
                return Ok(false);
            };
            let json = parse_json("json_structure", row, text, &mut tape)?;
            Structure::of(&json).write(out, false);
            Ok(true)
        })
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn structure(text: &str) -> String {
        Structure::of(&Json::parse(text.as_bytes(), &mut crate::json::function_tape()).unwrap())
            .to_text()
    }

    #[test]
    fn merges_as_duckdb_does() {
        // Answers of DuckDB 2.0.0's json_structure.
        for (json, out) in [
            ("-1", r#""BIGINT""#),
            ("[1,-1]", r#"["HUGEINT"]"#),
            ("[-1,2.5]", r#"["DOUBLE"]"#),
            ("18446744073709551616", r#""DOUBLE""#),
            ("[null,1]", r#"["UBIGINT"]"#),
            ("[[],[1]]", r#"[["UBIGINT"]]"#),
            ("[{},{\"a\":1}]", r#"[{"a":"UBIGINT"}]"#),
            ("{}", r#""JSON""#),
            ("[]", r#"["NULL"]"#),
            ("[{}]", r#"["JSON"]"#),
            ("[{}, 1]", r#"["JSON"]"#),
            ("[true,\"x\"]", r#"["JSON"]"#),
            (r#"{"a":42,"a":"x"}"#, r#"{"a":"JSON"}"#),
            (r#"[{"a":1},{"A":2}]"#, r#"[{"a":"UBIGINT","A":"UBIGINT"}]"#),
            (r#"[{"a":{"b":1}},{"a":2}]"#, r#"[{"a":"JSON"}]"#),
        ] {
            assert_eq!(structure(json), out, "{json}");
        }
    }

    #[test]
    fn exact_text_reads_back() {
        let mut tape = crate::json::function_tape();
        for json in [
            r#"[{},{"a":[{"b":-1}]}]"#,
            "[{}]",
            r#"{"x":[[null]],"y":true}"#,
        ] {
            let value = Structure::of(&Json::parse(json.as_bytes(), &mut tape).unwrap());
            let mut text = String::new();
            value.write(&mut text, true);
            let back = Json::parse(text.as_bytes(), &mut tape).unwrap();
            assert_eq!(Structure::parse(&back), Some(value), "{json}");
        }
    }
}
