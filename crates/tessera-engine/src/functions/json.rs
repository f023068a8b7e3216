//! Tessera's JSON SQL functions: `json_get` (`->`), `json_get_text` (`->>`),
//! `json_get_str`, `json_get_int`, `json_get_float`, `json_get_bool`,
//! `json_get_array_length`, `json_typeof` and `json_length`. DuckDB's spellings are in
//! the modules `json_path` and `json_path_contains`, ClickHouse's in `json_clickhouse`,
//! which build on this one.
//!
//! Every function takes a JSON text followed by path elements: string keys, integer
//! array indexes (negative counts from the end) or a JSONPath string (`'$.a[0].b'`).
//! These row-at-a-time implementations are the reference semantics; the NDJSON scan
//! computes the same accesses during parsing when the optimizer pushes them down.

use std::sync::{Arc, LazyLock};

use arrow::array::{Array, ArrayRef, Int64Builder, StringBuilder, StringViewBuilder};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::scalar_doc_sections::DOC_SECTION_OTHER;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ExpressionPlacement, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::json_build::{TextColumn, write_arrow};
use crate::json::json_type::json_field;
use crate::json::output::OutputBuilder;
use tessera_json::path::{MAX_PATH_DEPTH, PathElem, PathTrie, parse_json_path};
use tessera_json::scanner::{Kind, Scanner, Span, for_each_member};
use tessera_json::value::{Output, type_name};

/// Names of the functions whose first argument is JSON text and the rest a path.
pub const JSON_GET: &str = "json_get";
/// `->>`.
pub const JSON_GET_TEXT: &str = "json_get_text";

/// The access functions: name, output and aliases.
const ACCESS: [(&str, Output, &[&str]); 7] = [
    (JSON_GET, Output::Json, &[]),
    (JSON_GET_TEXT, Output::Text, &["json_as_text"]),
    ("json_get_str", Output::Str, &[]),
    ("json_get_int", Output::Int, &[]),
    ("json_get_float", Output::Float, &[]),
    ("json_get_bool", Output::Bool, &[]),
    // DuckDB's `json_array_length` with a plain path plans onto it.
    ("json_get_array_length", Output::ArrayLength, &[]),
];

/// All JSON functions (Tessera's, DuckDB's and ClickHouse's), ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    let mut out: Vec<Arc<ScalarUDF>> = ACCESS
        .iter()
        .map(|(_, output, _)| Arc::new(access_udf(*output)))
        .collect();
    for (name, probe) in [
        ("json_typeof", Probe::TypeOf),
        ("json_length", Probe::Length),
    ] {
        out.push(Arc::new(ScalarUDF::from(JsonFunction::new(
            name,
            probe,
            &[],
        ))));
    }
    out
}

/// Evaluates a row-at-a-time function: over one row when every argument is a scalar
/// (the result is a scalar), else over the batch's rows; `eval` gets the row count.
pub(crate) fn rowwise(
    args: &ScalarFunctionArgs,
    eval: impl FnOnce(usize) -> Result<ArrayRef>,
) -> Result<ColumnarValue> {
    let scalar_result = args
        .args
        .iter()
        .all(|a| matches!(a, ColumnarValue::Scalar(_)));
    let n = if scalar_result { 1 } else { args.number_rows };
    let array = eval(n)?;
    if scalar_result {
        Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
            &array, 0,
        )?))
    } else {
        Ok(ColumnarValue::Array(array))
    }
}

/// The name of the access function of `output` (`json_get_text` for `Output::Text`).
pub(crate) fn access_name(output: Output) -> &'static str {
    ACCESS
        .iter()
        .find(|(_, o, _)| *o == output)
        .map(|(name, _, _)| *name)
        .expect("every output has an access function")
}

/// The access function (`json_get`, `json_get_text`, ...) of an output, as registered;
/// DuckDB's spellings plan onto it when their path is plain.
pub(crate) fn access_udf(output: Output) -> ScalarUDF {
    let (name, _, aliases) = ACCESS
        .iter()
        .find(|(_, o, _)| *o == output)
        .expect("every output has an access function");
    ScalarUDF::from(JsonFunction::new(name, Probe::Access(output), aliases))
}

/// The nullable result field `name` of a reading function: SQL `JSON` when it gives a
/// JSON value (`->`, `json_extract`), so that builders nest it instead of quoting it.
pub(crate) fn value_field(name: &str, data_type: DataType, json: bool) -> Field {
    match json {
        true => json_field(name).with_data_type(data_type),
        false => Field::new(name, data_type, true),
    }
}

/// The argument types of a reading function (the `json_*` functions here, DuckDB's
/// and ClickHouse's): the document as text (an untyped NULL as `Utf8`), then path
/// elements, keys as `Utf8` and indexes as `Int64`, at most [`MAX_PATH_DEPTH`] of them;
/// with `list_paths` a path may also be a list of path texts (DuckDB's many paths).
pub(crate) fn coerce_path_args(
    name: &str,
    arg_types: &[DataType],
    list_paths: bool,
) -> Result<Vec<DataType>> {
    let Some((first, path)) = arg_types.split_first() else {
        return plan_err!("{name} needs a JSON argument");
    };
    if !is_json_text(first) {
        return plan_err!("{name} expects JSON text as its first argument, not {first}");
    }
    if path.len() > MAX_PATH_DEPTH {
        return plan_err!("{name}: a path has at most {MAX_PATH_DEPTH} elements");
    }
    let mut out = vec![match first {
        DataType::Null => DataType::Utf8,
        other => other.clone(),
    }];
    for t in path {
        out.push(match t {
            t if is_json_text(t) => DataType::Utf8,
            t if t.is_integer() => DataType::Int64,
            DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _)
                if list_paths && is_json_text(f.data_type()) =>
            {
                DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true)))
            }
            other => {
                return plan_err!(
                    "{name}: path elements are keys (text) or array indexes (integers){}, \
                     not {other}",
                    if list_paths {
                        " or a list of paths"
                    } else {
                        ""
                    }
                );
            }
        });
    }
    Ok(out)
}

/// [`coerce_path_args`] for DuckDB's reading functions, which also read a list, struct
/// or map as the JSON `to_json` makes of it (DuckDB casts such a document to JSON);
/// [`documents`] converts it when the function runs.
pub(crate) fn coerce_reading_args(
    name: &str,
    arg_types: &[DataType],
    list_paths: bool,
) -> Result<Vec<DataType>> {
    match arg_types.split_first() {
        Some((first, path)) if is_nested(first) => {
            let mut as_text = vec![DataType::Utf8];
            as_text.extend_from_slice(path);
            let mut out = coerce_path_args(name, &as_text, list_paths)?;
            out[0] = first.clone();
            Ok(out)
        }
        _ => coerce_path_args(name, arg_types, list_paths),
    }
}

fn is_nested(t: &DataType) -> bool {
    matches!(
        t,
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::Struct(_)
            | DataType::Map(..)
    )
}

/// The documents a reading function reads: `docs` itself when it is text, else (a list,
/// struct or map, see [`coerce_reading_args`]) each row written as JSON.
pub(crate) fn documents(docs: ArrayRef) -> Result<ArrayRef> {
    if !is_nested(docs.data_type()) {
        return Ok(docs);
    }
    let mut tape = crate::json::function_tape();
    let mut out = StringBuilder::with_capacity(docs.len(), 0);
    let mut text = String::new();
    for row in 0..docs.len() {
        if docs.is_null(row) {
            out.append_null();
            continue;
        }
        text.clear();
        write_arrow(docs.as_ref(), false, row, &mut text, &mut tape)?;
        out.append_value(&text);
    }
    Ok(Arc::new(out.finish()))
}

/// Whether a type holds JSON text (or is an untyped NULL).
pub(crate) fn is_json_text(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    )
}

/// What a JSON function computes from the value found at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Probe {
    /// The value itself, converted as [`Output`] says.
    Access(Output),
    /// The value's JSON type name.
    TypeOf,
    /// The number of elements of an array or members of an object.
    Length,
}

impl Probe {
    fn data_type(self) -> DataType {
        match self {
            Probe::Access(output) => output.data_type(),
            Probe::TypeOf => DataType::Utf8View,
            Probe::Length => DataType::Int64,
        }
    }
}

/// One JSON function; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JsonFunction {
    name: &'static str,
    probe: Probe,
    aliases: Vec<String>,
    signature: Signature,
}

impl JsonFunction {
    fn new(name: &'static str, probe: Probe, aliases: &[&str]) -> Self {
        Self {
            name,
            probe,
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// If `udf` is a JSON access function (`->`, `->>`, `json_get_*`), its output kind.
pub fn access_output(udf: &ScalarUDF) -> Option<Output> {
    match udf.inner().downcast_ref::<JsonFunction>()?.probe {
        Probe::Access(output) => Some(output),
        _ => None,
    }
}

static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION_OTHER,
        "Reads the value at a path of a JSON document. Path elements are keys, array \
         indexes (negative from the end) or a JSONPath string such as '$.a[0].b'.",
        "json_get_str(j, 'commit', 'collection')",
    )
    .with_argument("json", "JSON text")
    .with_argument("path", "keys, indexes or one JSONPath string")
    .build()
});

impl ScalarUDFImpl for JsonFunction {
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
        coerce_reading_args(self.name, arg_types, false)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.probe.data_type())
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(value_field(
            self.name,
            self.probe.data_type(),
            self.probe == Probe::Access(Output::Json),
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        rowwise(&args, |n| evaluate(self.name, self.probe, &args.args, n))
    }

    fn simplify(&self, args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        simplify_path_args(self, args)
    }

    fn placement(&self, args: &[ExpressionPlacement]) -> ExpressionPlacement {
        access_placement(args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}

/// Where a function of a JSON value (a column, or an access to one) and constant
/// arguments is computed: it moves into the scan, where the NDJSON reader computes
/// the access while parsing, instead of parsing a second time, and a table reads it
/// from typed columns. Computed above a scan, an access to a table's documents would
/// have the scan rebuild every whole document.
pub(crate) fn access_placement(args: &[ExpressionPlacement]) -> ExpressionPlacement {
    let Some((base, rest)) = args.split_first() else {
        return ExpressionPlacement::KeepInPlace;
    };
    let pushable_base = matches!(
        base,
        ExpressionPlacement::Column | ExpressionPlacement::MoveTowardsLeafNodes
    );
    if pushable_base && rest.iter().all(|a| *a == ExpressionPlacement::Literal) {
        ExpressionPlacement::MoveTowardsLeafNodes
    } else {
        ExpressionPlacement::KeepInPlace
    }
}

/// Normalizes path arguments so that every spelling of one access is one expression:
/// JSONPath strings become separate elements, and `json_x(json_get(d, p), q)` becomes
/// `json_x(d, p, q)`. The NDJSON scan then sees one path per access.
fn simplify_path_args(function: &JsonFunction, args: Vec<Expr>) -> Result<ExprSimplifyResult> {
    let mut changed = false;
    let mut args = args;
    if let Some(Expr::ScalarFunction(inner)) = args.first()
        && inner.func.name() == JSON_GET
        && inner.args.len() > 1
        && args[1..].iter().all(is_literal_path)
        && inner.args[1..].iter().all(is_literal_path)
    {
        let mut flat = inner.args.clone();
        flat.extend(args.drain(1..));
        args = flat;
        changed = true;
    }
    let mut out = Vec::with_capacity(args.len());
    for (i, arg) in args.into_iter().enumerate() {
        match &arg {
            Expr::Literal(ScalarValue::Utf8(Some(text)), _) if i > 0 && text.starts_with('$') => {
                let path = parse_json_path(text)
                    .map_err(|e| DataFusionError::Plan(format!("{}: {e}", function.name)))?;
                out.extend(path.into_iter().map(path_literal));
                changed = true;
            }
            _ => out.push(arg),
        }
    }
    if !changed {
        return Ok(ExprSimplifyResult::Original(out));
    }
    if out.len() > MAX_PATH_DEPTH + 1 {
        return plan_err!(
            "{}: a path has at most {MAX_PATH_DEPTH} elements",
            function.name
        );
    }
    Ok(ExprSimplifyResult::Simplified(Expr::ScalarFunction(
        datafusion::logical_expr::expr::ScalarFunction::new_udf(
            Arc::new(ScalarUDF::from(function.clone())),
            out,
        ),
    )))
}

fn is_literal_path(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Literal(ScalarValue::Utf8(Some(_)) | ScalarValue::Int64(Some(_)), _)
    )
}

fn path_literal(elem: PathElem) -> Expr {
    match elem {
        PathElem::Key(k) => Expr::Literal(ScalarValue::Utf8(Some(k)), None),
        PathElem::Index(i) => Expr::Literal(ScalarValue::Int64(Some(i)), None),
    }
}

/// The path elements of constant arguments; `None` when an element is NULL. A function
/// whose path must be constant (one planned by Tessera's rules) errs otherwise.
pub(crate) fn constant_path(name: &str, args: &[ColumnarValue]) -> Result<Option<Vec<PathElem>>> {
    if !args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_))) {
        return exec_err!("{name}: the path must be constant");
    }
    path_of_row(name, args, 0)
}

/// Reads the path elements of one row from constant or per-row arguments; `None` when
/// an element is NULL (the access is then NULL).
fn path_of_row(name: &str, args: &[ColumnarValue], row: usize) -> Result<Option<Vec<PathElem>>> {
    let mut path = Vec::with_capacity(args.len());
    for arg in args {
        let value = match arg {
            ColumnarValue::Scalar(s) => s.clone(),
            ColumnarValue::Array(a) => ScalarValue::try_from_array(a, row)?,
        };
        match value {
            ScalarValue::Utf8(Some(k)) if k.starts_with('$') => {
                let parsed = parse_json_path(&k)
                    .map_err(|e| DataFusionError::Execution(format!("{name}: {e}")))?;
                path.extend(parsed);
            }
            ScalarValue::Utf8(Some(k)) => path.push(PathElem::Key(k)),
            ScalarValue::Int64(Some(i)) => path.push(PathElem::Index(i)),
            v if v.is_null() => return Ok(None),
            other => return exec_err!("{name}: unsupported path element {other}"),
        }
    }
    Ok(Some(path))
}

/// Calls `f(row, doc, value)` for every row whose document and path are not NULL.
fn for_each_row(
    name: &str,
    args: &[ColumnarValue],
    n: usize,
    mut f: impl FnMut(usize, &str, Option<Span>),
) -> Result<()> {
    let docs = documents(args[0].to_array(n)?)?;
    let path_args = &args[1..];
    let constant = path_args
        .iter()
        .all(|a| matches!(a, ColumnarValue::Scalar(_)));
    let scanner_for = |row: usize| -> Result<Option<Scanner>> {
        Ok(path_of_row(name, path_args, row)?
            .map(|p| crate::json::function_scanner(Arc::new(PathTrie::single(&p)))))
    };
    let mut scanner = if constant { scanner_for(0)? } else { None };
    let mut visit = |row: usize, doc: &str| -> Result<()> {
        if !constant {
            scanner = scanner_for(row)?;
        }
        let Some(scanner) = scanner.as_mut() else {
            return Ok(());
        };
        scanner.scan(doc.as_bytes()).map_err(|e| {
            DataFusionError::Execution(format!(
                "{name}: malformed JSON in row {}: expected {e}",
                row + 1
            ))
        })?;
        f(row, doc, scanner.get(0));
        Ok(())
    };
    let texts = TextColumn::new(name, &docs)?;
    for row in 0..docs.len() {
        if let Some(doc) = texts.get(row) {
            visit(row, doc)?;
        }
    }
    Ok(())
}

/// Evaluates a JSON function over `n` rows; rows skipped by [`for_each_row`] are NULL.
fn evaluate(name: &str, probe: Probe, args: &[ColumnarValue], n: usize) -> Result<ArrayRef> {
    // Fills gaps with NULL so that row `row` lands at index `row`.
    fn pad(next: &mut usize, row: usize, mut append_null: impl FnMut()) {
        while *next < row {
            append_null();
            *next += 1;
        }
        *next = row + 1;
    }
    let mut next = 0;
    match probe {
        Probe::Access(output) => {
            let mut b = OutputBuilder::new(output, n);
            for_each_row(name, args, n, |row, doc, span| {
                pad(&mut next, row, || b.append_null());
                b.append(doc, span);
            })?;
            pad(&mut next, n, || b.append_null());
            Ok(b.finish())
        }
        Probe::TypeOf => {
            let mut b = StringViewBuilder::with_capacity(n);
            for_each_row(name, args, n, |row, _, span| {
                pad(&mut next, row, || b.append_null());
                b.append_option(span.map(|s| type_name(s.kind)));
            })?;
            pad(&mut next, n, || b.append_null());
            Ok(Arc::new(b.finish()))
        }
        Probe::Length => {
            let mut b = Int64Builder::with_capacity(n);
            for_each_row(name, args, n, |row, doc, span| {
                pad(&mut next, row, || b.append_null());
                b.append_option(
                    span.filter(|s| matches!(s.kind, Kind::Object | Kind::Array))
                        .map(|s| {
                            let mut count = 0i64;
                            for_each_member(doc.as_bytes(), s, |_, _| count += 1);
                            count
                        }),
                );
            })?;
            pad(&mut next, n, || b.append_null());
            Ok(Arc::new(b.finish()))
        }
    }
}
