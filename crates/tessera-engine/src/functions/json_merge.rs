//! DuckDB 2.0's functions that merge, compare and tidy whole documents:
//! `json_deep_merge(j, patch, ...)` (a `null` in a patch keeps the value it would
//! replace), `json_merge_patch_diff(old, new)` (the RFC 7396 patch from `old` to `new`),
//! `json_normalize(j)` (keys sorted at every level, as `VARCHAR`) and
//! `json_strip_nulls(j)` (members whose value is `null` dropped at every level).
//!
//! Arguments are JSON text, or values of other types cast to JSON first (as `to_json`
//! writes them); malformed text is an error naming the function and the row.
//! The kernels are `tessera_json::merge` and `tessera_json::normalize`.

use std::sync::{Arc, LazyLock};

use arrow::array::{Array, ArrayRef, StringBuilder};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::logical_expr::scalar_doc_sections::DOC_SECTION_OTHER;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use tessera_json::merge::{deep_merge, merge_patch_diff};
use tessera_json::normalize::{sort_keys, strip_nulls};
use tessera_json::tape::Tape;
use tessera_json::tree::Json;

use super::json_build::{TextColumn, map_rows, parse_json, write_arrow};
use crate::json::json_type::json_field;

/// The functions, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    [
        ("json_deep_merge", Reshape::DeepMerge),
        ("json_merge_patch_diff", Reshape::Diff),
        ("json_normalize", Reshape::Normalize),
        ("json_strip_nulls", Reshape::StripNulls),
    ]
    .into_iter()
    .map(|(name, reshape)| {
        Arc::new(ScalarUDF::from(JsonMerge {
            name,
            reshape,
            signature: Signature::user_defined(Volatility::Immutable),
        }))
    })
    .collect()
}

/// What a function does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Reshape {
    DeepMerge,
    Diff,
    Normalize,
    StripNulls,
}

impl Reshape {
    /// The argument count, and whether more may follow (the deep merge's patches).
    fn arity(self) -> (usize, bool) {
        match self {
            Reshape::DeepMerge => (2, true),
            Reshape::Diff => (2, false),
            Reshape::Normalize | Reshape::StripNulls => (1, false),
        }
    }
}

/// One of the functions; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct JsonMerge {
    name: &'static str,
    reshape: Reshape,
    signature: Signature,
}

static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION_OTHER,
        "Merges, compares and tidies JSON documents as DuckDB does: \
         json_deep_merge(j, patch, ...) (a null in a patch keeps the value), \
         json_merge_patch_diff(old, new) (the RFC 7396 patch from old to new), \
         json_normalize(j) (keys sorted), json_strip_nulls(j) (null members dropped).",
        "json_deep_merge('{\"a\":1,\"b\":2}', '{\"b\":null,\"c\":3}')",
    )
    .build()
});

impl ScalarUDFImpl for JsonMerge {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let (count, variadic) = self.reshape.arity();
        let counted = match variadic {
            true => arg_types.len() >= count,
            false => arg_types.len() == count,
        };
        if !counted {
            let least = if variadic { "at least " } else { "" };
            return plan_err!("{}() takes {least}{count} JSON arguments", self.name);
        }
        // Other types are cast to JSON when invoked (`to_json`'s text), as in DuckDB.
        Ok(arg_types
            .iter()
            .map(|t| match t {
                DataType::Null => DataType::Utf8,
                other => other.clone(),
            })
            .collect())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    /// `JSON`, except `json_normalize`'s `VARCHAR` (DuckDB's types).
    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(match self.reshape {
            Reshape::Normalize => Field::new(self.name, DataType::Utf8, true),
            _ => json_field(self.name),
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let mut tape = crate::json::function_tape();
        let texts = args
            .args
            .iter()
            .map(|arg| as_json_text(arg, &mut tape))
            .collect::<Result<Vec<_>>>()?;
        let args = ScalarFunctionArgs {
            args: texts,
            ..args
        };
        map_rows(&args, |arrays, row, out| {
            let texts = arrays
                .iter()
                .map(|a| Ok(TextColumn::new(self.name, a)?.get(row)))
                .collect::<Result<Vec<_>>>()?;
            let Some(result) = self.apply(&texts, row, &mut tape)? else {
                return Ok(false);
            };
            result.write(out);
            Ok(true)
        })
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}

impl JsonMerge {
    /// Row `row`'s result from its argument texts; `None` is SQL NULL.
    fn apply(&self, texts: &[Option<&str>], row: usize, tape: &mut Tape) -> Result<Option<Json>> {
        if self.reshape == Reshape::DeepMerge {
            return self.deep_merge(texts, row, tape);
        }
        let mut parse = |text: &str| parse_json(self.name, row, text, tape);
        match (self.reshape, texts) {
            (Reshape::Diff, [_, None]) => Ok(None),
            (Reshape::Diff, [None, Some(new)]) => parse(new).map(Some),
            (Reshape::Diff, [Some(old), Some(new)]) => {
                let old = parse(old)?;
                Ok(Some(merge_patch_diff(&old, &parse(new)?)))
            }
            (Reshape::Normalize | Reshape::StripNulls, [Some(text)]) => {
                let mut value = parse(text)?;
                match self.reshape {
                    Reshape::Normalize => sort_keys(&mut value),
                    _ => strip_nulls(&mut value),
                }
                Ok(Some(value))
            }
            _ => Ok(None),
        }
    }

    /// Merges the arguments left to right. A SQL NULL patch makes the merge so far SQL
    /// NULL, and a later patch merged into SQL NULL is that patch as written (DuckDB's
    /// answers: `json_deep_merge('{"a":1}', NULL, '{"c":3}')` is `{"c":3}`).
    fn deep_merge(
        &self,
        texts: &[Option<&str>],
        row: usize,
        tape: &mut Tape,
    ) -> Result<Option<Json>> {
        let mut merged: Option<Json> = None;
        for text in texts {
            let patch = match text {
                Some(text) => Some(parse_json(self.name, row, text, tape)?),
                None => None,
            };
            merged = match (merged, patch) {
                (Some(target), Some(patch)) => Some(deep_merge(target, patch)),
                (_, patch) => patch,
            };
        }
        Ok(merged)
    }
}

/// `value` as JSON text: text as it is (it is read as JSON), any other type written as
/// `to_json` writes it (a struct as an object, a date as a string), NULL kept.
fn as_json_text(value: &ColumnarValue, tape: &mut Tape) -> Result<ColumnarValue> {
    let array = match value {
        ColumnarValue::Array(array) => array.clone(),
        ColumnarValue::Scalar(scalar) => scalar.to_array()?,
    };
    if matches!(
        array.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    ) {
        return Ok(value.clone());
    }
    let mut builder = StringBuilder::with_capacity(array.len(), array.len() * 16);
    let mut text = String::new();
    for row in 0..array.len() {
        if array.is_null(row) {
            builder.append_null();
            continue;
        }
        text.clear();
        write_arrow(array.as_ref(), false, row, &mut text, tape)?;
        builder.append_value(&text);
    }
    let array: ArrayRef = Arc::new(builder.finish());
    Ok(match value {
        ColumnarValue::Array(_) => ColumnarValue::Array(array),
        ColumnarValue::Scalar(_) => ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?),
    })
}
