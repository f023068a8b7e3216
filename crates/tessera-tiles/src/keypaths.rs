//! Key paths of documents and the choice of the paths a file shreds (seed 000, P3 §4.3).
//!
//! Each document becomes a set of items `(key path, JSON type)`, one per scalar it holds
//! below nested objects; arrays are items of their own and kept whole (their elements
//! stay in the Variant binary). Documents are cut into tiles of `tile_docs`; an item is
//! frequent in a tile when at least `threshold` of the tile's documents hold it. The
//! union of the items of a tile's frequent itemsets is exactly its set of frequent
//! single items (every subset of a frequent itemset is frequent), so that set is what a
//! tile extracts; the file shreds the union over its tiles, each path with its majority
//! type across the file.
//!
//! Variant shredding of arrow-rs converts values leniently (`true` into an integer
//! column becomes 1), which would break exact round trips, so a path is shredded only
//! when every value it has in the file is of the chosen type or JSON null; a path whose
//! values mix types stays in the binary for that file.

use std::collections::HashMap;

use serde_json::Value;

use crate::summary::LeafType;

/// The JSON type of a key-path item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemType {
    /// A scalar of a shreddable type.
    Leaf(LeafType),
    /// An array (kept whole).
    Array,
    /// JSON null.
    Null,
    /// A number no typed column holds exactly (an integer above `i64::MAX`).
    Other,
}

/// A key path: the object keys from the document root.
pub type KeyPath = Vec<String>;

/// Calls `f` with every `(path, type)` item of `doc` (objects are descended into).
pub fn for_each_item<'a>(doc: &'a Value, f: &mut impl FnMut(&[&'a str], ItemType)) {
    let mut path = Vec::new();
    walk(doc, &mut path, f);
}

fn walk<'a>(value: &'a Value, path: &mut Vec<&'a str>, f: &mut impl FnMut(&[&'a str], ItemType)) {
    let ty = match value {
        Value::Object(fields) => {
            for (key, child) in fields {
                path.push(key.as_str());
                walk(child, path, f);
                path.pop();
            }
            return;
        }
        Value::Null => ItemType::Null,
        Value::Bool(_) => ItemType::Leaf(LeafType::Bool),
        Value::String(_) => ItemType::Leaf(LeafType::String),
        Value::Number(n) if n.is_i64() => ItemType::Leaf(LeafType::Int),
        Value::Number(n) if n.is_f64() => ItemType::Leaf(LeafType::Float),
        Value::Number(_) => ItemType::Other,
        Value::Array(_) => ItemType::Array,
    };
    if !path.is_empty() {
        f(path, ty);
    }
}

/// A path chosen for shredding.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The key path.
    pub path: KeyPath,
    /// Its typed column's type.
    pub ty: LeafType,
    /// Share of the file's documents with a value of that type at the path.
    pub frequency: f64,
}

/// What mining found in one file: the paths to shred and every other key path seen.
#[derive(Debug, Default)]
pub struct Mined {
    /// Paths to shred, sorted by path.
    pub shredded: Vec<Choice>,
    /// All other key paths, in JSONPath spelling.
    pub unshredded: Vec<String>,
}

/// Item types counted per path: the leaf types, then array, null and other.
const TYPE_SLOTS: usize = 8;

fn slot(ty: ItemType) -> usize {
    match ty {
        ItemType::Leaf(LeafType::Bool) => 0,
        ItemType::Leaf(LeafType::Int) => 1,
        ItemType::Leaf(LeafType::Float) => 2,
        ItemType::Leaf(LeafType::String) => 3,
        ItemType::Leaf(LeafType::Timestamp) => 4,
        ItemType::Array => 5,
        ItemType::Null => 6,
        ItemType::Other => 7,
    }
}

const LEAVES: [LeafType; 5] = [
    LeafType::Bool,
    LeafType::Int,
    LeafType::Float,
    LeafType::String,
    LeafType::Timestamp,
];

/// Counts of one key path over the file.
struct PathCounts {
    path: KeyPath,
    file: [u64; TYPE_SLOTS],
    tile: [u64; TYPE_SLOTS],
    frequent_in_a_tile: bool,
}

/// Mines `docs` tile by tile and picks the file's shredded paths.
pub fn mine(docs: &[Value], tile_docs: usize, threshold: f64) -> Mined {
    assert!(tile_docs > 0, "tiles hold at least one document");
    assert!((0.0..=1.0).contains(&threshold), "threshold is a share");
    // Paths are interned by a length-prefixed encoding of their keys, so counting an
    // item allocates nothing once its path is known.
    let mut ids: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut paths: Vec<PathCounts> = Vec::new();
    let mut touched: Vec<usize> = Vec::new();
    let mut key = Vec::new();
    for tile in docs.chunks(tile_docs) {
        for doc in tile {
            for_each_item(doc, &mut |path, ty| {
                key.clear();
                for part in path {
                    key.extend_from_slice(&(part.len() as u32).to_le_bytes());
                    key.extend_from_slice(part.as_bytes());
                }
                let id = match ids.get(key.as_slice()) {
                    Some(&id) => id,
                    None => {
                        ids.insert(key.clone(), paths.len());
                        paths.push(PathCounts {
                            path: path.iter().map(|p| p.to_string()).collect(),
                            file: [0; TYPE_SLOTS],
                            tile: [0; TYPE_SLOTS],
                            frequent_in_a_tile: false,
                        });
                        paths.len() - 1
                    }
                };
                let counts = &mut paths[id];
                if counts.tile.iter().all(|&n| n == 0) {
                    touched.push(id);
                }
                counts.tile[slot(ty)] += 1;
            });
        }
        let needed = ((threshold * tile.len() as f64).ceil() as u64).max(1);
        for id in touched.drain(..) {
            let counts = &mut paths[id];
            for (slot, n) in counts.tile.iter().enumerate() {
                counts.file[slot] += n;
                if slot < LEAVES.len() && *n >= needed {
                    counts.frequent_in_a_tile = true;
                }
            }
            counts.tile = [0; TYPE_SLOTS];
        }
    }
    let mut mined = Mined::default();
    for counts in paths {
        let (majority, n) = LEAVES
            .iter()
            .map(|&leaf| (leaf, counts.file[slot(ItemType::Leaf(leaf))]))
            .max_by_key(|&(_, n)| n)
            .expect("there are leaf types");
        let mixed = (0..TYPE_SLOTS).any(|s| {
            s != slot(ItemType::Null) && s != slot(ItemType::Leaf(majority)) && counts.file[s] > 0
        });
        if counts.frequent_in_a_tile && n > 0 && !mixed {
            mined.shredded.push(Choice {
                path: counts.path,
                ty: majority,
                frequency: n as f64 / docs.len().max(1) as f64,
            });
        } else {
            mined.unshredded.push(json_path(&counts.path));
        }
    }
    mined.shredded.sort_by(|a, b| a.path.cmp(&b.path));
    mined.unshredded.sort();
    // A path cannot be both a leaf and an object prefix of another shredded path in one
    // typed struct; keep the leaf only when no longer path goes through it.
    let prefixes: Vec<KeyPath> = mined.shredded.iter().map(|c| c.path.clone()).collect();
    let (kept, shadowed): (Vec<Choice>, Vec<Choice>) = std::mem::take(&mut mined.shredded)
        .into_iter()
        .partition(|c| {
            !prefixes
                .iter()
                .any(|p| p.len() > c.path.len() && p.starts_with(&c.path))
        });
    mined.shredded = kept;
    mined
        .unshredded
        .extend(shadowed.iter().map(|c| json_path(&c.path)));
    mined.unshredded.sort();
    mined
}

/// The JSONPath spelling of a key path: `$.a.b`, with `$."odd key"` where needed.
pub fn json_path(path: &[String]) -> String {
    let mut out = String::from("$");
    for key in path {
        let plain = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
        if plain {
            out.push('.');
            out.push_str(key);
        } else {
            out.push_str(".\"");
            out.push_str(&key.replace('\\', "\\\\").replace('"', "\\\""));
            out.push('"');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(texts: &[&str]) -> Vec<Value> {
        texts
            .iter()
            .map(|t| serde_json::from_str(t).unwrap())
            .collect()
    }

    #[test]
    fn items_of_a_document() {
        let mut items = Vec::new();
        for_each_item(
            &serde_json::json!({"a": 1, "b": {"c": "x", "d": [1]}, "e": null, "f": 1.5}),
            &mut |p, t| {
                let p: Vec<String> = p.iter().map(|k| k.to_string()).collect();
                items.push((json_path(&p), t))
            },
        );
        items.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            items,
            vec![
                ("$.a".to_string(), ItemType::Leaf(LeafType::Int)),
                ("$.b.c".to_string(), ItemType::Leaf(LeafType::String)),
                ("$.b.d".to_string(), ItemType::Array),
                ("$.e".to_string(), ItemType::Null),
                ("$.f".to_string(), ItemType::Leaf(LeafType::Float)),
            ]
        );
    }

    #[test]
    fn frequent_paths_per_tile_with_majority_types() {
        // Tile 1 (docs 0-3): $.a in 4/4, $.b in 2/4 (below 60%). Tile 2 (docs 4-7): $.b in 4/4.
        let d = docs(&[
            r#"{"a":1,"b":"x"}"#,
            r#"{"a":2,"b":"y"}"#,
            r#"{"a":3}"#,
            r#"{"a":4,"z":true}"#,
            r#"{"b":"p","c":null}"#,
            r#"{"b":"q","c":1}"#,
            r#"{"b":"r","c":"s"}"#,
            r#"{"b":"t"}"#,
        ]);
        let mined = mine(&d, 4, 0.6);
        let shredded: Vec<_> = mined
            .shredded
            .iter()
            .map(|c| (json_path(&c.path), c.ty, c.frequency))
            .collect();
        assert_eq!(
            shredded,
            vec![
                ("$.a".to_string(), LeafType::Int, 0.5),
                ("$.b".to_string(), LeafType::String, 0.75),
            ]
        );
        // $.c mixes int and string; $.z is rare.
        assert_eq!(mined.unshredded, vec!["$.c".to_string(), "$.z".to_string()]);
    }

    #[test]
    fn odd_keys_are_quoted() {
        assert_eq!(
            json_path(&["a.b".into(), "weird key".into(), "q\"".into()]),
            r#"$."a.b"."weird key"."q\"""#
        );
    }
}
