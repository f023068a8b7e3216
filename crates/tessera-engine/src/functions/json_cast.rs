//! Casts to and from the SQL type `JSON` (`crate::json::json_type`) with DuckDB's
//! meaning, as an analyzer rewrite ([`JsonCasts`]) of each such cast into the function
//! computing it:
//!
//! - text to JSON is validated with Tessera's parser (the `tessera-json` scanner) and
//!   kept as written, as DuckDB keeps it; malformed text is an error saying at which
//!   byte and why (`TRY_CAST` gives NULL);
//! - any other value to JSON is `to_json` of it;
//! - JSON to integers, floats and booleans reads the JSON value: numbers (rounded to
//!   the nearest integer, halves to even, for integer types), strings holding an
//!   integer, a number or a boolean word, `true`/`false` (1/0), `null` (NULL); an object
//!   or array, or a value out of the type's range, is an error;
//! - JSON to structs, lists, maps, decimals and temporal types converts as
//!   `json_transform` does (`CAST` as `json_transform_strict`);
//! - JSON to text is the JSON text itself; to `UUID` (held as text), the string's
//!   text; to `BIT` and `BIGNUM` an error, as in DuckDB.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, Float64Builder, Int64Builder, ListArray,
};
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, exec_err, plan_err};
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl,
    Signature, Volatility,
};
use tessera_json::path::PathTrie;
use tessera_json::tape::{Kind, Tape};

use super::cast_rewrite::{cast_parts, rewritten_to};
use super::json_build::{TextColumn, to_json};
use super::json_transform::{convert_json, converts_to};
use crate::json::json_type::{is_json, json_return_field};
use crate::json::sql_types::MarkedType;

/// Keys a validating tape may intern before it is replaced: the tape keeps every key it
/// has seen, and a column of documents with ever new keys must not grow it without end.
const TAPE_KEYS_MAX: usize = 1 << 16;

/// Longest input quoted in a cast error.
const QUOTED_BYTES_MAX: usize = 80;

/// Gives casts to and from `JSON` DuckDB's meaning (see the module documentation): an
/// analyzer rewrite of each such cast into the function computing it.
#[derive(Debug, Default)]
pub struct JsonCasts;

impl FunctionRewrite for JsonCasts {
    fn name(&self) -> &str {
        "json_casts"
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
        if is_json(&source)
            && let Some(unread) = unread_from_json(target)
        {
            return plan_err!(
                "Cannot read a value of type {} from a json file",
                unread.sql_name()
            );
        }
        let conversion = match (is_json(&source), is_json(target)) {
            (false, true) if is_plain_text(&source) => Conversion::Validate,
            (false, true) if !source.data_type().is_null() => {
                let call = to_json().call(vec![inner.clone()]);
                return Ok(Transformed::yes(call));
            }
            (true, false) => match Target::of(target.data_type()) {
                Some(to) => Conversion::Read(to),
                None if is_plain_text(target) => return Ok(Transformed::no(expr)),
                None if converts_to(target) => Conversion::Convert(Arc::clone(target)),
                None => return Ok(Transformed::no(expr)),
            },
            _ => return Ok(Transformed::no(expr)),
        };
        Ok(rewritten_to(
            JsonCast::new(conversion, strict),
            vec![inner.clone()],
        ))
    }
}

/// Text that is just text: not a type held as text (`UUID`, `BIT`), whose JSON is a
/// string.
fn is_plain_text(field: &Field) -> bool {
    is_text(field.data_type()) && MarkedType::of(field).is_none()
}

/// DuckDB's types that it reads from no JSON value (`BIT`, `BIGNUM`).
fn unread_from_json(field: &Field) -> Option<MarkedType> {
    MarkedType::of(field).filter(|t| matches!(t, MarkedType::Bit | MarkedType::Bignum))
}

fn is_text(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    )
}

/// What a cast involving `JSON` computes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Conversion {
    /// Text to JSON: checked, kept as written.
    Validate,
    /// JSON to a scalar type: its value read.
    Read(Target),
    /// JSON to a nested or temporal type: converted as `json_transform` converts.
    Convert(FieldRef),
}

/// The scalar types a JSON value is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Target {
    Integer(IntegerType),
    Float(FloatType),
    Boolean,
}

/// An integer type (by its Arrow type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct IntegerType(u8);

/// A floating-point type (by its Arrow type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FloatType(u8);

const INTEGER_TYPES: [DataType; 8] = [
    DataType::Int8,
    DataType::Int16,
    DataType::Int32,
    DataType::Int64,
    DataType::UInt8,
    DataType::UInt16,
    DataType::UInt32,
    DataType::UInt64,
];
const FLOAT_TYPES: [DataType; 2] = [DataType::Float32, DataType::Float64];

impl Target {
    fn of(data_type: &DataType) -> Option<Self> {
        if let Some(i) = INTEGER_TYPES.iter().position(|t| t == data_type) {
            return Some(Target::Integer(IntegerType(i as u8)));
        }
        if let Some(i) = FLOAT_TYPES.iter().position(|t| t == data_type) {
            return Some(Target::Float(FloatType(i as u8)));
        }
        (data_type == &DataType::Boolean).then_some(Target::Boolean)
    }

    fn data_type(self) -> DataType {
        match self {
            Target::Integer(IntegerType(i)) => INTEGER_TYPES[i as usize].clone(),
            Target::Float(FloatType(i)) => FLOAT_TYPES[i as usize].clone(),
            Target::Boolean => DataType::Boolean,
        }
    }
}

/// The function a cast involving `JSON` becomes; `strict` casts fail on a value they
/// cannot convert, the others (`TRY_CAST`) give NULL.
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonCast {
    conversion: Conversion,
    strict: bool,
    signature: Signature,
}

impl JsonCast {
    fn new(conversion: Conversion, strict: bool) -> Self {
        Self {
            conversion,
            strict,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for JsonCast {
    fn name(&self) -> &str {
        match self.conversion {
            Conversion::Validate => "cast_to_json",
            Conversion::Read(_) | Conversion::Convert(_) => "cast_from_json",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match &self.conversion {
            Conversion::Validate => DataType::Utf8,
            Conversion::Read(target) => target.data_type(),
            Conversion::Convert(field) => field.data_type().clone(),
        })
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        match &self.conversion {
            Conversion::Validate => Ok(json_return_field(self.name(), &args, !self.strict)),
            conversion => {
                let data_type = match conversion {
                    Conversion::Read(target) => target.data_type(),
                    _ => self.return_type(&[])?,
                };
                Ok(Arc::new(Field::new(self.name(), data_type, true)))
            }
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // A list through `ScalarValue` loses its item field's metadata (`arrow.json` of
        // a `JSON[]`), so converted values stay an array of the batch's rows.
        let converted = matches!(self.conversion, Conversion::Convert(_));
        let scalar = !converted && matches!(args.args.first(), Some(ColumnarValue::Scalar(_)));
        let arrays = match (converted, args.args.as_slice()) {
            (true, [input]) => vec![input.to_array(args.number_rows)?],
            _ => ColumnarValue::values_to_arrays(&args.args)?,
        };
        let [input] = arrays.as_slice() else {
            return exec_err!("{} takes one argument", self.name());
        };
        let texts = TextColumn::new(self.name(), input)?;
        let out = match &self.conversion {
            Conversion::Validate => validate(&texts, input, self.strict)?,
            Conversion::Read(target) => read(&texts, input.len(), *target, self.strict)?,
            Conversion::Convert(field) => match convert_json(input, field, self.strict)? {
                Some(out) => out,
                None => return exec_err!("no cast from JSON to {}", field.data_type()),
            },
        };
        match scalar {
            true => Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&out, 0)?,
            )),
            false => Ok(ColumnarValue::Array(out)),
        }
    }
}

/// One JSON document at a time on a tape, replaced when its key dictionary has grown
/// past [`TAPE_KEYS_MAX`].
struct Parser {
    tape: Tape,
}

impl Parser {
    fn new() -> Self {
        Self {
            tape: crate::json::function_tape(),
        }
    }

    /// Parses `text`, then hands its root value to `f`; the parse error otherwise.
    fn with_root<T>(
        &mut self,
        text: &str,
        f: impl FnOnce(tessera_json::tape::Value<'_>) -> T,
    ) -> std::result::Result<T, tessera_json::tape::ParseError> {
        if self.tape.key_count() > TAPE_KEYS_MAX {
            self.tape = crate::json::function_tape();
        }
        self.tape.clear();
        let text = self.tape.push(text.as_bytes())?;
        Ok(f(self.tape.doc(0, text).root()))
    }
}

/// `text` quoted for an error message, cut at [`QUOTED_BYTES_MAX`] bytes.
fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTED_BYTES_MAX) {
        Some((cut, _)) if cut < text.len() => format!("\"{}...\"", &text[..cut]),
        _ => format!("\"{text}\""),
    }
}

/// Text to JSON: each row checked, kept as written; a malformed one is an error (or
/// NULL when not `strict`). The scanner checks (not the tape), so that a number beyond
/// a double's range (`1e400`) is JSON, as in DuckDB: only storing it in a table needs
/// it to fit.
fn validate(texts: &TextColumn, input: &ArrayRef, strict: bool) -> Result<ArrayRef> {
    let mut scanner = crate::json::function_scanner(Arc::new(PathTrie::new()));
    let mut valid = Vec::with_capacity(input.len());
    for row in 0..input.len() {
        let Some(text) = texts.get(row) else {
            valid.push(false);
            continue;
        };
        match scanner.scan(text.as_bytes()) {
            Ok(()) => valid.push(true),
            Err(e) if strict => {
                return exec_err!(
                    "Malformed JSON at byte {} of input: expected {}. Input: {}",
                    e.offset,
                    e.expected,
                    quoted(text)
                );
            }
            Err(_) => valid.push(false),
        }
    }
    let text = cast_with_options(input, &DataType::Utf8, &CastOptions::default())?;
    let nulls = arrow::buffer::NullBuffer::from(valid);
    let data = text.to_data().into_builder().nulls(Some(nulls)).build()?;
    Ok(arrow::array::make_array(data))
}

/// Text to JSON as `CAST` (`strict`) or `TRY_CAST` computes it: each row checked, kept
/// as written; for casts that contain one (a union member of type `JSON`).
pub(crate) fn validate_text(input: &ArrayRef, strict: bool) -> Result<ArrayRef> {
    validate(&TextColumn::new("CAST", input)?, input, strict)
}

/// A JSON value as the scalar types read it.
enum Scalar<'a> {
    Null,
    Integer(i128),
    Float(f64),
    Bool(bool),
    Text(&'a str),
    Container,
}

fn scalar_of(value: tessera_json::tape::Value<'_>) -> Scalar<'_> {
    let node = value.node();
    match node.kind() {
        Kind::Null => Scalar::Null,
        Kind::True => Scalar::Bool(true),
        Kind::False => Scalar::Bool(false),
        Kind::Int => Scalar::Integer(i128::from(node.int())),
        Kind::UInt => Scalar::Integer(i128::from(node.uint())),
        Kind::Decimal => Scalar::Integer(value.decimal()),
        Kind::Float => Scalar::Float(node.float()),
        Kind::String | Kind::Key => Scalar::Text(value.str()),
        Kind::Object | Kind::Array => Scalar::Container,
    }
}

/// DuckDB's rounding of a number to an integer: to the nearest, halves to even.
fn rounded(x: f64) -> Option<i128> {
    let r = x.round_ties_even();
    (r.is_finite() && r.abs() < 1e38).then_some(r as i128)
}

fn integer_of(scalar: &Scalar) -> Option<i128> {
    match *scalar {
        Scalar::Integer(i) => Some(i),
        Scalar::Float(f) => rounded(f),
        Scalar::Bool(b) => Some(i128::from(b)),
        // A string must hold an integer: DuckDB rejects "1.7" as an integer.
        Scalar::Text(t) => t.trim().parse::<i128>().ok(),
        Scalar::Null | Scalar::Container => None,
    }
}

fn float_of(scalar: &Scalar) -> Option<f64> {
    match *scalar {
        Scalar::Integer(i) => Some(i as f64),
        Scalar::Float(f) => Some(f),
        Scalar::Bool(b) => Some(f64::from(u8::from(b))),
        // DuckDB trims a string read as an integer, not one read as a double.
        Scalar::Text(t) => t.parse::<f64>().ok(),
        Scalar::Null | Scalar::Container => None,
    }
}

fn bool_of(scalar: &Scalar) -> Option<bool> {
    match *scalar {
        // DuckDB reads an integer beyond 64 bits as no boolean.
        Scalar::Integer(i) => i64::try_from(i).ok().map(|i| i != 0),
        Scalar::Float(f) => Some(f != 0.0),
        Scalar::Bool(b) => Some(b),
        Scalar::Text(t) => match t.trim().to_ascii_lowercase().as_str() {
            "true" | "t" | "yes" | "y" => Some(true),
            "false" | "f" | "no" | "n" => Some(false),
            _ => None,
        },
        Scalar::Null | Scalar::Container => None,
    }
}

/// Builds the column of one target type, row by row.
enum Builder {
    Integer(Vec<Option<i128>>),
    Float(Float64Builder),
    Bool(BooleanBuilder),
}

impl Builder {
    fn new(target: Target, rows: usize) -> Self {
        match target {
            Target::Integer(_) => Builder::Integer(Vec::with_capacity(rows)),
            Target::Float(_) => Builder::Float(Float64Builder::with_capacity(rows)),
            Target::Boolean => Builder::Bool(BooleanBuilder::with_capacity(rows)),
        }
    }

    /// Appends `scalar` read as the target; false when it cannot be.
    fn append(&mut self, scalar: &Scalar) -> bool {
        let null = matches!(scalar, Scalar::Null);
        match self {
            Builder::Integer(values) => {
                let value = integer_of(scalar);
                values.push(value);
                value.is_some() || null
            }
            Builder::Float(b) => {
                let value = float_of(scalar);
                b.append_option(value);
                value.is_some() || null
            }
            Builder::Bool(b) => {
                let value = bool_of(scalar);
                b.append_option(value);
                value.is_some() || null
            }
        }
    }

    /// The column as `target`; `Err(row)` for the first row whose integer is out of the
    /// target's range (with `strict`; otherwise that row is NULL).
    fn finish(self, target: Target, strict: bool) -> Result<std::result::Result<ArrayRef, usize>> {
        let array: ArrayRef = match self {
            Builder::Integer(values) => {
                let mut wide = Int64Builder::with_capacity(values.len());
                let mut out_of_range = None;
                for (row, v) in values.iter().enumerate() {
                    let fits = v.map(i64::try_from);
                    if matches!(fits, Some(Err(_))) && out_of_range.is_none() {
                        out_of_range = Some(row);
                    }
                    wide.append_option(fits.and_then(|f| f.ok()));
                }
                if let (Some(row), true) = (out_of_range, strict) {
                    return Ok(Err(row));
                }
                Arc::new(wide.finish())
            }
            Builder::Float(mut b) => Arc::new(b.finish()),
            Builder::Bool(mut b) => Arc::new(b.finish()),
        };
        let safe = CastOptions {
            safe: true,
            ..CastOptions::default()
        };
        let out = cast_with_options(&array, &target.data_type(), &safe)?;
        if strict && let Some(row) = (0..out.len()).find(|&r| out.is_null(r) && array.is_valid(r)) {
            return Ok(Err(row));
        }
        Ok(Ok(out))
    }
}

/// JSON to `target`: each row's value read (see the module documentation).
fn read(texts: &TextColumn, rows: usize, target: Target, strict: bool) -> Result<ArrayRef> {
    let mut parser = Parser::new();
    let mut builder = Builder::new(target, rows);
    let failed = |text: &str| exec_err!("Failed to cast value to numerical: {text}");
    for row in 0..rows {
        let Some(text) = texts.get(row) else {
            builder.append(&Scalar::Null);
            continue;
        };
        let converted = parser.with_root(text, |root| builder.append(&scalar_of(root)));
        match converted {
            Ok(true) => {}
            Ok(false) if !strict => {}
            Ok(false) => return failed(text),
            Err(_) if !strict => {
                builder.append(&Scalar::Null);
            }
            Err(e) => {
                return exec_err!(
                    "Malformed JSON at byte {} of input: {}. Input: {}",
                    e.offset,
                    e.reason,
                    quoted(text)
                );
            }
        }
    }
    match builder.finish(target, strict)? {
        Ok(out) => Ok(out),
        Err(row) => failed(texts.get(row).unwrap_or_default()),
    }
}

/// Whether `data_type` is a list of text (any string and list layout), which
/// `CAST(x AS JSON[])` reads item by item ([`text_items_as_json`]).
pub(crate) fn is_text_list(data_type: &DataType) -> bool {
    match data_type {
        DataType::List(item) | DataType::LargeList(item) | DataType::ListView(item) => {
            is_text(item.data_type()) || item.data_type().is_null()
        }
        _ => false,
    }
}

/// The list type a list of text is coerced to before [`text_items_as_json`].
pub(crate) fn text_list_type() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Utf8View, true)))
}

/// `CAST(list AS JSON[])` of a list of text (of [`text_list_type`]): each item checked
/// as JSON and kept as written, as DuckDB casts text to JSON; an item that is not JSON
/// is an error, or NULL when `try_cast`.
pub(crate) fn text_items_as_json(lists: &ArrayRef, try_cast: bool) -> Result<ArrayRef> {
    let Some(lists) = lists.as_list_opt::<i32>() else {
        return exec_err!("CAST AS JSON[] expects a list, not {}", lists.data_type());
    };
    let items = cast_with_options(lists.values(), &DataType::Utf8, &CastOptions::default())?;
    let texts = TextColumn::new("CAST AS JSON[]", &items)?;
    let checked = validate(&texts, &items, !try_cast)?;
    let checked = cast_with_options(&checked, &DataType::Utf8View, &CastOptions::default())?;
    let field = Arc::new(Field::new_list_field(DataType::Utf8View, true));
    let out = ListArray::try_new(
        field,
        lists.offsets().clone(),
        checked,
        lists.nulls().cloned(),
    )?;
    Ok(Arc::new(out))
}
