//! `json_each`'s rows over a path a file shreds as a list, read for what the query reads
//! of their values (key paths of the elements, or nothing but the rows) straight from
//! the list's columns: the lengths from its offsets, the values from the typed columns
//! the elements have at those key paths, their outliers from their binaries. No element is written as JSON
//! text (JSON Tiles, SIGMOD 2021, §4.3: the elements of a long array read like a relation
//! of their own). A row whose value at the path is no array (an object, a scalar) is
//! rendered from the path's binary and walked as `json_each` walks any value.
//!
//! Over a path a file shreds as an object (map-like objects keep their frequent keys
//! typed and the rest in the path's binary), `json_each`'s rows are counted without
//! being written: the typed fields present and the fields of the binary's object.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, ListArray, NullArray, StructArray};
use arrow::buffer::OffsetBuffer;
use arrow::compute::{cast, interleave};
use arrow::datatypes::{DataType, Field};
use datafusion::common::{DataFusionError, Result};
use parquet::file::metadata::ParquetMetaData;
use tessera_tiles::layout::{ELEMENT, LIST, METADATA, TYPED_VALUE, VALUE};
use tessera_tiles::variant::write_json;

use super::leaves::{
    LeafKind, Served, all_null, binary_at, convert_typed, descend, leaf_index, leaves_below,
    list_row_leaves, missing, patch, shredded_field, typed_scalar, variant_at,
};
use super::members::ObjectMembers;
use super::side::SideElements;
use crate::access::extraction::ElementAccess;
use crate::functions::json_each::{Rows, field_names};
use crate::json::Output;
use crate::json::path::PathElem;

/// Where one file holds the rows of one [`ElementAccess`] and what is read of them:
/// a shredded list's typed columns, an object's members (or a binary's value) visited
/// without writing the object as text, or the elements of the file's side relation of
/// the path, taken by the rows' positions.
#[derive(Debug, Clone)]
pub(super) enum ElementSource {
    List(ListElements),
    Members(ObjectMembers),
    Side(Arc<SideElements>),
}

impl ElementSource {
    /// Where a document column of type `column` holds `access` of the rows of
    /// `json_each` at `path`; `None` when only the text of the value walked answers it.
    pub fn find(column: &DataType, path: &[PathElem], access: &ElementAccess) -> Option<Self> {
        ListElements::find(column, path, access)
            .map(ElementSource::List)
            .or_else(|| ObjectMembers::find(column, path, access).map(ElementSource::Members))
    }

    /// Parquet leaf column indices to read in `file`, ascending (none for a side
    /// relation, which was read when the file was opened).
    pub fn parquet_leaves(&self, column: &str, file: &ParquetMetaData) -> Vec<usize> {
        match self {
            ElementSource::List(list) => list.parquet_leaves(column, file),
            ElementSource::Members(members) => {
                members.parquet_leaves(column, file.file_metadata().schema_descr())
            }
            ElementSource::Side(_) => Vec::new(),
        }
    }

    /// Whether reading it needs the rows' positions in the file
    /// ([`tessera_table::FileRead::row_numbers`]).
    pub fn needs_row_numbers(&self) -> bool {
        matches!(self, ElementSource::Side(_))
    }

    /// The access's list for every row of `column` (a decoded document column holding
    /// at least [`Self::parquet_leaves`]; a side relation reads none) whose positions in
    /// the file are `row_numbers`.
    pub fn read(
        &self,
        column: Option<&StructArray>,
        row_numbers: Option<&Int64Array>,
    ) -> Result<(ArrayRef, Served)> {
        let column = || column.ok_or_else(|| missing(tessera_tiles::layout::COLUMN));
        match self {
            ElementSource::List(list) => list.read(column()?),
            ElementSource::Members(members) => members.read(column()?),
            ElementSource::Side(side) => {
                side.read(row_numbers.ok_or_else(|| missing(tessera_table::ROW_NUMBER))?)
            }
        }
    }
}

/// What each element is read for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Read {
    /// Nothing: the rows are counted.
    Rows,
    /// Nothing, over a path shredded as an object: its members are counted.
    Members,
    /// Key paths of the elements, each shredded as a typed scalar; their values are
    /// the fields of a struct when `fields`, else the one path's values.
    Leaves {
        leaves: Vec<ElementLeaf>,
        fields: bool,
    },
}

/// A key path of a list's elements shredded as a typed scalar, read for one access.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ElementLeaf {
    /// `[typed_value, k1, typed_value, k2, ...]` below each element's pair, down to the
    /// key path's pair.
    names: Vec<String>,
    kind: LeafKind,
    output: Output,
}

/// Where one file holds one [`ElementAccess`]: the list at the walked path, and the
/// typed column of its elements the access reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ListElements {
    /// `[typed_value, k1, typed_value, k2, ...]` below the document column, down to the
    /// list path's `{value, typed_value}` pair.
    names: Vec<String>,
    read: Read,
    /// The access, for the rows whose value is no array.
    access: ElementAccess,
}

impl ListElements {
    /// Where a document column of type `column` holds `access` of the rows of
    /// `json_each` at `path`: when the path is a chain of keys to a shredded list, and
    /// the access reads nothing or a chain of keys to a typed scalar of its elements.
    pub fn find(column: &DataType, path: &[PathElem], access: &ElementAccess) -> Option<Self> {
        let (names, fields) = shredded_field(column, path)?;
        fields.find(VALUE)?;
        let counted = access.accesses.is_empty() && access.rows_of == Rows::Each;
        let element = match fields.find(TYPED_VALUE)?.1.data_type() {
            DataType::List(element) => element,
            DataType::Struct(_) if counted => {
                return Some(Self {
                    names,
                    read: Read::Members,
                    access: access.clone(),
                });
            }
            _ => return None,
        };
        let read = match access.accesses.as_slice() {
            [] => Read::Rows,
            accesses => Read::Leaves {
                leaves: accesses
                    .iter()
                    .map(|(output, path)| ElementLeaf::find(element.data_type(), path, *output))
                    .collect::<Option<_>>()?,
                fields: access.fields,
            },
        };
        Some(Self {
            names,
            read,
            access: access.clone(),
        })
    }

    /// Parquet leaf column indices to read in `file`, ascending: the elements' typed
    /// columns at the key paths and their outliers (or the elements' binary alone, for
    /// their count), the list path's binary and the Variant metadata; binaries the
    /// file's statistics show to be empty are left out, and the metadata with them.
    pub fn parquet_leaves(&self, column: &str, file: &ParquetMetaData) -> Vec<usize> {
        let leaves = match &self.read {
            Read::Rows => return list_row_leaves(column, &self.names, file),
            Read::Members => {
                let schema = file.file_metadata().schema_descr();
                let mut pair: Vec<&str> = vec![column];
                pair.extend(self.names.iter().map(String::as_str));
                return leaves_below(schema, &pair);
            }
            Read::Leaves { leaves, .. } => leaves,
        };
        let schema = file.file_metadata().schema_descr();
        let held = |leaf: Option<usize>| leaf.filter(|&l| !all_null(file, l));
        let mut base: Vec<&str> = vec![column];
        base.extend(self.names.iter().map(String::as_str));
        let outer = held(leaf_index(schema, &[base.as_slice(), &[VALUE]].concat()));
        base.extend([TYPED_VALUE, LIST, ELEMENT]);
        let mut out: Vec<usize> = outer.into_iter().collect();
        let mut binaries = outer.is_some();
        for leaf in leaves {
            let mut at = base.clone();
            at.extend(leaf.names.iter().map(String::as_str));
            out.extend(leaf_index(
                schema,
                &[at.as_slice(), &[TYPED_VALUE]].concat(),
            ));
            let outliers = held(leaf_index(schema, &[at.as_slice(), &[VALUE]].concat()));
            binaries |= outliers.is_some();
            out.extend(outliers);
        }
        if binaries {
            out.extend(leaf_index(schema, &[column, METADATA]));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The access's list for every row of `column` (a decoded document column holding
    /// at least [`Self::parquet_leaves`]).
    pub fn read(&self, column: &StructArray) -> Result<(ArrayRef, Served)> {
        let pair = descend(column, &self.names)?;
        if self.read == Read::Members {
            return member_rows(pair);
        }
        let list = pair
            .column_by_name(TYPED_VALUE)
            .and_then(|c| c.as_list_opt::<i32>())
            .ok_or_else(|| missing(TYPED_VALUE))?;
        let metadata = column.column_by_name(METADATA);
        let (values, mut served) = match &self.read {
            Read::Rows | Read::Members => {
                let values: ArrayRef = Arc::new(NullArray::new(list.values().len()));
                (values, Served::default())
            }
            Read::Leaves { leaves, fields } => leaves_values(list, leaves, *fields, metadata)?,
        };
        served.typed += list.len() - list.null_count();
        let outer = pair
            .column_by_name(VALUE)
            .filter(|v| v.null_count() < v.len());
        let field =
            |values: &ArrayRef| Arc::new(Field::new_list_field(values.data_type().clone(), true));
        if outer.is_none() && nulls_are_empty(list) {
            // Every row holds an array or nothing at the path (no rows).
            let offsets = list.offsets().clone();
            let list = ListArray::try_new(field(&values), offsets, values, None)?;
            return Ok((Arc::new(list), served));
        }
        let mut access = self.access.value_access();
        let mut reader = access.reader();
        let mut text = String::new();
        let mut indices: Vec<(usize, usize)> = Vec::with_capacity(values.len());
        let mut offsets: Vec<i32> = Vec::with_capacity(list.len() + 1);
        offsets.push(0);
        let mut walked = 0;
        for row in 0..list.len() {
            if list.is_valid(row) {
                let start = list.value_offsets()[row] as usize;
                indices.extend((start..start + list.value_length(row) as usize).map(|i| (0, i)));
            } else if let Some(outer) = outer.filter(|o| o.is_valid(row)) {
                served.binary += 1;
                let metadata = metadata.ok_or_else(|| missing(METADATA))?;
                text.clear();
                write_json(&variant_at(metadata, row, outer, row)?, &mut text);
                access.push_document(&mut reader, Some(&text), row)?;
                let ended = access.rows();
                indices.extend((walked..ended).map(|i| (1, i)));
                walked = ended;
            }
            offsets.push(i32::try_from(indices.len()).map_err(|_| too_many())?);
        }
        let walked = access.finish()?;
        let walked = cast(walked.as_list::<i32>().values(), values.data_type())?;
        let values = interleave(&[values.as_ref(), walked.as_ref()], &indices)?;
        let offsets = OffsetBuffer::new(offsets.into());
        let list = ListArray::try_new(field(&values), offsets, values, None)?;
        Ok((Arc::new(list), served))
    }
}

/// `json_each`'s rows (to count) of each row's value at the `{value, typed_value}` pair
/// of a path shredded as an object: the typed fields present and the fields of the
/// binary's object, which holds the members not shredded; a value in the binary alone
/// has the rows `json_each` gives it (an array's elements, an object's members, a
/// scalar, JSON null too, itself). Nothing is written as text.
fn member_rows(pair: &StructArray) -> Result<(ArrayRef, Served)> {
    let typed = pair
        .column_by_name(TYPED_VALUE)
        .and_then(|t| t.as_struct_opt())
        .ok_or_else(|| missing(TYPED_VALUE))?;
    let value = pair.column_by_name(VALUE).ok_or_else(|| missing(VALUE))?;
    let fields: Vec<(&ArrayRef, &ArrayRef)> = typed
        .columns()
        .iter()
        .map(|f| {
            let f = f.as_struct_opt().ok_or_else(|| missing(TYPED_VALUE))?;
            let value = f.column_by_name(VALUE).ok_or_else(|| missing(VALUE))?;
            let typed = f
                .column_by_name(TYPED_VALUE)
                .ok_or_else(|| missing(TYPED_VALUE))?;
            Ok((value, typed))
        })
        .collect::<Result<_>>()?;
    let mut served = Served::default();
    let mut offsets: Vec<i32> = Vec::with_capacity(pair.len() + 1);
    offsets.push(0);
    let mut rows = 0usize;
    for row in 0..pair.len() {
        let in_binary = match value.is_valid(row) {
            true => {
                served.binary += 1;
                variant_rows(binary_at(value, row)?)?
            }
            false => 0,
        };
        let shredded = match typed.is_valid(row) {
            true => {
                served.typed += 1;
                fields
                    .iter()
                    .filter(|(v, t)| v.is_valid(row) || t.is_valid(row))
                    .count()
            }
            false => 0,
        };
        rows += in_binary + shredded;
        offsets.push(i32::try_from(rows).map_err(|_| too_many())?);
    }
    let field = Arc::new(Field::new_list_field(DataType::Null, true));
    let values: ArrayRef = Arc::new(NullArray::new(rows));
    let list = ListArray::try_new(field, OffsetBuffer::new(offsets.into()), values, None)?;
    Ok((Arc::new(list), served))
}

/// How many rows `json_each` gives a Variant value: an object's fields or an array's
/// elements, read from the value's header (Parquet Variant encoding); 1 for any other
/// value. Opening the value with parquet-variant validates all of it and its metadata
/// (every key of the document), which costs far more than the count.
fn variant_rows(value: &[u8]) -> Result<usize> {
    let truncated = || DataFusionError::Execution("a Variant value is truncated".into());
    let header = *value.first().ok_or_else(truncated)?;
    // The value header is the byte's upper six bits; `is_large` (4-byte element count)
    // is its bit 4 for an object, bit 2 for an array.
    let large = match header & 0x03 {
        2 => header & (0x10 << 2) != 0,
        3 => header & (0x04 << 2) != 0,
        _ => return Ok(1),
    };
    let count = match large {
        true => value
            .get(1..5)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(|b| u32::from_le_bytes(b) as usize),
        false => value.get(1).map(|&b| usize::from(b)),
    };
    count.ok_or_else(truncated)
}

impl ElementLeaf {
    /// The key path `path` of the elements of type `element`, read for an access with
    /// `output`, when it is shredded as a typed scalar.
    fn find(element: &DataType, path: &[PathElem], output: Output) -> Option<Self> {
        if path.is_empty() {
            return None;
        }
        let (names, kind) = typed_scalar(element, path)?;
        Some(Self {
            names,
            kind,
            output,
        })
    }
}

/// The accesses at `leaves` of every element of `list`, as the fields of a struct when
/// `fields`, else the one leaf's values.
fn leaves_values(
    list: &ListArray,
    leaves: &[ElementLeaf],
    fields: bool,
    metadata: Option<&ArrayRef>,
) -> Result<(ArrayRef, Served)> {
    let mut arrays = Vec::with_capacity(leaves.len());
    let mut served = Served::default();
    for leaf in leaves {
        let (values, by) = leaf_values(list, &leaf.names, leaf.kind, leaf.output, metadata)?;
        served.typed += by.typed;
        served.binary += by.binary;
        arrays.push(values);
    }
    if !fields {
        assert_eq!(arrays.len(), 1, "one access's values");
        return Ok((arrays.swap_remove(0), served));
    }
    let types = arrays.iter().map(|a| a.data_type().clone());
    let values = StructArray::try_new(field_names(types), arrays, None)?;
    Ok((Arc::new(values), served))
}

/// The access at a key path of every element of `list`: typed values converted, the
/// key path's outliers patched in from their binary.
fn leaf_values(
    list: &ListArray,
    names: &[String],
    kind: LeafKind,
    output: Output,
    metadata: Option<&ArrayRef>,
) -> Result<(ArrayRef, Served)> {
    let element = list
        .values()
        .as_struct_opt()
        .ok_or_else(|| missing(ELEMENT))?;
    let leaf = descend(element, names)?;
    let typed = leaf
        .column_by_name(TYPED_VALUE)
        .ok_or_else(|| missing(TYPED_VALUE))?;
    let converted = convert_typed(typed, kind, output)?;
    // Left unread when the file holds no outliers there.
    let Some(outliers) = leaf.column_by_name(VALUE) else {
        let served = Served {
            typed: typed.len() - typed.null_count(),
            binary: 0,
        };
        return Ok((converted, served));
    };
    let patched: Vec<usize> = (0..outliers.len())
        .filter(|&i| outliers.is_valid(i))
        .collect();
    let rows = document_rows(list, &patched);
    let array = patch(converted, output, &patched, |at, text| {
        let metadata = metadata.ok_or_else(|| missing(METADATA))?;
        let row = rows[patched.partition_point(|&p| p < at)];
        write_json(&variant_at(metadata, row, outliers, at)?, text);
        Ok(true)
    })?;
    let served = Served {
        typed: typed.len() - typed.null_count(),
        binary: patched.len(),
    };
    Ok((array, served))
}

/// The document row of each of `elements` (ascending positions among `list`'s values).
fn document_rows(list: &ListArray, elements: &[usize]) -> Vec<usize> {
    let offsets = list.value_offsets();
    let mut row = 0;
    elements
        .iter()
        .map(|&at| {
            while row + 1 < offsets.len() && offsets[row + 1] as usize <= at {
                row += 1;
            }
            row
        })
        .collect()
}

/// Whether every NULL row of `list` has no values under it (a reader may leave some).
fn nulls_are_empty(list: &ListArray) -> bool {
    list.null_count() == 0
        || (0..list.len()).all(|row| list.is_valid(row) || list.value_length(row) == 0)
}

fn too_many() -> DataFusionError {
    DataFusionError::Execution("too many json_each rows in a batch".into())
}

#[cfg(test)]
mod tests {
    use parquet_variant::{Variant, VariantBuilder};

    use super::variant_rows;

    /// The count read from a header is the one parquet-variant reads from the whole
    /// value, for objects and arrays on both sides of the 1-byte count, and for scalars.
    #[test]
    fn rows_from_the_header_match_the_value() {
        for len in [0usize, 1, 3, 255, 256, 1000] {
            let mut object = VariantBuilder::new();
            let mut fields = object.new_object();
            for k in 0..len {
                fields.insert(&format!("k{k}"), k as i64);
            }
            fields.finish();
            let mut array = VariantBuilder::new();
            let mut elements = array.new_list();
            (0..len).for_each(|k| elements.append_value(k as i64));
            elements.finish();
            for (metadata, value) in [object.finish(), array.finish()] {
                let expected = match Variant::try_new(&metadata, &value).unwrap() {
                    Variant::Object(o) => o.len(),
                    Variant::List(l) => l.len(),
                    other => panic!("{other:?}"),
                };
                assert_eq!(expected, len);
                assert_eq!(variant_rows(&value).unwrap(), len);
                // A header cut short is an error, not a panic.
                assert!(variant_rows(&value[..1]).is_err());
            }
        }
        for scalar in [Variant::Null, Variant::from("s"), Variant::from(7i64)] {
            let mut builder = VariantBuilder::new();
            builder.append_value(scalar);
            assert_eq!(variant_rows(&builder.finish().1).unwrap(), 1);
        }
        assert!(variant_rows(&[]).is_err());
    }
}
