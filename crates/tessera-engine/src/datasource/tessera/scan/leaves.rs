//! JSON accesses answered from shredded Variant columns.
//!
//! A data file shreds some key paths of its documents into typed Parquet leaves
//! (`j.typed_value.a.typed_value.b.typed_value`), keeping values of another type (and
//! JSON nulls) in the Variant binary next to them (`...b.value`). An access to such a
//! path reads just those two leaves: the typed values are converted in bulk with the
//! same semantics as the access on JSON text, and the few rows held in the binary are
//! decoded one by one and patched in. An element of a path shredded as a list
//! (`$.a.b[2]`, or a key of it, `$.a.b[2].k`, for a list of objects) reads the typed
//! values and outliers the same way. A key the file does not shred below its longest
//! shredded prefix (the document itself included) is read from that prefix's binary
//! alone. Any other path below a shredded field (a whole object or list, a path below
//! a list element) is rebuilt from that field's columns alone; only what none of these
//! answers reads reconstructed documents.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Int32Array, StringViewBuilder, StructArray, UInt32Array, UInt64Array,
    UInt64Builder, new_null_array,
};
use arrow::compute::{cast, interleave, take};
use arrow::datatypes::{DataType, Field, Fields, Float64Type, Int32Type, Int64Type, TimeUnit};
use datafusion::common::{DataFusionError, Result};
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::SchemaDescriptor;
use parquet_variant::Variant;
use parquet_variant_compute::{VariantArray, unshred_variant};
use tessera_tiles::datetime::{FORMAT_METADATA_KEY, TimeFormat};
use tessera_tiles::layout::{ELEMENT, LIST, METADATA, TYPED_VALUE, VALUE};
use tessera_tiles::unshred::ShreddedJson;
use tessera_tiles::unshred::texts_of_dates_and_times;
use tessera_tiles::variant::write_json;
use tessera_tiles::variant_view::element_at;

use crate::access::extraction::dictionary_text;
use crate::json::Output;
use crate::json::output::OutputBuilder;
use crate::json::path::PathElem;
use crate::json::variant_path::{rendered_span, step, written_at};

/// The kind of a shredded leaf, as far as accesses care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LeafKind {
    Int,
    Float,
    Bool,
    String,
    /// Strings stored as dates or timestamps, rendered back to text by the format.
    DateTime(TimeFormat),
}

impl LeafKind {
    pub(super) fn of(field: &Field) -> Option<Self> {
        match field.metadata().get(FORMAT_METADATA_KEY) {
            Some(format) => format.parse().ok().map(LeafKind::DateTime),
            None => Self::of_type(field.data_type()),
        }
    }

    fn of_type(data_type: &DataType) -> Option<Self> {
        match data_type {
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
                Some(LeafKind::Int)
            }
            DataType::Float32 | DataType::Float64 => Some(LeafKind::Float),
            DataType::Boolean => Some(LeafKind::Bool),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Some(LeafKind::String),
            DataType::Dictionary(_, value) => {
                Self::of_type(value).filter(|k| *k == LeafKind::String)
            }
            _ => None,
        }
    }
}

/// Where one key path of a file is shredded: the field names from the document column
/// down to its `typed_value` leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ShreddedLeaf {
    /// `[typed_value, k1, typed_value, k2, ...]` below the document column.
    names: Vec<String>,
    /// The type of the typed leaf.
    pub kind: LeafKind,
    /// Whether the file has a `value` column for outliers at this path.
    has_value: bool,
}

impl ShreddedLeaf {
    /// The shredded leaf of `path` in a document column of type `column`, when the path
    /// is a chain of keys ending in a typed scalar.
    pub fn find(column: &DataType, path: &[PathElem]) -> Option<Self> {
        let (names, fields) = shredded_field(column, path)?;
        let leaf = fields.find(TYPED_VALUE)?.1;
        let kind = LeafKind::of(leaf)?;
        Some(Self {
            names,
            kind,
            has_value: fields.find(VALUE).is_some(),
        })
    }

    /// Parquet leaf column indices to read for this path in `file` (the typed leaf and,
    /// when the file may hold outliers there, their binary and the Variant metadata),
    /// ascending.
    pub fn parquet_leaves(&self, column: &str, file: &ParquetMetaData) -> Vec<usize> {
        let schema = file.file_metadata().schema_descr();
        let (typed, value) = self.parquet_columns(column, schema);
        // A file whose statistics show no outlier at the path need not read the
        // outliers, nor the document metadata that decodes them.
        let value = value.filter(|&v| !all_null(file, v));
        let metadata = value.and_then(|_| leaf_index(schema, &[column, METADATA]));
        let mut out: Vec<usize> = [typed, value, metadata].into_iter().flatten().collect();
        out.sort_unstable();
        out
    }

    /// Whether `file` has an outlier column at this path that its statistics show to be
    /// empty (so reads leave it out).
    pub fn outliers_absent(&self, column: &str, file: &ParquetMetaData) -> bool {
        let schema = file.file_metadata().schema_descr();
        let (_, value) = self.parquet_columns(column, schema);
        value.is_some_and(|v| all_null(file, v))
    }

    /// The Parquet leaf indices of the typed column and of the outlier column.
    pub fn parquet_columns(
        &self,
        column: &str,
        schema: &SchemaDescriptor,
    ) -> (Option<usize>, Option<usize>) {
        let mut base: Vec<&str> = vec![column];
        base.extend(self.names.iter().map(String::as_str));
        let typed = leaf_index(schema, &[base.as_slice(), &[TYPED_VALUE]].concat());
        let value = self
            .has_value
            .then(|| leaf_index(schema, &[base.as_slice(), &[VALUE]].concat()))
            .flatten();
        (typed, value)
    }

    /// The typed and outlier arrays of this path in a decoded document column.
    fn arrays<'a>(&self, column: &'a StructArray) -> Result<(&'a ArrayRef, Option<&'a ArrayRef>)> {
        let node = descend(column, &self.names)?;
        let typed = node
            .column_by_name(TYPED_VALUE)
            .ok_or_else(|| missing(TYPED_VALUE))?;
        Ok((typed, node.column_by_name(VALUE)))
    }
}

/// The field names `[typed_value, k1, typed_value, k2, ...]` of a chain of keys through
/// the shredded fields of a document column of type `column`, and the fields of the
/// last key's `{value, typed_value}` pair.
pub(super) fn shredded_field<'a>(
    column: &'a DataType,
    path: &[PathElem],
) -> Option<(Vec<String>, &'a Fields)> {
    if path.is_empty() {
        return None;
    }
    nested_field(column, path)
}

/// The field names `[typed_value, k1, typed_value, k2, ...]` of a chain of keys through
/// the shredded fields of `data_type`, and the kind of the typed scalar at its end, when
/// the key path is shredded as one.
pub(super) fn typed_scalar(
    data_type: &DataType,
    path: &[PathElem],
) -> Option<(Vec<String>, LeafKind)> {
    let (names, leaf) = nested_field(data_type, path)?;
    leaf.find(VALUE)?;
    let kind = LeafKind::of(leaf.find(TYPED_VALUE)?.1)?;
    Some((names, kind))
}

/// The struct at `names` below a decoded document column.
pub(super) fn descend<'a>(column: &'a StructArray, names: &[String]) -> Result<&'a StructArray> {
    names.iter().try_fold(column, |node, name| {
        node.column_by_name(name)
            .and_then(|c| c.as_struct_opt())
            .ok_or_else(|| missing(name))
    })
}

/// One element (by index) of a path a file shreds as a list (`$.a.b[2]`), or a key path
/// inside that element when the list's elements are shredded objects (`$.a.b[2].k`):
/// read from the typed column and outliers the elements have there, the arrays' bounds,
/// and the Variant of the rows whose value at the list's path is no array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ShreddedElement {
    /// `[typed_value, k1, typed_value, k2, ...]` below the document column, down to
    /// the list path's `{value, typed_value}` pair.
    names: Vec<String>,
    /// `[typed_value, e1, typed_value, e2, ...]` below each element's pair, down to the
    /// pair of the element key read (empty: the element itself).
    element_names: Vec<String>,
    /// The type of the typed values read.
    kind: LeafKind,
    /// The path below the list's path: the element's index (negative indexes count from
    /// the end), then the element keys.
    rest: Vec<PathElem>,
}

impl ShreddedElement {
    /// The element of `path` in a document column of type `column`, when the path is a
    /// chain of keys to a shredded list, one index, and a chain of keys down to a typed
    /// scalar of its elements (none for a list of scalars).
    pub fn find(column: &DataType, path: &[PathElem]) -> Option<Self> {
        let at = path.iter().position(|e| matches!(e, PathElem::Index(_)))?;
        let (keys, rest) = path.split_at(at);
        let (names, fields) = shredded_field(column, keys)?;
        let DataType::List(element) = fields.find(TYPED_VALUE)?.1.data_type() else {
            return None;
        };
        let (element_names, kind) = typed_scalar(element.data_type(), &rest[1..])?;
        Some(Self {
            names,
            element_names,
            kind,
            rest: rest.to_vec(),
        })
    }

    /// Parquet leaf column indices to read (the typed values of the elements and their
    /// outliers, the list path's own outliers, the Variant metadata), ascending.
    pub fn parquet_leaves(&self, column: &str, schema: &SchemaDescriptor) -> Vec<usize> {
        let mut base: Vec<&str> = vec![column];
        base.extend(self.names.iter().map(String::as_str));
        let outer = [base.as_slice(), &[VALUE]].concat();
        base.extend([TYPED_VALUE, LIST, ELEMENT]);
        base.extend(self.element_names.iter().map(String::as_str));
        let mut out = leaves_below(schema, &base);
        out.extend(leaf_index(schema, &outer));
        out.extend(leaf_index(schema, &[column, METADATA]));
        out.sort_unstable();
        out
    }

    /// The values of an access with `output` at this element, for every row of
    /// `column` (a decoded document column holding at least [`Self::parquet_leaves`]).
    ///
    /// Tessera's writer puts every array at the path in the list, so a row whose value
    /// sits in the path's binary holds no array and its element is NULL; navigating
    /// that binary anyway keeps the answer exact for any spec-compliant file. Likewise
    /// an element holds a key it shreds only in that key's columns, never in its own
    /// binary, so only the element key's outliers are patched in.
    pub fn read(&self, column: &StructArray, output: Output) -> Result<(ArrayRef, Served)> {
        let pair = descend(column, &self.names)?;
        let list = pair
            .column_by_name(TYPED_VALUE)
            .and_then(|c| c.as_list_opt::<i32>())
            .ok_or_else(|| missing(TYPED_VALUE))?;
        let element = list
            .values()
            .as_struct_opt()
            .ok_or_else(|| missing(ELEMENT))?;
        let element = descend(element, &self.element_names)?;
        let typed = element
            .column_by_name(TYPED_VALUE)
            .ok_or_else(|| missing(TYPED_VALUE))?;
        let element_value = element
            .column_by_name(VALUE)
            .ok_or_else(|| missing(VALUE))?;
        let Some(PathElem::Index(index)) = self.rest.first() else {
            return Err(DataFusionError::Internal(
                "a list element path starts with its index".into(),
            ));
        };
        let offsets = list.value_offsets();
        // Per row, where its element sits among all elements (None: no such element).
        let positions: UInt32Array = (0..list.len())
            .map(|row| {
                let start = usize::try_from(offsets[row]).ok()?;
                let len = usize::try_from(offsets[row + 1]).ok()? - start;
                let at = element_at(*index, len).filter(|_| list.is_valid(row))?;
                u32::try_from(start + at).ok()
            })
            .collect();
        let taken = take(typed.as_ref(), &positions, None)?;
        let converted = convert_typed(&taken, self.kind, output)?;
        let outer = pair.column_by_name(VALUE);
        let patched: Vec<usize> = (0..list.len())
            .filter(|&row| match positions.is_valid(row) {
                true => element_value.is_valid(positions.value(row) as usize),
                false => outer.is_some_and(|v| v.is_valid(row)),
            })
            .collect();
        let metadata = column.column_by_name(METADATA);
        let mut found = 0;
        let array = patch(converted, output, &patched, |row, text| {
            let metadata = metadata.ok_or_else(|| missing(METADATA))?;
            let value = match positions.is_valid(row) {
                true => {
                    let at = positions.value(row) as usize;
                    variant_at(metadata, row, element_value, at)?
                }
                false => {
                    let outer = outer.expect("rows patched from the path's binary have one");
                    let value = variant_at(metadata, row, outer, row)?;
                    match self.rest.iter().try_fold(value, step) {
                        Some(value) => value,
                        None => return Ok(false),
                    }
                }
            };
            found += 1;
            write_json(&value, text);
            Ok(true)
        })?;
        let served = Served {
            typed: taken.len() - taken.null_count(),
            binary: found,
        };
        Ok((array, served))
    }
}

/// The field names `[typed_value, k1, typed_value, k2, ...]` of a chain of keys through
/// the shredded fields of a `{value, typed_value}` pair of type `pair`, and the fields of
/// the last key's pair (of `pair` itself for no keys); `None` when a step is no key or
/// is not shredded.
pub(super) fn nested_field<'a>(
    pair: &'a DataType,
    keys: &[PathElem],
) -> Option<(Vec<String>, &'a Fields)> {
    let mut names = Vec::with_capacity(keys.len() * 2);
    let mut fields: &Fields = struct_fields(pair)?;
    for elem in keys {
        let PathElem::Key(key) = elem else {
            return None;
        };
        let typed = fields.find(TYPED_VALUE)?.1;
        let field = struct_fields(typed.data_type())?.find(key)?.1;
        fields = struct_fields(field.data_type())?;
        names.push(TYPED_VALUE.to_string());
        names.push(key.clone());
    }
    Some((names, fields))
}

/// A key path whose first key the file does not shred below its longest shredded
/// prefix (the document itself when its first key is not shredded): wherever a document
/// holds it, it sits in that prefix's Variant binary (the object's unshredded members,
/// or a value that is no object; a typed scalar or list has no keys). Reading it takes
/// that binary and the documents' `metadata` only, and navigates each row's binary, so
/// a rare key below a shredded object costs one column, not the object's whole subtree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BinaryPath {
    /// `[typed_value, k1, typed_value, k2, ...]` below the document column, down to
    /// the prefix's `{value, typed_value}` pair (empty: the document column).
    names: Vec<String>,
    /// The path below the prefix, starting with the unshredded key.
    path: Vec<PathElem>,
}

impl BinaryPath {
    /// `path` in a document column of type `column`, when the step after its longest
    /// shredded prefix of keys is a key.
    pub fn find(column: &DataType, path: &[PathElem]) -> Option<Self> {
        let keys = path
            .iter()
            .take_while(|e| matches!(e, PathElem::Key(_)))
            .count();
        let (end, names, fields) = (1..=keys)
            .rev()
            .find_map(|end| {
                let (names, fields) = shredded_field(column, &path[..end])?;
                Some((end, names, fields))
            })
            .or_else(|| Some((0, Vec::new(), struct_fields(column)?)))?;
        if end == keys {
            return None;
        }
        struct_fields(column)?.find(METADATA)?;
        fields.find(VALUE)?;
        Some(Self {
            names,
            path: path[end..].to_vec(),
        })
    }

    /// The field names `[typed_value, k1, ...]` down to the prefix's pair.
    pub fn prefix(&self) -> &[String] {
        &self.names
    }

    /// The path below the prefix, starting with the unshredded key.
    pub fn below(&self) -> &[PathElem] {
        &self.path
    }

    /// Parquet leaf column indices to read: the prefix's binary and the metadata.
    pub fn parquet_leaves(&self, column: &str, schema: &SchemaDescriptor) -> Vec<usize> {
        let mut value: Vec<&str> = vec![column];
        value.extend(self.names.iter().map(String::as_str));
        value.push(VALUE);
        let mut out: Vec<usize> = [
            leaf_index(schema, &value),
            leaf_index(schema, &[column, METADATA]),
        ]
        .into_iter()
        .flatten()
        .collect();
        out.sort_unstable();
        out
    }

    /// The values of an access with `output` at this path, for every row of `column`.
    pub fn read(&self, column: &StructArray, output: Output) -> Result<(ArrayRef, Served)> {
        let value = descend(column, &self.names)?
            .column_by_name(VALUE)
            .ok_or_else(|| missing(VALUE))?;
        let metadata = column
            .column_by_name(METADATA)
            .ok_or_else(|| missing(METADATA))?;
        rendered_rows(column.len(), output, |row, text| {
            if value.is_null(row) {
                return Ok(false);
            }
            let document = Variant::try_new(binary_at(metadata, row)?, binary_at(value, row)?)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            Ok(written_at(document, &self.path, text))
        })
    }
}

/// A path below a shredded field that no single typed leaf or binary answers: a whole
/// array or object the file shreds (`$.a.b`), or a path below an element of a list
/// (`$.a.b[0].c`).
/// Only the columns of the longest shredded prefix are read; each row's value there is
/// rebuilt as Variant and navigated, instead of rebuilding the whole document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SubtreePath {
    /// `[typed_value, k1, typed_value, k2, ...]` below the document column, down to
    /// the shredded prefix's `{value, typed_value}` pair.
    names: Vec<String>,
    /// The rest of the path below the prefix.
    rest: Vec<PathElem>,
}

impl SubtreePath {
    /// `path` in a document column of type `column`, at its longest prefix of keys the
    /// file shreds.
    pub fn find(column: &DataType, path: &[PathElem]) -> Option<Self> {
        let keys = path
            .iter()
            .take_while(|e| matches!(e, PathElem::Key(_)))
            .count();
        (1..=keys).rev().find_map(|end| {
            let (names, _) = shredded_field(column, &path[..end])?;
            Some(Self {
                names,
                rest: path[end..].to_vec(),
            })
        })
    }

    /// Parquet leaf column indices to read (every leaf of the shredded prefix, the
    /// Variant metadata), ascending.
    pub fn parquet_leaves(&self, column: &str, schema: &SchemaDescriptor) -> Vec<usize> {
        pair_leaves(column, &self.names, schema)
    }

    /// The values of an access with `output` at this path, for every row of `column`.
    pub fn read(&self, column: &StructArray, output: Output) -> Result<(ArrayRef, Served)> {
        let shredded = shredded_subtree(column, &self.names)?;
        let value = shredded.column(1);
        let typed = shredded.column(2);
        match (self.rest.is_empty(), output) {
            (true, Output::ArrayLength) => return array_lengths(&shredded),
            (true, _) => return written_whole(&shredded, output),
            (false, _) => {}
        }
        let shredded = texts_of_dates_and_times(&shredded)
            .map_err(crate::datasource::tessera::provider::external)?;
        let variant = VariantArray::try_new(&shredded)?;
        let variant = unshred_variant(&variant)?;
        rendered_rows(column.len(), output, |row, text| {
            // Unshredding turns a missing value into a Variant null; the path is absent.
            let absent = value.is_null(row) && typed.is_null(row);
            Ok(!absent && written_at(variant.value(row), &self.rest, text))
        })
    }
}

/// The shredded subtree (`{metadata, value, typed_value}`) of the pair at `names` below
/// the document column `column`, with the column's metadata beside the pair's columns.
pub(super) fn shredded_subtree(column: &StructArray, names: &[String]) -> Result<StructArray> {
    let pair = descend(column, names)?;
    let metadata = column
        .column_by_name(METADATA)
        .ok_or_else(|| missing(METADATA))?;
    let value = pair.column_by_name(VALUE).ok_or_else(|| missing(VALUE))?;
    let typed = pair
        .column_by_name(TYPED_VALUE)
        .ok_or_else(|| missing(TYPED_VALUE))?;
    // The pair's own fields keep their metadata: the format of typed dates and times.
    let field = |name: &str| {
        pair.fields()
            .find(name)
            .map(|(_, f)| Arc::clone(f))
            .ok_or_else(|| missing(name))
    };
    Ok(StructArray::try_new(
        vec![
            Arc::new(Field::new(METADATA, metadata.data_type().clone(), true)),
            field(VALUE)?,
            field(TYPED_VALUE)?,
        ]
        .into(),
        vec![Arc::clone(metadata), Arc::clone(value), Arc::clone(typed)],
        None,
    )?)
}

/// The values of a whole shredded subtree (`{metadata, value, typed_value}`), written as
/// JSON straight from its columns rather than unshredded into Variant first.
fn written_whole(shredded: &StructArray, output: Output) -> Result<(ArrayRef, Served)> {
    let external = crate::datasource::tessera::provider::external;
    let writer = ShreddedJson::new(shredded).map_err(external)?;
    rendered_rows(shredded.len(), output, |row, text| {
        writer.write(row, text).map_err(external)
    })
}

/// `json_array_length` of a whole shredded subtree (`{metadata, value, typed_value}`):
/// a typed list's length from its offsets, 0 for any other typed value, the length of
/// the binary's value for the rest (0 unless it is a list); nothing is written as text.
fn array_lengths(shredded: &StructArray) -> Result<(ArrayRef, Served)> {
    let [metadata, value, typed] = shredded.columns() else {
        return Err(missing(TYPED_VALUE));
    };
    lengths_of(typed, Some(value), Some(metadata))
}

/// [`array_lengths`] from the typed values and, where read, the binary and metadata
/// (left unread when the file holds no binary there).
fn lengths_of(
    typed: &ArrayRef,
    value: Option<&ArrayRef>,
    metadata: Option<&ArrayRef>,
) -> Result<(ArrayRef, Served)> {
    let list = typed.as_list_opt::<i32>();
    let mut lengths = UInt64Builder::with_capacity(typed.len());
    let mut served = Served::default();
    for row in 0..typed.len() {
        if typed.is_valid(row) {
            served.typed += 1;
            lengths.append_value(list.map_or(0, |l| l.value_length(row) as u64));
        } else if let Some(value) = value.filter(|v| v.is_valid(row)) {
            served.binary += 1;
            let metadata = metadata.ok_or_else(|| missing(METADATA))?;
            let length = match variant_at(metadata, row, value, row)? {
                Variant::List(elements) => elements.len() as u64,
                _ => 0,
            };
            lengths.append_value(length);
        } else {
            lengths.append_null();
        }
    }
    Ok((Arc::new(lengths.finish()), served))
}

/// The Parquet leaves that give the rows of the list whose `{value, typed_value}` pair is
/// at `names` below document column `column`, ascending: one leaf below the elements
/// (their binary), for the offsets, not the elements' columns; and the path's binary
/// and the metadata, for values that are no list, unless statistics show that binary
/// empty.
pub(super) fn list_row_leaves(
    column: &str,
    names: &[String],
    file: &ParquetMetaData,
) -> Vec<usize> {
    let schema = file.file_metadata().schema_descr();
    let mut base: Vec<&str> = vec![column];
    base.extend(names.iter().map(String::as_str));
    let outer = leaf_index(schema, &[base.as_slice(), &[VALUE]].concat())
        .filter(|&leaf| !all_null(file, leaf));
    let elements = [base.as_slice(), &[TYPED_VALUE, LIST, ELEMENT, VALUE]].concat();
    let mut out: Vec<usize> = leaf_index(schema, &elements).into_iter().collect();
    if let Some(outer) = outer {
        out.push(outer);
        out.extend(leaf_index(schema, &[column, METADATA]));
    }
    out.sort_unstable();
    out
}

/// `json_array_length` of a path a file shreds as a list: the lengths from the list's
/// offsets, for which the reader decodes one leaf below the elements (their binary),
/// not the elements' columns; values that are no list from the path's binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ListLengths {
    /// `[typed_value, k1, typed_value, k2, ...]` below the document column, down to
    /// the list path's `{value, typed_value}` pair.
    names: Vec<String>,
}

impl ListLengths {
    /// The list at `path` in a document column of type `column`, when the path is a
    /// chain of keys to a shredded list.
    pub fn find(column: &DataType, path: &[PathElem]) -> Option<Self> {
        let (names, fields) = shredded_field(column, path)?;
        let DataType::List(_) = fields.find(TYPED_VALUE)?.1.data_type() else {
            return None;
        };
        Some(Self { names })
    }

    /// Parquet leaf column indices to read in `file` ([`list_row_leaves`]).
    pub fn parquet_leaves(&self, column: &str, file: &ParquetMetaData) -> Vec<usize> {
        list_row_leaves(column, &self.names, file)
    }

    /// The lengths for every row of `column` (holding at least [`Self::parquet_leaves`]).
    pub fn read(&self, column: &StructArray) -> Result<(ArrayRef, Served)> {
        let pair = descend(column, &self.names)?;
        let typed = pair
            .column_by_name(TYPED_VALUE)
            .ok_or_else(|| missing(TYPED_VALUE))?;
        lengths_of(
            typed,
            pair.column_by_name(VALUE),
            column.column_by_name(METADATA),
        )
    }
}

/// The values of an access with `output` over `rows` rows, each rendered as JSON text by
/// `render` (false: the row holds no value, NULL); all are served from binaries.
fn rendered_rows(
    rows: usize,
    output: Output,
    mut render: impl FnMut(usize, &mut String) -> Result<bool>,
) -> Result<(ArrayRef, Served)> {
    let mut builder = OutputBuilder::new(output, rows);
    let mut text = String::new();
    let mut found = 0;
    for row in 0..rows {
        text.clear();
        match render(row, &mut text)? {
            true => {
                found += 1;
                builder.append(&text, Some(rendered_span(&text)));
            }
            false => builder.append_null(),
        }
    }
    let served = Served {
        typed: 0,
        binary: found,
    };
    Ok((builder.finish(), served))
}

/// Every Parquet leaf of the `{value, typed_value}` pair at `names` below the document
/// column `column`, and the Variant metadata, ascending.
pub(super) fn pair_leaves(column: &str, names: &[String], schema: &SchemaDescriptor) -> Vec<usize> {
    let mut base: Vec<&str> = vec![column];
    base.extend(names.iter().map(String::as_str));
    let mut out = leaves_below(schema, &base);
    out.extend(leaf_index(schema, &[column, METADATA]));
    out.sort_unstable();
    out
}

/// The Parquet leaves below the group at `path`.
pub(super) fn leaves_below(schema: &SchemaDescriptor, path: &[&str]) -> Vec<usize> {
    (0..schema.num_columns())
        .filter(|&i| {
            let leaf = schema.column(i);
            let parts = leaf.path().parts();
            parts.len() > path.len() && path.iter().zip(parts).all(|(a, b)| a == b)
        })
        .collect()
}

/// The Variant of row `row`'s metadata and of `value[at]`.
pub(super) fn variant_at<'a>(
    metadata: &'a ArrayRef,
    row: usize,
    value: &'a ArrayRef,
    at: usize,
) -> Result<Variant<'a, 'a>> {
    Variant::try_new(binary_at(metadata, row)?, binary_at(value, at)?)
        .map_err(|e| DataFusionError::External(Box::new(e)))
}

/// `converted` with the values of `rows` (ascending) replaced by what `render` writes as
/// JSON text for each of them (a row it returns false for becomes NULL), converted as
/// an access with `output` sees them.
pub(super) fn patch(
    converted: ArrayRef,
    output: Output,
    rows: &[usize],
    mut render: impl FnMut(usize, &mut String) -> Result<bool>,
) -> Result<ArrayRef> {
    if rows.is_empty() {
        return Ok(converted);
    }
    let mut patch = OutputBuilder::new(output, rows.len());
    let mut text = String::new();
    for &row in rows {
        text.clear();
        match render(row, &mut text)? {
            true => patch.append(&text, Some(rendered_span(&text))),
            false => patch.append_null(),
        }
    }
    let patch = cast(&patch.finish(), converted.data_type())?;
    let mut next = rows.iter().copied().enumerate().peekable();
    let indices: Vec<(usize, usize)> = (0..converted.len())
        .map(|row| match next.peek() {
            Some(&(k, r)) if r == row => {
                next.next();
                (1, k)
            }
            _ => (0, row),
        })
        .collect();
    Ok(interleave(&[converted.as_ref(), patch.as_ref()], &indices)?)
}

pub(super) fn missing(name: &str) -> DataFusionError {
    DataFusionError::Internal(format!(
        "shredded column {name} missing from a decoded batch"
    ))
}

fn struct_fields(data_type: &DataType) -> Option<&Fields> {
    match data_type {
        DataType::Struct(fields) => Some(fields),
        _ => None,
    }
}

/// The index of the Parquet leaf column at `path`.
pub(super) fn leaf_index(schema: &SchemaDescriptor, path: &[&str]) -> Option<usize> {
    (0..schema.num_columns()).find(|&i| path.iter().eq(schema.column(i).path().parts().iter()))
}

/// Whether Parquet leaf `leaf` is null in every row of `file`, by its column chunk
/// statistics (`false` when a chunk has none).
pub(super) fn all_null(file: &ParquetMetaData, leaf: usize) -> bool {
    file.row_groups().iter().all(|group| {
        let chunk = group.column(leaf);
        let nulls = chunk.statistics().and_then(|s| s.null_count_opt());
        nulls == u64::try_from(chunk.num_values()).ok()
    })
}

/// How many values of an access came from typed columns and how many from the binary.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Served {
    pub typed: usize,
    pub binary: usize,
}

/// The values of an access with `output` at `leaf`, for every row of `column` (a decoded
/// document column holding at least the leaf's columns).
pub(super) fn read_leaf(
    column: &StructArray,
    leaf: &ShreddedLeaf,
    output: Output,
) -> Result<(ArrayRef, Served)> {
    let (typed, value) = leaf.arrays(column)?;
    let converted = convert_typed(typed, leaf.kind, output)?;
    let outliers: Vec<usize> = match value {
        Some(value) if value.null_count() < value.len() => {
            (0..value.len()).filter(|&i| value.is_valid(i)).collect()
        }
        _ => Vec::new(),
    };
    let served = Served {
        typed: typed.len() - typed.null_count(),
        binary: outliers.len(),
    };
    let metadata = column.column_by_name(METADATA);
    let array = patch(converted, output, &outliers, |row, text| {
        let value = value.expect("outliers come from the value column");
        let metadata = metadata.ok_or_else(|| missing(METADATA))?;
        write_json(&variant_at(metadata, row, value, row)?, text);
        Ok(true)
    })?;
    Ok((array, served))
}

/// `CAST(<text of the path> AS target)` straight from the typed leaf, when that is exact
/// for every row of `column`: the leaf holds integers (for BIGINT or DOUBLE), doubles
/// (for DOUBLE), dates or times (for DATE or TIMESTAMP) or strings decoded as a
/// dictionary (for [`dictionary_text`]), and no row of the batch sits in the binary.
/// `None` otherwise.
pub(super) fn typed_cast(
    column: &StructArray,
    leaf: &ShreddedLeaf,
    target: &DataType,
) -> Result<Option<(ArrayRef, Served)>> {
    if *target == dictionary_text() {
        return stored_dictionary(column, leaf, target);
    }
    let exact = matches!(
        (leaf.kind, target),
        (LeafKind::Int, DataType::Int64)
            | (LeafKind::Int | LeafKind::Float, DataType::Float64)
            | (LeafKind::DateTime(TimeFormat::Date), DataType::Date32)
            | (
                LeafKind::DateTime(_),
                DataType::Timestamp(TimeUnit::Nanosecond, None)
            )
    );
    if !exact {
        return Ok(None);
    }
    let (typed, value) = leaf.arrays(column)?;
    if value.is_some_and(|v| v.null_count() < v.len()) {
        return Ok(None);
    }
    // Seed 000 P3 step 10: a typed date or time is used as itself only for a cast to a
    // date/time type. Texts parse to the UTC instant, which is what the column stores;
    // only a value nanoseconds cannot hold would behave differently (an error).
    let naive;
    let typed = match (leaf.kind, typed.data_type()) {
        (LeafKind::DateTime(_), DataType::Timestamp(unit, Some(_))) => {
            naive = cast(typed, &DataType::Timestamp(*unit, None))?;
            &naive
        }
        _ => typed,
    };
    if matches!(leaf.kind, LeafKind::DateTime(_)) && !fits_nanoseconds(typed)? {
        return Ok(None);
    }
    let served = Served {
        typed: typed.len() - typed.null_count(),
        binary: 0,
    };
    Ok(Some((cast(typed, target)?, served)))
}

/// The codes and dictionary of a string leaf the reader decoded as a dictionary, when no
/// row of the batch sits in the binary. A JSON string's text is the string itself.
fn stored_dictionary(
    column: &StructArray,
    leaf: &ShreddedLeaf,
    target: &DataType,
) -> Result<Option<(ArrayRef, Served)>> {
    let (typed, value) = leaf.arrays(column)?;
    let stored = leaf.kind == LeafKind::String && typed.data_type() == target;
    if !stored || value.is_some_and(|v| v.null_count() < v.len()) {
        return Ok(None);
    }
    let served = Served {
        typed: typed.len() - typed.null_count(),
        binary: 0,
    };
    Ok(Some((Arc::clone(typed), served)))
}

/// The codes and the dictionary of a string leaf the reader decoded as a dictionary,
/// when no row of the batch sits in the binary: an access's value at a row is then the
/// value its code points to, so a filter on the access can be judged once per entry.
pub(super) fn stored_codes(
    column: &StructArray,
    leaf: &ShreddedLeaf,
) -> Result<Option<(Int32Array, ArrayRef, Served)>> {
    let Some((codes, served)) = stored_dictionary(column, leaf, &dictionary_text())? else {
        return Ok(None);
    };
    let codes = codes.as_dictionary::<Int32Type>();
    Ok(Some((
        codes.keys().clone(),
        Arc::clone(codes.values()),
        served,
    )))
}

/// The entries of `dictionary` (of a string leaf, see [`stored_codes`]) as an access
/// with `output` reads them.
pub(super) fn dictionary_values(
    dictionary: &ArrayRef,
    leaf: &ShreddedLeaf,
    output: Output,
) -> Result<ArrayRef> {
    convert_typed(dictionary, leaf.kind, output)
}

/// Whether dictionaries `a` and `b` are the same: the Parquet reader hands the dictionary
/// of a column chunk out with every batch as a new array over the same buffers, which
/// cannot be reused for other values while `a` holds them.
pub(crate) fn same_dictionary(a: &ArrayRef, b: &ArrayRef) -> bool {
    match (a.as_string_opt::<i32>(), b.as_string_opt::<i32>()) {
        (Some(a), Some(b)) => {
            a.len() == b.len()
                && a.offsets().inner().inner().as_ptr() == b.offsets().inner().inner().as_ptr()
                && a.values().as_ptr() == b.values().as_ptr()
        }
        _ => Arc::ptr_eq(a, b),
    }
}

/// Whether every date or time of `typed` (Date32 or Timestamp) is a timestamp in
/// nanoseconds that fits 64 bits.
fn fits_nanoseconds(typed: &ArrayRef) -> Result<bool> {
    let per_unit: i64 = match typed.data_type() {
        DataType::Date32 => 86_400_000_000_000,
        DataType::Timestamp(TimeUnit::Microsecond, _) => 1_000,
        _ => 1,
    };
    let stored = cast(typed, &DataType::Int64)?;
    let stored = stored.as_primitive::<Int64Type>();
    let fits = |v: Option<i64>| v.is_none_or(|v| v.checked_mul(per_unit).is_some());
    Ok(fits(arrow::compute::min(stored)) && fits(arrow::compute::max(stored)))
}

/// The bytes of a binary column's row (Binary, LargeBinary or BinaryView).
pub(super) fn binary_at(array: &ArrayRef, row: usize) -> Result<&[u8]> {
    Ok(match array.data_type() {
        DataType::Binary => array.as_binary::<i32>().value(row),
        DataType::LargeBinary => array.as_binary::<i64>().value(row),
        DataType::BinaryView => array.as_binary_view().value(row),
        other => {
            return Err(DataFusionError::Internal(format!(
                "Variant binary column of type {other}"
            )));
        }
    })
}

/// The typed values of a leaf as an access with `output` sees them; rows without a
/// typed value are NULL.
pub(super) fn convert_typed(typed: &ArrayRef, kind: LeafKind, output: Output) -> Result<ArrayRef> {
    let target = output.data_type();
    let nulls = || Ok(new_null_array(&target, typed.len()));
    match (kind, output) {
        (LeafKind::Int, Output::Int | Output::Float | Output::Text | Output::Json)
        | (LeafKind::Float, Output::Float)
        | (LeafKind::Bool, Output::Bool | Output::Text | Output::Json)
        | (LeafKind::String, Output::Text | Output::Str) => Ok(cast(typed, &target)?),
        (LeafKind::Float, Output::Text | Output::Json) => {
            let doubles = cast(typed, &DataType::Float64)?;
            let doubles = doubles.as_primitive::<Float64Type>();
            Ok(render_each(
                doubles.len(),
                doubles.iter().map(|v| v.map(Variant::Double)),
            ))
        }
        (LeafKind::DateTime(format), Output::Text | Output::Str | Output::Json) => {
            let texts = format.render_array(typed.as_ref(), output == Output::Json)?;
            Ok(cast(&texts, &target)?)
        }
        // Scalars are no arrays: their length is 0.
        (_, Output::ArrayLength) => Ok(cast(&zero_where_valid(typed), &target)?),
        (LeafKind::String, Output::Json) => {
            let strings = cast(typed, &DataType::Utf8View)?;
            let strings = strings.as_string_view();
            Ok(render_each(
                strings.len(),
                strings.iter().map(|v| v.map(Variant::from)),
            ))
        }
        _ => nulls(),
    }
}

/// 0 where `values` holds a value, NULL elsewhere.
fn zero_where_valid(values: &ArrayRef) -> ArrayRef {
    Arc::new(UInt64Array::new(
        vec![0; values.len()].into(),
        values.logical_nulls(),
    ))
}

/// Renders every value as JSON text, the way documents are rendered.
fn render_each<'v>(
    len: usize,
    values: impl Iterator<Item = Option<Variant<'static, 'v>>>,
) -> ArrayRef {
    let mut builder = StringViewBuilder::with_capacity(len);
    let mut text = String::new();
    for value in values {
        match value {
            Some(v) => {
                text.clear();
                write_json(&v, &mut text);
                builder.append_value(&text);
            }
            None => builder.append_null(),
        }
    }
    Arc::new(builder.finish())
}

#[cfg(test)]
mod tests {
    use arrow::array::{StringArray, make_array};

    use super::*;

    /// A dictionary handed out again over the same buffers is the same; an equal copy,
    /// or a slice of it, is another.
    #[test]
    fn dictionaries_are_identified_by_their_buffers() {
        let first: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "c"]));
        let again = make_array(first.to_data());
        let copy: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "c"]));
        assert!(!Arc::ptr_eq(&first, &again));
        assert!(same_dictionary(&first, &again));
        assert!(!same_dictionary(&first, &copy));
        assert!(!same_dictionary(&first, &first.slice(0, 2)));
        assert!(!same_dictionary(&first, &first.slice(1, 2)));
    }
}
