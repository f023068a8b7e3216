//! The rows of one row group that may satisfy a predicate, as a run-length list.

use std::ops::Range;

/// Rows of one row group as ascending, disjoint, non-adjacent `[start, end)` runs of row
/// offsets within the group; no run means that no row qualified.
///
/// Any superset of the qualifying rows is a valid answer (the scan runs its filters on
/// the rows it reads anyway), which lets [`RowRanges::coarsened`] trade precision for
/// size and lets the engine add rows it did not evaluate (deleted ones).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowRanges {
    runs: Vec<(u32, u32)>,
}

impl RowRanges {
    /// No row qualifies.
    pub fn none() -> Self {
        Self::default()
    }

    /// The union of `runs` (any order; overlapping, adjacent and empty runs allowed).
    pub fn from_runs(runs: impl IntoIterator<Item = Range<u32>>) -> Self {
        let mut sorted: Vec<(u32, u32)> = runs
            .into_iter()
            .filter(|r| r.start < r.end)
            .map(|r| (r.start, r.end))
            .collect();
        sorted.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(sorted.len());
        for (start, end) in sorted {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        Self { runs: merged }
    }

    /// The runs, ascending.
    pub fn runs(&self) -> impl Iterator<Item = Range<u32>> + '_ {
        self.runs.iter().map(|&(start, end)| start..end)
    }

    /// Whether no row qualifies (the scan may skip the row group).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// How many rows the runs hold.
    pub fn row_count(&self) -> u64 {
        self.runs.iter().map(|&(s, e)| u64::from(e - s)).sum()
    }

    /// The rows in both `self` and `other`: a later scan whose predicate two cached
    /// predicates contain reads only rows that both kept.
    pub fn intersection(&self, other: &Self) -> Self {
        let (mut a, mut b) = (self.runs.iter().peekable(), other.runs.iter().peekable());
        let mut out = Vec::new();
        while let (Some(&&(s1, e1)), Some(&&(s2, e2))) = (a.peek(), b.peek()) {
            let (start, end) = (s1.max(s2), e1.min(e2));
            if start < end {
                out.push((start, end));
            }
            match e1 <= e2 {
                true => a.next(),
                false => b.next(),
            };
        }
        Self { runs: out }
    }

    /// At most `runs_max` runs (at least one): the shortest gaps are filled first, so the
    /// result is the smallest superset of this shape. It bounds what a scattered
    /// predicate (every other row) costs the cache, at the price of reading some rows
    /// that do not qualify.
    pub fn coarsened(self, runs_max: usize) -> Self {
        let runs_max = runs_max.max(1);
        if self.runs.len() <= runs_max {
            return self;
        }
        let mut gaps: Vec<(u32, usize)> = self
            .runs
            .windows(2)
            .enumerate()
            .map(|(i, w)| (w[1].0 - w[0].1, i))
            .collect();
        gaps.sort_unstable();
        let mut filled = vec![false; self.runs.len() - 1];
        for &(_, i) in &gaps[..self.runs.len() - runs_max] {
            filled[i] = true;
        }
        let mut runs: Vec<(u32, u32)> = Vec::with_capacity(runs_max);
        for (i, &(start, end)) in self.runs.iter().enumerate() {
            match runs.last_mut() {
                Some(last) if filled[i - 1] => last.1 = end,
                _ => runs.push((start, end)),
            }
        }
        Self { runs }
    }

    /// Whether the runs cover every row of a group of `rows` rows (they tell nothing).
    pub fn covers(&self, rows: u32) -> bool {
        self.runs.as_slice() == [(0, rows)] || rows == 0
    }

    /// The memory the runs take, in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.runs.len() * std::mem::size_of::<(u32, u32)>()
    }

    /// The runs as pairs, for the persisted file.
    pub(crate) fn pairs(&self) -> &[(u32, u32)] {
        &self.runs
    }
}
