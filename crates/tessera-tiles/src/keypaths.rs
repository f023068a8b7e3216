//! Key paths of documents and the choice of the paths a file shreds (seed 000, P3 §4.3).
//!
//! Each document becomes a set of items `(key path, JSON type)`, one per scalar it holds
//! below nested objects; arrays are items of their own and kept whole (their elements
//! stay in the Variant binary). Documents are cut into tiles of `tile_docs` (after
//! [`crate::reorder`]); a tile extracts the items of its maximal frequent itemsets
//! (those held by at least `threshold` of its documents, mined by
//! [`crate::fpgrowth`]); the file shreds the union over its tiles, each path with its
//! majority type across the file. Values of another type at a shredded path (JSON null
//! included) are outliers: they stay in that field's Variant `value`, row by row.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::datetime::TimeFormat;
use crate::fpgrowth::maximal_itemsets;
use crate::summary::LeafType;
use crate::tape::{FxHasher, Kind, Tape, Value};

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

impl ItemType {
    /// The item type of a scalar or array node; `None` for objects, which are
    /// descended into instead.
    pub fn of(kind: Kind) -> Option<ItemType> {
        Some(match kind {
            Kind::Null => ItemType::Null,
            Kind::True | Kind::False => ItemType::Leaf(LeafType::Bool),
            Kind::Int => ItemType::Leaf(LeafType::Int),
            Kind::Float => ItemType::Leaf(LeafType::Float),
            Kind::String | Kind::Key => ItemType::Leaf(LeafType::String),
            Kind::UInt => ItemType::Other,
            Kind::Array => ItemType::Array,
            Kind::Object => return None,
        })
    }
}

/// A key path: the object keys from the document root.
pub type KeyPath = Vec<String>;

/// Item types counted per path: the leaf types, then array, null and other.
pub const TYPE_SLOTS: usize = 7;

/// The slot of an item type in a path's counters.
pub fn slot(ty: ItemType) -> usize {
    match ty {
        ItemType::Leaf(LeafType::Bool) => 0,
        ItemType::Leaf(LeafType::Int) => 1,
        ItemType::Leaf(LeafType::Float) => 2,
        // Dates and times are strings to mining; the writer types them afterwards.
        ItemType::Leaf(LeafType::String | LeafType::DateTime) => 3,
        ItemType::Array => 4,
        ItemType::Null => 5,
        ItemType::Other => 6,
    }
}

const LEAVES: [LeafType; 4] = [
    LeafType::Bool,
    LeafType::Int,
    LeafType::Float,
    LeafType::String,
];

/// The items of every document of a file: item `path * TYPE_SLOTS + slot(type)`.
#[derive(Debug, Default)]
pub struct Items {
    /// Key path of each path id.
    pub paths: Vec<KeyPath>,
    /// Items of all documents, document after document.
    pub items: Vec<u32>,
    /// End of each document's items in `items`.
    pub ends: Vec<usize>,
}

impl Items {
    /// Collects the items of the first `docs` documents of `tape` (texts in `texts`).
    pub fn collect(tape: &Tape, texts: &[&[u8]]) -> Items {
        let mut ids: HashMap<u64, u32, BuildHasherDefault<FxHasher>> = HashMap::default();
        let mut out = Items::default();
        for (i, text) in texts.iter().enumerate() {
            let root = tape.doc(i, text).root();
            let start = out.items.len();
            if root.node().kind() == Kind::Object {
                collect_object(root, u32::MAX, &mut ids, &mut out);
            }
            // A key repeated in one object must not count its document twice.
            out.items[start..].sort_unstable();
            let unique = start + dedup_sorted(&mut out.items[start..]);
            out.items.truncate(unique);
            out.ends.push(out.items.len());
        }
        out
    }

    /// The items of document `doc`.
    pub fn of(&self, doc: usize) -> &[u32] {
        let start = if doc == 0 { 0 } else { self.ends[doc - 1] };
        &self.items[start..self.ends[doc]]
    }
}

/// Moves the distinct values of a sorted slice to its front; returns how many there are.
fn dedup_sorted(items: &mut [u32]) -> usize {
    let mut write = 0;
    for read in 0..items.len() {
        if write == 0 || items[write - 1] != items[read] {
            items[write] = items[read];
            write += 1;
        }
    }
    write
}

fn collect_object<'a>(
    object: Value<'a>,
    parent: u32,
    ids: &mut HashMap<u64, u32, BuildHasherDefault<FxHasher>>,
    out: &mut Items,
) {
    for (key, value) in object.members() {
        let child = (u64::from(parent) << 32) | u64::from(key.key_id());
        let id = *ids.entry(child).or_insert_with(|| {
            let mut path = match parent {
                u32::MAX => Vec::new(),
                p => out.paths[p as usize].clone(),
            };
            path.push(key.str().to_string());
            out.paths.push(path);
            (out.paths.len() - 1) as u32
        });
        match ItemType::of(value.node().kind()) {
            Some(ty) => out.items.push(id * TYPE_SLOTS as u32 + slot(ty) as u32),
            None => collect_object(value, id, ids, out),
        }
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
    /// Of a `DateTime` path: the rendering its typed values have.
    pub format: Option<TimeFormat>,
}

/// What mining found in one file: the paths to shred and every other key path seen.
#[derive(Debug, Default)]
pub struct Mined {
    /// Paths to shred, sorted by path.
    pub shredded: Vec<Choice>,
    /// All other key paths, in JSONPath spelling.
    pub unshredded: Vec<String>,
}

/// Most paths one file shreds (the most frequent win): bounds the file's column count
/// when documents carry many distinct frequent keys.
pub const MAX_SHREDDED_PATHS: usize = 1024;

/// Mines the documents' items tile by tile, the documents taken in `order`: each
/// tile's maximal frequent itemsets (FP-growth at `threshold`, within `budget`) name
/// the paths it extracts; the file shreds the union over its tiles, each path typed by
/// its majority leaf type over the file. Values of other types at a shredded path
/// become per-row outliers.
pub fn mine(
    items: &Items,
    order: &[usize],
    tile_docs: usize,
    threshold: f64,
    budget: usize,
) -> Mined {
    assert!(tile_docs > 0, "tiles hold at least one document");
    assert!((0.0..=1.0).contains(&threshold), "threshold is a share");
    assert_eq!(
        order.len(),
        items.ends.len(),
        "the order covers every document"
    );
    let docs = items.ends.len();
    let mut file = vec![0u64; items.paths.len() * TYPE_SLOTS];
    items
        .items
        .iter()
        .for_each(|&item| file[item as usize] += 1);
    let mut frequent = vec![false; items.paths.len()];
    for tile in order.chunks(tile_docs) {
        let transactions: Vec<&[u32]> = tile.iter().map(|&doc| items.of(doc)).collect();
        let min = crate::reorder::needed(threshold, tile.len());
        for set in maximal_itemsets(&transactions, min, budget) {
            for item in set.items {
                if (item as usize % TYPE_SLOTS) < LEAVES.len() {
                    frequent[item as usize / TYPE_SLOTS] = true;
                }
            }
        }
    }
    let mut mined = Mined::default();
    for (id, path) in items.paths.iter().enumerate() {
        let counts = &file[id * TYPE_SLOTS..(id + 1) * TYPE_SLOTS];
        let (majority, n) = LEAVES
            .iter()
            .map(|&leaf| (leaf, counts[slot(ItemType::Leaf(leaf))]))
            .max_by_key(|&(_, n)| n)
            .expect("there are leaf types");
        if frequent[id] && n > 0 {
            mined.shredded.push(Choice {
                path: path.clone(),
                ty: majority,
                frequency: n as f64 / docs.max(1) as f64,
                format: None,
            });
        } else {
            mined.unshredded.push(json_path(path));
        }
    }
    if mined.shredded.len() > MAX_SHREDDED_PATHS {
        mined.shredded.sort_by(|a, b| {
            b.frequency
                .total_cmp(&a.frequency)
                .then(a.path.cmp(&b.path))
        });
        let dropped = mined.shredded.split_off(MAX_SHREDDED_PATHS);
        mined
            .unshredded
            .extend(dropped.iter().map(|c| json_path(&c.path)));
    }
    mined.shredded.sort_by(|a, b| a.path.cmp(&b.path));
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
    use crate::fpgrowth::DEFAULT_BUDGET;

    /// The items of `texts`, mined into `Items`.
    pub(crate) fn items_of(texts: &[&str]) -> Items {
        let mut tape = Tape::default();
        let texts: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        texts.iter().for_each(|t| tape.push(t).unwrap());
        Items::collect(&tape, &texts)
    }

    /// (path, type) of an item id.
    fn decode(items: &Items, item: u32) -> (String, ItemType) {
        let path = json_path(&items.paths[item as usize / TYPE_SLOTS]);
        let all = [
            ItemType::Leaf(LeafType::Bool),
            ItemType::Leaf(LeafType::Int),
            ItemType::Leaf(LeafType::Float),
            ItemType::Leaf(LeafType::String),
            ItemType::Array,
            ItemType::Null,
            ItemType::Other,
        ];
        (path, all[item as usize % TYPE_SLOTS])
    }

    /// Mines `items` in input order; also returns (path, type, frequency) per choice.
    fn mine_in_order(
        items: &Items,
        tile_docs: usize,
        threshold: f64,
    ) -> (Mined, Vec<(String, LeafType, f64)>) {
        let order: Vec<usize> = (0..items.ends.len()).collect();
        let mined = mine(items, &order, tile_docs, threshold, DEFAULT_BUDGET);
        let shredded = mined
            .shredded
            .iter()
            .map(|c| (json_path(&c.path), c.ty, c.frequency))
            .collect();
        (mined, shredded)
    }

    #[test]
    fn shredded_paths_are_capped_at_the_most_frequent() {
        // 1100 keys in every document, k0000 .. k1099, plus a rarer key that still
        // reaches the threshold: the rare one and the last 76 by name are dropped.
        let keys: Vec<String> = (0..1_100).map(|i| format!(r#""k{i:04}":1"#)).collect();
        let full = format!("{{{}}}", keys.join(","));
        let rare = format!(r#"{{{},"a":1}}"#, keys.join(","));
        let d = items_of(&[&rare, &rare, &full]);
        let (mined, shredded) = mine_in_order(&d, 4, 0.6);
        assert_eq!(shredded.len(), MAX_SHREDDED_PATHS);
        assert_eq!(shredded.first().map(|s| s.0.as_str()), Some("$.k0000"));
        assert_eq!(shredded.last().map(|s| s.0.as_str()), Some("$.k1023"));
        assert!(mined.unshredded.contains(&"$.a".to_string()));
        assert!(mined.unshredded.contains(&"$.k1099".to_string()));
    }

    #[test]
    fn items_of_a_document() {
        let collected =
            items_of(&[r#"{"a":1,"b":{"c":"x","d":[1]},"e":null,"f":1.5,"a":2,"g":{}}"#]);
        let mut items: Vec<_> = collected
            .of(0)
            .iter()
            .map(|&i| decode(&collected, i))
            .collect();
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
        let d = items_of(&[
            r#"{"a":1,"b":"x"}"#,
            r#"{"a":2,"b":"y"}"#,
            r#"{"a":3}"#,
            r#"{"a":4,"z":true}"#,
            r#"{"b":"p","c":null}"#,
            r#"{"b":"q","c":1}"#,
            r#"{"b":"r","c":"s"}"#,
            r#"{"b":"t"}"#,
        ]);
        let (mined, shredded) = mine_in_order(&d, 4, 0.6);
        assert_eq!(
            shredded,
            vec![
                ("$.a".to_string(), LeafType::Int, 0.5),
                ("$.b".to_string(), LeafType::String, 0.75),
            ]
        );
        // $.c is in 3/4 of tile 2 but with three types, none frequent; $.z is rare.
        assert_eq!(mined.unshredded, vec!["$.c".to_string(), "$.z".to_string()]);
    }

    #[test]
    fn mixed_types_shred_the_majority() {
        let d = items_of(&[
            r#"{"a":1}"#,
            r#"{"a":2}"#,
            r#"{"a":"x"}"#,
            r#"{"a":null}"#,
            r#"{"a":{"b":true}}"#,
        ]);
        let (mined, shredded) = mine_in_order(&d, 8, 0.3);
        assert_eq!(shredded, vec![("$.a".to_string(), LeafType::Int, 0.4)]);
        assert_eq!(mined.unshredded, vec!["$.a.b".to_string()]);
    }

    #[test]
    fn odd_keys_are_quoted() {
        assert_eq!(
            json_path(&["a.b".into(), "weird key".into(), "q\"".into()]),
            r#"$."a.b"."weird key"."q\"""#
        );
    }
}
