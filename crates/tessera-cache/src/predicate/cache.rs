//! The predicate cache in memory: per (data file, row group) a few normalized predicates
//! with their qualifying rows, bounded in entries and bytes, least recently used evicted.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ranges::RowRanges;
use crate::semantic::dnf::Dnf;
use crate::semantic::normalize::NormalizeLimits;
use crate::semantic::predicate::Predicate;

/// A data file of a table, by what never changes about it: data files are written once
/// and never rewritten, so (store, path, size) names the same rows for ever.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileId {
    /// The store (endpoint and bucket URL) the file is in.
    pub store: String,
    /// The object's path in the store.
    pub path: String,
    /// The object's size, in bytes.
    pub size: u64,
}

/// A scan's predicate, normalized so that equivalent spellings (`a = 1 AND b < 2`,
/// `2 > b AND 1 = a`) share entries: its canonical DNF ("Crystal: A Unified Cache
/// Storage System for Analytical Databases", Section 3.3).
#[derive(Debug, PartialEq, Eq)]
pub struct Fingerprint {
    dnf: Dnf,
    /// What the predicate takes in the persisted file (an estimate of its memory).
    bytes: usize,
}

impl Fingerprint {
    /// The fingerprint of `predicate`; `None` when its DNF exceeds `limits` (the scan
    /// then does not use the cache).
    pub fn new(predicate: &Predicate, limits: &NormalizeLimits) -> Option<Arc<Self>> {
        let dnf = Dnf::from_predicate(predicate, limits)?.canonical();
        let bytes = serde_json::to_vec(&dnf.to_predicate()).ok()?.len();
        Some(Arc::new(Self { dnf, bytes }))
    }

    /// The canonical DNF.
    pub fn dnf(&self) -> &Dnf {
        &self.dnf
    }
}

/// What the cache knows of one row group for a scan's predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// A superset of the rows that satisfy the scan's predicate: the intersection of the
    /// rows of every cached predicate that contains it.
    pub ranges: RowRanges,
    /// Whether one of those predicates is the scan's own (recording again adds nothing).
    pub exact: bool,
}

/// The bounds of a [`PredicateCache`]; explicit so that a cache of many files stays small.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PredicateLimits {
    /// Most entries (a predicate's rows in one row group).
    pub entries_max: usize,
    /// Most memory the entries take (runs, predicates and file names), in bytes.
    pub bytes_max: usize,
    /// Most predicates kept per row group: a lookup tests each for containment, so it
    /// stays cheap.
    pub predicates_per_group_max: usize,
    /// Most runs one entry keeps; more are coarsened ([`RowRanges::coarsened`]).
    pub runs_per_entry_max: usize,
}

impl Default for PredicateLimits {
    fn default() -> Self {
        Self {
            entries_max: 100_000,
            bytes_max: 16 << 20,
            predicates_per_group_max: 8,
            runs_per_entry_max: 256,
        }
    }
}

/// What an entry costs beyond its runs, predicate and file name, in bytes (the maps'
/// slots, the recency index, the `Arc`s).
const ENTRY_OVERHEAD_BYTES: usize = 96;

/// One predicate's rows in one row group.
#[derive(Debug)]
struct Entry {
    predicate: Arc<Fingerprint>,
    ranges: RowRanges,
    /// When it was last used (its key in the recency index).
    tick: u64,
}

/// The entries in memory, and the recency index that evicts the least recently used.
#[derive(Debug, Default)]
pub(super) struct Entries {
    files: HashMap<Arc<FileId>, HashMap<u32, Vec<Entry>>>,
    /// Entries by last use, oldest first.
    recency: BTreeMap<u64, (Arc<FileId>, u32)>,
    tick: u64,
    bytes: usize,
    /// Changed since the last time the entries were persisted.
    pub(super) dirty: bool,
}

impl Entries {
    /// The number of entries.
    pub(super) fn len(&self) -> usize {
        self.recency.len()
    }

    /// The memory the entries take, in bytes (an estimate).
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// What the cache knows of each of `groups` of `file` for `query`.
    pub(super) fn lookup(
        &mut self,
        file: &FileId,
        groups: &[usize],
        query: &Fingerprint,
    ) -> Vec<Option<Hit>> {
        let Some(by_group) = self.files.get(file) else {
            return vec![None; groups.len()];
        };
        let mut touched = Vec::new();
        let hits = groups
            .iter()
            .map(|&g| {
                let entries = by_group.get(&u32::try_from(g).ok()?)?;
                let mut hit: Option<Hit> = None;
                for entry in entries {
                    if !entry.predicate.dnf.contains(&query.dnf) {
                        continue;
                    }
                    let exact = entry.predicate.dnf == query.dnf;
                    hit = Some(match hit {
                        None => Hit {
                            ranges: entry.ranges.clone(),
                            exact,
                        },
                        Some(h) => Hit {
                            ranges: h.ranges.intersection(&entry.ranges),
                            exact: h.exact || exact,
                        },
                    });
                    touched.push(entry.tick);
                }
                hit
            })
            .collect();
        for tick in touched {
            self.touch(tick);
        }
        hits
    }

    /// Moves the entry last used at `tick` to the most recent end.
    fn touch(&mut self, tick: u64) {
        let Some((file, group)) = self.recency.remove(&tick) else {
            return;
        };
        self.tick += 1;
        let now = self.tick;
        if let Some(entry) = self
            .files
            .get_mut(&file)
            .and_then(|groups| groups.get_mut(&group))
            .and_then(|entries| entries.iter_mut().find(|e| e.tick == tick))
        {
            entry.tick = now;
        }
        self.recency.insert(now, (file, group));
    }

    /// Keeps `ranges` as the rows of `group` of `file` that may satisfy `predicate`, then
    /// evicts down to `limits`.
    pub(super) fn record(
        &mut self,
        file: &FileId,
        group: u32,
        predicate: &Arc<Fingerprint>,
        ranges: RowRanges,
        limits: &PredicateLimits,
    ) {
        let ranges = ranges.coarsened(limits.runs_per_entry_max);
        let file = match self.files.get_key_value(file) {
            Some((key, _)) => Arc::clone(key),
            None => Arc::new(file.clone()),
        };
        self.tick += 1;
        let tick = self.tick;
        let entries = self
            .files
            .entry(Arc::clone(&file))
            .or_default()
            .entry(group)
            .or_default();
        let mut freed = 0;
        let mut forgotten = Vec::new();
        if let Some(at) = entries
            .iter()
            .position(|e| e.predicate.dnf == predicate.dnf)
        {
            // Both are supersets of the qualifying rows, so their intersection is one.
            let old = entries.swap_remove(at);
            freed += entry_bytes(&file, &old.predicate, &old.ranges);
            forgotten.push(old.tick);
            let ranges = old.ranges.intersection(&ranges);
            entries.push(Entry {
                predicate: Arc::clone(predicate),
                ranges,
                tick,
            });
        } else {
            if entries.len() >= limits.predicates_per_group_max.max(1) {
                let oldest = (0..entries.len()).min_by_key(|&i| entries[i].tick);
                let old = entries.swap_remove(oldest.expect("the group has entries"));
                freed += entry_bytes(&file, &old.predicate, &old.ranges);
                forgotten.push(old.tick);
            }
            entries.push(Entry {
                predicate: Arc::clone(predicate),
                ranges,
                tick,
            });
        }
        let added = entries.last().expect("an entry was just pushed");
        let added = entry_bytes(&file, &added.predicate, &added.ranges);
        for old in forgotten {
            self.recency.remove(&old);
        }
        self.bytes = self.bytes + added - freed;
        self.recency.insert(tick, (file, group));
        self.dirty = true;
        self.evict(limits);
    }

    /// Drops the least recently used entries until both bounds hold.
    fn evict(&mut self, limits: &PredicateLimits) {
        while self.recency.len() > limits.entries_max || self.bytes > limits.bytes_max {
            let Some((tick, (file, group))) = self.recency.pop_first() else {
                return;
            };
            let Some(groups) = self.files.get_mut(&file) else {
                continue;
            };
            if let Some(entries) = groups.get_mut(&group)
                && let Some(at) = entries.iter().position(|e| e.tick == tick)
            {
                let old = entries.swap_remove(at);
                self.bytes -= entry_bytes(&file, &old.predicate, &old.ranges);
                if entries.is_empty() {
                    groups.remove(&group);
                }
            }
            if groups.is_empty() {
                self.files.remove(&file);
            }
        }
    }

    /// Every entry, least recently used first, for the persisted file.
    pub(super) fn oldest_first(&self) -> impl Iterator<Item = PersistedEntry<'_>> {
        self.recency.iter().filter_map(|(&tick, (file, group))| {
            let entry = self
                .files
                .get(file)?
                .get(group)?
                .iter()
                .find(|e| e.tick == tick)?;
            Some(PersistedEntry {
                file,
                group: *group,
                dnf: &entry.predicate.dnf,
                ranges: &entry.ranges,
            })
        })
    }
}

/// An entry as [`Entries::oldest_first`] hands it to the persisted file.
pub(super) struct PersistedEntry<'a> {
    pub(super) file: &'a Arc<FileId>,
    pub(super) group: u32,
    pub(super) dnf: &'a Dnf,
    pub(super) ranges: &'a RowRanges,
}

/// What one entry is counted as against [`PredicateLimits::bytes_max`].
fn entry_bytes(file: &FileId, predicate: &Fingerprint, ranges: &RowRanges) -> usize {
    ENTRY_OVERHEAD_BYTES + file.store.len() + file.path.len() + predicate.bytes + ranges.bytes()
}
