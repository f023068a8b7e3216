//! Algorithm 3 of "Crystal: A Unified Cache Storage System for Analytical
//! Databases": approximative merging augmentation.
//!
//! Candidates drawn only from the history overfit; the paper adds enlarged,
//! previously unseen regions: for pairs of history regions that (approximately)
//! intersect in at least one dimension, the region spanned by the per-dimension
//! global minimum and maximum. Each is scored by quality (history regions it
//! answers) and size savings (their summed sizes), ranked by quality, and kept
//! if no accepted region below `maxSize` already covers it and its estimated size
//! is below `maxSize`, or below both its size savings and the cache size.

use std::collections::BTreeSet;

use crate::semantic::conjunction::Conjunction;
use crate::semantic::dnf::Dnf;
use crate::semantic::oracle::history::HistoryEntry;
use crate::semantic::oracle::{Candidate, Origin, SizeEstimator};
use crate::semantic::region::{Request, RequestKey};

/// Limits of the augmentation (the paper: 20% of the history length, and
/// `maxSize` = 20% of the semantic cache).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeLimits {
    /// At most this many enlarged regions are returned.
    pub merged_regions_max: usize,
    /// The paper's `maxSize`: regions below it are accepted freely.
    pub region_bytes_max: u64,
    /// The paper's `maxCacheSize`: no region may exceed it.
    pub cache_bytes_max: u64,
}

/// An enlarged region with its score.
struct Enlarged {
    shape: Request,
    quality: usize,
    size_savings: u128,
}

/// Returns enlarged candidate regions built from pairs of history requests.
pub fn approximate_merge(
    history: &[HistoryEntry],
    limits: &MergeLimits,
    estimator: &dyn SizeEstimator,
) -> Vec<Candidate> {
    let mut enlarged = enlarge_pairs(history);
    for e in &mut enlarged {
        for h in history.iter().filter(|h| e.shape.covers(&h.request)) {
            e.quality += 1;
            e.size_savings += u128::from(h.bytes);
        }
    }
    // Stable sort: equal quality keeps generation order, for determinism.
    enlarged.sort_by_key(|e| std::cmp::Reverse(e.quality));
    let mut accepted: Vec<Candidate> = Vec::new();
    for e in enlarged {
        if accepted.len() >= limits.merged_regions_max {
            break;
        }
        let represented = accepted
            .iter()
            .any(|a| a.bytes < limits.region_bytes_max && a.shape.covers(&e.shape));
        if represented {
            continue;
        }
        let Some(size) = estimator.estimate(&e.shape) else {
            continue; // no statistics: cannot weigh it
        };
        let small = size.bytes < limits.region_bytes_max;
        let pays_off =
            u128::from(size.bytes) < e.size_savings && size.bytes < limits.cache_bytes_max;
        if small || pays_off {
            accepted.push(Candidate {
                shape: e.shape,
                rows: size.rows,
                bytes: size.bytes,
                origin: Origin::Merged,
            });
        }
    }
    accepted
}

/// Enlarged regions for every pair of distinct history shapes of one table
/// snapshot that approximately intersect in some dimension; de-duplicated, and
/// without pairs where one side already contains the other.
fn enlarge_pairs(history: &[HistoryEntry]) -> Vec<Enlarged> {
    let mut seen: BTreeSet<RequestKey> = BTreeSet::new();
    let shapes: Vec<Request> = history
        .iter()
        .map(|h| h.request.materialized_shape())
        .filter(|s| seen.insert(s.key()))
        .collect();
    let mut out = Vec::new();
    for (i, a) in shapes.iter().enumerate() {
        for b in &shapes[i + 1..] {
            let Some(shape) = enlarge(a, b) else { continue };
            if seen.insert(shape.key()) {
                out.push(Enlarged {
                    shape,
                    quality: 0,
                    size_savings: 0,
                });
            }
        }
    }
    out
}

/// The bounding region of two shapes, if they may be merged.
fn enlarge(a: &Request, b: &Request) -> Option<Request> {
    if a.table != b.table || a.version != b.version {
        return None;
    }
    let (ca, cb) = (a.predicate.conjunctions(), b.predicate.conjunctions());
    let touching = ca
        .iter()
        .any(|x| cb.iter().any(|y| x.touches_in_some_dimension(y)));
    if !touching {
        return None;
    }
    let mut all = ca.iter().chain(cb);
    let first = all.next()?.clone();
    let hull: Conjunction = all.fold(first, |acc, c| acc.hull(c));
    let columns = a.columns.union(&b.columns).cloned().collect();
    let shape = Request {
        table: a.table.clone(),
        version: a.version,
        predicate: Dnf::from_conjunctions(vec![hull]),
        columns,
    };
    debug_assert!(
        shape.covers(a) && shape.covers(b),
        "hull covers both sources"
    );
    Some(shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::testkit::{WidthEstimator, range, request, seen};

    fn limits() -> MergeLimits {
        MergeLimits {
            merged_regions_max: 4,
            region_bytes_max: 50,
            cache_bytes_max: 1000,
        }
    }

    #[test]
    fn adjacent_ranges_merge_with_delta() {
        // x in [0,10) and [10,20) touch: the paper's "x < 1, x >= 1" case.
        let history = vec![seen(&range("x", 0, 10), 10), seen(&range("x", 10, 20), 10)];
        let merged = approximate_merge(&history, &limits(), &WidthEstimator);
        assert_eq!(merged.len(), 1);
        assert_eq!(
            merged[0].shape,
            request(&range("x", 0, 20)).materialized_shape()
        );
        assert_eq!(merged[0].bytes, 20);
    }

    #[test]
    fn far_apart_ranges_do_not_merge_and_large_merges_need_savings() {
        let apart = vec![seen(&range("x", 0, 10), 10), seen(&range("x", 30, 40), 10)];
        assert!(approximate_merge(&apart, &limits(), &WidthEstimator).is_empty());
        // Overlapping but the hull (100 bytes) exceeds maxSize (50) and the savings (30+30).
        let wide = vec![seen(&range("x", 0, 60), 30), seen(&range("x", 40, 100), 30)];
        assert!(approximate_merge(&wide, &limits(), &WidthEstimator).is_empty());
        // With enough savings it is accepted although above maxSize.
        let hot = vec![seen(&range("x", 0, 60), 60), seen(&range("x", 40, 100), 60)];
        assert_eq!(approximate_merge(&hot, &limits(), &WidthEstimator).len(), 1);
    }
}
