//! LRU-2 admission: a range goes to disk on its second access within a bounded history of
//! recent first accesses, so a scan that reads a large object once does not push out of the
//! disk tier what other queries read again and again (O'Neil, O'Neil, Weikum: The LRU-K
//! page replacement algorithm, SIGMOD 1993).

use std::collections::{HashMap, VecDeque};

/// What an access means for the disk tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// The first access the history remembers: keep the range in memory only.
    First,
    /// The second access: write the range to disk.
    Second,
    /// Already admitted (or found on disk): nothing to do.
    Admitted,
}

/// Key hashes of recent accesses, oldest first out once `entries_max` are remembered.
#[derive(Debug)]
pub(crate) struct History {
    seen: HashMap<u64, bool>,
    order: VecDeque<u64>,
    entries_max: usize,
}

impl History {
    /// A history remembering at most `entries_max` keys (at least one).
    pub(crate) fn new(entries_max: usize) -> Self {
        Self {
            seen: HashMap::new(),
            order: VecDeque::new(),
            entries_max: entries_max.max(1),
        }
    }

    /// Records an access to `hash` and says whether it admits the range to disk.
    pub(crate) fn access(&mut self, hash: u64) -> Admission {
        match self.seen.get_mut(&hash) {
            Some(true) => Admission::Admitted,
            Some(admitted) => {
                *admitted = true;
                Admission::Second
            }
            None => {
                self.remember(hash, false);
                Admission::First
            }
        }
    }

    /// Records that `hash` is on disk already (found there after a restart).
    pub(crate) fn on_disk(&mut self, hash: u64) {
        match self.seen.get_mut(&hash) {
            Some(admitted) => *admitted = true,
            None => self.remember(hash, true),
        }
    }

    fn remember(&mut self, hash: u64, admitted: bool) {
        while self.order.len() >= self.entries_max {
            if let Some(oldest) = self.order.pop_front() {
                self.seen.remove(&oldest);
            }
        }
        self.seen.insert(hash, admitted);
        self.order.push_back(hash);
    }

    /// Keys remembered now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.seen.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_access_admits_once() {
        let mut history = History::new(8);
        assert_eq!(history.access(1), Admission::First);
        assert_eq!(history.access(1), Admission::Second);
        assert_eq!(history.access(1), Admission::Admitted);
        history.on_disk(2);
        assert_eq!(history.access(2), Admission::Admitted);
    }

    #[test]
    fn history_is_bounded_and_forgets_the_oldest() {
        let mut history = History::new(3);
        for hash in 0..10 {
            assert_eq!(history.access(hash), Admission::First);
        }
        assert_eq!(history.len(), 3);
        // 0 was forgotten: its next access counts as a first one again.
        assert_eq!(history.access(0), Admission::First);
        assert_eq!(history.access(9), Admission::Second);
    }
}
