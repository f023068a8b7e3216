//! Casts to DuckDB's `VARIANT` (the type: `json::variant_type`), an analyzer rewrite
//! ([`VariantCasts`]): any value is encoded by `parquet-variant-compute` (text as a
//! string, `JSON` parsed into objects, arrays and numbers; nested values through their
//! JSON). Casts from `VARIANT` to `JSON` decode it (`write_variant_json`).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, ScalarValue, exec_err};
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl,
    Signature, Volatility,
};
use parquet_variant_compute::{cast_to_variant, json_to_variant};

use super::cast_rewrite::{cast_parts, rewritten_to};
use super::json_build::to_json_array;
use crate::json::json_type::is_json;
use crate::json::variant_type::{is_variant, variant_field};

/// Gives casts to `VARIANT` their meaning; see the module documentation.
#[derive(Debug, Default)]
pub struct VariantCasts;

impl FunctionRewrite for VariantCasts {
    fn name(&self) -> &str {
        "variant_casts"
    }

    fn rewrite(
        &self,
        expr: Expr,
        schema: &DFSchema,
        _config: &ConfigOptions,
    ) -> Result<Transformed<Expr>> {
        let Some((inner, target, _)) = cast_parts(&expr) else {
            return Ok(Transformed::no(expr));
        };
        if !is_variant(target) {
            return Ok(Transformed::no(expr));
        }
        let (_, source) = inner.to_field(schema)?;
        if is_variant(&source) {
            return Ok(Transformed::no(expr));
        }
        let udf = ToVariant {
            signature: Signature::any(1, Volatility::Immutable),
        };
        Ok(rewritten_to(udf, vec![inner.clone()]))
    }
}

/// The function a cast to `VARIANT` becomes.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ToVariant {
    signature: Signature,
}

impl ScalarUDFImpl for ToVariant {
    fn name(&self) -> &str {
        "cast_to_variant"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(variant_field("").data_type().clone())
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(variant_field(self.name())))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ([input], [field]) = (args.args.as_slice(), args.arg_fields.as_slice()) else {
            return exec_err!("{} takes one argument", self.name());
        };
        let array = input.to_array(args.number_rows)?;
        // Nested values go through their JSON, which keeps NULL members and items
        // (`parquet-variant-compute` leaves a NULL struct member out).
        let variants = match field.data_type() {
            _ if is_json(field) => json_to_variant(&array)?,
            DataType::Map(..) => {
                let (entries, field) = map_entries(&array)?;
                json_to_variant(&to_json_array(&entries, &field)?)?
            }
            DataType::Struct(_)
            | DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..) => json_to_variant(&to_json_array(&array, field)?)?,
            _ => cast_to_variant(array.as_ref())?,
        };
        let out: ArrayRef = Arc::new(variants.into_inner());
        match input {
            ColumnarValue::Scalar(_) => {
                Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
            }
            ColumnarValue::Array(_) => Ok(ColumnarValue::Array(out)),
        }
    }
}

/// A map as DuckDB makes it a VARIANT: the list of its entries, `{key, value}` objects.
fn map_entries(array: &ArrayRef) -> Result<(ArrayRef, Field)> {
    let map = array.as_map();
    let entries = map.entries().clone();
    let item = Arc::new(Field::new("item", entries.data_type().clone(), false));
    let list = ListArray::try_new(
        Arc::clone(&item),
        map.offsets().clone(),
        Arc::new(entries),
        map.nulls().cloned(),
    )?;
    let field = Field::new("entries", list.data_type().clone(), true);
    Ok((Arc::new(list), field))
}
