//! What a written file tells the table about itself: its shredding schema, statistics
//! per shredded path, and a Bloom filter of the key paths it holds only in the Variant
//! binary.
//!
//! This is the contract between the tiles writer (which computes it while it writes a
//! file) and the table manifest (which stores it per file and uses it to skip files).
//! Everything here is serializable with serde and stable across versions: hashes are
//! computed by this module, never by `std`'s randomized hasher.

use serde::{Deserialize, Serialize};

/// The type of a shredded leaf column; the majority JSON type of its path in one file.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum LeafType {
    /// JSON `true`/`false`.
    Bool,
    /// A JSON number without fraction or exponent that fits in an `i64`.
    Int,
    /// Any other JSON number.
    Float,
    /// A JSON string.
    String,
    /// A JSON string holding a date or a timestamp in the path's
    /// [`ShreddedPath::format`], stored as a Parquet date or timestamp; the format
    /// renders each typed value back to its original text.
    DateTime,
}

/// One path of a file's shredding schema.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ShreddedPath {
    /// The path in JSONPath form as the engine spells it: `$.commit.collection`; a path
    /// shredded as a list is spelled `$.commit.record.langs[*]` and typed, counted and
    /// bounded by its elements.
    pub path: String,
    /// The type of the typed column; values of other types stay in the Variant binary.
    pub ty: LeafType,
    /// Share of the file's documents (0..=1) whose value at `path` has type `ty`.
    pub frequency: f64,
    /// Of a `DateTime` path: the one rendering its typed values have, as a chrono-style
    /// pattern ([`crate::datetime::TimeFormat`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// The union of the paths extracted from a file's tiles, with their majority types.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ShreddingSchema {
    /// Shredded paths in the column order of the file.
    pub paths: Vec<ShreddedPath>,
}

impl ShreddingSchema {
    /// The shredded path named `path`, if this file shreds it.
    pub fn get(&self, path: &str) -> Option<&ShreddedPath> {
        self.paths.iter().find(|p| p.path == path)
    }
}

/// A minimum or maximum of a typed column.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, PartialOrd)]
#[serde(untagged)]
pub enum StatValue {
    /// Of a `Bool` column.
    Bool(bool),
    /// Of an `Int` column, and of a `DateTime` column (its stored days or
    /// micro/nanoseconds since the epoch).
    Int(i64),
    /// Of a `Float` column.
    Float(f64),
    /// Of a `String` column, truncated to [`STAT_STRING_LIMIT`] bytes (a truncated
    /// minimum is still a lower bound; a truncated maximum is marked by `max_truncated`).
    String(String),
}

/// Longest string kept as a minimum or maximum; longer ones are truncated so manifests
/// stay small.
pub const STAT_STRING_LIMIT: usize = 64;

/// Statistics of one shredded path in one file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PathStats {
    /// The path, as in [`ShreddedPath::path`].
    pub path: String,
    /// Smallest typed value, `None` when the typed column is all null.
    pub min: Option<StatValue>,
    /// Largest typed value, `None` when the typed column is all null.
    pub max: Option<StatValue>,
    /// True when `max` is a truncated string and so not an upper bound by itself.
    pub max_truncated: bool,
    /// Documents whose typed column is null (path absent, JSON null, or another type).
    pub null_count: u64,
    /// Documents whose value at the path is served from the typed column.
    pub typed_count: u64,
    /// Documents whose value at the path exists but sits in the Variant binary
    /// (another type than the column's).
    pub binary_count: u64,
    /// Distinct typed values.
    pub distinct: DistinctSketch,
}

impl PathStats {
    /// Whether the typed values repeat enough that one dictionary of them all pays for
    /// itself: each distinct value [`MIN_REPEATS`] times on average or more. Writers
    /// keep such string leaves dictionary-encoded whatever the dictionary's size, so
    /// readers can work on codes.
    pub fn values_repeat(&self) -> bool {
        self.distinct.estimate().saturating_mul(MIN_REPEATS) <= self.typed_count
    }
}

/// Mean occurrences per distinct value from which [`PathStats::values_repeat`].
pub const MIN_REPEATS: u64 = 2;

/// Number of registers of a [`DistinctSketch`] as a power of two: 2^8 registers give
/// about 6.5% standard error in 256 bytes per path and file.
const SKETCH_BITS: u32 = 8;

/// A HyperLogLog sketch of distinct values; sketches of several files merge into the
/// sketch of their union.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DistinctSketch {
    registers: Vec<u8>,
}

impl Default for DistinctSketch {
    fn default() -> Self {
        Self {
            registers: vec![0; 1 << SKETCH_BITS],
        }
    }
}

impl DistinctSketch {
    /// Adds a value given by its bytes (the caller picks a canonical encoding per type).
    pub fn insert(&mut self, value: &[u8]) {
        let hash = stable_hash(value, 0);
        let index = (hash >> (64 - SKETCH_BITS)) as usize;
        let rank = ((hash << SKETCH_BITS) | (1 << (SKETCH_BITS - 1))).leading_zeros() + 1;
        let register = &mut self.registers[index];
        *register = (*register).max(rank as u8);
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &DistinctSketch) {
        assert_eq!(self.registers.len(), other.registers.len());
        for (mine, theirs) in self.registers.iter_mut().zip(&other.registers) {
            *mine = (*mine).max(*theirs);
        }
    }

    /// Estimated number of distinct values inserted.
    pub fn estimate(&self) -> u64 {
        let m = self.registers.len() as f64;
        let sum: f64 = self
            .registers
            .iter()
            .map(|&r| 2f64.powi(-i32::from(r)))
            .sum();
        let raw = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        // Small ranges: linear counting is exact enough where HyperLogLog is biased.
        let estimate = if raw <= 2.5 * m && zeros > 0 {
            m * (m / zeros as f64).ln()
        } else {
            raw
        };
        estimate.round() as u64
    }
}

/// A Bloom filter of key paths, used to skip files that cannot contain a path that is
/// not shredded. `may_contain` has no false negatives.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PathBloom {
    bits: Vec<u64>,
    hashes: u32,
}

/// Most key paths a file's filter holds. Past it (maps keyed by names give a path per
/// name: 976K paths in 5,000 API models) the filter would take megabytes of the table's
/// manifest, which every query reads, and skip little; the file's filter is then one
/// word of ones, which contains every path.
pub const MAX_BLOOM_PATHS: usize = 16_384;

impl PathBloom {
    /// The filter of `paths`; past [`MAX_BLOOM_PATHS`], [`Self::everything`].
    pub fn of(paths: &[String]) -> Self {
        if paths.len() > MAX_BLOOM_PATHS {
            return Self::everything();
        }
        let mut bloom = Self::with_capacity(paths.len());
        paths.iter().for_each(|p| bloom.insert(p));
        bloom
    }

    /// A filter that contains every path: one word of ones.
    pub fn everything() -> Self {
        Self {
            bits: vec![u64::MAX],
            hashes: 1,
        }
    }

    /// An empty filter sized for `paths` entries at about 1% false positives.
    pub fn with_capacity(paths: usize) -> Self {
        // 10 bits and 7 hashes per entry give about 0.8% false positives.
        let words = (paths.max(1) * 10).div_ceil(64);
        Self {
            bits: vec![0; words],
            hashes: 7,
        }
    }

    /// Records `path` (JSONPath form, as in [`ShreddedPath::path`]).
    pub fn insert(&mut self, path: &str) {
        let positions: Vec<usize> = self.bit_positions(path).collect();
        for bit in positions {
            self.bits[bit / 64] |= 1 << (bit % 64);
        }
    }

    /// False when `path` was certainly never inserted.
    pub fn may_contain(&self, path: &str) -> bool {
        self.bit_positions(path)
            .all(|bit| self.bits[bit / 64] & (1 << (bit % 64)) != 0)
    }

    fn bit_positions(&self, path: &str) -> impl Iterator<Item = usize> + '_ {
        let len = (self.bits.len() * 64) as u64;
        let h1 = stable_hash(path.as_bytes(), 1);
        let h2 = stable_hash(path.as_bytes(), 2) | 1;
        (0..u64::from(self.hashes))
            .map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) % len) as usize)
    }
}

/// Everything the manifest records about one data file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FileSummary {
    /// Documents (rows) in the file.
    pub rows: u64,
    /// The file's shredding schema.
    pub schema: ShreddingSchema,
    /// Statistics per shredded path, in the order of `schema.paths`.
    pub stats: Vec<PathStats>,
    /// Key paths that occur in the file but only in the Variant binary.
    pub unshredded_paths: PathBloom,
    /// Statistics of the relational (non-JSON) columns stored next to the documents, in
    /// the table's column order; empty for a table of documents alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<ColumnStats>,
}

/// Statistics of one relational column in one file, for skipping files whose values
/// cannot satisfy a filter.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ColumnStats {
    /// The column's name.
    pub name: String,
    /// Smallest non-null value; `None` when all values are null or the column's type
    /// keeps no statistics.
    pub min: Option<StatValue>,
    /// Largest non-null value, under the same conditions as `min`.
    pub max: Option<StatValue>,
    /// True when `max` is a truncated string and so not an upper bound by itself.
    pub max_truncated: bool,
    /// Null values in the column.
    pub null_count: u64,
}

/// FNV-1a followed by a 64-bit finalizer: stable across platforms and releases, which
/// persisted sketches and filters need, and well mixed in every bit.
fn stable_hash(bytes: &[u8], seed: u64) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sketch_estimates_within_its_error() {
        for n in [0u64, 10, 100, 1_000, 100_000] {
            let mut sketch = DistinctSketch::default();
            for i in 0..n {
                sketch.insert(&i.to_le_bytes());
                sketch.insert(&i.to_le_bytes());
            }
            let estimate = sketch.estimate() as f64;
            let error = (estimate - n as f64).abs() / (n.max(1) as f64);
            assert!(error < 0.2, "n={n} estimate={estimate}");
        }
    }

    #[test]
    fn merged_sketch_counts_the_union() {
        let (mut a, mut b) = (DistinctSketch::default(), DistinctSketch::default());
        (0..5_000u64).for_each(|i| a.insert(&i.to_le_bytes()));
        (2_500..7_500u64).for_each(|i| b.insert(&i.to_le_bytes()));
        a.merge(&b);
        let estimate = a.estimate() as f64;
        assert!((estimate - 7_500.0).abs() / 7_500.0 < 0.2, "{estimate}");
    }

    #[test]
    fn bloom_has_no_false_negatives_and_few_false_positives() {
        let mut bloom = PathBloom::with_capacity(1_000);
        (0..1_000).for_each(|i| bloom.insert(&format!("$.a.p{i}")));
        assert!((0..1_000).all(|i| bloom.may_contain(&format!("$.a.p{i}"))));
        let false_positives = (0..10_000)
            .filter(|i| bloom.may_contain(&format!("$.b.q{i}")))
            .count();
        assert!(false_positives < 300, "{false_positives}");
    }

    #[test]
    fn summary_round_trips_through_json() {
        let mut bloom = PathBloom::with_capacity(2);
        bloom.insert("$.x");
        let mut distinct = DistinctSketch::default();
        distinct.insert(b"like");
        let summary = FileSummary {
            rows: 3,
            schema: ShreddingSchema {
                paths: vec![ShreddedPath {
                    path: "$.kind".into(),
                    ty: LeafType::String,
                    frequency: 1.0,
                    format: None,
                }],
            },
            stats: vec![PathStats {
                path: "$.kind".into(),
                min: Some(StatValue::String("commit".into())),
                max: Some(StatValue::String("identity".into())),
                max_truncated: false,
                null_count: 0,
                typed_count: 3,
                binary_count: 0,
                distinct,
            }],
            unshredded_paths: bloom,
            columns: vec![ColumnStats {
                name: "id".into(),
                min: Some(StatValue::Int(-3)),
                max: Some(StatValue::Int(9)),
                max_truncated: false,
                null_count: 1,
            }],
        };
        let text = serde_json::to_string(&summary).unwrap();
        assert_eq!(serde_json::from_str::<FileSummary>(&text).unwrap(), summary);
    }

    #[test]
    fn a_filter_of_too_many_paths_contains_every_path() {
        let few: Vec<String> = (0..10).map(|i| format!("$.k{i}")).collect();
        let bloom = PathBloom::of(&few);
        assert!(few.iter().all(|p| bloom.may_contain(p)));
        assert!(!bloom.may_contain("$.other"));
        let many: Vec<String> = (0..=MAX_BLOOM_PATHS).map(|i| format!("$.k{i}")).collect();
        let bloom = PathBloom::of(&many);
        assert!(many.iter().all(|p| bloom.may_contain(p)));
        assert!(bloom.may_contain("$.other"));
        assert_eq!(bloom.bits.len(), 1, "one word, whatever the paths");
    }
}
