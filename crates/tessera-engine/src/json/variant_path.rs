//! A JSON path followed inside a Parquet Variant value (a validated one, or a lazily read
//! [`VariantView`]), and the value found handed to an [`OutputBuilder`] as the JSON text
//! it stands for.
//!
//! A table keeps what it does not shred as Variant binaries. An access to a path inside
//! one (a table scan's outlier or unshredded key, an access to the value of a
//! `json_each` row held in a binary) steps through the Variant's objects and lists and
//! writes only the value it ends on, so no enclosing value is written as text and parsed
//! again. The steps mean what the document scanner's do, so both answer alike.

use parquet_variant::Variant;
use tessera_tiles::TilesError;
use tessera_tiles::variant::write_json;
use tessera_tiles::variant_view::{VariantView, element_at};

use crate::json::output::OutputBuilder;
use crate::json::path::PathElem;
use crate::json::{Kind, Span};

/// One step of a path inside a Variant: an object's field, or a list's element (negative
/// indexes count from the end, as in the document scanner).
pub fn step<'m, 'v>(node: Variant<'m, 'v>, elem: &PathElem) -> Option<Variant<'m, 'v>> {
    match (node, elem) {
        (Variant::Object(object), PathElem::Key(key)) => object.get(key),
        (Variant::List(list), PathElem::Index(i)) => list.get(element_at(*i, list.len())?),
        _ => None,
    }
}

/// Writes the value at `path` below `node` as JSON text to `text`; false when the path
/// is absent.
pub fn written_at(node: Variant<'_, '_>, path: &[PathElem], text: &mut String) -> bool {
    match path.iter().try_fold(node, step) {
        Some(v) => {
            write_json(&v, text);
            true
        }
        None => false,
    }
}

/// Appends to `builder` the value at `path` below `node` (NULL when absent), by way of
/// its JSON text in `text` (a buffer reused between calls); only that value is validated.
pub fn append_at(
    builder: &mut OutputBuilder,
    node: &VariantView<'_, '_>,
    path: &[PathElem],
    text: &mut String,
) -> Result<(), TilesError> {
    match node.follow(path)? {
        Some(found) => {
            text.clear();
            write_json(&found.variant()?, text);
            builder.append(text, Some(rendered_span(text)));
        }
        None => builder.append_null(),
    }
    Ok(())
}

/// The span of a whole JSON value rendered by [`write_json`].
pub fn rendered_span(text: &str) -> Span {
    let bytes = text.as_bytes();
    let kind = match bytes.first() {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        Some(b'"') => Kind::String {
            escaped: memchr::memchr(b'\\', bytes).is_some(),
        },
        Some(b't') => Kind::Bool(true),
        Some(b'f') => Kind::Bool(false),
        Some(b'n') => Kind::Null,
        _ => Kind::Number {
            integer: !bytes.iter().any(|b| matches!(b, b'.' | b'e' | b'E')),
        },
    };
    Span {
        kind,
        start: 0,
        end: u32::try_from(bytes.len()).expect("a rendered value fits in 4 GiB"),
    }
}
