//! JSON text written straight from the columns of a shredded Variant (the Parquet
//! Variant shredding spec's `value` / `typed_value` pairs), without rebuilding each
//! row's Variant first.
//!
//! Reading a whole document, or a whole shredded object or list (`j->'payload'`,
//! `json_each(j, '$.a.commits')`), used to unshred the rows into Variant binaries
//! (`parquet_variant_compute::unshred_variant`) and then write those as JSON: two
//! passes and an allocation per object. The walk here writes the same text in one
//! pass: object members in key order (the order of a Variant object, which unshredding
//! builds), typed leaves and Variant values by the writers of `tessera_json::tree`.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryViewArray, BooleanArray, Float64Array, Int64Array, ListArray,
    StringViewArray, StructArray,
};
use arrow::buffer::NullBuffer;
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Fields};
use parquet_variant::{Variant, VariantMetadata, VariantObject};
use tessera_json::tree::{push_float, push_integer, push_string};

use crate::TilesError;
use crate::datetime::{FORMAT_METADATA_KEY, TimeFormat};
use crate::layout::{METADATA, TYPED_VALUE, VALUE};
use crate::variant::write_json;
use crate::variant_view::VariantView;

/// A shredded Variant column (`{metadata, value, typed_value}`, or a pair below one with
/// the column's metadata beside it) ready to be written as JSON text row by row.
pub struct ShreddedJson {
    metadata: BinaryViewArray,
    root: Pair,
    nulls: Option<NullBuffer>,
}

/// One `{value, typed_value}` pair: the Variant binary of what is not shredded, and the
/// typed columns of what is.
struct Pair {
    value: Option<BinaryViewArray>,
    typed: Typed,
}

enum Typed {
    /// The pair shreds nothing: every value is in its binary.
    Absent,
    /// An object's shredded members, sorted by name; its other members are in the
    /// pair's binary, as an object.
    Object {
        nulls: Option<NullBuffer>,
        fields: Vec<(String, Pair)>,
    },
    /// A list whose elements are pairs.
    List {
        list: ListArray,
        element: Box<Pair>,
    },
    Leaf(Leaf),
}

/// A typed leaf, in the one array type per JSON kind the walk writes from.
enum Leaf {
    Int(Int64Array),
    Float(Float64Array),
    Bool(BooleanArray),
    Str(StringViewArray),
}

impl ShreddedJson {
    /// The writer of `column`'s rows. Typed dates and times are written as the texts
    /// they were parsed from. A typed column of a type JSON shredding never writes
    /// (decimals, binaries) is an error, so that a caller can fall back to unshredding.
    pub fn new(column: &StructArray) -> Result<Self, TilesError> {
        let column = texts_of_dates_and_times(column)?;
        let metadata = column
            .column_by_name(METADATA)
            .ok_or_else(|| TilesError::Internal("a Variant column without metadata".into()))?;
        Ok(Self {
            metadata: binary_view(metadata)?,
            root: Pair::of(&column)?,
            nulls: column.nulls().cloned(),
        })
    }

    /// Rows in the column.
    pub fn len(&self) -> usize {
        self.metadata.len()
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends row `row` as JSON text to `out`; false (and nothing written) when the row
    /// is NULL or holds no value.
    pub fn write(&self, row: usize, out: &mut String) -> Result<bool, TilesError> {
        assert!(row < self.len(), "row {row} of {}", self.len());
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) || !self.root.present(row) {
            return Ok(false);
        }
        let metadata = RowMetadata::new(self.metadata.value(row));
        self.root.write(&metadata, row, out)?;
        Ok(true)
    }

    /// Visits the rows `json_each` gives row `row` (an object's members in key order, a
    /// list's elements, any other value itself), each as a lazily read view of the
    /// binary that holds it or as JSON text written from typed columns into `text`, so
    /// that an access to them reads only what it needs; false (nothing visited) when the
    /// row is NULL or holds no value.
    pub fn members(
        &self,
        row: usize,
        text: &mut String,
        visit: &mut dyn FnMut(Member<'_>) -> Result<(), TilesError>,
    ) -> Result<bool, TilesError> {
        assert!(row < self.len(), "row {row} of {}", self.len());
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) || !self.root.present(row) {
            return Ok(false);
        }
        let metadata = RowMetadata::new(self.metadata.value(row));
        self.root.members(&metadata, row, text, visit)?;
        Ok(true)
    }
}

/// A row's Variant metadata, parsed (and validated) only when the row has a Variant
/// binary to read: a row served wholly from typed columns never needs it.
struct RowMetadata<'m> {
    bytes: &'m [u8],
    parsed: std::cell::OnceCell<VariantMetadata<'m>>,
}

impl<'m> RowMetadata<'m> {
    fn new(bytes: &'m [u8]) -> Self {
        Self {
            bytes,
            parsed: std::cell::OnceCell::new(),
        }
    }

    fn parsed(&self) -> Result<&VariantMetadata<'m>, TilesError> {
        if self.parsed.get().is_none() {
            let metadata = VariantMetadata::try_new(self.bytes).map_err(TilesError::variant)?;
            let _ = self.parsed.set(metadata);
        }
        self.parsed
            .get()
            .ok_or_else(|| TilesError::Internal("Variant metadata not kept".into()))
    }
}

impl Pair {
    /// The pair of the struct `pair` (its `value` and `typed_value`, either optional).
    fn of(pair: &StructArray) -> Result<Self, TilesError> {
        let value = pair.column_by_name(VALUE).map(binary_view).transpose()?;
        let typed = match pair.column_by_name(TYPED_VALUE) {
            None => Typed::Absent,
            Some(typed) => Typed::of(typed)?,
        };
        Ok(Self { value, typed })
    }

    /// Whether row `row` holds a value here (a missing object member holds none).
    fn present(&self, row: usize) -> bool {
        self.value.as_ref().is_some_and(|v| v.is_valid(row)) || self.typed.is_valid(row)
    }

    /// Row `row`'s Variant binary, when it has one.
    fn binary<'s, 'm>(
        &'s self,
        metadata: &RowMetadata<'m>,
        row: usize,
    ) -> Result<Option<Variant<'m, 's>>, TilesError> {
        match &self.value {
            Some(value) if value.is_valid(row) => Ok(Some(
                Variant::try_new_with_metadata(metadata.parsed()?.clone(), value.value(row))
                    .map_err(TilesError::variant)?,
            )),
            _ => Ok(None),
        }
    }

    /// Writes row `row`'s value, which is present.
    fn write(
        &self,
        metadata: &RowMetadata<'_>,
        row: usize,
        out: &mut String,
    ) -> Result<(), TilesError> {
        let binary = self.binary(metadata, row)?;
        match &self.typed {
            Typed::Object { fields, .. } if self.typed.is_valid(row) => {
                write_object(fields, unshredded(binary)?, metadata, row, out)?;
            }
            Typed::List { list, element } if self.typed.is_valid(row) => {
                write_list(list, element, metadata, row, out)?;
            }
            Typed::Leaf(leaf) if self.typed.is_valid(row) => leaf.write(row, out),
            _ => match binary {
                Some(variant) => write_json(&variant, out),
                None => out.push_str("null"),
            },
        }
        Ok(())
    }

    /// Visits the rows `json_each` gives row `row`'s value, which is present: an
    /// object's members in key order, a list's elements, any other value itself. A row
    /// the binary holds is visited as a lazily read view of it; one of typed columns is
    /// written to `text` first.
    fn members(
        &self,
        metadata: &RowMetadata<'_>,
        row: usize,
        text: &mut String,
        visit: &mut dyn FnMut(Member<'_>) -> Result<(), TilesError>,
    ) -> Result<(), TilesError> {
        let binary = match &self.value {
            Some(value) if value.is_valid(row) => Some(VariantView::new(
                metadata.parsed()?.clone(),
                value.value(row),
            )),
            _ => None,
        };
        let mut written =
            |pair: &Pair,
             at: usize,
             visit: &mut dyn FnMut(Member<'_>) -> Result<(), TilesError>| {
                text.clear();
                match pair.present(at) {
                    true => pair.write(metadata, at, text)?,
                    false => text.push_str("null"),
                }
                visit(Member::Written(text))
            };
        match &self.typed {
            Typed::Object { fields, .. } if self.typed.is_valid(row) => {
                let mut unshredded = Vec::new();
                if let Some(binary) = binary {
                    if !binary.is_object() {
                        return Err(no_object());
                    }
                    binary.each(&mut |name, value| {
                        unshredded.push((name.unwrap_or_default(), value));
                        Ok(())
                    })?;
                }
                each_member(fields, unshredded.into_iter(), row, |_, held| match held {
                    Held::Variant(value) => visit(Member::Binary(value)),
                    Held::Typed(pair) => written(pair, row, visit),
                })?;
            }
            Typed::List { list, element } if self.typed.is_valid(row) => {
                let offsets = list.value_offsets();
                for at in offsets[row] as usize..offsets[row + 1] as usize {
                    written(element, at, visit)?;
                }
            }
            Typed::Leaf(_) if self.typed.is_valid(row) => written(self, row, visit)?,
            _ => match binary {
                Some(binary) => binary.each(&mut |_, value| visit(Member::Binary(value)))?,
                None => written(self, row, visit)?,
            },
        }
        Ok(())
    }
}

/// The unshredded members of a partially shredded object: its binary, an object.
fn unshredded<'m, 'v>(
    binary: Option<Variant<'m, 'v>>,
) -> Result<Option<VariantObject<'m, 'v>>, TilesError> {
    match binary {
        None => Ok(None),
        Some(Variant::Object(object)) => Ok(Some(object)),
        Some(_) => Err(no_object()),
    }
}

fn no_object() -> TilesError {
    TilesError::Internal("a partially shredded object whose binary is no object".into())
}

/// One row of `json_each` over a shredded value: held in the Variant binary, or written
/// as JSON text from typed columns.
pub enum Member<'a> {
    /// A member or element the binary holds, not validated until read.
    Binary(VariantView<'a, 'a>),
    /// A member or element of typed columns, written as JSON.
    Written(&'a str),
}

/// Where an object's member is: in its binary (`V`, as the caller reads it), or in a
/// shredded field's pair.
enum Held<'p, V> {
    Variant(V),
    Typed(&'p Pair),
}

/// Calls `visit` with each member of an object in key order: its present shredded
/// `fields` merged with the `unshredded` members of its binary object, in key order.
fn each_member<'p, 'n, V>(
    fields: &'p [(String, Pair)],
    unshredded: impl Iterator<Item = (&'n str, V)>,
    row: usize,
    mut visit: impl FnMut(&str, Held<'p, V>) -> Result<(), TilesError>,
) -> Result<(), TilesError> {
    let mut members = unshredded.peekable();
    for (name, pair) in fields {
        while let Some((member, value)) = members.next_if(|(m, _)| *m < name.as_str()) {
            visit(member, Held::Variant(value))?;
        }
        if pair.present(row) {
            visit(name, Held::Typed(pair))?;
        }
    }
    for (member, value) in members {
        visit(member, Held::Variant(value))?;
    }
    Ok(())
}

/// Writes row `row` of a list whose elements are pairs; an element with no value (which
/// the spec does not allow) is written as null.
fn write_list(
    list: &ListArray,
    element: &Pair,
    metadata: &RowMetadata<'_>,
    row: usize,
    out: &mut String,
) -> Result<(), TilesError> {
    let offsets = list.value_offsets();
    let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
    out.push('[');
    for at in start..end {
        if at > start {
            out.push(',');
        }
        match element.present(at) {
            true => element.write(metadata, at, out)?,
            false => out.push_str("null"),
        }
    }
    out.push(']');
    Ok(())
}

/// Writes an object: its present shredded `fields` merged, in key order, with the
/// members of its `unshredded` binary object.
fn write_object(
    fields: &[(String, Pair)],
    unshredded: Option<VariantObject<'_, '_>>,
    metadata: &RowMetadata<'_>,
    row: usize,
    out: &mut String,
) -> Result<(), TilesError> {
    let mut first = true;
    out.push('{');
    let members = unshredded.iter().flat_map(|o| o.iter());
    each_member(fields, members, row, |name, held| {
        if !std::mem::take(&mut first) {
            out.push(',');
        }
        push_string(out, name);
        out.push(':');
        match held {
            Held::Variant(value) => write_json(&value, out),
            Held::Typed(pair) => pair.write(metadata, row, out)?,
        }
        Ok(())
    })?;
    out.push('}');
    Ok(())
}

impl Typed {
    fn of(typed: &ArrayRef) -> Result<Self, TilesError> {
        Ok(match typed.data_type() {
            DataType::Struct(_) => {
                let object = typed.as_struct();
                let mut fields = object
                    .column_names()
                    .into_iter()
                    .zip(object.columns())
                    .map(|(name, field)| {
                        let pair = field.as_struct_opt().ok_or_else(|| {
                            TilesError::Internal(format!("shredded field {name} is no pair"))
                        })?;
                        Ok((name.to_string(), Pair::of(pair)?))
                    })
                    .collect::<Result<Vec<_>, TilesError>>()?;
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                Typed::Object {
                    nulls: object.nulls().cloned(),
                    fields,
                }
            }
            DataType::List(field) | DataType::LargeList(field) => {
                let list = cast_to(typed, &DataType::List(Arc::clone(field)))?;
                let list = list.as_list::<i32>().clone();
                let element = list.values().as_struct_opt().ok_or_else(|| {
                    TilesError::Internal("shredded list elements are no pairs".into())
                })?;
                let element = Box::new(Pair::of(element)?);
                Typed::List { list, element }
            }
            _ => Typed::Leaf(Leaf::of(typed)?),
        })
    }

    fn is_valid(&self, row: usize) -> bool {
        match self {
            Typed::Absent => false,
            Typed::Object { nulls, .. } => nulls.as_ref().is_none_or(|n| n.is_valid(row)),
            Typed::List { list, .. } => list.is_valid(row),
            Typed::Leaf(leaf) => leaf.array().is_valid(row),
        }
    }
}

impl Leaf {
    fn of(typed: &ArrayRef) -> Result<Self, TilesError> {
        Ok(match typed.data_type() {
            t if t.is_integer() => {
                Leaf::Int(cast_to(typed, &DataType::Int64)?.as_primitive().clone())
            }
            t if t.is_floating() => {
                Leaf::Float(cast_to(typed, &DataType::Float64)?.as_primitive().clone())
            }
            DataType::Boolean => Leaf::Bool(typed.as_boolean().clone()),
            DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Dictionary(..) => Leaf::Str(
                cast_to(typed, &DataType::Utf8View)?
                    .as_string_view()
                    .clone(),
            ),
            other => {
                return Err(TilesError::Internal(format!(
                    "a typed value of type {other} in a shredded JSON column"
                )));
            }
        })
    }

    fn array(&self) -> &dyn Array {
        match self {
            Leaf::Int(a) => a,
            Leaf::Float(a) => a,
            Leaf::Bool(a) => a,
            Leaf::Str(a) => a,
        }
    }

    fn write(&self, row: usize, out: &mut String) {
        match self {
            Leaf::Int(a) => push_integer(out, a.value(row)),
            Leaf::Float(a) => push_float(out, a.value(row)),
            Leaf::Bool(a) => out.push_str(if a.value(row) { "true" } else { "false" }),
            Leaf::Str(a) => push_string(out, a.value(row)),
        }
    }
}

fn cast_to(array: &ArrayRef, to: &DataType) -> Result<ArrayRef, TilesError> {
    match array.data_type() == to {
        true => Ok(Arc::clone(array)),
        false => cast(array, to).map_err(TilesError::variant),
    }
}

fn binary_view(array: &ArrayRef) -> Result<BinaryViewArray, TilesError> {
    match array.data_type() {
        DataType::BinaryView => Ok(array.as_binary_view().clone()),
        DataType::Binary | DataType::LargeBinary => Ok(cast_to(array, &DataType::BinaryView)?
            .as_binary_view()
            .clone()),
        other => Err(TilesError::Internal(format!(
            "a Variant binary column of type {other}"
        ))),
    }
}

/// Turns a Variant column read back from a data file into JSON text, one per row,
/// written straight from its shredded columns ([`ShreddedJson`]).
pub fn read_json(column: &dyn Array) -> Result<ArrayRef, TilesError> {
    let column = column.as_struct_opt().ok_or_else(|| {
        TilesError::Internal(format!("a Variant column of type {}", column.data_type()))
    })?;
    let shredded = ShreddedJson::new(column)?;
    let mut builder = arrow::array::StringBuilder::with_capacity(column.len(), column.len() * 64);
    let mut text = String::new();
    for row in 0..column.len() {
        text.clear();
        match shredded.write(row, &mut text)? {
            true => builder.append_value(&text),
            false => builder.append_null(),
        }
    }
    Ok(Arc::new(builder.finish()))
}

/// `column` (a shredded Variant column, or any `{value, typed_value}` pair of one) with
/// every typed date/time column (marked by its field's format) replaced by the texts it
/// was parsed from, which unshredding then turns back into the documents' strings.
pub fn texts_of_dates_and_times(column: &StructArray) -> Result<StructArray, TilesError> {
    let (fields, columns, nulls) = column.clone().into_parts();
    let mut out_fields = Vec::with_capacity(fields.len());
    let mut out_columns = Vec::with_capacity(columns.len());
    for (field, array) in fields.iter().zip(columns) {
        let format = field.metadata().get(FORMAT_METADATA_KEY);
        let (field, array) = match (format, array.as_struct_opt()) {
            (Some(format), _) => {
                let format: TimeFormat = format.parse().map_err(TilesError::Internal)?;
                let texts = format
                    .render_array(array.as_ref(), false)
                    .map_err(TilesError::variant)?;
                let field = Field::new(field.name(), DataType::Utf8, field.is_nullable());
                (Arc::new(field), Arc::new(texts) as ArrayRef)
            }
            (None, Some(nested)) => {
                let nested = texts_of_dates_and_times(nested)?;
                let field = field
                    .as_ref()
                    .clone()
                    .with_data_type(nested.data_type().clone());
                (Arc::new(field), Arc::new(nested) as ArrayRef)
            }
            (None, None) => (Arc::clone(field), array),
        };
        out_fields.push(field);
        out_columns.push(array);
    }
    StructArray::try_new(Fields::from(out_fields), out_columns, nulls).map_err(TilesError::variant)
}
