//! A Variant value read lazily: an object's field found by name, a list's element by
//! position, without validating the rest of the value.
//!
//! Opening a value with `parquet_variant` validates all of it (every nested value, every
//! string) so that its accessors cannot panic. An access to one path of a large object
//! (`$.members.NextToken.shape` in each member of a map of API shapes) then costs the
//! whole object: on such data validation was half of a query's time. A view reads only
//! the headers, ids and offsets on the way down (Parquet Variant encoding spec: basic
//! type in the low two bits of the first byte, sizes in the value header), checks each
//! bound it reads, and validates only the value it ends on, when that is opened as a
//! `Variant`. A malformed binary gives an error, never a panic; an object whose field
//! ids are not sorted by name (which the spec requires) may miss a field it holds.

use parquet_variant::{Variant, VariantMetadata};
use tessera_json::path::PathElem;

use crate::TilesError;

/// A value of a Variant binary, with the (validated) metadata of its row.
#[derive(Debug, Clone)]
pub struct VariantView<'m, 'v> {
    metadata: VariantMetadata<'m>,
    /// The value's bytes; bytes after its end are allowed (a field's value runs to the
    /// end of its object).
    value: &'v [u8],
}

/// The header fields of an object or a list (`ids` empty for a list).
struct Container<'v> {
    count: usize,
    ids: &'v [u8],
    id_size: usize,
    offsets: &'v [u8],
    offset_size: usize,
    values: &'v [u8],
}

const OBJECT: u8 = 2;
const LIST: u8 = 3;

impl<'m, 'v> VariantView<'m, 'v> {
    /// The view of `value` under `metadata`.
    pub fn new(metadata: VariantMetadata<'m>, value: &'v [u8]) -> Self {
        Self { metadata, value }
    }

    /// The value, validated, for what reads all of it (writing it as JSON).
    pub fn variant(&self) -> Result<Variant<'m, 'v>, TilesError> {
        Variant::try_new_with_metadata(self.metadata.clone(), self.value)
            .map_err(TilesError::variant)
    }

    /// The value at `path` below this one (keys of objects, positions in lists; a
    /// negative position counts from the end); `None` when a step finds nothing.
    pub fn follow(&self, path: &[PathElem]) -> Result<Option<Self>, TilesError> {
        let mut node = self.clone();
        for elem in path {
            let next = match elem {
                PathElem::Key(key) => node.field(key)?,
                PathElem::Index(index) => match node.container(LIST)? {
                    Some(list) => match element_at(*index, list.count) {
                        Some(at) => Some(node.child(&list, at)?),
                        None => None,
                    },
                    None => None,
                },
            };
            match next {
                Some(next) => node = next,
                None => return Ok(None),
            }
        }
        Ok(Some(node))
    }

    /// Calls `visit` with the rows `json_each` gives this value: an object's fields
    /// (with their names) in order, a list's elements, any other value itself (with no
    /// name).
    pub fn each(
        &self,
        visit: &mut dyn FnMut(Option<&'m str>, Self) -> Result<(), TilesError>,
    ) -> Result<(), TilesError> {
        if let Some(object) = self.container(OBJECT)? {
            for i in 0..object.count {
                visit(Some(self.name(&object, i)?), self.child(&object, i)?)?;
            }
        } else if let Some(list) = self.container(LIST)? {
            for i in 0..list.count {
                visit(None, self.child(&list, i)?)?;
            }
        } else {
            visit(None, self.clone())?;
        }
        Ok(())
    }

    /// Whether the value is an object.
    pub fn is_object(&self) -> bool {
        self.value.first().is_some_and(|b| b & 0x03 == OBJECT)
    }

    /// The field `key` of an object, by binary search over its names.
    fn field(&self, key: &str) -> Result<Option<Self>, TilesError> {
        let Some(object) = self.container(OBJECT)? else {
            return Ok(None);
        };
        let (mut low, mut high) = (0, object.count);
        while low < high {
            let mid = low + (high - low) / 2;
            match self.name(&object, mid)?.cmp(key) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Ok(Some(self.child(&object, mid)?)),
            }
        }
        Ok(None)
    }

    /// The header of an object or a list (`basic` [`OBJECT`] or [`LIST`]); `None` when
    /// the value is of another type.
    fn container(&self, basic: u8) -> Result<Option<Container<'v>>, TilesError> {
        let header = *self.value.first().ok_or_else(truncated)?;
        if header & 0x03 != basic {
            return Ok(None);
        }
        let bits = header >> 2;
        let offset_size = usize::from(bits & 0x03) + 1;
        let (id_size, large) = match basic {
            OBJECT => (usize::from((bits >> 2) & 0x03) + 1, bits & 0x10 != 0),
            _ => (0, bits & 0x04 != 0),
        };
        let count_size = if large { 4 } else { 1 };
        let count = read_le(self.value, 1, count_size)?;
        let ids_at = 1 + count_size;
        let ids_len = count.checked_mul(id_size).ok_or_else(truncated)?;
        let offsets_at = ids_at.checked_add(ids_len).ok_or_else(truncated)?;
        let offsets_len = (count + 1).checked_mul(offset_size).ok_or_else(truncated)?;
        let values_at = offsets_at.checked_add(offsets_len).ok_or_else(truncated)?;
        Ok(Some(Container {
            count,
            ids: self.value.get(ids_at..offsets_at).ok_or_else(truncated)?,
            id_size,
            offsets: self
                .value
                .get(offsets_at..values_at)
                .ok_or_else(truncated)?,
            offset_size,
            values: self.value.get(values_at..).ok_or_else(truncated)?,
        }))
    }

    /// The name of field `i` of `object`.
    fn name(&self, object: &Container<'_>, i: usize) -> Result<&'m str, TilesError> {
        let id = read_le(object.ids, i * object.id_size, object.id_size)?;
        self.metadata.get(id).map_err(TilesError::variant)
    }

    /// Field or element `i` of `container`.
    fn child(&self, container: &Container<'v>, i: usize) -> Result<Self, TilesError> {
        assert!(i < container.count, "child {i} of {}", container.count);
        let start = read_le(
            container.offsets,
            i * container.offset_size,
            container.offset_size,
        )?;
        Ok(Self {
            metadata: self.metadata.clone(),
            value: container.values.get(start..).ok_or_else(truncated)?,
        })
    }
}

/// The position of element `index` of an array of `len` elements (negative indexes
/// count from the end, as in the document scanner), if it has one.
pub fn element_at(index: i64, len: usize) -> Option<usize> {
    let at = match index < 0 {
        true => len.checked_sub(usize::try_from(index.unsigned_abs()).ok()?)?,
        false => usize::try_from(index).ok()?,
    };
    (at < len).then_some(at)
}

/// The little-endian unsigned integer of `size` (1 to 4) bytes at `at` in `bytes`.
fn read_le(bytes: &[u8], at: usize, size: usize) -> Result<usize, TilesError> {
    let end = at.checked_add(size).ok_or_else(truncated)?;
    let raw = bytes.get(at..end).ok_or_else(truncated)?;
    Ok(raw
        .iter()
        .rev()
        .fold(0usize, |n, &b| (n << 8) | usize::from(b)))
}

fn truncated() -> TilesError {
    TilesError::Variant("a Variant value is truncated".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variant::{encoded, write_json};

    fn text(view: &VariantView<'_, '_>) -> String {
        let mut out = String::new();
        write_json(&view.variant().unwrap(), &mut out);
        out
    }

    #[test]
    fn follows_paths_as_a_validated_variant_does() {
        let json = r#"{"a":{"b":[1,{"c":"x"},[true]],"d":null},"e":"f","z":2.5}"#;
        let (metadata, value) = encoded(json);
        let metadata = VariantMetadata::try_new(&metadata).unwrap();
        let view = VariantView::new(metadata, &value);
        let key = |k: &str| PathElem::Key(k.into());
        let cases: Vec<(Vec<PathElem>, Option<&str>)> = vec![
            (vec![], Some(json)),
            (
                vec![key("a"), key("b"), PathElem::Index(1), key("c")],
                Some("\"x\""),
            ),
            (
                vec![key("a"), key("b"), PathElem::Index(-1)],
                Some("[true]"),
            ),
            (vec![key("a"), key("b"), PathElem::Index(-4)], None),
            (vec![key("a"), key("d")], Some("null")),
            (vec![key("z")], Some("2.5")),
            (vec![key("a"), key("x")], None),
            (vec![key("e"), key("x")], None),
            (vec![PathElem::Index(0)], None),
        ];
        for (path, expected) in cases {
            let found = view.follow(&path).unwrap();
            assert_eq!(found.as_ref().map(text).as_deref(), expected, "{path:?}");
        }
        let mut rows = Vec::new();
        view.follow(&[key("a")])
            .unwrap()
            .unwrap()
            .each(&mut |name, v| {
                rows.push(format!("{name:?}={}", text(&v)));
                Ok(())
            })
            .unwrap();
        assert_eq!(
            rows,
            [r#"Some("b")=[1,{"c":"x"},[true]]"#, r#"Some("d")=null"#]
        );
    }

    #[test]
    fn cut_binaries_are_errors_not_panics() {
        let (metadata, value) = encoded(r#"{"a":{"b":[1,2,3]},"c":"ddd"}"#);
        let metadata = VariantMetadata::try_new(&metadata).unwrap();
        let path = [PathElem::Key("a".into()), PathElem::Key("b".into())];
        for end in 0..value.len() {
            let view = VariantView::new(metadata.clone(), &value[..end]);
            // Whatever a cut value gives, it neither panics nor reads past its end.
            let _ = view
                .follow(&path)
                .and_then(|v| v.map(|v| v.variant()).transpose());
            let _ = view.each(&mut |_, v| v.variant().map(|_| ()));
        }
    }
}
