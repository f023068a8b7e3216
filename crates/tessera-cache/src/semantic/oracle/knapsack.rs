//! Algorithm 2 of "Crystal: A Unified Cache Storage System for Analytical
//! Databases": the overlap-aware greedy knapsack.
//!
//! Items are candidate regions; benefit = bytes not downloaded, summed over the
//! history requests a candidate answers; cost = its size. The plain greedy sorts
//! by benefit/cost once; overlapping regions would then count the same history
//! element several times, so after every pick all ratios are re-evaluated
//! (O(n² log n) in the paper; O(n²·h) here, with h the history length):
//! 1. a superset of a picked item loses that item's weight and benefit, and if
//!    picked it replaces the item;
//! 2. a subset of a picked item gets benefit 0;
//! 3. a partial overlap loses the benefit of history elements covered by both,
//!    but keeps its full cost (splitting regions is what Crystal avoids).
//!
//! Rules 1 and 3 are computed together: a candidate's benefit counts only the
//! history elements no picked region answers. Only ratios > 1 are considered, and
//! the loop stops at the first best candidate that does not fit. No branching is
//! done, so the fractional-knapsack guarantee is given up, as in the paper.

use crate::semantic::oracle::Candidate;
use crate::semantic::oracle::history::HistoryEntry;

/// Relations precomputed once: which candidate answers which history element,
/// and which candidate contains which.
struct Relations {
    answers: Vec<Vec<bool>>,
    contains: Vec<Vec<bool>>,
}

impl Relations {
    fn new(history: &[HistoryEntry], candidates: &[Candidate]) -> Self {
        let answers = candidates
            .iter()
            .map(|c| history.iter().map(|h| c.shape.covers(&h.request)).collect())
            .collect();
        let contains = candidates
            .iter()
            .enumerate()
            .map(|(i, a)| {
                candidates
                    .iter()
                    .enumerate()
                    .map(|(j, b)| i != j && a.shape.covers(&b.shape))
                    .collect()
            })
            .collect();
        Relations { answers, contains }
    }
}

/// A candidate's current (benefit, weight) after the re-evaluation rules.
#[derive(Debug, Clone, Copy)]
struct Score {
    benefit: u128,
    weight: u128,
}

impl Score {
    /// `self.benefit / self.weight > other.benefit / other.weight`, exactly.
    fn better_than(&self, other: &Score) -> bool {
        self.benefit.saturating_mul(other.weight) > other.benefit.saturating_mul(self.weight)
    }

    /// The paper's "benefit ratio > 1" filter (a zero weight counts as infinite).
    fn worth_it(&self) -> bool {
        self.benefit > self.weight
    }
}

struct State {
    picked: Vec<usize>,
    retired: Vec<bool>,
    covered: Vec<bool>,
    used_bytes: u64,
}

/// Chooses candidates for a cache of `cache_bytes_max` bytes; returns their
/// indices. Invariants: the chosen sizes sum to at most `cache_bytes_max`, and
/// no chosen candidate is contained (by [`crate::semantic::region::Request::covers`])
/// in another chosen one.
pub fn overlap_greedy_knapsack(
    history: &[HistoryEntry],
    candidates: &[Candidate],
    cache_bytes_max: u64,
) -> Vec<usize> {
    let rel = Relations::new(history, candidates);
    let mut st = State {
        picked: Vec::new(),
        retired: vec![false; candidates.len()],
        covered: vec![false; history.len()],
        used_bytes: 0,
    };
    while let Some(best) = best_candidate(history, candidates, &rel, &st) {
        let freed: u64 = st
            .picked
            .iter()
            .filter(|&&p| rel.contains[best][p])
            .map(|&p| candidates[p].bytes)
            .sum();
        let after = st.used_bytes - freed + candidates[best].bytes;
        if after > cache_bytes_max {
            break; // the paper stops at the first best item that does not fit
        }
        st.picked.retain(|&p| !rel.contains[best][p]);
        st.picked.push(best);
        st.retired[best] = true;
        st.used_bytes = after;
        st.covered = (0..history.len())
            .map(|h| st.picked.iter().any(|&p| rel.answers[p][h]))
            .collect();
        assert!(st.used_bytes <= cache_bytes_max, "knapsack over budget");
    }
    st.picked
}

/// The highest-ratio candidate worth picking now, if any (ties: lowest index).
fn best_candidate(
    history: &[HistoryEntry],
    candidates: &[Candidate],
    rel: &Relations,
    st: &State,
) -> Option<usize> {
    let mut best: Option<(usize, Score)> = None;
    for c in (0..candidates.len()).filter(|&c| !st.retired[c]) {
        if st.picked.iter().any(|&p| rel.contains[p][c]) {
            continue; // rule 2: a subset of a picked item has benefit 0
        }
        let benefit: u128 = (0..history.len())
            .filter(|&h| rel.answers[c][h] && !st.covered[h])
            .map(|h| u128::from(history[h].bytes))
            .sum();
        // Rule 1: picked subsets would be replaced, so their bytes are not extra cost.
        let replaced: u64 = st
            .picked
            .iter()
            .filter(|&&p| rel.contains[c][p])
            .map(|&p| candidates[p].bytes)
            .sum();
        let weight = u128::from(candidates[c].bytes.saturating_sub(replaced));
        let score = Score { benefit, weight };
        if score.worth_it() && best.is_none_or(|(_, b)| score.better_than(&b)) {
            best = Some((c, score));
        }
    }
    best.map(|(c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::oracle::Origin;
    use crate::semantic::testkit::{range, seen};

    fn candidate(entry: &HistoryEntry) -> Candidate {
        Candidate {
            shape: entry.request.materialized_shape(),
            rows: entry.rows,
            bytes: entry.bytes,
            origin: Origin::History,
        }
    }

    #[test]
    fn one_time_requests_have_ratio_one_and_are_skipped() {
        let once = seen(&range("x", 0, 10), 10);
        let twice = seen(&range("x", 50, 60), 10);
        let history = vec![once.clone(), twice.clone(), twice.clone()];
        let chosen =
            overlap_greedy_knapsack(&history, &[candidate(&once), candidate(&twice)], 1000);
        assert_eq!(chosen, vec![1]);
    }

    #[test]
    fn superset_replaces_picked_subset_rule_1() {
        let small = seen(&range("x", 0, 10), 10);
        let big = seen(&range("x", 0, 40), 40);
        let history = vec![
            small.clone(),
            small.clone(),
            small.clone(),
            big.clone(),
            big.clone(),
        ];
        // small: 30/10 = 3 is picked first; big then has (110-30)/(40-10) = 2.67.
        let chosen = overlap_greedy_knapsack(&history, &[candidate(&small), candidate(&big)], 100);
        assert_eq!(chosen, vec![1], "big replaced small");
    }

    #[test]
    fn subset_of_picked_gets_zero_benefit_rule_2() {
        let small = seen(&range("x", 0, 10), 10);
        let big = seen(&range("x", 0, 20), 12);
        let history = vec![small.clone(), small.clone(), big.clone(), big.clone()];
        // big: 44/12 = 3.67 beats small: 20/10; afterwards small is a subset.
        let chosen = overlap_greedy_knapsack(&history, &[candidate(&small), candidate(&big)], 100);
        assert_eq!(chosen, vec![1]);
    }

    #[test]
    fn partial_overlap_loses_shared_history_rule_3() {
        let a = seen(&range("x", 0, 10), 10);
        let b = seen(&range("x", 5, 15), 10);
        let shared = seen(&range("x", 5, 10), 5);
        let history = vec![
            a.clone(),
            a.clone(),
            shared.clone(),
            shared.clone(),
            shared.clone(),
            shared,
            b.clone(),
        ];
        // a: 20+20 = 40/10; b: 10+20 = 30/10; after a, b keeps only its own 10: ratio 1.
        let chosen = overlap_greedy_knapsack(&history, &[candidate(&a), candidate(&b)], 100);
        assert_eq!(chosen, vec![0]);
    }

    #[test]
    fn stops_at_first_best_that_does_not_fit() {
        let big = seen(&range("x", 0, 100), 60);
        let small = seen(&range("x", 200, 210), 10);
        let history = vec![
            big.clone(),
            big.clone(),
            big.clone(),
            small.clone(),
            small.clone(),
        ];
        // big (ratio 3) does not fit in 50 bytes; small (ratio 2) would, but the paper stops.
        let chosen = overlap_greedy_knapsack(&history, &[candidate(&big), candidate(&small)], 50);
        assert!(chosen.is_empty());
    }
}
