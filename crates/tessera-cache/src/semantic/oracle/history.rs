//! The oracle's history: a ring buffer of recent requests with statistics.
//!
//! "Crystal: A Unified Cache Storage System for Analytical Databases" (Section
//! 4.2) keeps the most recent region requests in a ring buffer, each with tuple
//! count and size statistics supplied by the DBMS or computed from samples. The
//! paper uses 128 entries and found histories shorter than 64 hurt, while very
//! long ones adapt slowly.

use crate::semantic::region::Request;

/// Default history length (the paper's experimental setting).
pub const HISTORY_LEN_DEFAULT: usize = 128;

/// One observed request with caller-supplied statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    /// The request as pushed down.
    pub request: Request,
    /// Result row count.
    pub rows: u64,
    /// Result size in bytes if materialized as its own region: both the cost of
    /// caching it and the bytes saved each time it is answered locally.
    pub bytes: u64,
}

/// Fixed-capacity buffer of the most recent requests: once full, a push
/// replaces the oldest entry. Order is irrelevant to the algorithms (they treat
/// the history as a multiset), so entries are stored unordered with a sequence
/// number each, which keeps "oldest" exact even after [`History::retain`].
#[derive(Debug, Clone)]
pub struct History {
    entries: Vec<HistoryEntry>,
    sequence: Vec<u64>,
    pushed: u64,
    len_max: usize,
}

impl History {
    /// An empty history of at most `len_max` entries.
    pub fn new(len_max: usize) -> Self {
        assert!(len_max >= 1, "history needs at least one slot");
        History {
            entries: Vec::with_capacity(len_max),
            sequence: Vec::with_capacity(len_max),
            pushed: 0,
            len_max,
        }
    }

    /// Records a request, replacing the oldest once full.
    pub fn push(&mut self, entry: HistoryEntry) {
        self.pushed += 1;
        if self.entries.len() < self.len_max {
            self.entries.push(entry);
            self.sequence.push(self.pushed);
        } else {
            let oldest = (0..self.sequence.len())
                .min_by_key(|&i| self.sequence[i])
                .expect("a full history is non-empty");
            self.entries[oldest] = entry;
            self.sequence[oldest] = self.pushed;
        }
        assert!(self.entries.len() <= self.len_max, "history overflow");
        assert_eq!(self.entries.len(), self.sequence.len());
    }

    /// Keeps only entries for which `keep` is true (e.g. to forget requests on
    /// snapshots that no longer exist, which would otherwise plan stale regions).
    pub fn retain(&mut self, mut keep: impl FnMut(&HistoryEntry) -> bool) {
        let flags: Vec<bool> = self.entries.iter().map(&mut keep).collect();
        let mut flag = flags.iter();
        self.entries
            .retain(|_| *flag.next().expect("one flag per entry"));
        let mut flag = flags.iter();
        self.sequence
            .retain(|_| *flag.next().expect("one flag per entry"));
    }

    /// The retained entries (unordered).
    pub fn entries(&self) -> &[HistoryEntry] {
        &self.entries
    }

    /// Number of retained entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::testkit::{range, seen};

    #[test]
    fn full_history_replaces_the_oldest_even_after_retain() {
        let mut h = History::new(3);
        for bytes in 1..=3 {
            h.push(seen(&range("x", 0, 1), bytes));
        }
        h.retain(|e| e.bytes != 2);
        h.push(seen(&range("x", 0, 1), 4));
        h.push(seen(&range("x", 0, 1), 5)); // full: replaces bytes = 1, the oldest
        let mut sizes: Vec<u64> = h.entries().iter().map(|e| e.bytes).collect();
        sizes.sort();
        assert_eq!(sizes, vec![3, 4, 5]);
    }
}
