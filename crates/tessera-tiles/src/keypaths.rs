//! Key paths of documents and the choice of the paths a file shreds (JSON Tiles §4.3;
//! JSON Tiles is Durner, Leis, Neumann: "JSON Tiles: Fast Analytics on Semi-Structured
//! Data", SIGMOD 2021).
//!
//! Each document becomes a set of items `(key path, JSON type)`, one per scalar it holds
//! below nested objects; an array is an item of its own, and so is each of its first
//! [`LEADING`] elements that is a scalar (`(p[i], type)`, JSON Tiles §4.3 step 6: for
//! arrays of `x` versus `x + c` elements only the first `x` are frequent in all
//! documents). A file shreds the paths that the documents of one partition (the
//! reordering's unit, [`crate::reorder`]) hold often enough to fill a tile at
//! `threshold`: the items a tile's frequent itemsets extract once the reordering has
//! gathered them, whether or not it managed to. Each path takes its majority type across
//! the file. Values of another type at a shredded path (JSON null included) are
//! outliers: they stay in that field's
//! Variant `value`, row by row.
//!
//! An array path whose first element is frequent is shredded as a LIST of its elements'
//! majority type, unless its arrays are long on average ([`MAX_LIST_MEAN_LEN`]):
//! high-cardinality arrays (hashtags, mentions) stay whole in the binary. The Parquet
//! Variant shredding spec shreds a list only whole, so every element of a shredded list
//! is in it; elements of another type are per-element outliers.
//!
//! Arrays of objects (dependency lists, commits, line items) are shredded as lists of
//! shredded objects, as the spec shreds them: the key paths inside the leading object
//! elements of a path's arrays are counted per element ([`ElementKey`]), and a frequent
//! array whose leading elements are mostly objects shreds the element key paths that
//! at least `threshold` of those objects hold (`$.a[*].k`, [`Choice::element`]),
//! however long the arrays are.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::datetime::TimeFormat;
use crate::reorder::Partitioning;
use crate::summary::{LeafType, MAX_BLOOM_PATHS};
use tessera_json::tape::{FxHasher, Kind, Tape, Value};

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
            Kind::UInt | Kind::Decimal => ItemType::Other,
            Kind::Array => ItemType::Array,
            Kind::Object => return None,
        })
    }
}

/// A key path: the object keys from the document root.
pub type KeyPath = Vec<String>;

/// Leading array elements itemized per array: arrays of one structure differ mostly in
/// their tails, so a few leading positions tell whether a path holds short arrays of
/// one element type, while the cost of collecting items stays bounded per array.
pub const LEADING: usize = 4;

/// Longest mean element count of the arrays at a path that is still shredded as a
/// list: longer arrays are high-cardinality (hashtags, mentions, embeddings) and would
/// cost a typed element per value for little skipping; they stay whole in the binary.
pub const MAX_LIST_MEAN_LEN: u64 = 16;

/// Fewest elements the arrays at one path of a file hold for them to move to a side
/// relation ([`Mined::sides`]): a tile of elements (JSON Tiles' 2^10), below which a file
/// of their own costs a request more than its typed columns save.
pub const MIN_SIDE_ELEMENTS: u64 = 1024;

/// The JSONPath spelling of a path shredded as a list ends in this step: `$.a.b[*]`
/// names the elements of the arrays at `$.a.b`.
pub const LIST_STEP: &str = "[*]";

/// The path of an item, as a node of the tree of a file's paths: one key below the
/// path of the object holding it or, for an element of an array, its position below the
/// array's path. Only the last step can be a position, as elements are itemized only
/// when they are scalars. A node holds its last key only: when keys explode (maps keyed
/// by names) nearly every path of a file is new, and copying every prefix into every
/// path was most of mining's time ([`Items::keys`] spells a path out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemPath {
    /// The path id of the object holding the key or of the array holding the element;
    /// `None` for a key of the document's root object.
    pub parent: Option<u32>,
    /// The last key; `None` for an element.
    pub key: Option<Box<str>>,
    /// How many object keys lead to the value (for an element: to its array).
    pub depth: usize,
    /// The element's position in its array; `None` for a value under keys alone.
    pub element: Option<usize>,
}

/// The arrays seen at one path.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ArrayCounts {
    /// Arrays at the path (each occurrence, repeated keys included).
    pub arrays: u64,
    /// Their elements, all together.
    pub elements: u64,
    /// Their leading elements (at most [`LEADING`] per array) that are objects.
    pub objects: u64,
    /// Their leading elements that are scalars (JSON null included).
    pub scalars: u64,
}

/// A key path inside the object elements of the arrays at one path, with the types of
/// the values it holds there, counted per leading element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementKey {
    /// The path id of the arrays.
    pub array: u32,
    /// The object keys from the element down.
    pub keys: KeyPath,
    /// Per item type slot, how many leading elements hold a value of that type here.
    pub counts: [u64; TYPE_SLOTS],
}

/// Most element key paths counted per file: bounds the memory of mining when the
/// elements' keys explode (maps of names inside arrays); later keys are not counted
/// and so stay in the binary.
pub const MAX_ELEMENT_KEYS: usize = 1 << 16;

/// Most element key paths one list of objects shreds (the most frequent win).
pub const MAX_ELEMENT_KEYS_SHREDDED: usize = 64;

/// No path: an element position not seen yet.
const NO_PATH: u32 = u32::MAX;

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
    /// Item path of each path id.
    pub paths: Vec<ItemPath>,
    /// Per path id, the arrays held there.
    pub arrays: Vec<ArrayCounts>,
    /// Per path id, the path ids of its leading elements ([`NO_PATH`]: not seen).
    elements: Vec<[u32; LEADING]>,
    /// Key paths inside object elements, in the order first seen.
    pub element_keys: Vec<ElementKey>,
    /// Element key ids by (parent, key id): the parent is an array's path id, or
    /// [`ELEMENT_PARENT`] plus an element key id for keys below an element's object.
    element_ids: HashMap<u64, u32, BuildHasherDefault<FxHasher>>,
    /// Items of all documents, document after document.
    pub items: Vec<u32>,
    /// End of each document's items in `items`.
    pub ends: Vec<usize>,
}

impl Items {
    /// Collects the items of the first `docs` documents of `tape` (texts in `texts`).
    pub fn collect(tape: &Tape, texts: &[&str]) -> Items {
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

    /// The object keys of path `id` from the root (for an element: its array's keys).
    pub fn keys(&self, id: u32) -> KeyPath {
        self.key_steps(id).into_iter().map(str::to_string).collect()
    }

    /// The JSONPath spelling of path `id`: `$.a.b`, or `$.a.b[2]` for an element.
    pub fn json_path(&self, id: u32) -> String {
        let mut out = json_path(&self.key_steps(id));
        if let Some(i) = self.paths[id as usize].element {
            out.push_str(&format!("[{i}]"));
        }
        out
    }

    /// The keys of path `id`, borrowed, root first.
    fn key_steps(&self, id: u32) -> Vec<&str> {
        let mut steps = Vec::with_capacity(self.paths[id as usize].depth);
        let mut at = Some(id);
        while let Some(id) = at {
            let path = &self.paths[id as usize];
            steps.extend(path.key.as_deref());
            at = path.parent;
        }
        assert_eq!(steps.len(), self.paths[id as usize].depth, "a path's depth");
        steps.reverse();
        steps
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
            let (parent, depth) = match parent {
                u32::MAX => (None, 1),
                p => (Some(p), out.paths[p as usize].depth + 1),
            };
            out.new_path(ItemPath {
                parent,
                key: Some(key.str().into()),
                depth,
                element: None,
            })
        });
        match ItemType::of(value.node().kind()) {
            Some(ItemType::Array) => {
                out.push(id, ItemType::Array);
                collect_array(value, id, out);
            }
            Some(ty) => out.push(id, ty),
            None => collect_object(value, id, ids, out),
        }
    }
}

/// The parent of an element key below another element key: the ids of arrays' paths
/// stay below 2^29 ([`Items::new_path`]), so the two kinds of parents never meet.
const ELEMENT_PARENT: u32 = 1 << 30;

/// Counts the array at path `id` and itemizes its leading scalar elements (and counts
/// the key paths of its leading object elements); element paths are created once per
/// path, so a document allocates nothing per element.
fn collect_array(array: Value<'_>, id: u32, out: &mut Items) {
    let counts = &mut out.arrays[id as usize];
    counts.arrays += 1;
    counts.elements += array.node().container_len() as u64;
    for (i, element) in array.elements().take(LEADING).enumerate() {
        match element.node().kind() {
            Kind::Object => {
                out.arrays[id as usize].objects += 1;
                let depth = out.paths[id as usize].depth;
                collect_element_object(element, id, depth, out);
                continue;
            }
            Kind::Array => continue,
            _ => out.arrays[id as usize].scalars += 1,
        }
        let Some(ty) = ItemType::of(element.node().kind()) else {
            continue;
        };
        let mut element_id = out.elements[id as usize][i];
        if element_id == NO_PATH {
            element_id = out.new_path(ItemPath {
                parent: Some(id),
                key: None,
                depth: out.paths[id as usize].depth,
                element: Some(i),
            });
            out.elements[id as usize][i] = element_id;
        }
        out.push(element_id, ty);
    }
}

/// Counts the key paths of one object element (or of an object below one) of the arrays
/// at path `array`; `parent` is `array` for the element itself. Keys deeper than
/// [`MAX_SHREDDED_DEPTH`] from the document root, and keys beyond [`MAX_ELEMENT_KEYS`],
/// are not counted.
fn collect_element_object(object: Value<'_>, parent: u32, depth: usize, out: &mut Items) {
    if depth >= MAX_SHREDDED_DEPTH {
        return;
    }
    let array = match parent < ELEMENT_PARENT {
        true => parent,
        false => out.element_keys[(parent - ELEMENT_PARENT) as usize].array,
    };
    for (key, value) in object.members() {
        let child = (u64::from(parent) << 32) | u64::from(key.key_id());
        let id = match out.element_ids.get(&child) {
            Some(&id) => id,
            None if out.element_keys.len() < MAX_ELEMENT_KEYS => {
                let mut keys = match parent < ELEMENT_PARENT {
                    true => Vec::new(),
                    false => out.element_keys[(parent - ELEMENT_PARENT) as usize]
                        .keys
                        .clone(),
                };
                keys.push(key.str().to_string());
                out.element_keys.push(ElementKey {
                    array,
                    keys,
                    counts: [0; TYPE_SLOTS],
                });
                let id = (out.element_keys.len() - 1) as u32;
                out.element_ids.insert(child, id);
                id
            }
            None => continue,
        };
        match ItemType::of(value.node().kind()) {
            Some(ty) => out.element_keys[id as usize].counts[slot(ty)] += 1,
            None => collect_element_object(value, ELEMENT_PARENT + id, depth + 1, out),
        }
    }
}

impl Items {
    /// A new path id for `path`.
    fn new_path(&mut self, path: ItemPath) -> u32 {
        self.paths.push(path);
        self.arrays.push(ArrayCounts::default());
        self.elements.push([NO_PATH; LEADING]);
        u32::try_from(self.paths.len() - 1)
            .ok()
            .filter(|&id| id < u32::MAX / TYPE_SLOTS as u32)
            .expect("fewer than 2^29 distinct paths per file")
    }

    /// Records item `(path id, ty)` for the current document.
    fn push(&mut self, id: u32, ty: ItemType) {
        self.items.push(id * TYPE_SLOTS as u32 + slot(ty) as u32);
    }
}

/// A path chosen for shredding.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The key path.
    pub path: KeyPath,
    /// Its typed column's type (for a list: its elements' typed column).
    pub ty: LeafType,
    /// Share of the file's documents with a value of that type at the path (for a
    /// list: with an array at the path, whose elements the typed list holds).
    pub frequency: f64,
    /// Of a `DateTime` path: the rendering its typed values have.
    pub format: Option<TimeFormat>,
    /// The path holds arrays, shredded as a list of `ty` elements.
    pub list: bool,
    /// Of a list of objects: the keys from each element down to this typed column
    /// (`$.a[*].k` shreds `k` of the elements of `$.a`); empty for any other path.
    pub element: KeyPath,
}

impl Choice {
    /// The path's spelling in shredding schemas and statistics: `$.a.b`, `$.a.b[*]`
    /// for a list ([`LIST_STEP`]) and `$.a.b[*].k` for a key of its object elements, so
    /// that no filter on the key path `$.a.b` mistakes the elements' statistics for the
    /// statistics of its values.
    pub fn json_path(&self) -> String {
        let mut out = json_path(&self.path);
        if self.list {
            out.push_str(LIST_STEP);
            out.push_str(&json_path(&self.element)[1..]);
        }
        out
    }
}

/// What mining found in one file: the paths to shred and every other key path seen.
#[derive(Debug, Default)]
pub struct Mined {
    /// Paths to shred, sorted by path.
    pub shredded: Vec<Choice>,
    /// All other key paths, in JSONPath spelling, and the key paths of shredded lists:
    /// those have no typed column of their own values, so to a filter on them they are
    /// paths that may be present in the binary. `None` when there are more than
    /// [`MAX_BLOOM_PATHS`] (keys that explode), which are not spelled out: the file's
    /// filter then contains every path, as it does for more spellings than that.
    pub unshredded: Option<Vec<String>>,
    /// Paths whose arrays are high-cardinality (long on average, [`MAX_LIST_MEAN_LEN`],
    /// and [`MIN_SIDE_ELEMENTS`] at least), that hold nothing but arrays, and that the
    /// file does not shred as lists (long arrays of scalars; arrays of objects too
    /// unlike one another for any key to be frequent): the candidates for a side
    /// relation of their elements (JSON Tiles §4.3 step 6, Tiles-*), sorted. The writer
    /// decides ([`crate::TilesOptions::side_arrays`]).
    pub sides: Vec<KeyPath>,
}

/// Most paths one file shreds (the most frequent win): bounds the file's column count
/// when documents carry many distinct frequent keys.
pub const MAX_SHREDDED_PATHS: usize = 1024;

/// Most keys in a shredded path; deeper paths stay in the Variant binary. Each key
/// nests the Parquet schema two groups deeper, and Parquet's schema conversion (writing
/// and reading) recurses per group: without a bound, a document nested as deep as
/// `tessera_json::MAX_NESTING` allows overflows a thread's stack when it is ingested.
/// Queries reach at most `tessera_json::path::MAX_PATH_DEPTH` keys.
pub const MAX_SHREDDED_DEPTH: usize = 16;

/// Mines the documents' items, taken in `order` (a permutation within partitions of
/// `p.partition_tiles` tiles): a path is frequent when the documents of one partition
/// holding it could fill a tile at the threshold (`p.threshold` of `p.tile_docs`), which
/// is the reordering's goal (JSON Tiles §3.2) and what a tile's frequent itemsets
/// would extract once it is met. Counting per partition rather than mining the
/// reordered tiles keeps a structure that the reordering splits over near-identical
/// itemset clusters (pull requests with and without a key, each below a tile's
/// threshold) from staying whole in the binary. The file shreds the frequent paths,
/// each typed by its majority leaf type over the file. Values of other types at a
/// shredded path become per-row outliers. An array path becomes a list when its first
/// element is frequent and its arrays are short ([`MAX_LIST_MEAN_LEN`]), or when it
/// holds objects; when a path qualifies as both a scalar and a list, the type more
/// documents hold wins.
pub fn mine(items: &Items, order: &[usize], p: &Partitioning) -> Mined {
    assert!(
        p.tile_docs > 0 && p.partition_tiles > 0,
        "tiles and partitions hold something"
    );
    assert!((0.0..=1.0).contains(&p.threshold), "threshold is a share");
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
    let (frequent, frequent_arrays) = frequent_per_partition(items, order, p);
    let element_keys = ElementKeysByArray::new(items);
    let mut mined = Mined::default();
    let share = |n: u64| n as f64 / docs.max(1) as f64;
    // Unshredded paths by id, spelled out at the end only if there are few enough.
    let mut unshredded: Vec<u32> = Vec::new();
    // Objects leave no item of their own path, only paths below it.
    let mut objects = vec![false; items.paths.len()];
    for path in items.paths.iter().filter(|p| p.element.is_none()) {
        if let Some(parent) = path.parent {
            objects[parent as usize] = true;
        }
    }
    let mut unshredded_choices: Vec<String> = Vec::new();
    for (id, path) in items.paths.iter().enumerate() {
        // Element items only decide whether their array is shredded.
        if path.element.is_some() {
            continue;
        }
        let path_id = id as u32;
        if path.depth > MAX_SHREDDED_DEPTH {
            unshredded.push(path_id);
            continue;
        }
        let (majority, n) = majority_leaf(&file, std::iter::once(path_id));
        let scalar = (frequent[id] && n > 0).then_some((majority, n));
        let choice = |(ty, n): (LeafType, u64), list: bool, element: KeyPath| Choice {
            path: items.keys(path_id),
            ty,
            frequency: share(n),
            list,
            format: None,
            element,
        };
        let list = list_choice(items, &file, &frequent, id).or_else(|| {
            frequent_arrays[id]
                .then(|| object_list_choice(items, &file, &element_keys, id, p.threshold))
                .flatten()
        });
        // Arrays the file types as a list are read from it: a side relation pays off
        // only for those it keeps whole (measured in docs/BENCHMARKS.md).
        if list.is_none() && is_side_array(items, &file, &objects, id) {
            mined.sides.push(items.keys(path_id));
        }
        match (scalar, list) {
            (Some(s), list) if list.as_ref().is_none_or(|l| s.1 >= l.documents) => {
                mined.shredded.push(choice(s, false, Vec::new()));
            }
            (_, Some(list)) => {
                for (element, ty) in list.elements {
                    mined
                        .shredded
                        .push(choice((ty, list.documents), true, element));
                }
                unshredded.push(path_id);
            }
            _ => unshredded.push(path_id),
        }
    }
    if mined.shredded.len() > MAX_SHREDDED_PATHS {
        mined.shredded.sort_by(|a, b| {
            b.frequency
                .total_cmp(&a.frequency)
                .then(a.path.cmp(&b.path))
        });
        let dropped = mined.shredded.split_off(MAX_SHREDDED_PATHS);
        unshredded_choices.extend(dropped.iter().map(|c| json_path(&c.path)));
    }
    mined.shredded.sort_by(|a, b| a.path.cmp(&b.path));
    mined.sides.sort();
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
    unshredded_choices.extend(shadowed.iter().map(|c| json_path(&c.path)));
    mined.unshredded = spelled_out(items, &unshredded, unshredded_choices);
    mined
}

/// The JSONPath spellings of the paths `ids` and `more`, sorted and distinct; `None`
/// when the ids alone are more than a file's filter holds ([`MAX_BLOOM_PATHS`]: they
/// are distinct paths), so that no time goes to spelling out what the filter would not
/// keep. [`crate::summary::PathBloom::of`] owns the bound on what it keeps.
fn spelled_out(items: &Items, ids: &[u32], more: Vec<String>) -> Option<Vec<String>> {
    if ids.len() > MAX_BLOOM_PATHS {
        return None;
    }
    let mut paths = more;
    paths.extend(ids.iter().map(|&id| items.json_path(id)));
    paths.sort_unstable();
    paths.dedup();
    Some(paths)
}

/// Per path id: whether its leaves, and whether its arrays, are held by enough
/// documents of one partition to fill a tile at the threshold (a partition shorter than
/// a tile needs the threshold of its own length).
fn frequent_per_partition(
    items: &Items,
    order: &[usize],
    p: &Partitioning,
) -> (Vec<bool>, Vec<bool>) {
    let paths = items.paths.len();
    let (mut frequent, mut frequent_arrays) = (vec![false; paths], vec![false; paths]);
    let mut counts = vec![0u32; paths * 2];
    let mut touched: Vec<usize> = Vec::new();
    for partition in order.chunks(p.tile_docs * p.partition_tiles) {
        let needed = crate::reorder::needed(p.threshold, p.tile_docs.min(partition.len()));
        for &doc in partition {
            // A document counts once per counter, even when a repeated key gives one
            // path leaves of two types (its items are sorted, so they are adjacent).
            let mut last = usize::MAX;
            for &item in items.of(doc) {
                let (id, slot_of) = (item as usize / TYPE_SLOTS, item as usize % TYPE_SLOTS);
                let counter = match slot_of {
                    s if s < LEAVES.len() => 2 * id,
                    s if s == slot(ItemType::Array) => 2 * id + 1,
                    _ => continue,
                };
                if counter == last {
                    continue;
                }
                last = counter;
                if counts[counter] == 0 {
                    touched.push(counter);
                }
                counts[counter] += 1;
            }
        }
        for counter in touched.drain(..) {
            if counts[counter] >= needed {
                let flags = if counter % 2 == 0 {
                    &mut frequent
                } else {
                    &mut frequent_arrays
                };
                flags[counter / 2] = true;
            }
            counts[counter] = 0;
        }
    }
    (frequent, frequent_arrays)
}

/// Whether path `id` holds high-cardinality arrays and nothing else (no scalar, object or
/// null in any document; `objects`: the paths that held an object), so that its values are exactly the rows of a side relation of
/// elements.
fn is_side_array(items: &Items, file: &[u64], objects: &[bool], id: usize) -> bool {
    let counts = items.arrays[id];
    let held: u64 = file[id * TYPE_SLOTS..(id + 1) * TYPE_SLOTS].iter().sum();
    counts.elements >= MIN_SIDE_ELEMENTS
        && counts.elements > MAX_LIST_MEAN_LEN * counts.arrays
        && held == file[id * TYPE_SLOTS + slot(ItemType::Array)]
        && !objects[id]
}

/// The majority leaf type over the items of the paths `ids`, with its count.
fn majority_leaf(file: &[u64], ids: impl Iterator<Item = u32> + Clone) -> (LeafType, u64) {
    LEAVES
        .iter()
        .map(|&leaf| {
            let n = ids
                .clone()
                .map(|id| file[id as usize * TYPE_SLOTS + slot(ItemType::Leaf(leaf))])
                .sum();
            (leaf, n)
        })
        .max_by_key(|&(_, n)| n)
        .expect("there are leaf types")
}

/// A path chosen as a list: what its elements shred, and the documents holding an
/// array there.
struct ListChoice {
    /// Per typed column of the elements: the keys from an element down (empty for a
    /// list of scalars) and the column's type.
    elements: Vec<(KeyPath, LeafType)>,
    documents: u64,
}

/// Path `id` as a list of scalars: its elements' majority type over the leading
/// elements seen, when its first element is frequent, its arrays are short and their
/// leading elements are not mostly objects.
fn list_choice(items: &Items, file: &[u64], frequent: &[bool], id: usize) -> Option<ListChoice> {
    let first = items.elements[id][0];
    if first == NO_PATH || !frequent[first as usize] {
        return None;
    }
    let counts = items.arrays[id];
    if counts.elements > MAX_LIST_MEAN_LEN * counts.arrays || counts.objects > counts.scalars {
        return None;
    }
    let leading = items.elements[id].iter().copied().filter(|&e| e != NO_PATH);
    let (ty, n) = majority_leaf(file, leading);
    assert!(n > 0, "a frequent first element has a leaf type");
    Some(ListChoice {
        elements: vec![(Vec::new(), ty)],
        documents: file[id * TYPE_SLOTS + slot(ItemType::Array)],
    })
}

/// The element keys counted in a file, grouped by the path of their arrays.
struct ElementKeysByArray {
    /// Element key indexes, sorted by array path id.
    sorted: Vec<usize>,
}

impl ElementKeysByArray {
    fn new(items: &Items) -> Self {
        let mut sorted: Vec<usize> = (0..items.element_keys.len()).collect();
        sorted.sort_by_key(|&k| items.element_keys[k].array);
        Self { sorted }
    }

    /// The element keys of the arrays at path `id`.
    fn of<'a>(&'a self, items: &'a Items, id: usize) -> impl Iterator<Item = &'a ElementKey> {
        let start = self
            .sorted
            .partition_point(|&k| (items.element_keys[k].array as usize) < id);
        self.sorted[start..]
            .iter()
            .map(|&k| &items.element_keys[k])
            .take_while(move |key| key.array as usize == id)
    }
}

/// Path `id` (whose arrays are frequent) as a list of objects: the element key paths
/// that at least `threshold` of the leading object elements hold with one leaf type
/// (the most frequent [`MAX_ELEMENT_KEYS_SHREDDED`]; a key that is a prefix of another
/// chosen key yields to it), when their leading elements are mostly objects. Long
/// arrays of objects are shredded too: a list of shredded objects is a set of nested
/// Parquet columns however long it is, and long lists (a push of hundreds of commits)
/// are where reading one key's column instead of the whole list pays most.
fn object_list_choice(
    items: &Items,
    file: &[u64],
    element_keys: &ElementKeysByArray,
    id: usize,
    threshold: f64,
) -> Option<ListChoice> {
    let counts = items.arrays[id];
    if counts.objects <= counts.scalars {
        return None;
    }
    let needed = crate::reorder::needed(threshold, counts.objects as usize) as u64;
    let mut chosen: Vec<(KeyPath, LeafType, u64)> = element_keys
        .of(items, id)
        .filter_map(|key| {
            let (ty, n) = LEAVES
                .iter()
                .map(|&leaf| (leaf, key.counts[slot(ItemType::Leaf(leaf))]))
                .max_by_key(|&(_, n)| n)?;
            (n >= needed.max(1)).then(|| (key.keys.clone(), ty, n))
        })
        .collect();
    chosen.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    chosen.truncate(MAX_ELEMENT_KEYS_SHREDDED);
    let prefixes: Vec<KeyPath> = chosen.iter().map(|c| c.0.clone()).collect();
    chosen.retain(|(keys, _, _)| {
        !prefixes
            .iter()
            .any(|p| p.len() > keys.len() && p.starts_with(keys))
    });
    chosen.sort_by(|a, b| a.0.cmp(&b.0));
    (!chosen.is_empty()).then(|| ListChoice {
        elements: chosen.into_iter().map(|(keys, ty, _)| (keys, ty)).collect(),
        documents: file[id * TYPE_SLOTS + slot(ItemType::Array)],
    })
}

/// The JSONPath spelling of a key path: `$.a.b`, with `$."odd key"` where needed.
pub fn json_path<K: AsRef<str>>(path: &[K]) -> String {
    let mut out = String::from("$");
    for key in path {
        let key = key.as_ref();
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
        let texts: Vec<&str> = texts
            .iter()
            .map(|t| tape.push(t.as_bytes()).unwrap())
            .collect();
        Items::collect(&tape, &texts)
    }

    /// (path, type) of an item id.
    fn decode(items: &Items, item: u32) -> (String, ItemType) {
        let path = items.json_path(item / TYPE_SLOTS as u32);
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
        let partitioning = Partitioning {
            tile_docs,
            partition_tiles: 1,
            threshold,
            budget: DEFAULT_BUDGET,
        };
        let mined = mine(items, &order, &partitioning);
        let shredded = mined
            .shredded
            .iter()
            .map(|c| (c.json_path(), c.ty, c.frequency))
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
        let unshredded = mined.unshredded.unwrap();
        assert!(unshredded.contains(&"$.a".to_string()));
        assert!(unshredded.contains(&"$.k1099".to_string()));
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
                ("$.b.d[0]".to_string(), ItemType::Leaf(LeafType::Int)),
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
        assert_eq!(
            mined.unshredded,
            Some(vec!["$.c".to_string(), "$.z".to_string()])
        );
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
        assert_eq!(mined.unshredded, Some(vec!["$.a.b".to_string()]));
    }

    /// The sorted (path, type) items of document `doc`.
    fn decoded(items: &Items, doc: usize) -> Vec<(String, ItemType)> {
        let mut out: Vec<_> = items.of(doc).iter().map(|&i| decode(items, i)).collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    #[test]
    fn leading_scalar_elements_are_items() {
        let d = items_of(&[
            r#"{"a":[1,"x",null,2.5,true],"b":[[1],{"k":1},7],"c":[]}"#,
            r#"{"a":[{"k":1},2]}"#,
        ]);
        let int = ItemType::Leaf(LeafType::Int);
        assert_eq!(
            decoded(&d, 0),
            vec![
                ("$.a".to_string(), ItemType::Array),
                ("$.a[0]".to_string(), int),
                ("$.a[1]".to_string(), ItemType::Leaf(LeafType::String)),
                ("$.a[2]".to_string(), ItemType::Null),
                ("$.a[3]".to_string(), ItemType::Leaf(LeafType::Float)),
                // Nested arrays and objects stay whole; only positions 0..LEADING count.
                ("$.b".to_string(), ItemType::Array),
                ("$.b[2]".to_string(), int),
                ("$.c".to_string(), ItemType::Array),
            ]
        );
        // Element paths are shared between documents.
        assert_eq!(
            decoded(&d, 1),
            vec![
                ("$.a".to_string(), ItemType::Array),
                ("$.a[1]".to_string(), int),
            ]
        );
        let counts = |path: &str| {
            d.arrays[(0..d.paths.len() as u32)
                .position(|p| d.json_path(p) == path)
                .unwrap()]
        };
        assert_eq!(
            counts("$.a"),
            ArrayCounts {
                arrays: 2,
                elements: 7,
                objects: 1,
                scalars: 5,
            }
        );
        assert_eq!(
            counts("$.c"),
            ArrayCounts {
                arrays: 1,
                elements: 0,
                ..ArrayCounts::default()
            }
        );
        assert_eq!(counts("$.a[0]"), ArrayCounts::default());
    }

    #[test]
    fn short_arrays_with_a_frequent_first_element_are_lists() {
        let long = format!(
            "[{}]",
            (1..=20)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let d = items_of(&[
            &format!(r#"{{"t":["x","y"],"long":{long},"m":[1]}}"#),
            &format!(r#"{{"t":["z"],"long":{long},"m":[2]}}"#),
            &format!(r#"{{"t":["w",1],"long":{long},"m":3}}"#),
            r#"{"t":[],"long":5,"m":4}"#,
        ]);
        // Tiles of two documents, each item needed in both.
        let (mined, shredded) = mine_in_order(&d, 2, 0.6);
        // $.t[0] is a string in both documents of tile 1; the leading elements hold 4
        // strings and 1 integer; all 4 documents hold an array at $.t. $.long[0] is
        // frequent in tile 1 too, but its arrays hold 20 elements on average. $.m[0] is
        // frequent in tile 1 and the integer $.m in tile 2: 2 documents each, and the
        // tie goes to the scalar.
        assert_eq!(
            shredded,
            vec![
                ("$.m".to_string(), LeafType::Int, 0.5),
                ("$.t[*]".to_string(), LeafType::String, 1.0),
            ]
        );
        assert!(mined.shredded.iter().all(|c| c.list == (c.path == ["t"])));
        assert_eq!(
            mined.unshredded,
            Some(vec!["$.long".to_string(), "$.t".to_string()])
        );
    }

    #[test]
    fn paths_that_explode_are_not_spelled_out() {
        // Every document a map keyed by names no other document uses.
        let docs: Vec<String> = (0..=MAX_BLOOM_PATHS / 4)
            .map(|d| {
                let members: Vec<String> = (0..4).map(|k| format!(r#""n{d}_{k}":1"#)).collect();
                format!(r#"{{"kind":"a","map":{{{}}}}}"#, members.join(","))
            })
            .collect();
        let texts: Vec<&str> = docs.iter().map(String::as_str).collect();
        let (mined, shredded) = mine_in_order(&items_of(&texts), 1024, 0.6);
        assert_eq!(mined.unshredded, None);
        assert!(shredded.iter().any(|(path, _, _)| path == "$.kind"));
        let (few, _) = mine_in_order(&items_of(&texts[..100]), 1024, 0.6);
        assert!(few.unshredded.unwrap().contains(&"$.map.n99_3".to_string()));
    }

    #[test]
    fn arrays_of_objects_shred_their_frequent_element_keys() {
        let long = format!("[{}]", vec![r#"{"k":1}"#; 20].join(","));
        let d = items_of(&[
            &format!(
                r#"{{"d":[{{"n":"a","v":1,"s":{{"u":"x"}}}},{{"n":"b","s":"flat"}}],"l":{long}}}"#
            ),
            &format!(r#"{{"d":[{{"n":"c","v":"2","s":{{"u":"y"}},"r":1}},7],"l":{long}}}"#),
            &format!(r#"{{"d":[{{"n":"e","s":"flat","v":3}}],"l":{long}}}"#),
            r#"{"d":{"n":"not an array"},"m":[1,{"k":1}]}"#,
        ]);
        // Leading elements of $.d: 4 objects and 1 scalar. Of the objects, all hold a
        // string `n`, 3 a `v` (2 integers, below 60% of 4 with one type), 2 an object
        // `s` with `u` and 2 a string `s`; `r` is in 1. $.l's arrays are long, and
        // shredded all the same; $.m is rare. The list's frequency is the share of
        // documents holding an array there.
        let (mined, shredded) = mine_in_order(&d, 4, 0.6);
        assert_eq!(
            shredded,
            vec![
                ("$.d[*].n".to_string(), LeafType::String, 0.75),
                ("$.l[*].k".to_string(), LeafType::Int, 0.75),
            ]
        );
        assert!(
            mined
                .shredded
                .iter()
                .all(|c| c.list && c.element.len() == 1)
        );
        // At 40%, `s.u` (2 of 4) is shredded too, and `s` as a string yields to it.
        let (_, shredded) = mine_in_order(&d, 4, 0.4);
        let paths: Vec<&str> = shredded.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(paths, ["$.d[*].n", "$.d[*].s.u", "$.d[*].v", "$.l[*].k"]);
    }

    #[test]
    fn a_path_a_partition_holds_enough_of_is_frequent_however_its_tiles_split_it() {
        // Tiles of 4, partitions of 2 tiles, threshold 60%: 3 documents fill a tile.
        // `x` is in 2 documents of the first tile and 1 of the second, never 3 in one
        // tile; `y` is in 2 documents only; the third partition (one short tile of 2)
        // needs 60% of its own 2 documents, so `z` in both is frequent.
        let x = r#"{"x":1,"a":1}"#;
        let y = r#"{"y":"s","a":1}"#;
        let plain = r#"{"a":1}"#;
        let z = r#"{"z":true,"a":1}"#;
        let d = items_of(&[
            x, x, plain, y, x, plain, plain, y, plain, plain, plain, plain, plain, plain, plain,
            plain, z, z,
        ]);
        let order: Vec<usize> = (0..d.ends.len()).collect();
        let mut partitioning = Partitioning {
            tile_docs: 4,
            partition_tiles: 2,
            threshold: 0.6,
            budget: DEFAULT_BUDGET,
        };
        let paths = |mined: Mined| -> Vec<String> {
            mined.shredded.iter().map(|c| c.json_path()).collect()
        };
        assert_eq!(
            paths(mine(&d, &order, &partitioning)),
            ["$.a", "$.x", "$.z"]
        );
        // Partitions of one tile count each tile alone: `x` is no longer frequent.
        partitioning.partition_tiles = 1;
        assert_eq!(paths(mine(&d, &order, &partitioning)), ["$.a", "$.z"]);
    }

    #[test]
    fn odd_keys_are_quoted() {
        assert_eq!(
            json_path(&["a.b", "weird key", "q\""]),
            r#"$."a.b"."weird key"."q\"""#
        );
    }
}
