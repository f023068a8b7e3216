//! What a query reads of the values of `json_each`'s rows, as one list per document.
//!
//! `FROM t, json_each(t.j, '$.commits') AS e ... e.value->'author'->>'name'` needs, per
//! row of `json_each`, one access to its value. [`JsonEachValues`] computes that access
//! for every row of a document at once and returns the results as a list, so the UNNEST
//! of a lateral `json_each` repeats just what the query reads (the logical rule
//! `element_accesses` plans it): no key, path or value text is built per row, and a
//! table answers it from the typed columns of a path it shreds as a list of objects
//! (JSON Tiles, SIGMOD 2021, §4.3: the elements of a long array read like a relation of
//! their own). The rows-only form answers `count(*)` and other reads of no column.
//!
//! Its first argument is either the entries list of [`super::JsonEntries`] (each row's
//! `value` text is read) or the JSON text of the value `json_each` walks (the value at
//! its path), which the walk of [`Walker`] turns into the same row values; so both give
//! the same answer by construction, and `simplify` turns the first into the second.
//!
//! The same lists serve the UNNEST of `CAST(x AS JSON[])` ([`Rows::Cast`]): its rows are
//! the elements of an array, copied as [`super::JsonList`] copies them.

use std::sync::{Arc, LazyLock};

use arrow::array::{Array, ArrayRef, AsArray, ListArray, NullArray, StructArray};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{DataFusionError, Result, exec_err, plan_err};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::scalar_doc_sections::DOC_SECTION_OTHER;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ExpressionPlacement, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use tessera_json::path::{PathElem, PathTrie, Slot};
use tessera_json::scanner::Scanner;
use tessera_json::value::Output;
use tessera_tiles::variant_view::VariantView;

use super::elements::ElementCopier;
use super::{JsonEntries, Walk, Walker, cast_failure, malformed, text_at};
use crate::functions::json::{access_name, access_placement, constant_path};
use crate::json::output::OutputBuilder;
use crate::json::variant_path::append_at;

/// Which rows a document's value has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rows {
    /// `json_each`'s: an array's elements, an object's members, a scalar itself.
    Each,
    /// `CAST(x AS JSON[])`'s: an array's elements. Anything else is an error, or has no
    /// rows under `TRY_CAST` (`try_cast`).
    Cast {
        /// Whether a value that is no array has no rows rather than failing.
        try_cast: bool,
    },
}

/// What turns one document's value into its rows, reused from document to document.
pub enum RowReader {
    /// Walks the value as `json_each` does.
    Each(Walker),
    /// Copies an array's elements as `CAST(x AS JSON[])` does.
    Cast {
        copier: ElementCopier,
        try_cast: bool,
    },
}

/// The accesses of one [`JsonEachValues`], applied to row values as they come and
/// collected into one list per document.
pub struct ValueAccess {
    rows_of: Rows,
    /// One per access, in order; none when only the rows are counted.
    builders: Vec<OutputBuilder>,
    /// Whether the values are several accesses' (a list of structs), not one access's.
    fields: bool,
    /// Finds every access's path in one pass over a value; `None` when no access has a
    /// path (each has a NULL path element).
    scanner: Option<Scanner>,
    /// Each access's slot in the scanner; `None` when a path element is NULL (every
    /// value is then NULL, as the access function gives).
    slots: Vec<Option<Slot>>,
    /// Each access's path, followed inside values given as Variant.
    paths: Vec<Option<Vec<PathElem>>>,
    /// The JSON text of the value a path inside a Variant ends on.
    found: String,
    offsets: Vec<i32>,
    /// Rows so far, all documents together.
    rows: usize,
}

impl ValueAccess {
    /// `accesses` (each an output and its path, `None` for a NULL path element) to the
    /// `rows_of` each document, their values collected as the fields of a struct when
    /// `fields`.
    pub fn with_accesses(
        accesses: &[(Output, Option<Vec<PathElem>>)],
        fields: bool,
        rows_of: Rows,
    ) -> Self {
        assert!(
            fields || accesses.len() <= 1,
            "one access's values, or fields"
        );
        let mut trie = PathTrie::new();
        let slots: Vec<Option<Slot>> = accesses
            .iter()
            .map(|(_, path)| path.as_deref().map(|p| trie.add(p)))
            .collect();
        let scanner = slots
            .iter()
            .any(Option::is_some)
            .then(|| crate::json::function_scanner(Arc::new(trie)));
        Self {
            rows_of,
            builders: accesses
                .iter()
                .map(|&(o, _)| OutputBuilder::new(o, 0))
                .collect(),
            fields,
            scanner,
            slots,
            paths: accesses.iter().map(|(_, path)| path.clone()).collect(),
            found: String::new(),
            offsets: vec![0],
            rows: 0,
        }
    }

    /// Appends the accesses to one row's value, written as JSON text.
    pub fn push_value(&mut self, value: &str) -> Result<()> {
        self.rows += 1;
        if self.builders.is_empty() {
            return Ok(());
        }
        if let Some(scanner) = self.scanner.as_mut() {
            scanner.scan(value.as_bytes()).map_err(|e| {
                DataFusionError::Internal(format!("a json_each value does not parse: {e:?}"))
            })?;
        }
        for (builder, slot) in self.builders.iter_mut().zip(&self.slots) {
            match (slot, self.scanner.as_ref()) {
                (Some(slot), Some(scanner)) => builder.append(value, scanner.get(*slot)),
                _ => builder.append_null(),
            }
        }
        Ok(())
    }

    /// Appends the accesses to one row's value held as Variant (a table's binary): each
    /// path is followed inside it, and only the value it ends on is validated and
    /// written as text.
    pub fn push_variant(&mut self, value: &VariantView<'_, '_>) -> Result<()> {
        self.rows += 1;
        for (builder, path) in self.builders.iter_mut().zip(&self.paths) {
            match path {
                Some(path) => append_at(builder, value, path, &mut self.found)
                    .map_err(|e| DataFusionError::External(Box::new(e)))?,
                None => builder.append_null(),
            }
        }
        Ok(())
    }

    /// Appends `rows` rows whose values nothing reads (`count(*)`).
    fn push_rows(&mut self, rows: usize) {
        assert!(self.builders.is_empty(), "values are read one by one");
        self.rows += rows;
    }

    /// Rows so far, all documents together.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Ends the list of the current document.
    pub fn end_document(&mut self) -> Result<()> {
        let end = i32::try_from(self.rows)
            .map_err(|_| DataFusionError::Execution("too many json_each rows in a batch".into()))?;
        self.offsets.push(end);
        Ok(())
    }

    /// Appends the rows of `text` (the value at the path) as one list; NULL text has no
    /// rows. `row` names the document in an error.
    pub fn push_document(
        &mut self,
        reader: &mut RowReader,
        text: Option<&str>,
        row: usize,
    ) -> Result<()> {
        match (text, reader) {
            (None, _) => {}
            (Some(text), RowReader::Each(walker)) => self.push_walked(walker, text, row)?,
            (Some(text), RowReader::Cast { copier, try_cast }) => {
                match copier.elements(text, false) {
                    Ok(items) => {
                        for item in items {
                            self.push_value(item.unwrap_or("null"))?;
                        }
                    }
                    Err(e) => cast_failure(e, *try_cast, row)?,
                }
            }
        }
        self.end_document()
    }

    /// Appends the rows of `json_each` over `text`, without ending the list.
    fn push_walked(&mut self, walker: &mut Walker, text: &str, row: usize) -> Result<()> {
        let mut failed = None;
        walker
            .walk(text.as_bytes(), &[], "$", Walk::Each, &mut |entry| {
                if failed.is_none()
                    && let Err(e) = self.push_value(entry.value)
                {
                    failed = Some(e);
                }
            })
            .map_err(|e| malformed("json_each", row, e))?;
        failed.map_or(Ok(()), Err)
    }

    /// The lists of the rows of `json_each` over each of `values` (JSON text of any
    /// string type, the values walked).
    pub fn of_values(&mut self, values: &ArrayRef) -> Result<ArrayRef> {
        let mut reader = self.reader();
        for row in 0..values.len() {
            self.push_document(&mut reader, text_at(values, row)?, row)?;
        }
        self.finish()
    }

    /// The lists so far; the accesses are left empty for reuse.
    pub fn finish(&mut self) -> Result<ArrayRef> {
        let values: ArrayRef = match (self.builders.as_mut_slice(), self.fields) {
            ([], false) => Arc::new(NullArray::new(self.rows)),
            ([one], false) => one.finish(),
            (builders, _) => {
                let arrays: Vec<ArrayRef> = builders.iter_mut().map(|b| b.finish()).collect();
                let types = arrays.iter().map(|a| a.data_type().clone());
                Arc::new(StructArray::try_new(field_names(types), arrays, None)?)
            }
        };
        assert_eq!(values.len(), self.rows, "one value per row");
        let offsets = OffsetBuffer::new(std::mem::replace(&mut self.offsets, vec![0]).into());
        self.rows = 0;
        let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
        Ok(Arc::new(ListArray::try_new(field, offsets, values, None)?))
    }

    /// What turns a document's value into its rows; a walker writes row values only
    /// when the accesses read them.
    pub fn reader(&self) -> RowReader {
        match self.rows_of {
            Rows::Each => RowReader::Each(Walker::writing(!self.builders.is_empty(), false)),
            Rows::Cast { try_cast } => RowReader::Cast {
                copier: ElementCopier::default(),
                try_cast,
            },
        }
    }
}

/// The list type [`JsonEachValues`] with `output` returns.
pub fn values_type(output: Option<Output>) -> DataType {
    let item = output.map_or(DataType::Null, Output::data_type);
    DataType::List(Arc::new(Field::new_list_field(item, true)))
}

/// The list type of accesses with `outputs` collected as the fields of a struct.
pub fn fields_type(outputs: impl Iterator<Item = Output>) -> DataType {
    let item = DataType::Struct(field_names(outputs.map(Output::data_type)));
    DataType::List(Arc::new(Field::new_list_field(item, true)))
}

/// The fields of several accesses' values: `a0`, `a1`, ... of `types`.
pub fn field_names(types: impl Iterator<Item = DataType>) -> Fields {
    types
        .enumerate()
        .map(|(k, t)| Field::new(field_name(k), t, true))
        .collect()
}

/// The name of the field holding access `k`'s values.
pub fn field_name(k: usize) -> String {
    format!("a{k}")
}

/// What a [`JsonEachValues`] reads of each row's value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ValueReads {
    /// Nothing: the rows are counted.
    Rows,
    /// One access with this output; every argument after the first is its path.
    One(Output),
    /// Several accesses, each an output and how many path arguments it takes (in
    /// order, after the first argument); their values are the fields of a struct
    /// ([`field_name`]), all found in one pass over each value.
    Fields(Vec<(Output, usize)>),
}

impl ValueReads {
    /// Each access's output and its own path arguments, out of the path arguments
    /// `paths` of a call (all after the first); `None` when too few are given.
    pub fn split<'a, T>(&self, paths: &'a [T]) -> Option<Vec<(Output, &'a [T])>> {
        match self {
            ValueReads::Rows => Some(Vec::new()),
            ValueReads::One(output) => Some(vec![(*output, paths)]),
            ValueReads::Fields(accesses) => {
                let mut at = 0;
                let mut out = Vec::with_capacity(accesses.len());
                for &(output, len) in accesses {
                    out.push((output, paths.get(at..at + len)?));
                    at += len;
                }
                Some(out)
            }
        }
    }
}

/// `json_each`'s rows of each document (or `CAST(x AS JSON[])`'s, by [`Rows`]), each
/// reduced to what the query reads of its value (one access, several, or nothing,
/// counting rows), as a list per document; see the module documentation. Planned by
/// `element_accesses`; not meant to be called by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JsonEachValues {
    reads: ValueReads,
    rows_of: Rows,
    name: String,
    signature: Signature,
}

impl JsonEachValues {
    /// The function of accesses with `output` to the `rows_of` each document, or of
    /// rows alone.
    pub fn new(output: Option<Output>, rows_of: Rows) -> Self {
        Self::reading(output.map_or(ValueReads::Rows, ValueReads::One), rows_of)
    }

    /// The function reading `reads` of the `rows_of` each document.
    pub fn reading(reads: ValueReads, rows_of: Rows) -> Self {
        let prefix = match rows_of {
            Rows::Each => "__tessera_json_each",
            Rows::Cast { try_cast: false } => "__tessera_json_list",
            Rows::Cast { try_cast: true } => "__tessera_try_json_list",
        };
        let name = match &reads {
            ValueReads::Rows => format!("{prefix}_rows"),
            ValueReads::One(output) => format!("{prefix}_{}", access_name(*output)),
            ValueReads::Fields(_) => format!("{prefix}_fields"),
        };
        Self {
            reads,
            rows_of,
            name,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    /// What it reads of each row's value.
    pub fn reads(&self) -> &ValueReads {
        &self.reads
    }

    /// Which rows each document's value has.
    pub fn rows_of(&self) -> Rows {
        self.rows_of
    }

    /// Each access's output and path, from the path arguments of a call.
    fn accesses(&self, paths: &[ColumnarValue]) -> Result<Vec<(Output, Option<Vec<PathElem>>)>> {
        let split = self.reads.split(paths).ok_or_else(|| {
            DataFusionError::Internal(format!("{}: too few path arguments", self.name))
        })?;
        split
            .into_iter()
            .map(|(output, args)| Ok((output, constant_path(&self.name, args)?)))
            .collect()
    }
}

/// One function per access output and the rows-only one, for each kind of rows, to
/// register.
pub fn values_functions() -> Vec<Arc<ScalarUDF>> {
    let outputs = [
        None,
        Some(Output::Json),
        Some(Output::Text),
        Some(Output::Str),
        Some(Output::Int),
        Some(Output::Float),
        Some(Output::Bool),
        Some(Output::ArrayLength),
    ];
    let rows = [
        Rows::Each,
        Rows::Cast { try_cast: false },
        Rows::Cast { try_cast: true },
    ];
    rows.into_iter()
        .flat_map(|r| outputs.map(|o| Arc::new(ScalarUDF::from(JsonEachValues::new(o, r)))))
        .collect()
}

impl ScalarUDFImpl for JsonEachValues {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types.first() {
            Some(DataType::List(_) | DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8) => {
                Ok(arg_types.to_vec())
            }
            Some(DataType::Null) => {
                let mut out = arg_types.to_vec();
                out[0] = DataType::Utf8;
                Ok(out)
            }
            _ => plan_err!("{}: expected json_each's rows or JSON text", self.name),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match &self.reads {
            ValueReads::Rows => values_type(None),
            ValueReads::One(output) => values_type(Some(*output)),
            ValueReads::Fields(accesses) => fields_type(accesses.iter().map(|&(o, _)| o)),
        })
    }

    fn placement(&self, args: &[ExpressionPlacement]) -> ExpressionPlacement {
        // A cast of a value that is no array fails: it must not move below a filter.
        match self.rows_of {
            Rows::Cast { try_cast: false } => ExpressionPlacement::KeepInPlace,
            _ => access_placement(args),
        }
    }

    fn simplify(&self, args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        // Over the entries of a walk of the value at a path, the walk's argument is the
        // value's text: read it directly, so the scan computes no entries.
        let walked = match args.first() {
            Some(Expr::ScalarFunction(f)) if self.rows_of == Rows::Each => f
                .func
                .inner()
                .downcast_ref::<JsonEntries>()
                .filter(|e| e.walks_value())
                .and_then(|_| f.args.first().cloned()),
            _ => None,
        };
        let Some(value) = walked else {
            return Ok(ExprSimplifyResult::Original(args));
        };
        let mut args = args;
        args[0] = value;
        Ok(ExprSimplifyResult::Simplified(Expr::ScalarFunction(
            ScalarFunction::new_udf(Arc::new(ScalarUDF::from(self.clone())), args),
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let input = args.args[0].to_array(n)?;
        let accesses = self.accesses(&args.args[1..])?;
        let fields = matches!(self.reads, ValueReads::Fields(_));
        let mut access = ValueAccess::with_accesses(&accesses, fields, self.rows_of);
        if let DataType::List(_) = input.data_type() {
            if self.rows_of != Rows::Each {
                return exec_err!("{}: expected JSON text", self.name);
            }
            return Ok(ColumnarValue::Array(of_entries(&mut access, &input)?));
        }
        Ok(ColumnarValue::Array(access.of_values(&input)?))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}

/// The accesses over each row's `value` of an entries list of [`JsonEntries`].
fn of_entries(access: &mut ValueAccess, entries: &ArrayRef) -> Result<ArrayRef> {
    let list = entries.as_list::<i32>();
    let rows = list.values().as_struct();
    let reads_values = !access.builders.is_empty();
    let values = match rows.column_by_name("value") {
        Some(v) if reads_values => Some(v),
        None if reads_values => return exec_err!("json_each's rows have no value"),
        _ => None,
    };
    for (start, end) in list
        .offsets()
        .windows(2)
        .map(|w| (w[0] as usize, w[1] as usize))
    {
        match values {
            Some(values) => {
                for at in start..end {
                    let Some(value) = text_at(values, at)? else {
                        return exec_err!("json_each's rows were listed without their values");
                    };
                    access.push_value(value)?;
                }
            }
            None => access.push_rows(end - start),
        }
        access.end_document()?;
    }
    access.finish()
}

static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION_OTHER,
        "One access to the value of each row json_each gives for a document, as a list \
         per document (planned under UNNEST for `e.value->>'k'` over a lateral json_each).",
        "FROM t, json_each(t.j, '$.items') AS e SELECT e.value->>'name'",
    )
    .with_argument(
        "rows",
        "json_each's rows of a document, or the JSON value it walks",
    )
    .with_argument("path", "constant keys, indexes or one JSONPath string")
    .build()
});
