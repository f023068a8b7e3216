//! DuckDB's JSON functions that read values, with DuckDB's names, signatures and
//! answers: `json_extract` (`json_extract_path`), `json_extract_string`
//! (`json_extract_path_text`), `json_value`, `json_exists`, `json_type`,
//! `json_array_length`, `json_keys` and `json_valid` (`json_contains` is in the
//! module `json_path_contains`).
//!
//! A path argument is read as DuckDB reads it ([`parse_path`]): JSONPath with wildcards
//! and `..`, JSON Pointer, the empty path, a bare key, an integer index, or a list of
//! paths (the result is then a list, one entry per path). A path that can select many
//! values (`$[*].a`) makes the result a list of every value it selects. More than one
//! path argument is Tessera's own form (`json_extract(j, 'a', 0)`), keys and indexes.
//!
//! A constant single-valued path of `json_extract` / `json_extract_string` /
//! `json_array_length` below the root (and `json_array_length(json_get(...))`) is
//! rewritten at planning time into `json_get` / `json_get_text` /
//! `json_get_array_length` with plain elements, which scans compute while parsing
//! (`access/pushable.rs`) or, on a table, from a list's offsets; everything else
//! is evaluated here, on the document column, and values are written back as DuckDB
//! writes them (minified, DuckDB's number layout).

use std::borrow::Cow;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanBuilder, ListArray, ListBuilder, StringViewBuilder, UInt64Builder,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExpressionPlacement, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use tessera_json::escape::unescape_into;
use tessera_json::path::{JsonPath, PathElem, PathStep, PathTrie, parse_json_path, parse_path};
use tessera_json::scanner::{Kind, Scanner, Span};
use tessera_json::select::{children, select};
use tessera_json::tree::Json;
use tessera_json::value::{Output, array_length_of, text_of};

use super::json::{
    JSON_GET, access_placement, access_udf, coerce_reading_args, documents, rowwise, value_field,
};
use super::json_build::TextColumn;

/// The DuckDB reading functions, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    [
        (
            "json_extract",
            DuckProbe::Extract,
            &["json_extract_path"][..],
        ),
        (
            "json_extract_string",
            DuckProbe::ExtractString,
            &["json_extract_path_text"][..],
        ),
        ("json_value", DuckProbe::Value, &[][..]),
        ("json_exists", DuckProbe::Exists, &[][..]),
        ("json_type", DuckProbe::Type, &[][..]),
        ("json_array_length", DuckProbe::ArrayLength, &[][..]),
        ("json_keys", DuckProbe::Keys, &[][..]),
        ("json_valid", DuckProbe::Valid, &[][..]),
    ]
    .into_iter()
    .map(|(name, probe, aliases)| {
        Arc::new(ScalarUDF::from(DuckJsonFunction {
            name,
            probe,
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            signature: Signature::user_defined(Volatility::Immutable),
        }))
    })
    .collect()
}

/// What a DuckDB reading function computes from each value its path selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum DuckProbe {
    /// The value as JSON text.
    Extract,
    /// Strings unescaped, other values as JSON text, `null` as SQL NULL.
    ExtractString,
    /// Scalars as JSON text; `null`, objects and arrays as SQL NULL.
    Value,
    /// Whether the path selects a value (a JSON `null` counts).
    Exists,
    /// DuckDB's type name: OBJECT, ARRAY, BIGINT, UBIGINT, DOUBLE, VARCHAR, BOOLEAN, NULL.
    Type,
    /// Elements of an array; 0 for any other value.
    ArrayLength,
    /// Keys of an object in document order; empty for any other value.
    Keys,
    /// Whether the text is one JSON value (no path).
    Valid,
}

impl DuckProbe {
    fn item_type(self) -> DataType {
        match self {
            DuckProbe::Extract | DuckProbe::ExtractString | DuckProbe::Value | DuckProbe::Type => {
                DataType::Utf8View
            }
            DuckProbe::Exists | DuckProbe::Valid => DataType::Boolean,
            DuckProbe::ArrayLength => DataType::UInt64,
            DuckProbe::Keys => list_of(DataType::Utf8View),
        }
    }

    /// Whether the path argument may be left out (it then is the whole document).
    fn path_optional(self) -> bool {
        matches!(
            self,
            DuckProbe::Type | DuckProbe::ArrayLength | DuckProbe::Keys | DuckProbe::Valid
        )
    }
}

fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new_list_field(item, true)))
}

/// One DuckDB reading function; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct DuckJsonFunction {
    name: &'static str,
    probe: DuckProbe,
    aliases: Vec<String>,
    signature: Signature,
}

/// How the arguments after the document are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// No path: the whole document.
    Root,
    /// One path (text or an integer index).
    One,
    /// A list of paths: one result per path, in a list.
    List,
    /// Tessera's elements (`'a', 0`): keys, indexes or single-valued JSONPath strings.
    Elems,
}

fn shape_of(arg_types: &[DataType]) -> Shape {
    match arg_types {
        [_] => Shape::Root,
        [
            _,
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..),
        ] => Shape::List,
        [_, _] => Shape::One,
        _ => Shape::Elems,
    }
}

impl DuckJsonFunction {
    /// Whether a constant path argument makes the result a list; checks the path.
    fn constant_is_list(&self, shape: Shape, path: Option<&ScalarValue>) -> Result<bool> {
        match (shape, path) {
            (Shape::List, Some(ScalarValue::List(list))) => {
                for text in list_texts(list.values())?.into_iter().flatten() {
                    if self.parse(&text)?.is_multi() {
                        return plan_err!(
                            "{}: a path in a list of paths must select one value, not '{text}'",
                            self.name
                        );
                    }
                }
                Ok(true)
            }
            (Shape::List, _) => Ok(true),
            (Shape::One, Some(value)) => match value.try_as_str() {
                Some(Some(text)) => Ok(self.parse(text)?.is_multi()),
                _ => Ok(false),
            },
            _ => Ok(false),
        }
    }

    /// A path text as DuckDB's reading functions read it. A bare key holding a `"` is read
    /// as a JSON Pointer's tokens, as DuckDB does (it cannot quote such a key in
    /// JSONPath): `'"a"'` names the key `"a"`, `'"a/b"'` the key `"a` then `b"`.
    fn parse(&self, text: &str) -> Result<JsonPath> {
        let pointer = match text.as_bytes().first() {
            Some(b'$' | b'/') | None => None,
            Some(_) => text.contains('"').then(|| format!("/{text}")),
        };
        parse_path(pointer.as_deref().unwrap_or(text))
            .map_err(|e| DataFusionError::Plan(format!("{}: {e}", self.name)))
    }
}

impl ScalarUDFImpl for DuckJsonFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let shape = shape_of(arg_types);
        match (self.probe, shape) {
            (DuckProbe::Valid, Shape::Root) => {}
            (DuckProbe::Valid, _) => return plan_err!("json_valid takes one argument"),
            (probe, Shape::Root) if !probe.path_optional() => {
                return plan_err!("{} needs a path argument", self.name);
            }
            _ => {}
        }
        coerce_reading_args(self.name, arg_types, shape == Shape::List)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        // The type depends on a constant path's value: `return_field_from_args` decides.
        Ok(self.probe.item_type())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let shape = shape_of(&types);
        let path = args.scalar_arguments.get(1).copied().flatten();
        let item = self.probe.item_type();
        if self.constant_is_list(shape, path)? {
            return Ok(Arc::new(Field::new(self.name, list_of(item), true)));
        }
        let json = self.probe == DuckProbe::Extract;
        Ok(Arc::new(value_field(self.name, item, json)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // A list where the probe's item is not: a list of paths or a path of many values.
        let listed = *args.return_field.data_type() != self.probe.item_type();
        rowwise(&args, |n| evaluate(self, &args.args, n, listed))
    }

    fn placement(&self, args: &[ExpressionPlacement]) -> ExpressionPlacement {
        // What simplification leaves of `v->>'$'` is a text access to `v`
        // ([`root_text_access`]): moved towards the scan like the others, out of a
        // filter over json_each's rows, to where their accesses are read typed.
        match self.probe {
            DuckProbe::ExtractString => access_placement(args),
            _ => ExpressionPlacement::KeepInPlace,
        }
    }

    fn simplify(&self, args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let output = match self.probe {
            DuckProbe::Extract => Output::Json,
            DuckProbe::ExtractString => Output::Text,
            // Counted where the array lies: a table reads a list's offsets, not its text.
            DuckProbe::ArrayLength => Output::ArrayLength,
            _ => return Ok(ExprSimplifyResult::Original(args)),
        };
        let new_args = match (self.probe, args.as_slice()) {
            (DuckProbe::ArrayLength, [Expr::ScalarFunction(inner)])
                if inner.func.name() == JSON_GET && inner.args.len() > 1 =>
            {
                inner.args.clone()
            }
            // The root path stays here: its value is written back minified (see
            // [`written`]).
            _ => match constant_elems(self, &args)?.filter(|e| !e.is_empty()) {
                Some(elems) => std::iter::once(args[0].clone()).chain(elems).collect(),
                None => return Ok(ExprSimplifyResult::Original(args)),
            },
        };
        Ok(ExprSimplifyResult::Simplified(Expr::ScalarFunction(
            ScalarFunction::new_udf(Arc::new(access_udf(output)), new_args),
        )))
    }
}

/// `json_extract_string(v, '$')` (what `v->>'$'` plans as) as the text access to the
/// whole of `v` it is: `v`. Simplification keeps the root path in DuckDB's function, so
/// the scans that compute accesses would otherwise write `v` as JSON text to read it
/// back. Numbers are then read as written, as every `->>` of a key path reads them.
pub fn root_text_access(f: &ScalarFunction) -> Option<&Expr> {
    let duck = f.func.inner().downcast_ref::<DuckJsonFunction>()?;
    match f.args.as_slice() {
        [value, Expr::Literal(ScalarValue::Utf8(Some(path)), _)]
            if duck.probe == DuckProbe::ExtractString && path == "$" =>
        {
            Some(value)
        }
        _ => None,
    }
}

/// The plain elements of a constant single-valued path, as `json_get` arguments; `None`
/// when the path is not constant or not plain (wildcards, pointer indexes, lists).
fn constant_elems(function: &DuckJsonFunction, args: &[Expr]) -> Result<Option<Vec<Expr>>> {
    match args {
        [_, Expr::Literal(ScalarValue::Utf8(Some(text)), _)] => {
            let path = function.parse(text)?;
            Ok(path.elems().map(|elems| {
                elems
                    .into_iter()
                    .map(|e| match e {
                        PathElem::Key(k) => Expr::Literal(ScalarValue::Utf8(Some(k)), None),
                        PathElem::Index(i) => Expr::Literal(ScalarValue::Int64(Some(i)), None),
                    })
                    .collect()
            }))
        }
        [_, index @ Expr::Literal(ScalarValue::Int64(Some(_)), _)] => Ok(Some(vec![index.clone()])),
        [_, rest @ ..] if rest.len() > 1 => {
            let constant = rest.iter().all(|e| {
                matches!(
                    e,
                    Expr::Literal(ScalarValue::Utf8(Some(_)) | ScalarValue::Int64(Some(_)), _)
                )
            });
            Ok(constant.then(|| rest.to_vec()))
        }
        _ => Ok(None),
    }
}

/// The texts of a list of paths (NULL entries as `None`).
fn list_texts(values: &ArrayRef) -> Result<Vec<Option<String>>> {
    (0..values.len())
        .map(|i| {
            let v = ScalarValue::try_from_array(values, i)?;
            Ok(v.try_as_str().flatten().map(str::to_string))
        })
        .collect()
}

/// The paths of one row: `None` when the row's path is NULL (the result is NULL).
fn row_paths(
    function: &DuckJsonFunction,
    args: &[ColumnarValue],
    row: usize,
) -> Result<Option<Vec<JsonPath>>> {
    let value_at = |arg: &ColumnarValue| match arg {
        ColumnarValue::Scalar(s) => Ok(s.clone()),
        ColumnarValue::Array(a) => ScalarValue::try_from_array(a, row),
    };
    let exec = |e: DataFusionError| match e {
        DataFusionError::Plan(m) => DataFusionError::Execution(m),
        other => other,
    };
    match args {
        [] => Ok(Some(vec![JsonPath::default()])),
        [arg] => match value_at(arg)? {
            ScalarValue::List(list) => {
                if list.is_null(0) {
                    return Ok(None);
                }
                let mut paths = Vec::new();
                for text in list_texts(&list.value(0))? {
                    // A NULL path in a list selects nothing.
                    let text = text.unwrap_or_else(|| "$[#]".to_string());
                    let path = function.parse(&text).map_err(exec)?;
                    if path.is_multi() {
                        return exec_err!(
                            "{}: a path in a list of paths must select one value, not '{text}'",
                            function.name
                        );
                    }
                    paths.push(path);
                }
                Ok(Some(paths))
            }
            ScalarValue::Int64(Some(i)) => Ok(Some(vec![JsonPath {
                steps: vec![PathStep::Elem(PathElem::Index(i))],
            }])),
            v => match v.try_as_str() {
                Some(Some(text)) => Ok(Some(vec![function.parse(text).map_err(exec)?])),
                Some(None) | None if v.is_null() => Ok(None),
                _ => exec_err!("{}: unsupported path {v}", function.name),
            },
        },
        elems => {
            let mut steps = Vec::with_capacity(elems.len());
            for arg in elems {
                match value_at(arg)? {
                    ScalarValue::Int64(Some(i)) => steps.push(PathStep::Elem(PathElem::Index(i))),
                    ScalarValue::Utf8(Some(k)) if k.starts_with('$') => {
                        let parsed = parse_json_path(&k).map_err(|e| {
                            DataFusionError::Execution(format!("{}: {e}", function.name))
                        })?;
                        steps.extend(parsed.into_iter().map(PathStep::Elem));
                    }
                    ScalarValue::Utf8(Some(k)) => steps.push(PathStep::Elem(PathElem::Key(k))),
                    v if v.is_null() => return Ok(None),
                    other => {
                        return exec_err!("{}: unsupported path element {other}", function.name);
                    }
                }
            }
            Ok(Some(vec![JsonPath { steps }]))
        }
    }
}

/// One scanner for a row's paths: each path's longest prefix of plain steps is located
/// while parsing; the rest is walked from there with [`select`].
struct Locator {
    paths: Vec<JsonPath>,
    /// Per path: its slot in the scanner and how many steps the slot covers.
    slots: Vec<(usize, usize)>,
    scanner: Scanner,
}

impl Locator {
    fn new(paths: Vec<JsonPath>) -> Self {
        let mut trie = PathTrie::new();
        let slots = paths
            .iter()
            .map(|p| {
                let plain: Vec<PathElem> = p
                    .steps
                    .iter()
                    .map_while(|s| match s {
                        PathStep::Elem(e) => Some(e.clone()),
                        _ => None,
                    })
                    .collect();
                (trie.add(&plain), plain.len())
            })
            .collect();
        Self {
            paths,
            slots,
            scanner: crate::json::function_scanner(Arc::new(trie)),
        }
    }

    /// The values each path selects in `doc` (already scanned), into `out[path]`.
    fn select(&self, doc: &[u8], out: &mut Vec<Vec<Span>>) -> Result<()> {
        out.resize_with(self.paths.len(), Vec::new);
        for ((path, &(slot, covered)), values) in self.paths.iter().zip(&self.slots).zip(out) {
            values.clear();
            if let Some(start) = self.scanner.get(slot) {
                select(doc, start, &path.steps[covered..], values)
                    .map_err(|e| DataFusionError::Execution(e.to_string()))?;
            }
        }
        Ok(())
    }
}

/// The JSON texts of a column of documents, by row (`None` for NULL).
pub(crate) fn texts(array: &ArrayRef) -> Result<Vec<Option<&str>>> {
    let column = TextColumn::new("a JSON function", array)?;
    Ok((0..array.len()).map(|row| column.get(row)).collect())
}

/// Evaluates a DuckDB reading function over `n` rows; `listed` when the result is a
/// list per row.
fn evaluate(
    function: &DuckJsonFunction,
    args: &[ColumnarValue],
    n: usize,
    listed: bool,
) -> Result<ArrayRef> {
    let docs = documents(args[0].to_array(n)?)?;
    let docs = texts(&docs)?;
    let path_args = &args[1..];
    let constant = path_args
        .iter()
        .all(|a| matches!(a, ColumnarValue::Scalar(_)));
    let mut locator = match constant {
        true => row_paths(function, path_args, 0)?.map(Locator::new),
        false => None,
    };
    let mut column = Column::new(function.probe, n, listed);
    let mut values = Vec::new();
    for (row, doc) in docs.into_iter().enumerate() {
        if !constant {
            locator = row_paths(function, path_args, row)?.map(Locator::new);
        }
        let (Some(doc), Some(loc)) = (doc, locator.as_mut()) else {
            column.append_null();
            continue;
        };
        if let Err(e) = loc.scanner.scan(doc.as_bytes()) {
            if function.probe == DuckProbe::Valid {
                column.items.append_bool(false);
                continue;
            }
            return exec_err!(
                "{}: malformed JSON in row {}: expected {e}",
                function.name,
                row + 1
            );
        }
        loc.select(doc.as_bytes(), &mut values)?;
        let multi = loc.paths.len() == 1 && loc.paths[0].is_multi();
        if multi && !listed {
            return exec_err!(
                "{}: a path that selects many values ('{}') must be a constant",
                function.name,
                loc.paths[0]
            );
        }
        column.append_row(doc, &values, multi);
    }
    column.finish(function.probe)
}

/// A result column: items, and when `listed` the list offsets and validity around them.
struct Column {
    probe: DuckProbe,
    items: Items,
    listed: bool,
    offsets: Vec<i32>,
    valid: Vec<bool>,
}

impl Column {
    fn new(probe: DuckProbe, n: usize, listed: bool) -> Self {
        Self {
            probe,
            items: Items::new(probe, n),
            listed,
            offsets: vec![0],
            valid: Vec::with_capacity(n),
        }
    }

    fn append_null(&mut self) {
        if self.listed {
            self.offsets.push(*self.offsets.last().unwrap_or(&0));
            self.valid.push(false);
        } else {
            self.items.append_null();
        }
    }

    /// One row: `values[path]` are each path's selections; a `multi` path lists them
    /// all, otherwise each path gives its first (or nothing).
    fn append_row(&mut self, doc: &str, values: &[Vec<Span>], multi: bool) {
        let before = self.items.len();
        if multi {
            for span in &values[0] {
                self.items.append(self.probe, doc, Some(*span));
            }
        } else {
            for found in values {
                self.items.append(self.probe, doc, found.first().copied());
            }
        }
        if self.listed {
            let added = self.items.len() - before;
            let last = *self.offsets.last().unwrap_or(&0);
            self.offsets
                .push(last + i32::try_from(added).unwrap_or(i32::MAX));
            self.valid.push(true);
        }
    }

    fn finish(mut self, probe: DuckProbe) -> Result<ArrayRef> {
        let values = self.items.finish();
        if !self.listed {
            return Ok(values);
        }
        let field = Arc::new(Field::new_list_field(probe.item_type(), true));
        let offsets = OffsetBuffer::new(self.offsets.into());
        Ok(Arc::new(ListArray::try_new(
            field,
            offsets,
            values,
            Some(NullBuffer::from(std::mem::take(&mut self.valid))),
        )?))
    }
}

/// The builder of one probe's items.
enum Items {
    Text(StringViewBuilder),
    Bool(BooleanBuilder),
    UInt(UInt64Builder),
    Keys(ListBuilder<StringViewBuilder>, Vec<u8>),
}

impl Items {
    fn new(probe: DuckProbe, n: usize) -> Self {
        match probe.item_type() {
            DataType::Boolean => Items::Bool(BooleanBuilder::with_capacity(n)),
            DataType::UInt64 => Items::UInt(UInt64Builder::with_capacity(n)),
            DataType::List(_) => Items::Keys(
                ListBuilder::new(StringViewBuilder::new())
                    .with_field(Arc::new(Field::new_list_field(DataType::Utf8View, true))),
                Vec::new(),
            ),
            _ => Items::Text(StringViewBuilder::with_capacity(n)),
        }
    }

    fn len(&self) -> usize {
        use arrow::array::ArrayBuilder;
        match self {
            Items::Text(b) => b.len(),
            Items::Bool(b) => b.len(),
            Items::UInt(b) => b.len(),
            Items::Keys(b, _) => b.len(),
        }
    }

    fn append_null(&mut self) {
        match self {
            Items::Text(b) => b.append_null(),
            Items::Bool(b) => b.append_null(),
            Items::UInt(b) => b.append_null(),
            Items::Keys(b, _) => b.append_null(),
        }
    }

    fn append_bool(&mut self, value: bool) {
        if let Items::Bool(b) = self {
            b.append_value(value);
        }
    }

    /// The probe of the value at `span` (`None`: the path selected nothing).
    fn append(&mut self, probe: DuckProbe, doc: &str, span: Option<Span>) {
        let bytes = doc.as_bytes();
        match (self, span) {
            (Items::Bool(b), span) => b.append_value(span.is_some()),
            (items, None) => items.append_null(),
            (Items::Text(b), Some(s)) => b.append_option(match (probe, s.kind) {
                (DuckProbe::Extract, _) => written(doc, s),
                (DuckProbe::ExtractString, Kind::String { .. } | Kind::Null) => {
                    text_of(doc, s, Output::Text)
                }
                (DuckProbe::ExtractString, _) => written(doc, s),
                (DuckProbe::Value, Kind::Null | Kind::Object | Kind::Array) => None,
                (DuckProbe::Value, _) => written(doc, s),
                _ => Some(duckdb_type(bytes, s).into()),
            }),
            (Items::UInt(b), Some(s)) => b.append_value(array_length_of(bytes, s)),
            (Items::Keys(b, key), Some(s)) => {
                for (k, _) in children(bytes, s) {
                    let Some(k) = k else { continue };
                    key.clear();
                    unescape_into(k.string_body(bytes), key);
                    b.values().append_value(String::from_utf8_lossy(key));
                }
                b.append(true);
            }
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Items::Text(b) => Arc::new(b.finish()),
            Items::Bool(b) => Arc::new(b.finish()),
            Items::UInt(b) => Arc::new(b.finish()),
            Items::Keys(b, _) => Arc::new(b.finish()),
        }
    }
}

/// The value at `span` of a scanned document written back as DuckDB's reading functions
/// return values: parsed and written minified, numbers in DuckDB's layout (`34.5e+6` is
/// `34500000.0`), so that `json_extract(j, '$')` is `j` minified. A value the tape does
/// not hold (a number beyond a double, `1e400`) is returned as its text, as DuckDB does.
fn written(doc: &str, span: Span) -> Option<Cow<'_, str>> {
    let raw = doc.get(span.start as usize..span.end as usize)?;
    match Json::parse(raw.as_bytes(), &mut crate::json::function_tape()) {
        Ok(value) => Some(Cow::Owned(value.to_text())),
        Err(_) => Some(Cow::Borrowed(raw)),
    }
}

/// DuckDB's name of a value's type: integers are BIGINT when negative and within 64
/// bits, UBIGINT when not negative and within 64 bits, DOUBLE beyond.
fn duckdb_type(doc: &[u8], span: Span) -> &'static str {
    match span.kind {
        Kind::Null => "NULL",
        Kind::Bool(_) => "BOOLEAN",
        Kind::String { .. } => "VARCHAR",
        Kind::Object => "OBJECT",
        Kind::Array => "ARRAY",
        Kind::Number { integer: false } => "DOUBLE",
        Kind::Number { integer: true } => {
            let text = std::str::from_utf8(span.raw(doc)).unwrap_or("");
            match text.starts_with('-') {
                true if text.parse::<i64>().is_ok() => "BIGINT",
                false if text.parse::<u64>().is_ok() => "UBIGINT",
                _ => "DOUBLE",
            }
        }
    }
}
