//! Casts to and from an ENUM (`crate::json::enum_type`) with DuckDB's meaning, as an
//! analyzer rewrite ([`EnumCasts`]) of each such cast into the function computing it:
//!
//! - text (or another ENUM's label) to an ENUM keeps a label of the ENUM and refuses
//!   any other text (`TRY_CAST` gives NULL);
//! - JSON to an ENUM takes a JSON string that is a label; JSON `null` is NULL, any
//!   other JSON value is refused;
//! - an ENUM to JSON is its label as a JSON string (`to_json`), not the label read as
//!   JSON text (which the JSON casts would do with text);
//! - other types do not cast to an ENUM, as in DuckDB.
//!
//! It runs before the JSON casts (`super::json_cast`), which would otherwise take an
//! ENUM for text.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl,
    Signature, Volatility,
};
use tessera_json::tree::Json;

use super::cast_rewrite::{cast_parts, rewritten_to};
use super::json_build::{TextColumn, parse_json, to_json};
use crate::json::enum_type::{enum_labels, enum_name};
use crate::json::json_type::is_json;
use crate::json::sql_types::duckdb_type_name;

/// Gives casts to and from ENUM types DuckDB's meaning (see the module documentation).
#[derive(Debug, Default)]
pub struct EnumCasts;

impl FunctionRewrite for EnumCasts {
    fn name(&self) -> &str {
        "enum_casts"
    }

    fn rewrite(
        &self,
        expr: Expr,
        schema: &DFSchema,
        _config: &ConfigOptions,
    ) -> Result<Transformed<Expr>> {
        let Some((inner, target, strict)) = cast_parts(&expr) else {
            return Ok(Transformed::no(expr));
        };
        let (_, source) = inner.to_field(schema)?;
        if enum_name(&source).is_some() && is_json(target) {
            return Ok(Transformed::yes(to_json().call(vec![inner.clone()])));
        }
        let Some(labels) = enum_labels(target) else {
            return Ok(Transformed::no(expr));
        };
        let from_json = match source.data_type() {
            _ if is_json(&source) => true,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => false,
            _ => {
                return plan_err!(
                    "Unimplemented type for cast ({} -> {})",
                    duckdb_type_name(&source),
                    duckdb_type_name(target)
                );
            }
        };
        let udf = EnumCast {
            target: Arc::clone(target),
            labels,
            from_json,
            strict,
            signature: Signature::any(1, Volatility::Immutable),
        };
        Ok(rewritten_to(udf, vec![inner.clone()]))
    }
}

/// The function a cast to an ENUM becomes; `strict` casts fail on a value that is no
/// label, the others (`TRY_CAST`) give NULL.
#[derive(Debug, PartialEq, Eq, Hash)]
struct EnumCast {
    target: FieldRef,
    labels: Vec<String>,
    /// The input is JSON (a label is a JSON string), not text.
    from_json: bool,
    strict: bool,
    signature: Signature,
}

impl EnumCast {
    /// `None` under `TRY_CAST`, the error otherwise.
    fn fail(&self, message: String) -> Result<Option<String>> {
        match self.strict {
            true => exec_err!("{message}"),
            false => Ok(None),
        }
    }

    /// `text` when it is a label, refused otherwise.
    fn label(&self, labels: &HashSet<&str>, text: &str) -> Result<Option<String>> {
        match labels.contains(text) {
            true => Ok(Some(text.to_string())),
            false => self.fail(format!(
                "Could not convert string '{text}' to {}",
                duckdb_type_name(&self.target)
            )),
        }
    }

    /// Each row's JSON value as a label.
    fn labels_from_json(&self, labels: &HashSet<&str>, input: &ArrayRef) -> Result<StringArray> {
        let texts = TextColumn::new(self.name(), input)?;
        let mut tape = crate::json::function_tape();
        (0..input.len())
            .map(|row| {
                let Some(text) = texts.get(row) else {
                    return Ok(None);
                };
                match parse_json(self.name(), row, text, &mut tape) {
                    Ok(Json::Null) => Ok(None),
                    Ok(Json::String(s)) => self.label(labels, &s),
                    Ok(_) => self.fail(format!("Unable to cast '{text}' to ENUM")),
                    Err(e) => match self.strict {
                        true => Err(e),
                        false => Ok(None),
                    },
                }
            })
            .collect()
    }
}

impl ScalarUDFImpl for EnumCast {
    fn name(&self) -> &str {
        "cast_to_enum"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        let field = self.target.as_ref().clone().with_name(self.name());
        Ok(Arc::new(field.with_nullable(true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [input] = args.args.as_slice() else {
            return exec_err!("{} takes one argument", self.name());
        };
        let scalar = matches!(input, ColumnarValue::Scalar(_));
        let input = input.to_array(if scalar { 1 } else { args.number_rows })?;
        let labels: HashSet<&str> = self.labels.iter().map(String::as_str).collect();
        let out = match self.from_json {
            true => self.labels_from_json(&labels, &input)?,
            false => {
                let texts = cast(&input, &DataType::Utf8)?;
                texts
                    .as_string::<i32>()
                    .iter()
                    .map(|text| text.map_or(Ok(None), |t| self.label(&labels, t)))
                    .collect::<Result<StringArray>>()?
            }
        };
        let out: ArrayRef = Arc::new(out);
        match scalar {
            true => Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)),
            false => Ok(ColumnarValue::Array(out)),
        }
    }
}
