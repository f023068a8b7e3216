//! DuckDB's `json_contains(haystack, needle)`: is the JSON value `needle` contained
//! somewhere in `haystack`?
//!
//! A needle is found at a value when it matches there, or below it (in any member or
//! element, at any depth). A needle matches a value: a scalar when they are equal (the
//! same type and value: `1` is not `1.0`, integers compared exactly); an object when
//! every member of the needle matches the value's member of that key (its first
//! occurrence); an array when every element of the needle matches some element of the
//! value. Both documents are parsed by `tessera-json`'s tape.

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanBuilder};
use arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use tessera_json::tape::{Kind, Value};

use super::json::{is_json_text, rowwise};
use super::json_path::texts;

/// `json_contains`, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    vec![Arc::new(ScalarUDF::from(JsonContains {
        signature: Signature::user_defined(Volatility::Immutable),
    }))]
}

/// `json_contains(haystack, needle)`; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct JsonContains {
    signature: Signature,
}

impl ScalarUDFImpl for JsonContains {
    fn name(&self) -> &str {
        "json_contains"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [a, b] if is_json_text(a) && is_json_text(b) => Ok(vec![DataType::Utf8; 2]),
            _ => plan_err!(
                "json_contains(haystack, needle) takes two JSON texts, not {arg_types:?} \
                 (json_exists tests whether a path exists)"
            ),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        rowwise(&args, |n| {
            let haystacks = args.args[0].to_array(n)?;
            let needles = args.args[1].to_array(n)?;
            contains_column(&texts(&haystacks)?, &texts(&needles)?)
        })
    }
}

fn contains_column(haystacks: &[Option<&str>], needles: &[Option<&str>]) -> Result<ArrayRef> {
    let mut out = BooleanBuilder::with_capacity(haystacks.len());
    let mut tape = crate::json::function_tape();
    for (row, (haystack, needle)) in haystacks.iter().zip(needles).enumerate() {
        let (Some(haystack), Some(needle)) = (haystack, needle) else {
            out.append_null();
            continue;
        };
        tape.clear();
        let parsed = [("haystack", haystack), ("needle", needle)].map(|(what, text)| {
            tape.push(text.as_bytes()).map_err(|e| {
                let (line, column) = e.line_column(text.as_bytes());
                format!(
                    "json_contains: malformed JSON {what} in row {}: {} at line {line}, column {column}",
                    row + 1,
                    e.reason
                )
            })
        });
        let [haystack_text, needle_text] = parsed;
        let (haystack_text, needle_text) = match (haystack_text, needle_text) {
            (Ok(h), Ok(n)) => (h, n),
            (Err(e), _) | (_, Err(e)) => return exec_err!("{e}"),
        };
        let haystack = tape.doc(0, haystack_text).root();
        let needle = tape.doc(1, needle_text).root();
        out.append_value(found(haystack, needle));
    }
    Ok(Arc::new(out.finish()))
}

/// Whether `needle` matches `value` or any value below it.
fn found(value: Value, needle: Value) -> bool {
    if matches(value, needle) {
        return true;
    }
    match value.node().kind() {
        Kind::Object => value.members().any(|(_, v)| found(v, needle)),
        Kind::Array => value.elements().any(|v| found(v, needle)),
        _ => false,
    }
}

/// Whether `needle` matches `value` itself (see the module documentation).
fn matches(value: Value, needle: Value) -> bool {
    let (kind, needle_kind) = (value.node().kind(), needle.node().kind());
    match needle_kind {
        Kind::Object => {
            kind == Kind::Object
                && needle.members().all(|(key, n)| {
                    value
                        .members()
                        .find(|(k, _)| k.str() == key.str())
                        .is_some_and(|(_, v)| matches(v, n))
                })
        }
        Kind::Array => {
            kind == Kind::Array
                && needle
                    .elements()
                    .all(|n| value.elements().any(|v| matches(v, n)))
        }
        _ => kind == needle_kind && scalar_equal(value, needle),
    }
}

/// Equality of two scalars of the same kind.
fn scalar_equal(a: Value, b: Value) -> bool {
    match a.node().kind() {
        Kind::Int => a.node().int() == b.node().int(),
        Kind::UInt => a.node().uint() == b.node().uint(),
        Kind::Decimal => a.decimal() == b.decimal(),
        Kind::Float => a.node().float() == b.node().float(),
        Kind::String => a.str() == b.str(),
        _ => true,
    }
}
