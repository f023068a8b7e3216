//! DuckDB's `VARIANT`: a value of any type, self-described. Planned as Arrow's canonical
//! Parquet Variant extension type (`arrow.parquet.variant`: a struct of the Variant
//! binary's metadata and value), the encoding Tessera's tables already store, so a
//! VARIANT column reads and writes as the tiles crate's Variant columns do.
//!
//! Casts ([`VariantCasts`], an analyzer rewrite): any value to `VARIANT` is encoded by
//! `parquet-variant-compute` (text as a string, `JSON` parsed into objects, arrays and
//! numbers); `VARIANT` to `JSON` (and under `to_json`, `json_array`, `json_object`) is
//! decoded ([`write_variant_json`]) with the layout `to_json` gives the same values
//! (numbers as DuckDB writes them, dates and times as strings).

use std::collections::HashMap;
use std::fmt::Write as _;

use chrono::Timelike;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray};
use arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, ScalarValue, exec_err};
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use parquet_variant::Variant;
use parquet_variant_compute::{VariantArray, cast_to_variant, json_to_variant};
use tessera_json::tree::{push_float, push_string};

use super::json_type::is_json;
use crate::functions::json_build::to_json_array;

/// The name of Arrow's canonical Parquet Variant extension type.
pub const VARIANT_EXTENSION_NAME: &str = "arrow.parquet.variant";
/// The field metadata key naming an Arrow extension type.
const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
/// The field metadata key of an extension type's parameters (none for Variant).
const EXTENSION_METADATA_KEY: &str = "ARROW:extension:metadata";

/// A nullable field `name` of SQL type `VARIANT`: the struct of binaries that
/// `parquet-variant-compute` builds, marked `arrow.parquet.variant`.
pub fn variant_field(name: &str) -> Field {
    let binaries = Fields::from(vec![
        Field::new("metadata", DataType::BinaryView, false),
        Field::new("value", DataType::BinaryView, false),
    ]);
    Field::new(name, DataType::Struct(binaries), true).with_metadata(HashMap::from([
        (
            EXTENSION_NAME_KEY.to_string(),
            VARIANT_EXTENSION_NAME.to_string(),
        ),
        (EXTENSION_METADATA_KEY.to_string(), String::new()),
    ]))
}

/// Whether `field` holds SQL `VARIANT`: marked `arrow.parquet.variant`, or (where
/// DataFusion dropped the mark: `make_array` rebuilds its item field) exactly the struct
/// of two non-null binary views [`variant_field`] plans, which no other SQL type is.
pub fn is_variant(field: &Field) -> bool {
    let marked = field
        .metadata()
        .get(EXTENSION_NAME_KEY)
        .is_some_and(|name| name == VARIANT_EXTENSION_NAME);
    match field.data_type() {
        DataType::Struct(_) if marked => true,
        DataType::Struct(members) => {
            let planned = variant_field("");
            let DataType::Struct(binaries) = planned.data_type() else {
                return false;
            };
            members == binaries
        }
        _ => false,
    }
}

/// Row `row` of the Variant column `array` as JSON text, appended to `out`; `null` for
/// a NULL row.
pub fn write_variant_json(array: &dyn Array, row: usize, out: &mut String) -> Result<()> {
    let variants = VariantArray::try_new(array)?;
    match variants.is_null(row) {
        true => out.push_str("null"),
        false => write_json(&variants.try_value(row)?, out),
    }
    Ok(())
}

/// Appends `variant` as JSON. Recursion follows the value's nesting, which its
/// encoding bounds (JSON parsed into a Variant is depth-limited by the parser).
fn write_json(variant: &Variant<'_, '_>, out: &mut String) {
    let shown = |out: &mut String, value: &dyn std::fmt::Display| {
        let _ = write!(out, "{value}");
    };
    match variant {
        Variant::Null => out.push_str("null"),
        Variant::BooleanTrue => out.push_str("true"),
        Variant::BooleanFalse => out.push_str("false"),
        Variant::Int8(v) => shown(out, v),
        Variant::Int16(v) => shown(out, v),
        Variant::Int32(v) => shown(out, v),
        Variant::Int64(v) => shown(out, v),
        Variant::Decimal4(v) => push_decimal(out, i128::from(v.integer()), v.scale()),
        Variant::Decimal8(v) => push_decimal(out, i128::from(v.integer()), v.scale()),
        Variant::Decimal16(v) => push_decimal(out, v.integer(), v.scale()),
        Variant::Float(v) => push_float(out, f64::from(*v)),
        Variant::Double(v) => push_float(out, *v),
        Variant::String(s) => push_string(out, s),
        Variant::ShortString(s) => push_string(out, s.as_str()),
        Variant::Date(d) => push_string(out, &d.to_string()),
        Variant::Time(t) => {
            let text = format!("{}{}", t.format("%H:%M:%S"), fraction(t.nanosecond()));
            push_string(out, &text);
        }
        Variant::TimestampNtzMicros(t) | Variant::TimestampNtzNanos(t) => {
            push_string(
                out,
                &format!(
                    "{}{}",
                    t.format("%Y-%m-%d %H:%M:%S"),
                    fraction(t.nanosecond())
                ),
            );
        }
        Variant::TimestampMicros(t) | Variant::TimestampNanos(t) => {
            push_string(
                out,
                &format!(
                    "{}{}+00",
                    t.format("%Y-%m-%d %H:%M:%S"),
                    fraction(t.nanosecond())
                ),
            );
        }
        Variant::Uuid(u) => push_string(out, &u.to_string()),
        Variant::Binary(bytes) => push_string(out, &blob_text(bytes)),
        Variant::Object(object) => {
            out.push('{');
            for (i, (key, value)) in object.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_string(out, key);
                out.push(':');
                write_json(&value, out);
            }
            out.push('}');
        }
        Variant::List(list) => {
            out.push('[');
            for (i, item) in list.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(&item, out);
            }
            out.push(']');
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

/// A decimal as DuckDB writes a VARIANT's: every digit of its scale kept (`12.50`).
fn push_decimal(out: &mut String, integer: i128, scale: u8) {
    let digits = integer.unsigned_abs().to_string();
    let scale = usize::from(scale);
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    let sign = if integer < 0 { "-" } else { "" };
    let _ = match scale {
        0 => write!(out, "{sign}{whole}"),
        _ => write!(out, "{sign}{whole}.{fraction}"),
    };
}

/// A time's fraction of a second as DuckDB writes it: trailing zeros dropped, none for
/// a whole second.
fn fraction(nanos: u32) -> String {
    match nanos {
        0 => String::new(),
        n => format!(".{n:09}").trim_end_matches('0').to_string(),
    }
}

/// A blob's text as DuckDB casts it to `VARCHAR`: printable ASCII as is, other bytes
/// (and `\`) as `\xNN`.
fn blob_text(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            32..=126 if b != b'\\' => text.push(char::from(b)),
            _ => {
                let _ = write!(text, "\\x{b:02X}");
            }
        }
    }
    text
}

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
        let (inner, target) = match &expr {
            Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
                (expr, field)
            }
            _ => return Ok(Transformed::no(expr)),
        };
        if !is_variant(target) {
            return Ok(Transformed::no(expr));
        }
        let (_, source) = inner.to_field(schema)?;
        if is_variant(&source) {
            return Ok(Transformed::no(expr));
        }
        let udf = ScalarUDF::from(ToVariant {
            signature: Signature::any(1, Volatility::Immutable),
        });
        let call = ScalarFunction::new_udf(Arc::new(udf), vec![inner.as_ref().clone()]);
        Ok(Transformed::yes(Expr::ScalarFunction(call)))
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
