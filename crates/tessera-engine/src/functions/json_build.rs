//! The functions that build JSON, as DuckDB 2.0.0 names and answers them:
//! `json_object(k, v, ...)`, `json_array(v, ...)`, `to_json(x)` (aliases `json_quote`,
//! `row_to_json`, `array_to_json`) and
//! `json(x)` (parse and minify).
//!
//! Values become JSON as DuckDB renders them: numbers as numbers (decimals exactly, trailing zeros
//! dropped), text as strings, lists as arrays, structs and maps as objects, dates and
//! timestamps as strings, a union as the object of its member (`{"tag":value}`), a
//! `VARIANT` as the value it holds. Text whose field carries the `arrow.json` extension type is
//! JSON already and is embedded, not quoted; every function here returns such a field,
//! so `json_object('a', json_array(1))` nests. The helpers at the bottom (reading text
//! columns, parsing with a clear error, evaluating row by row) are shared by the other
//! `json_*` modules.

use std::sync::{Arc, LazyLock};

use crate::json::geometry_type::is_geometry;
use crate::json::json_type::{is_json, json_field};
use crate::json::sql_types::{MarkedType, is_tuple};
use crate::json::variant_type::{is_variant, write_variant_json};
use arrow::array::{
    Array, ArrayRef, AsArray, LargeStringArray, StringArray, StringBuilder, StringViewArray,
};
use arrow::datatypes::{
    DataType, Field, FieldRef, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type,
    Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::scalar_doc_sections::DOC_SECTION_OTHER;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, TypeSignature, Volatility,
};
use tessera_json::tape::Tape;
use tessera_json::tree::{Json, push_float, push_string};

/// The constructors, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    [
        ("json_object", Build::Object, &[][..]),
        ("json_array", Build::Array, &[][..]),
        (
            "to_json",
            Build::ToJson,
            &["json_quote", "row_to_json", "array_to_json"][..],
        ),
        ("json", Build::Minify, &[][..]),
    ]
    .into_iter()
    .map(|(name, build, aliases)| constructor(name, build, aliases))
    .collect()
}

fn constructor(name: &'static str, build: Build, aliases: &[&str]) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(JsonBuild {
        name,
        build,
        aliases: aliases.iter().map(|a| a.to_string()).collect(),
        signature: Signature::one_of(
            vec![TypeSignature::Nullary, TypeSignature::VariadicAny],
            Volatility::Immutable,
        ),
    }))
}

/// `to_json(x)`: what `CAST(x AS JSON)` of a non-text value computes.
pub fn to_json() -> Arc<ScalarUDF> {
    constructor("to_json", Build::ToJson, &[])
}

/// What a constructor builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Build {
    /// An object of key/value argument pairs.
    Object,
    /// An array of the arguments.
    Array,
    /// The argument as JSON.
    ToJson,
    /// The argument (JSON text) parsed and written back minified.
    Minify,
}

/// One constructor; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct JsonBuild {
    name: &'static str,
    build: Build,
    aliases: Vec<String>,
    signature: Signature,
}

static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION_OTHER,
        "Builds JSON as DuckDB does: json_object(k, v, ...), json_array(v, ...), \
         to_json(x) / json_quote(x), json(text) (parsed and minified).",
        "json_object('a', 1, 'b', json_array(1, 2))",
    )
    .build()
});

impl ScalarUDFImpl for JsonBuild {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let fields = args.arg_fields;
        match self.build {
            Build::Object if !fields.len().is_multiple_of(2) => {
                return plan_err!("json_object() requires an even number of arguments");
            }
            Build::Object => {
                if let Some(key) = fields.iter().step_by(2).find(|f| !is_text(f.data_type())) {
                    return plan_err!(
                        "json_object() keys must be text, not {}; add an explicit cast",
                        key.data_type()
                    );
                }
            }
            Build::ToJson | Build::Minify if fields.len() != 1 => {
                return plan_err!("{}() takes one argument", self.name);
            }
            Build::Minify
                if !is_text(fields[0].data_type())
                    && !fields[0].data_type().is_null()
                    && !written_as_string(&fields[0]) =>
            {
                return plan_err!("json() takes JSON text, not {}", fields[0].data_type());
            }
            _ => {}
        }
        Ok(Arc::new(json_field(self.name)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // A NULL union constant: in an array it would be a member holding NULL.
        if let (Build::ToJson, [ColumnarValue::Scalar(ScalarValue::Union(None, ..))]) =
            (self.build, args.args.as_slice())
        {
            return Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None)));
        }
        let fields = args.arg_fields.clone();
        let mut tape = crate::json::function_tape();
        let name = self.name;
        map_rows(&args, |arrays, row, out| match self.build {
            Build::Object => write_object(arrays, &fields, row, out, &mut tape).map(|()| true),
            Build::Array => {
                out.push('[');
                for (i, (array, field)) in arrays.iter().zip(&fields).enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_field(array.as_ref(), field, row, out, &mut tape)?;
                }
                out.push(']');
                Ok(true)
            }
            // A `Null` array has no validity buffer: `is_null` alone says no.
            Build::ToJson if arrays[0].is_null(row) || arrays[0].data_type().is_null() => Ok(false),
            Build::ToJson => {
                write_field(arrays[0].as_ref(), &fields[0], row, out, &mut tape).map(|()| true)
            }
            // A BLOB, UUID or BIT is its text as a JSON string, as `to_json` writes it.
            Build::Minify if written_as_string(&fields[0]) => match arrays[0].is_null(row) {
                true => Ok(false),
                false => write_arrow(arrays[0].as_ref(), false, row, out, &mut tape).map(|()| true),
            },
            Build::Minify => match TextColumn::new(name, &arrays[0])?.get(row) {
                Some(text) => {
                    parse_json(name, row, text, &mut tape)?.write(out);
                    Ok(true)
                }
                None => Ok(false),
            },
        })
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}

/// Whether `json(x)` of a value of `field` writes it as a JSON string: a `BLOB`, or
/// a type held as text (`UUID`, `BIT`).
fn written_as_string(field: &Field) -> bool {
    let binary = matches!(
        field.data_type(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    );
    (binary && !is_geometry(field)) || MarkedType::of(field).is_some_and(MarkedType::is_text)
}

fn is_text(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

fn write_object(
    arrays: &[ArrayRef],
    fields: &[FieldRef],
    row: usize,
    out: &mut String,
    tape: &mut Tape,
) -> Result<()> {
    out.push('{');
    for (i, pair) in arrays.chunks(2).enumerate() {
        let Some(key) = TextColumn::new("json_object", &pair[0])?.get(row) else {
            return exec_err!("json_object: a JSON key cannot be NULL (row {})", row + 1);
        };
        if i > 0 {
            out.push(',');
        }
        push_string(out, key);
        out.push(':');
        write_field(pair[1].as_ref(), &fields[2 * i + 1], row, out, tape)?;
    }
    out.push('}');
    Ok(())
}

/// Appends row `row` of `array`, a column of `field`'s SQL type, as JSON.
pub fn write_field(
    array: &dyn Array,
    field: &Field,
    row: usize,
    out: &mut String,
    tape: &mut Tape,
) -> Result<()> {
    match is_variant(field) {
        true => write_variant_json(array, row, out),
        false => write_arrow(array, is_json(field), row, out, tape),
    }
}

/// Row `row` of each value of `array` (of `field`'s type) as JSON; NULL stays NULL.
pub fn to_json_array(array: &ArrayRef, field: &Field) -> Result<ArrayRef> {
    let mut tape = crate::json::function_tape();
    let mut builder = StringBuilder::with_capacity(array.len(), array.len() * 16);
    let mut text = String::new();
    for row in 0..array.len() {
        if array.is_null(row) {
            builder.append_null();
            continue;
        }
        text.clear();
        write_field(array.as_ref(), field, row, &mut text, &mut tape)?;
        builder.append_value(&text);
    }
    Ok(Arc::new(builder.finish()))
}

/// Appends row `row` of `array` as JSON (`json`: the array's text is JSON already).
/// Recursion follows the nesting of the Arrow type, which a query's types bound.
pub fn write_arrow(
    array: &dyn Array,
    json: bool,
    row: usize,
    out: &mut String,
    tape: &mut Tape,
) -> Result<()> {
    if array.is_null(row) {
        out.push_str("null");
        return Ok(());
    }
    macro_rules! number {
        ($t:ty) => {{
            let _ = std::fmt::Write::write_fmt(
                out,
                format_args!("{}", array.as_primitive::<$t>().value(row)),
            );
        }};
    }
    match array.data_type() {
        DataType::Null => out.push_str("null"),
        DataType::Boolean => out.push_str(match array.as_boolean().value(row) {
            true => "true",
            false => "false",
        }),
        DataType::Int8 => number!(Int8Type),
        DataType::Int16 => number!(Int16Type),
        DataType::Int32 => number!(Int32Type),
        DataType::Int64 => number!(Int64Type),
        DataType::UInt8 => number!(UInt8Type),
        DataType::UInt16 => number!(UInt16Type),
        DataType::UInt32 => number!(UInt32Type),
        DataType::UInt64 => number!(UInt64Type),
        DataType::Float16 => push_float(out, array.as_primitive::<Float16Type>().value(row).into()),
        DataType::Float32 => push_float(out, array.as_primitive::<Float32Type>().value(row).into()),
        DataType::Float64 => push_float(out, array.as_primitive::<Float64Type>().value(row)),
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => push_decimal(out, &display(array, row)?),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let text = TextColumn::new("to_json", array)?
                .get(row)
                .unwrap_or_default();
            match json {
                true => parse_json("to_json", row, text, tape)?.write(out),
                false => push_string(out, text),
            }
        }
        DataType::List(field) | DataType::LargeList(field) | DataType::FixedSizeList(field, _) => {
            let items = list_value(array, row);
            out.push('[');
            for i in 0..items.len() {
                if i > 0 {
                    out.push(',');
                }
                write_field(items.as_ref(), field, i, out, tape)?;
            }
            out.push(']');
        }
        DataType::Struct(fields) => {
            // A tuple (DuckDB's unnamed struct) is an array of its members.
            let tuple = is_tuple(fields);
            let columns = array.as_struct().columns();
            out.push(if tuple { '[' } else { '{' });
            for (i, (field, column)) in fields.iter().zip(columns).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !tuple {
                    push_string(out, field.name());
                    out.push(':');
                }
                write_field(column.as_ref(), field, row, out, tape)?;
            }
            out.push(if tuple { ']' } else { '}' });
        }
        DataType::Map(..) => write_map(array, row, out, tape)?,
        DataType::Union(fields, _) => {
            let union = array.as_union();
            let id = union.type_id(row);
            let Some((_, member)) = fields.iter().find(|(i, _)| *i == id) else {
                return exec_err!("to_json: union type id {id} has no member");
            };
            out.push('{');
            push_string(out, member.name());
            out.push(':');
            let child = union.child(id);
            write_field(child.as_ref(), member, union.value_offset(row), out, tape)?;
            out.push('}');
        }
        _ => push_string(out, &display(array, row)?),
    }
    Ok(())
}

/// A decimal's exact text as DuckDB writes it in JSON: trailing fractional zeros
/// dropped down to one (`1.50` as `1.5`, `1.00` as `1.0`), a scale of 0 as an integer.
fn push_decimal(out: &mut String, text: &str) {
    match text.split_once('.') {
        Some((whole, fraction)) => {
            let kept = fraction.trim_end_matches('0');
            out.push_str(whole);
            out.push('.');
            out.push_str(if kept.is_empty() { "0" } else { kept });
        }
        None => out.push_str(text),
    }
}

fn list_value(array: &dyn Array, row: usize) -> ArrayRef {
    match array.data_type() {
        DataType::List(_) => array.as_list::<i32>().value(row),
        DataType::LargeList(_) => array.as_list::<i64>().value(row),
        _ => array.as_fixed_size_list().value(row),
    }
}

/// A map as an object whose keys are the map keys' text.
fn write_map(array: &dyn Array, row: usize, out: &mut String, tape: &mut Tape) -> Result<()> {
    let entries = array.as_map().value(row);
    let (keys, values) = (entries.column(0), entries.column(1));
    let value_field = match entries.data_type() {
        DataType::Struct(fields) => Arc::clone(&fields[1]),
        _ => Arc::new(Field::new("value", values.data_type().clone(), true)),
    };
    out.push('{');
    for i in 0..entries.len() {
        if i > 0 {
            out.push(',');
        }
        push_string(out, &display(keys.as_ref(), i)?);
        out.push(':');
        write_field(values.as_ref(), &value_field, i, out, tape)?;
    }
    out.push('}');
    Ok(())
}

/// A value's text as DuckDB casts it to VARCHAR, for the types JSON has no form of
/// (dates, times, intervals, binaries).
pub(crate) fn display(array: &dyn Array, row: usize) -> Result<String> {
    if let Some(bytes) = binary_value(array, row) {
        return Ok(crate::json::cast_text::blob_text(bytes));
    }
    let options = FormatOptions::default()
        .with_timestamp_format(Some("%Y-%m-%d %H:%M:%S%.f"))
        .with_timestamp_tz_format(Some("%Y-%m-%d %H:%M:%S%.f%:z"));
    Ok(ArrayFormatter::try_new(array, &options)?
        .value(row)
        .to_string())
}

/// Row `row` of a binary column (of any layout), `None` for other types.
fn binary_value(array: &dyn Array, row: usize) -> Option<&[u8]> {
    match array.data_type() {
        DataType::Binary => Some(array.as_binary::<i32>().value(row)),
        DataType::LargeBinary => Some(array.as_binary::<i64>().value(row)),
        DataType::BinaryView => Some(array.as_binary_view().value(row)),
        _ => None,
    }
}

/// A column of text, whichever Arrow string type holds it.
pub enum TextColumn<'a> {
    /// `Utf8`.
    Small(&'a StringArray),
    /// `LargeUtf8`.
    Large(&'a LargeStringArray),
    /// `Utf8View`.
    View(&'a StringViewArray),
    /// `Null`: every row is NULL.
    Null,
}

impl<'a> TextColumn<'a> {
    /// The text column `array`, or an error naming `function` if it is not text.
    pub fn new(function: &str, array: &'a dyn Array) -> Result<Self> {
        Ok(match array.data_type() {
            DataType::Utf8 => TextColumn::Small(array.as_string()),
            DataType::LargeUtf8 => TextColumn::Large(array.as_string()),
            DataType::Utf8View => TextColumn::View(array.as_string_view()),
            DataType::Null => TextColumn::Null,
            other => return exec_err!("{function} expects JSON text, not {other}"),
        })
    }

    /// Row `row`'s text, `None` when NULL.
    pub fn get(&self, row: usize) -> Option<&'a str> {
        match self {
            TextColumn::Small(a) => a.is_valid(row).then(|| a.value(row)),
            TextColumn::Large(a) => a.is_valid(row).then(|| a.value(row)),
            TextColumn::View(a) => a.is_valid(row).then(|| a.value(row)),
            TextColumn::Null => None,
        }
    }
}

/// Parses row `row`'s JSON text; an error names the function, the row, the byte and
/// what was expected there.
pub fn parse_json(function: &str, row: usize, text: &str, tape: &mut Tape) -> Result<Json> {
    Json::parse(text.as_bytes(), tape).map_err(|e| {
        DataFusionError::Execution(format!(
            "{function}: malformed JSON in row {}: {e}",
            row + 1
        ))
    })
}

/// Evaluates a function with a text result row by row: `f(arrays, row, out)` appends
/// the row's value to `out` and says whether it is non-NULL. All-constant arguments
/// give a constant.
pub fn map_rows(
    args: &ScalarFunctionArgs,
    mut f: impl FnMut(&[ArrayRef], usize, &mut String) -> Result<bool>,
) -> Result<ColumnarValue> {
    let constant = args
        .args
        .iter()
        .all(|a| matches!(a, ColumnarValue::Scalar(_)));
    let rows = if constant { 1 } else { args.number_rows };
    let arrays = args
        .args
        .iter()
        .map(|a| a.to_array(rows))
        .collect::<Result<Vec<_>>>()?;
    let mut builder = StringBuilder::with_capacity(rows, rows * 16);
    let mut text = String::new();
    for row in 0..rows {
        text.clear();
        match f(&arrays, row, &mut text)? {
            true => builder.append_value(&text),
            false => builder.append_null(),
        }
    }
    let array: ArrayRef = Arc::new(builder.finish());
    match constant {
        true => Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
            &array, 0,
        )?)),
        false => Ok(ColumnarValue::Array(array)),
    }
}
