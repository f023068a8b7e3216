//! The layout of a data file's document column: the names the Parquet Variant
//! shredding specification gives its parts, and the paths of the leaf columns of a
//! shredded path. The writer, the shredder and the engine's readers all name columns
//! through this module, so a file is read with exactly the names it was written with.
//!
//! The document column is `{metadata, value, typed_value}`; `typed_value` holds one
//! `{value, typed_value}` group per shredded key, nested down each path, and a path
//! shredded as a list has `typed_value: list<element: {value, typed_value}>`; the
//! element's `typed_value` is a scalar, or for a list of objects one group per shredded
//! key of the elements, nested as the document's are.

use arrow::array::{ArrayRef, AsArray, StructArray};

/// Name of the document column in data files.
pub const COLUMN: &str = "j";
/// The Variant metadata (the key dictionary) of each document.
pub const METADATA: &str = "metadata";
/// Variant binary of the values no typed column holds.
pub const VALUE: &str = "value";
/// The shredded (typed) part of a Variant value.
pub const TYPED_VALUE: &str = "typed_value";
/// The repeated group of a Parquet list, as Arrow writes it.
pub const LIST: &str = "list";
/// The element field of a list (the Parquet LIST convention).
pub const ELEMENT: &str = "element";

/// The Parquet path of the `{value, typed_value}` group of the field at `keys`:
/// `[j, typed_value, k1, typed_value, k2, ...]`.
pub fn field_path(keys: &[String]) -> Vec<String> {
    let mut parts = Vec::with_capacity(1 + 2 * keys.len());
    parts.push(COLUMN.to_string());
    for key in keys {
        parts.push(TYPED_VALUE.to_string());
        parts.push(key.clone());
    }
    parts
}

/// The Parquet path of the `{value, typed_value}` group of the field at `element` (keys
/// from the element down; empty: the element itself) inside the elements of the list
/// at `keys`: `[..field_path(keys), typed_value, list, element, typed_value, k1, ...]`.
pub fn element_field_path(keys: &[String], element: &[String]) -> Vec<String> {
    let mut parts = field_path(keys);
    parts.extend([TYPED_VALUE, LIST, ELEMENT].map(String::from));
    for key in element {
        parts.push(TYPED_VALUE.to_string());
        parts.push(key.clone());
    }
    parts
}

/// The Parquet path of the typed leaf column of the path `keys`; for a list, of its
/// elements' typed column (below Parquet's `list.element` groups, and for a list of
/// objects below the element keys `element`).
pub fn typed_leaf_path(keys: &[String], list: bool, element: &[String]) -> Vec<String> {
    let mut parts = match list {
        true => element_field_path(keys, element),
        false => field_path(keys),
    };
    parts.push(TYPED_VALUE.to_string());
    parts
}

/// The Parquet path of the Variant binary holding the values of other types at `keys`,
/// or, for a key `element` of a list's object elements, at that key of each element.
pub fn outlier_leaf_path(keys: &[String], element: &[String]) -> Vec<String> {
    let mut parts = match element.is_empty() {
        true => field_path(keys),
        false => element_field_path(keys, element),
    };
    parts.push(VALUE.to_string());
    parts
}

/// The `(value, typed_value)` arrays of the path `keys` inside a decoded document
/// column (for a list, `typed_value` is the list); `None` when it is not shredded.
pub fn shredded_pair<'a>(
    column: &'a StructArray,
    keys: &[String],
) -> Option<(Option<&'a ArrayRef>, &'a ArrayRef)> {
    let mut typed = column.column_by_name(TYPED_VALUE)?;
    let mut value = None;
    for key in keys {
        let field = typed
            .as_struct_opt()?
            .column_by_name(key)?
            .as_struct_opt()?;
        value = field.column_by_name(VALUE);
        typed = field.column_by_name(TYPED_VALUE)?;
    }
    Some((value, typed))
}

#[cfg(test)]
mod tests {
    use parquet::file::reader::{FileReader, SerializedFileReader};

    use super::*;
    use crate::{TilesOptions, write_file};

    #[test]
    fn leaf_paths_name_the_columns_the_writer_writes() {
        let doc = br#"{"a":{"b":1},"l":[1,2],"o":[{"k":"x","m":{"n":1}}]}"#;
        let written = write_file(&[doc, doc, doc], &TilesOptions::default()).unwrap();
        let reader = SerializedFileReader::new(written.parquet).unwrap();
        let schema = reader.metadata().file_metadata().schema_descr_ptr();
        let columns: Vec<Vec<String>> = schema
            .columns()
            .iter()
            .map(|c| c.path().parts().to_vec())
            .collect();
        let keys = |k: &[&str]| k.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        for path in [
            vec![COLUMN.to_string(), METADATA.to_string()],
            typed_leaf_path(&keys(&["a", "b"]), false, &[]),
            outlier_leaf_path(&keys(&["a", "b"]), &[]),
            typed_leaf_path(&keys(&["l"]), true, &[]),
            outlier_leaf_path(&keys(&["l"]), &[]),
            typed_leaf_path(&keys(&["o"]), true, &keys(&["k"])),
            outlier_leaf_path(&keys(&["o"]), &keys(&["m", "n"])),
            typed_leaf_path(&keys(&["o"]), true, &keys(&["m", "n"])),
        ] {
            assert!(columns.contains(&path), "{path:?} not in {columns:?}");
        }
    }
}
