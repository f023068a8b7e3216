//! The SQL type `JSON`: text that is one valid JSON document.
//!
//! A JSON value is UTF-8 text in a field marked as Arrow's canonical extension type
//! `arrow.json` (field metadata `ARROW:extension:name = arrow.json`), so it travels
//! through DataFusion, Arrow IPC and Parquet as ordinary text and every Arrow reader
//! knows what it holds. `CAST(x AS JSON)`, `x::JSON`, `JSON '...'` and columns declared
//! `JSON` are planned onto such fields by [`JsonTypePlanner`]; [`JsonCasts`] gives the
//! casts DuckDB's meaning:
//!
//! - text to JSON is validated with Tessera's parser (the `tessera-json` tape) and kept
//!   as written, as DuckDB keeps it; malformed text is an error saying at which byte and
//!   why (`TRY_CAST` gives NULL);
//! - JSON to integers, floats and booleans reads the JSON value: numbers (rounded to
//!   the nearest integer, halves to even, for integer types), strings holding an
//!   integer, a number or a boolean word, `true`/`false` (1/0), `null` (NULL); an object
//!   or array, or a value out of the type's range, is an error;
//! - JSON to text is the JSON text itself.
//!
//! Functions that return JSON declare it with [`json_return_field`] from their
//! `ScalarUDFImpl::return_field_from_args`; [`is_json`] tells whether an argument is.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, LargeStringArray, StringArray,
    StringViewArray,
};
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, exec_err, plan_err};
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::planner::TypePlanner;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::sqlparser::ast;
use tessera_json::tape::{Kind, Tape};

/// The name of Arrow's canonical JSON extension type.
pub const JSON_EXTENSION_NAME: &str = "arrow.json";
/// The field metadata key naming an Arrow extension type.
const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
/// The field metadata key of an extension type's parameters (none for JSON).
const EXTENSION_METADATA_KEY: &str = "ARROW:extension:metadata";

/// Keys a validating tape may intern before it is replaced: the tape keeps every key it
/// has seen, and a column of documents with ever new keys must not grow it without end.
const TAPE_KEYS_MAX: usize = 1 << 16;

/// Longest input quoted in a cast error.
const QUOTED_BYTES_MAX: usize = 80;

/// A nullable field `name` of SQL type `JSON`: UTF-8 text marked `arrow.json`.
pub fn json_field(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true).with_metadata(HashMap::from([
        (
            EXTENSION_NAME_KEY.to_string(),
            JSON_EXTENSION_NAME.to_string(),
        ),
        (EXTENSION_METADATA_KEY.to_string(), String::new()),
    ]))
}

/// Whether `field` holds SQL `JSON` (the `arrow.json` extension type over text).
pub fn is_json(field: &Field) -> bool {
    field
        .metadata()
        .get(EXTENSION_NAME_KEY)
        .is_some_and(|name| name == JSON_EXTENSION_NAME)
        && matches!(
            field.data_type(),
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
        )
}

/// The return field of a function whose result is `JSON`, for its
/// `ScalarUDFImpl::return_field_from_args`: named after the function, nullable when
/// any argument is (or always, with `nullable`), marked `arrow.json`.
///
/// ```ignore
/// fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
///     Ok(json_return_field(self.name(), &args, false))
/// }
/// ```
pub fn json_return_field(name: &str, args: &ReturnFieldArgs, nullable: bool) -> FieldRef {
    let nullable = nullable || args.arg_fields.iter().any(|f| f.is_nullable());
    Arc::new(json_field(name).with_nullable(nullable))
}

/// Plans the SQL type `JSON` (casts, typed literals, column definitions) onto
/// [`json_field`]; `JSON[]` follows as a list of such fields.
#[derive(Debug, Default)]
pub struct JsonTypePlanner;

impl TypePlanner for JsonTypePlanner {
    fn plan_type_field(&self, sql_type: &ast::DataType) -> Result<Option<FieldRef>> {
        Ok(match sql_type {
            ast::DataType::JSON => Some(Arc::new(json_field(""))),
            other => crate::functions::geometry::sql_type_field(other),
        })
    }
}

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
        let (inner, target, strict) = match &expr {
            Expr::Cast(Cast { expr, field }) => (expr, field, true),
            Expr::TryCast(TryCast { expr, field }) => (expr, field, false),
            _ => return Ok(Transformed::no(expr)),
        };
        let (_, source) = inner.to_field(schema)?;
        let conversion = match (is_json(&source), is_json(target)) {
            (false, true) if is_text(source.data_type()) => Conversion::Validate,
            (true, false) => match Target::of(target.data_type()) {
                Some(to) => Conversion::Read(to),
                None => return Ok(Transformed::no(expr)),
            },
            _ => return Ok(Transformed::no(expr)),
        };
        let udf = ScalarUDF::from(JsonCast::new(conversion, strict));
        let call = Expr::ScalarFunction(ScalarFunction::new_udf(
            Arc::new(udf),
            vec![inner.as_ref().clone()],
        ));
        Ok(Transformed::yes(call))
    }
}

fn is_text(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    )
}

/// What a cast involving `JSON` computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Conversion {
    /// Text to JSON: checked, kept as written.
    Validate,
    /// JSON to a scalar type: its value read.
    Read(Target),
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
            Conversion::Read(_) => "cast_from_json",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.conversion {
            Conversion::Validate => DataType::Utf8,
            Conversion::Read(target) => target.data_type(),
        })
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        match self.conversion {
            Conversion::Validate => Ok(json_return_field(self.name(), &args, !self.strict)),
            Conversion::Read(target) => {
                Ok(Arc::new(Field::new(self.name(), target.data_type(), true)))
            }
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args.first(), Some(ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [input] = arrays.as_slice() else {
            return exec_err!("{} takes one argument", self.name());
        };
        let texts = Texts::of(input.as_ref())?;
        let out = match self.conversion {
            Conversion::Validate => validate(&texts, input, self.strict)?,
            Conversion::Read(target) => read(&texts, target, self.strict)?,
        };
        match scalar {
            true => Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&out, 0)?,
            )),
            false => Ok(ColumnarValue::Array(out)),
        }
    }
}

/// The rows of a text array, whichever of Arrow's three string layouts it has.
enum Texts<'a> {
    Utf8(&'a StringArray),
    View(&'a StringViewArray),
    Large(&'a LargeStringArray),
}

impl<'a> Texts<'a> {
    fn of(array: &'a dyn Array) -> Result<Self> {
        let any = array.as_any();
        if let Some(a) = any.downcast_ref::<StringArray>() {
            return Ok(Texts::Utf8(a));
        }
        if let Some(a) = any.downcast_ref::<StringViewArray>() {
            return Ok(Texts::View(a));
        }
        match any.downcast_ref::<LargeStringArray>() {
            Some(a) => Ok(Texts::Large(a)),
            None => plan_err!("JSON is text, not {}", array.data_type()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Texts::Utf8(a) => a.len(),
            Texts::View(a) => a.len(),
            Texts::Large(a) => a.len(),
        }
    }

    fn get(&self, row: usize) -> Option<&'a str> {
        match self {
            Texts::Utf8(a) => a.is_valid(row).then(|| a.value(row)),
            Texts::View(a) => a.is_valid(row).then(|| a.value(row)),
            Texts::Large(a) => a.is_valid(row).then(|| a.value(row)),
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
            tape: Tape::default(),
        }
    }

    /// Parses `text`, then hands its root value to `f`; the parse error otherwise.
    fn with_root<T>(
        &mut self,
        text: &str,
        f: impl FnOnce(tessera_json::tape::Value<'_>) -> T,
    ) -> std::result::Result<T, tessera_json::tape::ParseError> {
        if self.tape.key_count() > TAPE_KEYS_MAX {
            self.tape = Tape::default();
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
/// NULL when not `strict`).
fn validate(texts: &Texts, input: &ArrayRef, strict: bool) -> Result<ArrayRef> {
    let mut parser = Parser::new();
    let mut valid = Vec::with_capacity(texts.len());
    for row in 0..texts.len() {
        let Some(text) = texts.get(row) else {
            valid.push(false);
            continue;
        };
        match parser.with_root(text, |_| ()) {
            Ok(()) => valid.push(true),
            Err(e) if strict => {
                return exec_err!(
                    "Malformed JSON at byte {} of input: {}. Input: {}",
                    e.offset,
                    e.reason,
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
fn read(texts: &Texts, target: Target, strict: bool) -> Result<ArrayRef> {
    let mut parser = Parser::new();
    let mut builder = Builder::new(target, texts.len());
    let failed = |text: &str| exec_err!("Failed to cast value to numerical: {text}");
    for row in 0..texts.len() {
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
