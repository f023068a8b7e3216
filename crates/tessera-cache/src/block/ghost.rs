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

/// Bytes of one key in [`History::to_bytes`].
const ENTRY_BYTES: usize = 9;

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

    /// The history as bytes (9 per key: its hash, then 1 if admitted), oldest first.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.order.len() * ENTRY_BYTES);
        for hash in &self.order {
            out.extend_from_slice(&hash.to_le_bytes());
            out.push(u8::from(self.seen.get(hash).copied().unwrap_or(false)));
        }
        out
    }

    /// A history of at most `entries_max` keys read back from [`History::to_bytes`]; a
    /// torn tail is ignored (the history only steers admission, never answers).
    pub(crate) fn from_bytes(bytes: &[u8], entries_max: usize) -> Self {
        let mut history = Self::new(entries_max);
        for entry in bytes.chunks_exact(ENTRY_BYTES) {
            let hash = u64::from_le_bytes(entry[..8].try_into().expect("8 bytes"));
            history.remember(hash, entry[8] == 1);
        }
        history
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
    fn history_survives_a_round_trip_and_a_torn_tail() {
        let mut history = History::new(8);
        history.access(1);
        history.access(2);
        history.access(2);
        let mut bytes = history.to_bytes();
        bytes.extend_from_slice(&[7, 7, 7]);
        let mut again = History::from_bytes(&bytes, 8);
        assert_eq!(again.access(1), Admission::Second);
        assert_eq!(again.access(2), Admission::Admitted);
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
