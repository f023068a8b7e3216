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

use std::sync::{Arc, LazyLock};

use arrow::array::{
    Array, ArrayRef, Int64Builder, ListBuilder, StringViewBuilder, StructArray, StructBuilder,
    UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Fields, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionImpl, TableProvider};
use datafusion::common::cast::{as_large_string_array, as_string_array, as_string_view_array};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::scalar_doc_sections::DOC_SECTION_OTHER;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ExpressionPlacement, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use tessera_json::path::{PathElem, parse_json_path};
use tessera_json::tape::ParseError;

mod elements;
mod values;
mod walk;

use super::json::access_placement;
use super::json_cast;
use elements::NoElements;
pub use values::{
    JsonEachValues, Rows, ValueAccess, ValueReads, field_name, field_names, fields_type,
    values_functions, values_type,
};
use walk::escape_key;
pub use walk::{Row, Walk, Walker};

/// The output columns of `json_each` and `json_tree`, in DuckDB's order.
pub const ENTRY_COLUMNS: [&str; 8] = [
    "key", "value", "type", "atom", "id", "parent", "fullkey", "path",
];

/// DuckDB's hidden columns of `json_each` and `json_tree`: readable by name, not part of
/// `*`. `rowid` is the row's position among the rows of its document, `json` the
/// document walked and `root` the start path as written in `path`/`fullkey`.
pub const HIDDEN_COLUMNS: [&str; 3] = ["rowid", "json", "root"];

/// Most rows of one batch of a constant `json_each`/`json_tree` (DataFusion's default
/// batch size), so a large literal still streams in bounded batches.
const BATCH_ROWS_MAX: usize = 8192;

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

/// The fields of the rows [`JsonEntries`] lists: the output columns, then the hidden
/// `rowid` and `root` (`json` is the walk's argument, computed where it is read).
pub fn listed_fields() -> Fields {
    let mut fields: Vec<Field> = entry_fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("rowid", DataType::Int64, true));
    fields.push(Field::new("root", DataType::Utf8View, true));
    fields.into()
}

/// The type of one output or hidden column by name, if it is one.
pub fn entry_type(name: &str) -> Option<DataType> {
    if name == "json" {
        return Some(DataType::Utf8View);
    }
    listed_fields()
        .iter()
        .find(|f| f.name() == name)
        .map(|f| f.data_type().clone())
}

/// Which of the [`listed_fields`] a plan reads, by position. The others are left NULL
/// and cost nothing: the value's text is most of a walk's cost, and a `count(*)` over
/// `json_each` reads no column at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadColumns(u16);

impl ReadColumns {
    /// Every column.
    pub const ALL: Self = Self(u16::MAX);

    /// The listed columns among `names` (other names are ignored).
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let fields = listed_fields();
        let mut bits = 0u16;
        for name in names {
            if let Some(at) = fields.iter().position(|f| f.name() == name) {
                bits |= 1 << at;
            }
        }
        Self(bits)
    }

    fn reads(self, column: usize) -> bool {
        debug_assert!(column < 16, "at most 16 listed columns");
        self.0 & (1 << column) != 0
    }

    /// Whether `value` or `atom` (the value's text when it is a scalar) is read.
    fn values(self) -> bool {
        self.reads(1) || self.reads(3)
    }

    /// Whether `fullkey` or `path` is read.
    fn paths(self) -> bool {
        self.reads(6) || self.reads(7)
    }

    /// Whether `id` or `parent` is read: node numbers within the whole document, which
    /// only a walk of the whole document knows.
    pub fn ids(self) -> bool {
        self.reads(4) || self.reads(5)
    }
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

/// The columns being built for the rows of one or more walks: the output columns, and
/// with [`listed_fields`] also the hidden `rowid` and `root`.
pub struct EntryColumns {
    builder: StructBuilder,
    hidden: bool,
    reads: ReadColumns,
    /// The next row's position in the current document.
    rowid: i64,
    /// The current document's start path.
    root: String,
}

impl Default for EntryColumns {
    fn default() -> Self {
        Self::new()
    }
}

impl EntryColumns {
    /// Empty columns of the output columns only.
    pub fn new() -> Self {
        Self {
            builder: StructBuilder::from_fields(entry_fields(), 0),
            hidden: false,
            reads: ReadColumns::ALL,
            rowid: 0,
            root: String::new(),
        }
    }

    /// Empty columns of [`listed_fields`].
    pub fn with_hidden() -> Self {
        Self {
            builder: StructBuilder::from_fields(listed_fields(), 0),
            hidden: true,
            ..Self::new()
        }
    }

    /// The same columns, of which only `reads` are filled (the rest are NULL).
    pub fn reading(self, reads: ReadColumns) -> Self {
        Self { reads, ..self }
    }

    /// A walker that writes what these columns read.
    pub fn walker(&self) -> Walker {
        Walker::writing(self.reads.values(), self.reads.paths())
    }

    /// Starts the rows of a document walked from `root`.
    pub fn start_document(&mut self, root: &str) {
        self.rowid = 0;
        self.root.clear();
        self.root.push_str(root);
    }

    /// The rows so far as a struct array; the columns are left empty.
    pub fn finish(&mut self) -> StructArray {
        self.builder.finish()
    }

    fn text(&mut self, column: usize, value: Option<&str>) {
        let value = value.filter(|_| self.reads.reads(column));
        self.builder
            .field_builder::<StringViewBuilder>(column)
            .expect("text column")
            .append_option(value);
    }

    fn number(&mut self, column: usize, value: Option<u64>) {
        let value = value.filter(|_| self.reads.reads(column));
        self.builder
            .field_builder::<UInt64Builder>(column)
            .expect("id column")
            .append_option(value);
    }

    /// Appends one row.
    pub fn append(&mut self, row: &Row<'_>) {
        self.text(0, row.key);
        self.text(1, Some(row.value));
        self.text(2, Some(row.type_name));
        self.text(3, row.atom.then_some(row.value));
        self.number(4, Some(row.id));
        self.number(5, row.parent);
        self.text(6, Some(row.fullkey));
        self.text(7, Some(row.path));
        if self.hidden {
            self.builder
                .field_builder::<Int64Builder>(8)
                .expect("rowid column")
                .append_value(self.rowid);
            let root = std::mem::take(&mut self.root);
            self.text(9, Some(&root));
            self.root = root;
        }
        self.rowid += 1;
        self.builder.append(true);
    }
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

/// What `CAST(x AS JSON[])` makes of row `row` (0-based) of a batch that has no
/// elements: nothing under `TRY_CAST` (the row has no list), else the reason it fails.
fn cast_failure(why: NoElements, try_cast: bool, row: usize) -> Result<()> {
    match why {
        _ if try_cast => Ok(()),
        NoElements::Malformed(e) => Err(malformed("CAST AS JSON[]", row, e)),
        NoElements::NotArray => Err(DataFusionError::Execution(format!(
            "Cannot cast to list of JSON: row {} is not a JSON array",
            row + 1
        ))),
    }
}

/// The rows of `json_each`/`json_tree` of each document as a list of structs (see the
/// module documentation); NULL documents and paths give an empty list. Planned by
/// `json_each_rewrite` under an UNNEST; not meant to be called by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JsonEntries {
    walk: Walk,
    reads: ReadColumns,
    /// The first argument is already the value at the path (the second argument), so
    /// the walk starts at its root and the path only names the rows.
    at_path: bool,
    name: String,
    signature: Signature,
}

impl JsonEntries {
    /// The entries function of `walk`.
    pub fn new(walk: Walk) -> Self {
        Self {
            walk,
            reads: ReadColumns::ALL,
            at_path: false,
            name: format!("__tessera_{}", walk.name()),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    /// The same function filling only the columns in `reads`.
    pub fn reading(self, reads: ReadColumns) -> Self {
        Self { reads, ..self }
    }

    /// The same function over the values at the path (`json_get(doc, path)`) instead
    /// of whole documents: a scan then reads just that value, which is what makes
    /// `json_each(t.j, '$.a.b')` over a table read the shredded `$.a.b` alone. The
    /// node numbers (`id`, `parent`) count from the value, so only for walks that do
    /// not read them.
    pub fn at_path(self) -> Self {
        assert!(!self.reads.ids(), "node numbers need the whole document");
        Self {
            at_path: true,
            ..self
        }
    }

    /// Which walk it lists the rows of.
    pub fn walk(&self) -> Walk {
        self.walk
    }

    /// Whether it is `json_each` over the value at its path (see [`Self::at_path`]):
    /// its rows are then those of a walk of its first argument alone.
    pub fn walks_value(&self) -> bool {
        self.walk == Walk::Each && self.at_path
    }

    /// The list type it returns.
    pub fn list_type() -> DataType {
        DataType::List(Arc::new(Field::new_list_field(
            DataType::Struct(listed_fields()),
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

    fn placement(&self, args: &[ExpressionPlacement]) -> ExpressionPlacement {
        access_placement(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let docs = args.args[0].to_array(n)?;
        let paths = match args.args.get(1) {
            Some(p) => Some(p.to_array(n)?),
            None => None,
        };
        let name = self.walk.name();
        let columns = EntryColumns::with_hidden().reading(self.reads);
        let mut walker = columns.walker();
        let mut list = ListBuilder::new(columns).with_field(Arc::new(Field::new_list_field(
            DataType::Struct(listed_fields()),
            true,
        )));
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
                let columns = list.values();
                columns.start_document(&start.text);
                let elems: &[PathElem] = if self.at_path { &[] } else { &start.elems };
                walker
                    .walk(doc.as_bytes(), elems, &start.text, self.walk, &mut |row| {
                        columns.append(row)
                    })
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
/// arguments; the `hidden` variant (named by [`hidden_table_name`]) also answers the
/// [`HIDDEN_COLUMNS`], for a query that reads them.
#[derive(Debug)]
pub struct JsonEachTable {
    walk: Walk,
    hidden: bool,
}

impl JsonEachTable {
    /// The table function of `walk`.
    pub fn new(walk: Walk) -> Self {
        Self {
            walk,
            hidden: false,
        }
    }

    /// The table function of `walk` with the hidden columns.
    pub fn with_hidden(walk: Walk) -> Self {
        Self { walk, hidden: true }
    }

    /// The output schema: the entry columns, then the hidden ones if asked for.
    fn schema(&self) -> Schema {
        if !self.hidden {
            return Schema::new(entry_fields());
        }
        let mut fields: Vec<Field> = listed_fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new("json", DataType::Utf8View, true));
        Schema::new(fields)
    }

    /// The rows of `doc` walked from `start`, as one batch of [`Self::schema`].
    fn rows(&self, doc: &str, start: &Start, schema: &Arc<Schema>) -> Result<RecordBatch> {
        let name = self.walk.name();
        let mut columns = match self.hidden {
            true => EntryColumns::with_hidden(),
            false => EntryColumns::new(),
        };
        columns.start_document(&start.text);
        columns
            .walker()
            .walk(
                doc.as_bytes(),
                &start.elems,
                &start.text,
                self.walk,
                &mut |row| columns.append(row),
            )
            .map_err(|e| malformed(name, 0, e))?;
        let rows = columns.finish();
        let mut arrays = rows.columns().to_vec();
        if self.hidden {
            let json = arrow::array::StringViewArray::from_iter_values(std::iter::repeat_n(
                doc,
                rows.len(),
            ));
            arrays.push(Arc::new(json));
        }
        Ok(RecordBatch::try_new(Arc::clone(schema), arrays)?)
    }
}

/// The name of the table function that also answers the hidden columns of `walk`.
pub fn hidden_table_name(walk: Walk) -> &'static str {
    match walk {
        Walk::Each => "__tessera_json_each_hidden",
        Walk::Tree => "__tessera_json_tree_hidden",
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
                Expr::Literal(v, _) => literal_text(v)?,
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
        let schema = Arc::new(self.schema());
        let mut batches = Vec::new();
        if let (Some(doc), Some(start)) = (&texts[0], start) {
            let rows = self.rows(doc, &start, &schema)?;
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

fn literal_text(value: &ScalarValue) -> Result<Option<String>> {
    match value {
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => {
            Ok(s.clone())
        }
        v if v.is_null() => Ok(None),
        // DuckDB casts any other value to JSON (`json_each(range(3))`, a list).
        other => {
            let mut text = String::new();
            crate::functions::json_build::write_arrow(
                other.to_array()?.as_ref(),
                false,
                0,
                &mut text,
                &mut crate::json::function_tape(),
            )?;
            Ok(Some(text))
        }
    }
}

/// `CAST(x AS JSON[])`: the elements of a JSON array as a list of JSON texts (written
/// as DuckDB writes them); NULL stays NULL, anything but an array is an error, or NULL
/// under `TRY_CAST` (the second argument `true`). With the third argument `true`,
/// `null` elements are SQL NULL (DuckDB's cast of a JSON value, not of text). A list
/// of text is cast item by item, each kept as written (`json_cast::text_items_as_json`).
/// An array the scanner accepts gives its elements in one pass, most of them copied
/// (`elements`); anything else is parsed whole, which reports what is wrong.
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
            [list, DataType::Boolean, DataType::Boolean] if json_cast::is_text_list(list) => {
                Ok(vec![
                    json_cast::text_list_type(),
                    DataType::Boolean,
                    DataType::Boolean,
                ])
            }
            [json, DataType::Boolean, DataType::Boolean] => {
                let mut out = coerce_text_args("CAST AS JSON[]", std::slice::from_ref(json), 0)?;
                out.extend([DataType::Boolean, DataType::Boolean]);
                Ok(out)
            }
            _ => plan_err!("{JSON_LIST} takes a text value and two flags"),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new_list_field(
            DataType::Utf8View,
            true,
        ))))
    }

    fn placement(&self, _args: &[ExpressionPlacement]) -> ExpressionPlacement {
        // A cast fails on a value that is no array, so it must not move below a filter
        // that keeps only arrays (`WHERE json_type(x) = 'ARRAY'`). Its argument, an
        // access, still moves into the scan on its own.
        ExpressionPlacement::KeepInPlace
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let docs = args.args[0].to_array(n)?;
        let flag = |i: usize| {
            matches!(
                args.args.get(i),
                Some(ColumnarValue::Scalar(ScalarValue::Boolean(Some(true))))
            )
        };
        let (try_cast, sql_nulls) = (flag(1), flag(2));
        if matches!(docs.data_type(), DataType::List(_)) {
            let items = json_cast::text_items_as_json(&docs, try_cast)?;
            return Ok(ColumnarValue::Array(items));
        }
        let mut list = ListBuilder::new(StringViewBuilder::new())
            .with_field(Arc::new(Field::new_list_field(DataType::Utf8View, true)));
        let mut copier = elements::ElementCopier::default();
        for row in 0..n {
            let Some(text) = text_at(&docs, row)? else {
                list.append(false);
                continue;
            };
            match copier.elements(text, sql_nulls) {
                Ok(items) => {
                    items.for_each(|item| list.values().append_option(item));
                    list.append(true);
                }
                Err(e) => {
                    cast_failure(e, try_cast, row)?;
                    list.append(false);
                }
            }
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
    .into_iter()
    .chain(values_functions())
    .collect()
}

/// The table functions of this module, by name.
pub fn table_functions() -> Vec<(&'static str, Arc<dyn TableFunctionImpl>)> {
    [Walk::Each, Walk::Tree]
        .into_iter()
        .flat_map(|w| {
            [
                (w.name(), Arc::new(JsonEachTable::new(w)) as _),
                (
                    hidden_table_name(w),
                    Arc::new(JsonEachTable::with_hidden(w)) as _,
                ),
            ]
        })
        .collect()
}
