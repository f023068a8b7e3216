//! Unnesting JSON into rows, as DuckDB does: the table functions `json_each(json [,
//! path])` and `json_tree(json [, path])`, and the list behind `CAST(x AS JSON[])`.
//!
//! Both table functions answer DuckDB's eight columns (`key`, `value`, `type`, `atom`,
//! `id`, `parent`, `fullkey`, `path`): `json_each` one row per member or element of the
//! value at the path (the value itself when it is a scalar), `json_tree` one row per
//! value of that subtree in pre-order. Values are written back as DuckDB writes JSON
//! (minified, numbers in their shortest form), and `id` is the value's position among
//! all keys and values of the document in pre-order, which is the index of its node on a
//! [`Tape`], so the numbering equals DuckDB's.
//!
//! Over constant arguments the table functions produce their rows directly. Over a
//! column (`FROM t, json_each(t.j)`) `json_each_rewrite` plans them as an UNNEST of
//! [`JsonEntries`], which returns each document's rows as a list of structs; DataFusion's
//! unnest then emits them in batches of at most `batch_size` rows.

use std::fmt::Write as _;
use std::sync::{Arc, LazyLock};

use arrow::array::{
    Array, ArrayRef, ListBuilder, StringViewBuilder, StructArray, StructBuilder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Fields, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionImpl, TableProvider};
use datafusion::common::cast::{as_large_string_array, as_string_array, as_string_view_array};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::scalar_doc_sections::DOC_SECTION_OTHER;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use tessera_json::path::{PathElem, parse_json_path};
use tessera_json::tape::{Kind, ParseError, Tape, Value};

/// The output columns of `json_each` and `json_tree`, in DuckDB's order.
pub const ENTRY_COLUMNS: [&str; 8] = [
    "key", "value", "type", "atom", "id", "parent", "fullkey", "path",
];

/// Most rows of one batch of a constant `json_each`/`json_tree` (DataFusion's default
/// batch size), so a large literal still streams in bounded batches.
const BATCH_ROWS_MAX: usize = 8192;

/// Which rows a walk produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Walk {
    /// `json_each`: the members or elements of the value (the value, if a scalar).
    Each,
    /// `json_tree`: the value and every value below it, in pre-order.
    Tree,
}

impl Walk {
    /// The SQL name of the table function.
    pub fn name(self) -> &'static str {
        match self {
            Walk::Each => "json_each",
            Walk::Tree => "json_tree",
        }
    }

    /// The walk named `name` (`json_each` or `json_tree`).
    pub fn from_name(name: &str) -> Option<Walk> {
        match name.to_ascii_lowercase().as_str() {
            "json_each" => Some(Walk::Each),
            "json_tree" => Some(Walk::Tree),
            _ => None,
        }
    }
}

/// The Arrow fields of the output columns: text columns as `Utf8View`, `id` and
/// `parent` as `UInt64` (DuckDB's `UBIGINT`).
pub fn entry_fields() -> Fields {
    ENTRY_COLUMNS
        .iter()
        .map(|name| {
            let data_type = match *name {
                "id" | "parent" => DataType::UInt64,
                _ => DataType::Utf8View,
            };
            Field::new(*name, data_type, true)
        })
        .collect()
}

/// The type of one output column by name, if it is one.
pub fn entry_type(name: &str) -> Option<DataType> {
    entry_fields()
        .iter()
        .find(|f| f.name() == name)
        .map(|f| f.data_type().clone())
}

/// Where a walk starts: the path argument, parsed, and its text (the `path` and the
/// prefix of `fullkey` in the output, as the user wrote it).
#[derive(Debug, Clone)]
pub struct Start {
    elems: Vec<PathElem>,
    text: String,
}

impl Start {
    /// The document's root (`$`).
    pub fn root() -> Self {
        Self {
            elems: Vec::new(),
            text: "$".to_string(),
        }
    }

    /// The start at JSONPath `text` (`$...`), or at member `text` of the root when it
    /// has no `$`; DuckDB refuses JSON Pointers (`/a`) here.
    pub fn parse(function: &str, text: &str) -> Result<Self> {
        if text.starts_with('/') {
            return plan_err!("{function}: the path must start with '$', not {text:?}");
        }
        if !text.starts_with('$') {
            let mut quoted = String::from("$.\"");
            escape_key(text, &mut quoted);
            quoted.push('"');
            return Ok(Self {
                elems: vec![PathElem::Key(text.to_string())],
                text: quoted,
            });
        }
        let elems =
            parse_json_path(text).map_err(|e| DataFusionError::Plan(format!("{function}: {e}")))?;
        Ok(Self {
            elems,
            text: text.to_string(),
        })
    }
}

/// Appends `key` with its quotes and backslashes escaped, as inside a quoted path key.
fn escape_key(key: &str, out: &mut String) {
    for c in key.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// The columns being built for the rows of one or more walks.
pub struct EntryColumns {
    builder: StructBuilder,
    /// The row count so far.
    rows: usize,
}

impl Default for EntryColumns {
    fn default() -> Self {
        Self::new()
    }
}

impl EntryColumns {
    /// Empty columns.
    pub fn new() -> Self {
        Self {
            builder: StructBuilder::from_fields(entry_fields(), 0),
            rows: 0,
        }
    }

    /// Rows appended since the last [`Self::finish`].
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The rows so far as a struct array; the columns are left empty.
    pub fn finish(&mut self) -> StructArray {
        self.rows = 0;
        self.builder.finish()
    }

    fn text(&mut self, column: usize, value: Option<&str>) {
        self.builder
            .field_builder::<StringViewBuilder>(column)
            .expect("text column")
            .append_option(value);
    }

    fn number(&mut self, column: usize, value: Option<u64>) {
        self.builder
            .field_builder::<UInt64Builder>(column)
            .expect("id column")
            .append_option(value);
    }

    fn append(&mut self, row: &Row<'_>) {
        self.text(0, row.key);
        self.text(1, Some(row.value));
        self.text(2, Some(row.type_name));
        self.text(3, row.atom.then_some(row.value));
        self.number(4, Some(row.id));
        self.number(5, row.parent);
        self.text(6, Some(row.fullkey));
        self.text(7, Some(row.path));
        self.builder.append(true);
        self.rows += 1;
    }
}

/// One output row, borrowed from the walker's buffers.
struct Row<'a> {
    key: Option<&'a str>,
    value: &'a str,
    type_name: &'static str,
    atom: bool,
    id: u64,
    parent: Option<u64>,
    fullkey: &'a str,
    path: &'a str,
}

/// Parses documents and writes their rows; reused across documents so its buffers are
/// allocated once.
#[derive(Default)]
pub struct Walker {
    tape: Tape,
    value: String,
    fullkey: String,
    path: String,
}

impl Walker {
    /// Appends the rows of `walk` over `text` from `start` to `out`; returns how many.
    /// `Err` holds the byte offset and reason of malformed JSON.
    pub fn walk(
        &mut self,
        text: &[u8],
        start: &Start,
        walk: Walk,
        out: &mut EntryColumns,
    ) -> std::result::Result<usize, ParseError> {
        self.tape.clear();
        let text = self.tape.push(text)?;
        let tape = std::mem::take(&mut self.tape);
        let doc = tape.doc(0, text);
        let root = doc.root();
        let before = out.rows();
        if let Some(at) = find(root, &start.elems) {
            self.fullkey.clear();
            self.fullkey.push_str(&start.text);
            let base = root.index();
            match walk {
                Walk::Each => self.each(at, base, out),
                Walk::Tree => self.tree(at, base, None, None, out),
            }
        }
        self.tape = tape;
        Ok(out.rows() - before)
    }

    /// `json_each`: the children of `at`, or `at` itself when it is a scalar.
    fn each(&mut self, at: Value<'_>, base: usize, out: &mut EntryColumns) {
        self.path.clear();
        self.path.push_str(&self.fullkey);
        let fullkey_len = self.fullkey.len();
        match at.node().kind() {
            Kind::Object => {
                for (key, value) in at.members() {
                    self.key_suffix(key.str());
                    self.emit(value, base, Some(key.str()), None, out);
                    self.fullkey.truncate(fullkey_len);
                }
            }
            Kind::Array => {
                for (i, value) in at.elements().enumerate() {
                    self.index_suffix(i);
                    self.emit(value, base, Some(&i.to_string()), None, out);
                    self.fullkey.truncate(fullkey_len);
                }
            }
            _ => self.emit(at, base, None, None, out),
        }
    }

    /// `json_tree`: `at` (reached by `key` from `parent`) and everything below it. The
    /// tape limits nesting to 128 levels, which bounds the recursion.
    fn tree(
        &mut self,
        at: Value<'_>,
        base: usize,
        key: Option<&str>,
        parent: Option<u64>,
        out: &mut EntryColumns,
    ) {
        self.emit(at, base, key, parent, out);
        let id = Some((at.index() - base) as u64);
        let fullkey_len = self.fullkey.len();
        match at.node().kind() {
            Kind::Object => {
                for (k, value) in at.members() {
                    self.path.clear();
                    self.path.push_str(&self.fullkey);
                    self.key_suffix(k.str());
                    self.tree(value, base, Some(k.str()), id, out);
                    self.fullkey.truncate(fullkey_len);
                }
            }
            Kind::Array => {
                for (i, value) in at.elements().enumerate() {
                    self.path.clear();
                    self.path.push_str(&self.fullkey);
                    self.index_suffix(i);
                    self.tree(value, base, Some(&i.to_string()), id, out);
                    self.fullkey.truncate(fullkey_len);
                }
            }
            _ => {}
        }
    }

    /// Appends the row of `value`, whose `fullkey` and `path` are in the buffers.
    fn emit(
        &mut self,
        value: Value<'_>,
        base: usize,
        key: Option<&str>,
        parent: Option<u64>,
        out: &mut EntryColumns,
    ) {
        if parent.is_none() && key.is_none() {
            // The start value itself: its path is its own full key.
            self.path.clear();
            self.path.push_str(&self.fullkey);
        }
        self.value.clear();
        write_json(value, &mut self.value);
        let kind = value.node().kind();
        out.append(&Row {
            key,
            value: &self.value,
            type_name: type_name(value),
            atom: !matches!(kind, Kind::Object | Kind::Array | Kind::Null),
            id: (value.index() - base) as u64,
            parent,
            fullkey: &self.fullkey,
            path: &self.path,
        });
    }

    /// `.key`, quoted unless it is an ASCII letter followed by letters, digits and `_`
    /// (SQLite's rule, which DuckDB follows).
    fn key_suffix(&mut self, key: &str) {
        let plain = key.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        self.fullkey.push('.');
        if plain {
            self.fullkey.push_str(key);
            return;
        }
        self.fullkey.push('"');
        escape_key(key, &mut self.fullkey);
        self.fullkey.push('"');
    }

    fn index_suffix(&mut self, index: usize) {
        let _ = write!(self.fullkey, "[{index}]");
    }
}

/// The value at `path` below `root`: the first member of a repeated key (as DuckDB
/// reads it), negative indexes from the end.
fn find<'a>(root: Value<'a>, path: &[PathElem]) -> Option<Value<'a>> {
    let mut at = root;
    for elem in path {
        at = match (elem, at.node().kind()) {
            (PathElem::Key(k), Kind::Object) => at.members().find(|(key, _)| key.str() == k)?.1,
            (PathElem::Index(i), Kind::Array) => {
                let len = at.node().container_len() as i64;
                let i = if *i < 0 { len + i } else { *i };
                at.elements().nth(usize::try_from(i).ok()?)?
            }
            _ => return None,
        };
    }
    Some(at)
}

/// DuckDB's type name of a JSON value.
fn type_name(value: Value<'_>) -> &'static str {
    match value.node().kind() {
        Kind::Null => "NULL",
        Kind::True | Kind::False => "BOOLEAN",
        Kind::Int if value.node().int() < 0 => "BIGINT",
        Kind::Int | Kind::UInt => "UBIGINT",
        Kind::Decimal | Kind::Float => "DOUBLE",
        Kind::String | Kind::Key => "VARCHAR",
        Kind::Object => "OBJECT",
        Kind::Array => "ARRAY",
    }
}

/// Writes `value` as DuckDB writes JSON: no whitespace, strings with the minimal
/// escapes, numbers in their shortest form ([`write_float`]).
pub fn write_json(value: Value<'_>, out: &mut String) {
    let node = value.node();
    match node.kind() {
        Kind::Null => out.push_str("null"),
        Kind::True => out.push_str("true"),
        Kind::False => out.push_str("false"),
        Kind::Int => {
            let _ = write!(out, "{}", node.int());
        }
        Kind::UInt => {
            let _ = write!(out, "{}", node.uint());
        }
        // DuckDB keeps the digits of an integer beyond u64 as written.
        Kind::Decimal => {
            let _ = write!(out, "{}", value.decimal());
        }
        Kind::Float => write_float(node.float(), out),
        Kind::String | Kind::Key => write_string(value.str(), out),
        Kind::Object => {
            out.push('{');
            for (i, (key, member)) in value.members().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key.str(), out);
                out.push(':');
                write_json(member, out);
            }
            out.push('}');
        }
        Kind::Array => {
            out.push('[');
            for (i, element) in value.elements().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(element, out);
            }
            out.push(']');
        }
    }
}

/// A double with the shortest digits that read back to it: positional when its decimal
/// exponent is in -6..=20 (with `.0` when integral), otherwise `1.5e-10` style (as
/// ECMAScript's Number::toString, which DuckDB's writer follows).
fn write_float(f: f64, out: &mut String) {
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').expect("{:e} has an exponent");
    let exponent: i32 = exponent.parse().expect("{:e} exponent is an integer");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    out.push_str(sign);
    if !(-6..=20).contains(&exponent) {
        out.push_str(mantissa);
        let _ = write!(out, "e{exponent}");
        return;
    }
    if exponent < 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
        out.push_str(&digits);
        return;
    }
    let integral = exponent as usize + 1;
    if digits.len() <= integral {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', integral - digits.len()));
        out.push_str(".0");
    } else {
        out.push_str(&digits[..integral]);
        out.push('.');
        out.push_str(&digits[integral..]);
    }
}

/// A JSON string: `"` and `\` escaped, control characters as `\n`-style escapes or
/// `\u00XX`, everything else (non-ASCII, DEL, `/`) as is.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The JSON text argument of row `row` of `docs` (any string type), `None` when NULL.
fn text_at(docs: &ArrayRef, row: usize) -> Result<Option<&str>> {
    if docs.is_null(row) {
        return Ok(None);
    }
    Ok(Some(match docs.data_type() {
        DataType::Utf8 => as_string_array(docs)?.value(row),
        DataType::LargeUtf8 => as_large_string_array(docs)?.value(row),
        DataType::Utf8View => as_string_view_array(docs)?.value(row),
        other => return exec_err!("expected JSON text, not {other}"),
    }))
}

/// Accepts JSON text (any string type, or NULL) followed by `paths` optional text
/// arguments.
fn coerce_text_args(name: &str, arg_types: &[DataType], paths: usize) -> Result<Vec<DataType>> {
    if arg_types.is_empty() || arg_types.len() > 1 + paths {
        return plan_err!("{name} takes a JSON text and at most {paths} path");
    }
    arg_types
        .iter()
        .map(|t| match t {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Ok(t.clone()),
            DataType::Null => Ok(DataType::Utf8),
            other => plan_err!("{name} expects text arguments, not {other}"),
        })
        .collect()
}

fn malformed(name: &str, row: usize, error: ParseError) -> DataFusionError {
    DataFusionError::Execution(format!(
        "{name}: malformed JSON in row {}: {error}",
        row + 1
    ))
}

/// The rows of `json_each`/`json_tree` of each document as a list of structs (see the
/// module documentation); NULL documents and paths give an empty list. Planned by
/// `json_each_rewrite` under an UNNEST; not meant to be called by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JsonEntries {
    walk: Walk,
    name: String,
    signature: Signature,
}

impl JsonEntries {
    /// The entries function of `walk`.
    pub fn new(walk: Walk) -> Self {
        Self {
            walk,
            name: format!("__tessera_{}", walk.name()),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    /// The list type it returns.
    pub fn list_type() -> DataType {
        DataType::List(Arc::new(Field::new_list_field(
            DataType::Struct(entry_fields()),
            true,
        )))
    }
}

impl ScalarUDFImpl for JsonEntries {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce_text_args(self.walk.name(), arg_types, 1)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(Self::list_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let docs = args.args[0].to_array(n)?;
        let paths = match args.args.get(1) {
            Some(p) => Some(p.to_array(n)?),
            None => None,
        };
        let name = self.walk.name();
        let mut list = ListBuilder::new(EntryColumns::new()).with_field(Arc::new(
            Field::new_list_field(DataType::Struct(entry_fields()), true),
        ));
        let mut walker = Walker::default();
        let mut constant_start: Option<(String, Start)> = None;
        for row in 0..n {
            let start = match &paths {
                None => Some(Start::root()),
                Some(p) => match text_at(p, row)? {
                    None => None,
                    Some(text) => Some(match &constant_start {
                        Some((t, s)) if t == text => s.clone(),
                        _ => {
                            let s = Start::parse(name, text)?;
                            constant_start = Some((text.to_string(), s.clone()));
                            s
                        }
                    }),
                },
            };
            if let (Some(doc), Some(start)) = (text_at(&docs, row)?, start) {
                walker
                    .walk(doc.as_bytes(), &start, self.walk, list.values())
                    .map_err(|e| malformed(name, row, e))?;
            }
            list.append(true);
        }
        Ok(ColumnarValue::Array(Arc::new(list.finish())))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&ENTRIES_DOCS)
    }
}

impl arrow::array::ArrayBuilder for EntryColumns {
    fn len(&self) -> usize {
        self.builder.len()
    }

    fn finish(&mut self) -> ArrayRef {
        Arc::new(EntryColumns::finish(self))
    }

    fn finish_cloned(&self) -> ArrayRef {
        Arc::new(self.builder.finish_cloned())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }

    fn into_box_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

static ENTRIES_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION_OTHER,
        "The rows json_each/json_tree give for each document, as a list of structs \
         (planned under UNNEST for `FROM t, json_each(t.j)`).",
        "FROM t, json_each(t.j, '$.items') AS e",
    )
    .with_argument("json", "JSON text")
    .with_argument("path", "optional JSONPath starting with '$'")
    .build()
});

/// `json_each(json [, path])` / `json_tree(json [, path])` in FROM with constant
/// arguments.
#[derive(Debug)]
pub struct JsonEachTable {
    walk: Walk,
}

impl JsonEachTable {
    /// The table function of `walk`.
    pub fn new(walk: Walk) -> Self {
        Self { walk }
    }
}

impl TableFunctionImpl for JsonEachTable {
    fn call(&self, exprs: &[Expr]) -> Result<Arc<dyn TableProvider>> {
        let name = self.walk.name();
        if exprs.is_empty() || exprs.len() > 2 {
            return plan_err!("{name} takes a JSON text and an optional path");
        }
        let mut texts = Vec::with_capacity(exprs.len());
        for e in exprs {
            texts.push(match e {
                Expr::Literal(v, _) => literal_text(name, v)?,
                _ => {
                    return plan_err!(
                        "{name}: arguments over columns are read as a lateral join: \
                         write FROM t, {name}(t.j) (got {e})"
                    );
                }
            });
        }
        let start = match texts.get(1) {
            None => Some(Start::root()),
            Some(path) => path.as_deref().map(|p| Start::parse(name, p)).transpose()?,
        };
        let schema = Arc::new(Schema::new(entry_fields()));
        let mut batches = Vec::new();
        if let (Some(doc), Some(start)) = (&texts[0], start) {
            let mut columns = EntryColumns::new();
            Walker::default()
                .walk(doc.as_bytes(), &start, self.walk, &mut columns)
                .map_err(|e| malformed(name, 0, e))?;
            let rows = RecordBatch::from(columns.finish());
            let mut offset = 0;
            while offset < rows.num_rows() {
                let len = BATCH_ROWS_MAX.min(rows.num_rows() - offset);
                batches.push(rows.slice(offset, len));
                offset += len;
            }
        }
        Ok(Arc::new(MemTable::try_new(schema, vec![batches])?))
    }
}

fn literal_text(name: &str, value: &ScalarValue) -> Result<Option<String>> {
    match value {
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => {
            Ok(s.clone())
        }
        v if v.is_null() => Ok(None),
        other => plan_err!("{name} expects JSON text, not {}", other.data_type()),
    }
}

/// `CAST(x AS JSON[])`: the elements of a JSON array as a list of JSON texts (written
/// as DuckDB writes them); NULL stays NULL, anything but an array is an error, or NULL
/// under `TRY_CAST` (the second argument `true`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JsonList {
    signature: Signature,
}

/// The name `CAST(x AS JSON[])` is rewritten to.
pub const JSON_LIST: &str = "__tessera_json_list";

impl Default for JsonList {
    fn default() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for JsonList {
    fn name(&self) -> &str {
        JSON_LIST
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [json] => coerce_text_args("CAST AS JSON[]", &[json.clone()], 0),
            [json, DataType::Boolean] => {
                let mut out = coerce_text_args("CAST AS JSON[]", &[json.clone()], 0)?;
                out.push(DataType::Boolean);
                Ok(out)
            }
            _ => plan_err!("CAST AS JSON[] takes one text value"),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new_list_field(
            DataType::Utf8View,
            true,
        ))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let docs = args.args[0].to_array(n)?;
        let try_cast = matches!(
            args.args.get(1),
            Some(ColumnarValue::Scalar(ScalarValue::Boolean(Some(true))))
        );
        let mut list = ListBuilder::new(StringViewBuilder::new())
            .with_field(Arc::new(Field::new_list_field(DataType::Utf8View, true)));
        let mut tape = Tape::default();
        let mut element = String::new();
        for row in 0..n {
            let Some(text) = text_at(&docs, row)? else {
                list.append(false);
                continue;
            };
            tape.clear();
            let parsed = match tape.push(text.as_bytes()) {
                Ok(parsed) => parsed,
                Err(_) if try_cast => {
                    list.append(false);
                    continue;
                }
                Err(e) => return Err(malformed("CAST AS JSON[]", row, e)),
            };
            let root = tape.doc(0, parsed).root();
            if root.node().kind() != Kind::Array {
                if try_cast {
                    list.append(false);
                    continue;
                }
                return exec_err!(
                    "Cannot cast to list of JSON: row {} is not a JSON array",
                    row + 1
                );
            }
            for value in root.elements() {
                element.clear();
                write_json(value, &mut element);
                list.values().append_value(&element);
            }
            list.append(true);
        }
        let array: ArrayRef = Arc::new(list.finish());
        Ok(ColumnarValue::Array(array))
    }
}

/// The scalar functions of this module, to register with a session.
pub fn scalar_functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        Arc::new(ScalarUDF::from(JsonEntries::new(Walk::Each))),
        Arc::new(ScalarUDF::from(JsonEntries::new(Walk::Tree))),
        Arc::new(ScalarUDF::from(JsonList::default())),
    ]
}

/// The table functions of this module, by name.
pub fn table_functions() -> Vec<(&'static str, Arc<dyn TableFunctionImpl>)> {
    [Walk::Each, Walk::Tree]
        .into_iter()
        .map(|w| (w.name(), Arc::new(JsonEachTable::new(w)) as _))
        .collect()
}
