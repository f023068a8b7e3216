//! ClickHouse's JSON functions, with ClickHouse's semantics: `JSONExtractString`,
//! `JSONExtractInt`, `JSONExtractFloat`, `JSONExtractBool`, `JSONHas`, `JSONLength`,
//! `JSONType`, `JSONExtractKeys` and `JSONExtractArrayRaw` (SQL folds the names to
//! lower case).
//!
//! After the document come any number of keys (text) and indexes (integers, 1-based,
//! negative from the end; an index of an object picks its n-th member). Where a value
//! is absent, of another type, or the document is not JSON, the answer is ClickHouse's
//! default ('', 0, false, an empty list), not NULL; only NULL arguments give NULL.
//! Values are located with `tessera-json`'s scanner, so numbers keep their exact text;
//! containers are returned without the whitespace between tokens (as ClickHouse
//! prints them).

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Float64Builder, Int64Builder, ListBuilder, StringBuilder, UInt8Builder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use tessera_json::escape::unescape_into;
use tessera_json::path::PathTrie;
use tessera_json::scanner::{Kind, Scanner, Span};
use tessera_json::select::{children, member};

use super::json::{coerce_path_args, rowwise};
use super::json_path::texts;

/// The ClickHouse functions, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    [
        ("jsonextractstring", Extract::String),
        ("jsonextractint", Extract::Int),
        ("jsonextractfloat", Extract::Float),
        ("jsonextractbool", Extract::Bool),
        ("jsonhas", Extract::Has),
        ("jsonlength", Extract::Length),
        ("jsontype", Extract::Type),
        ("jsonextractkeys", Extract::Keys),
        ("jsonextractarrayraw", Extract::ArrayRaw),
    ]
    .into_iter()
    .map(|(name, extract)| {
        Arc::new(ScalarUDF::from(ClickHouseJson {
            name,
            extract,
            signature: Signature::user_defined(Volatility::Immutable),
        }))
    })
    .collect()
}

/// What a ClickHouse function returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Extract {
    String,
    Int,
    Float,
    Bool,
    Has,
    Length,
    Type,
    Keys,
    ArrayRaw,
}

impl Extract {
    fn data_type(self) -> DataType {
        match self {
            Extract::String | Extract::Type => DataType::Utf8,
            Extract::Int => DataType::Int64,
            Extract::Float => DataType::Float64,
            Extract::Bool | Extract::Has => DataType::UInt8,
            Extract::Length => DataType::UInt64,
            Extract::Keys | Extract::ArrayRaw => {
                DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true)))
            }
        }
    }
}

/// One ClickHouse function; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ClickHouseJson {
    name: &'static str,
    extract: Extract,
    signature: Signature,
}

impl ScalarUDFImpl for ClickHouseJson {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce_path_args(self.name, arg_types, false)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.extract.data_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        rowwise(&args, |n| evaluate(self.extract, &args.args, n))
    }
}

/// One key or index of a ClickHouse path.
enum Step {
    Key(String),
    Index(i64),
}

/// The steps of one row; `None` when one is NULL.
fn row_steps(args: &[ColumnarValue], row: usize) -> Result<Option<Vec<Step>>> {
    let mut steps = Vec::with_capacity(args.len());
    for arg in args {
        let value = match arg {
            ColumnarValue::Scalar(s) => s.clone(),
            ColumnarValue::Array(a) => ScalarValue::try_from_array(a, row)?,
        };
        steps.push(match value {
            ScalarValue::Utf8(Some(k)) => Step::Key(k),
            ScalarValue::Int64(Some(i)) => Step::Index(i),
            v if v.is_null() => return Ok(None),
            other => return exec_err!("unsupported JSON path element {other}"),
        });
    }
    Ok(Some(steps))
}

/// The value the steps lead to, ClickHouse's way.
fn locate(doc: &[u8], root: Span, steps: &[Step]) -> Option<Span> {
    let mut at = root;
    for step in steps {
        at = match step {
            Step::Key(k) => member(doc, at, k)?,
            Step::Index(i) => {
                let items = children(doc, at);
                let len = i64::try_from(items.len()).ok()?;
                let position = match *i {
                    i if i > 0 => i - 1,
                    i if i < 0 => len.checked_add(i)?,
                    _ => return None,
                };
                items.get(usize::try_from(position).ok()?)?.1
            }
        };
    }
    Some(at)
}

fn evaluate(extract: Extract, args: &[ColumnarValue], n: usize) -> Result<ArrayRef> {
    let docs = args[0].to_array(n)?;
    let docs = texts(&docs)?;
    let mut scanner = Scanner::new(Arc::new(PathTrie::single(&[])));
    let mut out = Builder::new(extract, n);
    for (row, doc) in docs.into_iter().enumerate() {
        let (Some(doc), Some(steps)) = (doc, row_steps(&args[1..], row)?) else {
            out.append_null();
            continue;
        };
        // A document that is not JSON gives the defaults, as in ClickHouse.
        let found = match scanner.scan(doc.as_bytes()) {
            Ok(()) => scanner
                .get(0)
                .and_then(|root| locate(doc.as_bytes(), root, &steps)),
            Err(_) => None,
        };
        out.append(doc, found);
    }
    Ok(out.finish())
}

/// The builder of one function's column.
enum Builder {
    Text(Extract, StringBuilder),
    Int(Int64Builder),
    Float(Float64Builder),
    Flag(Extract, UInt8Builder),
    Length(UInt64Builder),
    List(Extract, ListBuilder<StringBuilder>),
}

impl Builder {
    fn new(extract: Extract, n: usize) -> Self {
        match extract {
            Extract::String | Extract::Type => Builder::Text(extract, StringBuilder::new()),
            Extract::Int => Builder::Int(Int64Builder::with_capacity(n)),
            Extract::Float => Builder::Float(Float64Builder::with_capacity(n)),
            Extract::Bool | Extract::Has => Builder::Flag(extract, UInt8Builder::with_capacity(n)),
            Extract::Length => Builder::Length(UInt64Builder::with_capacity(n)),
            Extract::Keys | Extract::ArrayRaw => Builder::List(
                extract,
                ListBuilder::new(StringBuilder::new())
                    .with_field(Arc::new(Field::new_list_field(DataType::Utf8, true))),
            ),
        }
    }

    fn append_null(&mut self) {
        match self {
            Builder::Text(_, b) => b.append_null(),
            Builder::Int(b) => b.append_null(),
            Builder::Float(b) => b.append_null(),
            Builder::Flag(_, b) => b.append_null(),
            Builder::Length(b) => b.append_null(),
            Builder::List(_, b) => b.append_null(),
        }
    }

    /// The answer for the value found (`None`: absent, or the document is not JSON).
    fn append(&mut self, doc: &str, found: Option<Span>) {
        let bytes = doc.as_bytes();
        match self {
            Builder::Text(Extract::Type, b) => {
                b.append_value(found.map_or("Null", |s| type_name(bytes, s)))
            }
            Builder::Text(_, b) => {
                b.append_value(found.map(|s| string_of(doc, s)).unwrap_or_default())
            }
            Builder::Int(b) => b.append_value(found.and_then(|s| int_of(bytes, s)).unwrap_or(0)),
            Builder::Float(b) => {
                b.append_value(found.and_then(|s| float_of(bytes, s)).unwrap_or(0.0))
            }
            Builder::Flag(Extract::Has, b) => b.append_value(u8::from(found.is_some())),
            Builder::Flag(_, b) => {
                b.append_value(u8::from(found.is_some_and(|s| bool_of(bytes, s))))
            }
            Builder::Length(b) => {
                b.append_value(found.map_or(0, |s| children(bytes, s).len() as u64))
            }
            Builder::List(extract, b) => {
                let mut key = Vec::new();
                for (k, v) in found.map(|s| children(bytes, s)).unwrap_or_default() {
                    match (*extract, k) {
                        (Extract::Keys, Some(k))
                            if found.is_some_and(|s| s.kind == Kind::Object) =>
                        {
                            key.clear();
                            unescape_into(k.string_body(bytes), &mut key);
                            b.values().append_value(String::from_utf8_lossy(&key));
                        }
                        (Extract::ArrayRaw, None) => b.values().append_value(compact(v.raw(bytes))),
                        _ => {}
                    }
                }
                b.append(true);
            }
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Text(_, b) => Arc::new(b.finish()),
            Builder::Int(b) => Arc::new(b.finish()),
            Builder::Float(b) => Arc::new(b.finish()),
            Builder::Flag(_, b) => Arc::new(b.finish()),
            Builder::Length(b) => Arc::new(b.finish()),
            Builder::List(_, b) => Arc::new(b.finish()),
        }
    }
}

/// `JSONExtractString`: a string unescaped, `null` as '', anything else as compact JSON.
fn string_of(doc: &str, span: Span) -> String {
    let bytes = doc.as_bytes();
    match span.kind {
        Kind::String { .. } => {
            let mut out = Vec::new();
            unescape_into(span.string_body(bytes), &mut out);
            String::from_utf8_lossy(&out).into_owned()
        }
        Kind::Null => String::new(),
        _ => compact(span.raw(bytes)),
    }
}

/// JSON text without the whitespace between tokens.
fn compact(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let (mut in_string, mut escaped) = (false, false);
    for &b in raw {
        if in_string {
            in_string = escaped || b != b'"';
            escaped = !escaped && b == b'\\';
        } else if b == b'"' {
            in_string = true;
        } else if b.is_ascii_whitespace() {
            continue;
        }
        out.push(b);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// ClickHouse's name of a value's type.
fn type_name(doc: &[u8], span: Span) -> &'static str {
    match span.kind {
        Kind::Null => "Null",
        Kind::Bool(_) => "Bool",
        Kind::String { .. } => "String",
        Kind::Object => "Object",
        Kind::Array => "Array",
        Kind::Number { integer: false } => "Double",
        Kind::Number { integer: true } => {
            let text = std::str::from_utf8(span.raw(doc)).unwrap_or("");
            if text.parse::<i64>().is_ok() {
                "Int64"
            } else if text.parse::<u64>().is_ok() {
                "UInt64"
            } else {
                "Double"
            }
        }
    }
}

/// `JSONExtractInt`: integers within 64 bits, other numbers truncated when they fit,
/// strings holding a number read as one; anything else is the default.
fn int_of(doc: &[u8], span: Span) -> Option<i64> {
    let number = |text: &str| {
        text.parse::<i64>()
            .ok()
            .or_else(|| text.parse::<u64>().ok().map(|_| 0))
            .or_else(|| float_to_int(text.parse::<f64>().ok()?))
    };
    match span.kind {
        Kind::Number { .. } => number(std::str::from_utf8(span.raw(doc)).ok()?),
        Kind::String { escaped: false } => number(std::str::from_utf8(span.string_body(doc)).ok()?),
        _ => None,
    }
}

/// A double truncated to an integer when it lies within 64 bits.
fn float_to_int(value: f64) -> Option<i64> {
    // 2^63 is exact as a double; the range is half open.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (value.is_finite() && (-LIMIT..LIMIT).contains(&value)).then(|| value.trunc() as i64)
}

/// `JSONExtractFloat`: any number, or a string holding one.
fn float_of(doc: &[u8], span: Span) -> Option<f64> {
    let (text, integer) = match span.kind {
        Kind::Number { integer } => (span.raw(doc), integer),
        Kind::String { escaped: false } => (span.string_body(doc), false),
        _ => return None,
    };
    let value: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    // The integer literal `-0` is the integer 0, not the double -0.0.
    Some(if integer && value == 0.0 { 0.0 } else { value })
}

/// `JSONExtractBool`: `true`, or an integer other than 0.
fn bool_of(doc: &[u8], span: Span) -> bool {
    match span.kind {
        Kind::Bool(b) => b,
        Kind::Number { integer: true } => span.raw(doc).iter().any(|d| (b'1'..=b'9').contains(d)),
        _ => false,
    }
}
