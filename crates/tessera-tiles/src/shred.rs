//! Shredding parsed documents into a Variant column in one walk per document, following
//! the Parquet Variant shredding spec: `j = {metadata, value, typed_value}` where
//! `typed_value` holds one `{value, typed_value}` struct per shredded key, nested down
//! to typed leaves.
//!
//! Per row and shredded field: `typed_value` set = a value of the column's type;
//! `value` set = any other value (JSON null included) as Variant, an outlier; both null =
//! the key is missing. For an object field, `value` holds the members that are not
//! shredded (a partially shredded object), or the whole value when it is not an object.
//!
//! A path shredded as a list has `typed_value: List<element: {value, typed_value}>`
//! (the spec's shredded array): every element of an array is in the list, typed when it
//! has the element type, else (JSON null included) as Variant in the element's `value`.
//! A value at the path that is no array goes to the path's own `value`. The elements of
//! a list of objects are shredded as documents are: their shredded keys in the element's
//! `typed_value`, their other members in its `value`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::NullBufferBuilder;
use arrow::array::{
    Array, ArrayBuilder, ArrayRef, BinaryViewBuilder, BooleanBuilder, Date32Array, Float64Builder,
    Int64Builder, ListArray, StringBuilder, StructArray,
};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{
    DataType, Field, Fields, TimeUnit, TimestampMicrosecondType, TimestampNanosecondType,
};

use crate::datetime::{FORMAT_METADATA_KEY, TimeFormat};
use crate::keypaths::Choice;
use crate::layout::{ELEMENT, METADATA, TYPED_VALUE, VALUE};
use crate::summary::LeafType;
use crate::variant::RowEncoder;
use tessera_json::tape::{Kind, Tape, Value};

/// The typed column of a shredded leaf.
enum Typed {
    Bool(BooleanBuilder),
    Int(Int64Builder),
    Float(Float64Builder),
    String(StringBuilder),
    /// Strings in one date/time rendering, as the format's stored integers.
    DateTime(Int64Builder, TimeFormat),
}

impl Typed {
    fn new(choice: &Choice, capacity: usize) -> Self {
        match (choice.ty, choice.format) {
            (LeafType::Bool, _) => Typed::Bool(BooleanBuilder::with_capacity(capacity)),
            (LeafType::Int, _) => Typed::Int(Int64Builder::with_capacity(capacity)),
            (LeafType::Float, _) => Typed::Float(Float64Builder::with_capacity(capacity)),
            (LeafType::DateTime, Some(format)) => {
                Typed::DateTime(Int64Builder::with_capacity(capacity), format)
            }
            (LeafType::String | LeafType::DateTime, _) => {
                Typed::String(StringBuilder::with_capacity(capacity, capacity * 16))
            }
        }
    }

    /// Appends `value` when it has the column's type; false (and nothing appended)
    /// otherwise.
    fn try_append(&mut self, value: Value<'_>) -> bool {
        let node = value.node();
        match (self, node.kind()) {
            (Typed::Bool(b), Kind::True) => b.append_value(true),
            (Typed::Bool(b), Kind::False) => b.append_value(false),
            (Typed::Int(b), Kind::Int) => b.append_value(node.int()),
            (Typed::Float(b), Kind::Float) => b.append_value(node.float()),
            (Typed::String(b), Kind::String) => b.append_value(value.str()),
            (Typed::DateTime(b, format), Kind::String) => match format.parse(value.str_bytes()) {
                Some(v) => b.append_value(v),
                None => return false,
            },
            _ => return false,
        }
        true
    }

    fn append_null(&mut self) {
        match self {
            Typed::Bool(b) => b.append_null(),
            Typed::Int(b) => b.append_null(),
            Typed::Float(b) => b.append_null(),
            Typed::String(b) => b.append_null(),
            Typed::DateTime(b, _) => b.append_null(),
        }
    }

    /// The finished column and the metadata of its field.
    fn finish(&mut self) -> (ArrayRef, HashMap<String, String>) {
        let array: ArrayRef = match self {
            Typed::Bool(b) => Arc::new(b.finish()),
            Typed::Int(b) => Arc::new(b.finish()),
            Typed::Float(b) => Arc::new(b.finish()),
            Typed::String(b) => Arc::new(b.finish()),
            Typed::DateTime(b, format) => {
                let stored = b.finish();
                let array = match format.data_type() {
                    DataType::Date32 => {
                        let days: Date32Array = stored.unary(|v| v as i32);
                        Arc::new(days) as ArrayRef
                    }
                    DataType::Timestamp(TimeUnit::Nanosecond, zone) => Arc::new(
                        stored
                            .reinterpret_cast::<TimestampNanosecondType>()
                            .with_timezone_opt(zone),
                    ),
                    DataType::Timestamp(_, zone) => Arc::new(
                        stored
                            .reinterpret_cast::<TimestampMicrosecondType>()
                            .with_timezone_opt(zone),
                    ),
                    other => unreachable!(
                        "date/time formats are stored as dates or timestamps, not {other}"
                    ),
                };
                let metadata =
                    HashMap::from([(FORMAT_METADATA_KEY.to_string(), format.to_string())]);
                return (array, metadata);
            }
        };
        (array, HashMap::new())
    }
}

/// What a shredded field holds below its `value`.
enum Shape {
    Leaf(Typed),
    Object(Object),
    List(List),
}

/// A shredded list: one element pair per array element, the arrays' bounds and
/// validity.
struct List {
    element: Box<Shredded>,
    /// Element offsets, starting at 0; one more than rows.
    offsets: Vec<i32>,
    valid: NullBufferBuilder,
}

impl List {
    /// Closes the current row's list after its elements were appended.
    fn end_row(&mut self, valid: bool) {
        // A file holds at most MAX_FILE_BYTES of JSON and every element takes a byte.
        let end = i32::try_from(self.element.value.len()).expect("fewer than 2^31 elements");
        self.offsets.push(end);
        self.valid.append(valid);
    }
}

/// A shredded object: its shredded members (sorted by key) and its validity.
struct Object {
    fields: Vec<(String, Shredded)>,
    /// (key id, index in `fields`) sorted by key id, for the keys the tape has.
    by_key: Vec<(u32, usize)>,
    valid: NullBufferBuilder,
    /// Per field, the tape index of the current row's value (a key given twice keeps
    /// its first value, as raw scans read it); reused across rows.
    slots: Vec<Option<usize>>,
}

/// One `{value, typed_value}` pair.
struct Shredded {
    value: BinaryViewBuilder,
    shape: Shape,
}

/// Builds the Variant column of a file from its documents, row by row.
pub struct Shredder<'a> {
    metadata: BinaryViewBuilder,
    root: Shredded,
    encoder: RowEncoder<'a>,
    /// Members of the object being shredded that go to its `value`, innermost last.
    residual: Vec<(Value<'a>, Value<'a>)>,
    buffer: Vec<u8>,
}

impl<'a> Shredder<'a> {
    /// A shredder of documents of `tape` by the shredded paths `choices` (sorted, no
    /// path a prefix of another).
    pub fn new(tape: &'a Tape, choices: &[Choice], capacity: usize) -> Self {
        Self {
            metadata: BinaryViewBuilder::with_capacity(capacity),
            root: build(tape, choices, 0, None, capacity),
            encoder: RowEncoder::new(tape),
            residual: Vec::new(),
            buffer: Vec::new(),
        }
    }

    /// Appends one document, given its root and its keys.
    pub fn append(&mut self, root: Value<'a>, keys: impl Iterator<Item = u32>) {
        self.buffer.clear();
        self.encoder.start_row(keys, &mut self.buffer);
        self.metadata.append_value(&self.buffer);
        let Self {
            root: shredded,
            encoder,
            residual,
            buffer,
            ..
        } = self;
        append(shredded, Some(root), encoder, residual, buffer);
    }

    /// The finished column: `{metadata, value, typed_value}`, or `{metadata, value}`
    /// when nothing is shredded.
    pub fn finish(mut self) -> StructArray {
        let metadata = Arc::new(self.metadata.finish()) as ArrayRef;
        let (value, typed) = finish(&mut self.root);
        let mut fields = vec![
            Field::new(METADATA, DataType::BinaryView, false),
            Field::new(VALUE, DataType::BinaryView, true),
        ];
        let mut columns = vec![metadata, value];
        if let Some((field, typed)) = typed {
            fields.push(field);
            columns.push(typed);
        }
        StructArray::new(Fields::from(fields), columns, None)
    }
}

/// The shredding tree of `choices[..]` below the common prefix of length `depth`.
fn build(
    tape: &Tape,
    choices: &[Choice],
    depth: usize,
    leaf: Option<&Choice>,
    capacity: usize,
) -> Shredded {
    let shape = match leaf {
        Some(choice) if choice.list => {
            let mut offsets = Vec::with_capacity(capacity + 1);
            offsets.push(0);
            let element = match choice.element.is_empty() {
                true => Shredded {
                    value: BinaryViewBuilder::with_capacity(capacity),
                    shape: Shape::Leaf(Typed::new(choice, capacity)),
                },
                false => build(tape, &element_choices(choices), 0, None, capacity),
            };
            Shape::List(List {
                element: Box::new(element),
                offsets,
                valid: NullBufferBuilder::new(capacity),
            })
        }
        Some(choice) => Shape::Leaf(Typed::new(choice, capacity)),
        None => {
            let mut fields = Vec::new();
            let mut rest = choices;
            while let Some(first) = rest.first() {
                let key = &first.path[depth];
                let n = rest.iter().take_while(|c| &c.path[depth] == key).count();
                let (group, tail) = rest.split_at(n);
                let ends = group.iter().filter(|c| c.path.len() == depth + 1).count();
                let leaf = (ends > 0).then_some(&group[0]);
                assert!(
                    ends == 0 || (group.len() == 1 || group.iter().all(|c| c.list)) && ends == n,
                    "a shredded path is not a prefix of another"
                );
                fields.push((key.clone(), build(tape, group, depth + 1, leaf, capacity)));
                rest = tail;
            }
            let mut by_key: Vec<(u32, usize)> = fields
                .iter()
                .enumerate()
                .filter_map(|(i, (name, _))| Some((tape.key_id(name.as_bytes())?, i)))
                .collect();
            by_key.sort_unstable();
            Shape::Object(Object {
                slots: vec![None; fields.len()],
                by_key,
                fields,
                valid: NullBufferBuilder::new(capacity),
            })
        }
    };
    Shredded {
        value: BinaryViewBuilder::with_capacity(capacity),
        shape,
    }
}

/// The choices of a list of objects (one per shredded element key) as the paths of one
/// element's shredding, sorted.
fn element_choices(list: &[Choice]) -> Vec<Choice> {
    let mut choices: Vec<Choice> = list
        .iter()
        .map(|c| {
            assert!(c.list && !c.element.is_empty(), "a key of object elements");
            Choice {
                path: c.element.clone(),
                list: false,
                element: Vec::new(),
                ..c.clone()
            }
        })
        .collect();
    choices.sort_by(|a, b| a.path.cmp(&b.path));
    choices
}

/// Appends one row's `value` (None: the key is missing) to a shredded pair.
fn append<'a>(
    shredded: &mut Shredded,
    value: Option<Value<'a>>,
    encoder: &mut RowEncoder<'a>,
    residual: &mut Vec<(Value<'a>, Value<'a>)>,
    buffer: &mut Vec<u8>,
) {
    match (&mut shredded.shape, value) {
        (shape, None) => {
            shredded.value.append_null();
            append_missing(shape);
        }
        (Shape::Leaf(typed), Some(value)) => {
            if typed.try_append(value) {
                shredded.value.append_null();
            } else {
                typed.append_null();
                buffer.clear();
                encoder.encode(value, buffer);
                shredded.value.append_value(&buffer);
            }
        }
        (Shape::List(list), Some(value)) if value.node().kind() == Kind::Array => {
            for element in value.elements() {
                append(&mut list.element, Some(element), encoder, residual, buffer);
            }
            list.end_row(true);
            shredded.value.append_null();
        }
        (Shape::Object(object), Some(value))
            if value.node().kind() == Kind::Object && !object.fields.is_empty() =>
        {
            let start = residual.len();
            for (key, member) in value.members() {
                let id = key.key_id();
                match object.by_key.binary_search_by_key(&id, |&(k, _)| k) {
                    Ok(at) => {
                        let slot = &mut object.slots[object.by_key[at].1];
                        slot.get_or_insert(member.index());
                    }
                    Err(_) => residual.push((key, member)),
                }
            }
            if residual.len() > start {
                buffer.clear();
                encoder.encode_object(residual[start..].iter().copied(), value, buffer);
                residual.truncate(start);
                shredded.value.append_value(&buffer);
            } else {
                shredded.value.append_null();
            }
            object.valid.append_non_null();
            for i in 0..object.fields.len() {
                let member = object.slots[i].take().map(|index| value.at(index));
                append(&mut object.fields[i].1, member, encoder, residual, buffer);
            }
        }
        // Not an object (not an array for a list), or an object with nothing shredded
        // (the root of a file that shreds no path): the whole value is the Variant.
        (Shape::Object(_) | Shape::List(_), Some(other)) => {
            buffer.clear();
            encoder.encode(other, buffer);
            shredded.value.append_value(&buffer);
            append_missing(&mut shredded.shape);
        }
    }
}

/// Marks the typed side of `shape` (and everything below) null for this row.
fn append_missing(shape: &mut Shape) {
    match shape {
        Shape::Leaf(typed) => typed.append_null(),
        Shape::List(list) => list.end_row(false),
        Shape::Object(object) => {
            object.valid.append_null();
            for (_, field) in &mut object.fields {
                field.value.append_null();
                append_missing(&mut field.shape);
            }
        }
    }
}

/// The `value` column and, below a shredded pair, its `typed_value` field and column.
fn finish(shredded: &mut Shredded) -> (ArrayRef, Option<(Field, ArrayRef)>) {
    let value = Arc::new(shredded.value.finish()) as ArrayRef;
    let (typed, metadata) = match &mut shredded.shape {
        Shape::Leaf(typed) => typed.finish(),
        Shape::List(list) => {
            let element = Arc::new(pair(&mut list.element)) as ArrayRef;
            let field = Field::new(ELEMENT, element.data_type().clone(), false);
            let offsets = OffsetBuffer::new(std::mem::take(&mut list.offsets).into());
            let list: ArrayRef = Arc::new(ListArray::new(
                Arc::new(field),
                offsets,
                element,
                list.valid.finish(),
            ));
            (list, HashMap::new())
        }
        Shape::Object(object) => {
            if object.fields.is_empty() {
                return (value, None);
            }
            let mut fields = Vec::with_capacity(object.fields.len());
            let mut columns = Vec::with_capacity(object.fields.len());
            for (name, field) in &mut object.fields {
                let pair = pair(field);
                fields.push(Field::new(name.as_str(), pair.data_type().clone(), false));
                columns.push(Arc::new(pair) as ArrayRef);
            }
            let object: ArrayRef = Arc::new(StructArray::new(
                Fields::from(fields),
                columns,
                object.valid.finish(),
            ));
            (object, HashMap::new())
        }
    };
    let field = Field::new(TYPED_VALUE, typed.data_type().clone(), true).with_metadata(metadata);
    (value, Some((field, typed)))
}

/// The `{value, typed_value}` struct of a shredded field or list element.
fn pair(shredded: &mut Shredded) -> StructArray {
    let (value, typed) = finish(shredded);
    let (typed_field, typed) = typed.expect("a shredded field has a typed column");
    StructArray::new(
        Fields::from(vec![
            Field::new(VALUE, DataType::BinaryView, true),
            typed_field,
        ]),
        vec![value, typed],
        None,
    )
}
