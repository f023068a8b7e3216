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
//!
//! Three refinements, each found on workloads the pairs alone served badly:
//! - Equality values are categories, not a range: the hull of `collection = 'like'`
//!   and `collection = 'follow'` keeps one term per value instead of spanning every
//!   string between the two ([`hull`]).
//! - Pairs only reach two requests. A neighbourhood, the requests linked by chains of
//!   approximately intersecting ones (many sub-ranges of one hot range), gives the
//!   hull of the whole hot range; neighbourhoods are ranked before the pairs, whose
//!   widest hulls would otherwise fill the quota.
//! - An enlarged region is tightened to the hull of the history requests it answers,
//!   so that hulls answering the same requests collapse into one candidate.

use std::collections::{BTreeMap, BTreeSet};

use crate::semantic::conjunction::Conjunction;
use crate::semantic::dnf::Dnf;
use crate::semantic::oracle::history::HistoryEntry;
use crate::semantic::oracle::{Candidate, Origin, SizeEstimator};
use crate::semantic::predicate::{ColumnId, Value};
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
    /// Whether it is a neighbourhood's hull (ranked before the pairs').
    neighbourhood: bool,
    quality: usize,
    size_savings: u128,
}

/// Returns enlarged candidate regions built from the history's requests.
pub fn approximate_merge(
    history: &[HistoryEntry],
    limits: &MergeLimits,
    estimator: &dyn SizeEstimator,
) -> Vec<Candidate> {
    let shapes = distinct_shapes(history);
    let mut seen: BTreeSet<RequestKey> = shapes.iter().map(Request::key).collect();
    let hulls = neighbourhoods(&shapes)
        .into_iter()
        .map(|shape| (shape, true))
        .chain(
            enlarge_pairs(&shapes)
                .into_iter()
                .map(|shape| (shape, false)),
        );
    let mut enlarged: Vec<Enlarged> = hulls
        .filter_map(|(shape, neighbourhood)| tightened(history, &shape, neighbourhood))
        .filter(|e| seen.insert(e.shape.key()))
        .collect();
    // Stable sort: equal rank keeps generation order, for determinism.
    enlarged.sort_by_key(|e| (!e.neighbourhood, std::cmp::Reverse(e.quality)));
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

/// The history's distinct materialized shapes, in order of first appearance.
fn distinct_shapes(history: &[HistoryEntry]) -> Vec<Request> {
    let mut seen: BTreeSet<RequestKey> = BTreeSet::new();
    history
        .iter()
        .map(|h| h.request.materialized_shape())
        .filter(|s| seen.insert(s.key()))
        .collect()
}

/// `shape` tightened to the hull of the history requests it answers, scored; `None`
/// when it answers fewer than two (it then adds nothing to the requests themselves).
fn tightened(history: &[HistoryEntry], shape: &Request, neighbourhood: bool) -> Option<Enlarged> {
    let answered: Vec<&HistoryEntry> = history
        .iter()
        .filter(|h| shape.covers(&h.request))
        .collect();
    let shapes: Vec<Request> = answered
        .iter()
        .map(|h| h.request.materialized_shape())
        .collect();
    let tight = hull(&shapes)?;
    let mut e = Enlarged {
        shape: tight,
        neighbourhood,
        quality: 0,
        size_savings: 0,
    };
    for h in history.iter().filter(|h| e.shape.covers(&h.request)) {
        e.quality += 1;
        e.size_savings += u128::from(h.bytes);
    }
    (e.quality >= 2).then_some(e)
}

/// Hulls of the neighbourhoods of two or more shapes: the connected components of
/// "some conjunction of one approximately intersects some conjunction of the other".
fn neighbourhoods(shapes: &[Request]) -> Vec<Request> {
    let mut parent: Vec<usize> = (0..shapes.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for (i, a) in shapes.iter().enumerate() {
        for (j, b) in shapes.iter().enumerate().skip(i + 1) {
            if mergeable(a, b) && touching(a, b, Conjunction::touches) {
                let (ri, rj) = (root(&mut parent, i), root(&mut parent, j));
                parent[ri] = rj;
            }
        }
    }
    let mut components: BTreeMap<usize, Vec<Request>> = BTreeMap::new();
    for (i, shape) in shapes.iter().enumerate() {
        let r = root(&mut parent, i);
        components.entry(r).or_default().push(shape.clone());
    }
    components
        .into_values()
        .filter(|members| members.len() >= 2)
        .filter_map(|members| hull(&members))
        .collect()
}

/// Enlarged regions for every pair of distinct shapes of one table snapshot that
/// approximately intersect in some dimension (the paper's pairs).
fn enlarge_pairs(shapes: &[Request]) -> Vec<Request> {
    let mut out = Vec::new();
    for (i, a) in shapes.iter().enumerate() {
        for b in &shapes[i + 1..] {
            if mergeable(a, b) && touching(a, b, Conjunction::touches_in_some_dimension) {
                out.extend(hull(&[a.clone(), b.clone()]));
            }
        }
    }
    out
}

/// Whether two shapes are of one table snapshot.
fn mergeable(a: &Request, b: &Request) -> bool {
    a.table == b.table && a.version == b.version
}

/// Whether some conjunction of `a` and some of `b` of the same category `touch`.
fn touching(a: &Request, b: &Request, touch: fn(&Conjunction, &Conjunction) -> bool) -> bool {
    let (ca, cb) = (a.predicate.conjunctions(), b.predicate.conjunctions());
    ca.iter().any(|x| {
        cb.iter()
            .any(|y| x.equalities() == y.equalities() && touch(x, y))
    })
}

/// The region spanning `shapes` (of one table snapshot): per category (the values
/// their conjunctions pin columns to) the per-dimension hull of its conjunctions, and
/// the union of their columns; `None` for no shapes.
fn hull(shapes: &[Request]) -> Option<Request> {
    let first = shapes.first()?;
    let mut categories: BTreeMap<BTreeMap<ColumnId, Value>, Conjunction> = BTreeMap::new();
    for c in shapes.iter().flat_map(|s| s.predicate.conjunctions()) {
        categories
            .entry(c.equalities())
            .and_modify(|h| *h = h.hull(c))
            .or_insert_with(|| c.clone());
    }
    let columns = shapes
        .iter()
        .flat_map(|s| s.columns.iter().cloned())
        .collect();
    let shape = Request {
        table: first.table.clone(),
        version: first.version,
        predicate: Dnf::from_conjunctions(categories.into_values().collect()),
        columns,
    };
    debug_assert!(
        shapes.iter().all(|s| shape.covers(s)),
        "the hull covers its sources"
    );
    Some(shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::predicate::{CmpOp, Predicate};
    use crate::semantic::testkit::{WidthEstimator, cmp, range, request, seen};

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

    /// `lo <= x < hi AND c = category`.
    fn in_category(lo: i128, hi: i128, category: i128) -> Predicate {
        Predicate::And(vec![range("x", lo, hi), cmp("c", CmpOp::Eq, category)])
    }

    #[test]
    fn hulls_keep_categories_apart() {
        // `c IN (1, 3)` over two overlapping ranges of x: one term per value.
        let either = |lo, hi| Predicate::Or(vec![in_category(lo, hi, 1), in_category(lo, hi, 3)]);
        let history = vec![seen(&either(0, 10), 10), seen(&either(5, 15), 10)];
        let merged = approximate_merge(&history, &limits(), &WidthEstimator);
        assert_eq!(merged.len(), 1);
        let shape = &merged[0].shape;
        assert_eq!(shape.predicate.conjunctions().len(), 2, "{shape:?}");
        assert!(
            !shape.covers(&request(&in_category(0, 5, 2))),
            "c = 2 lies between"
        );
        assert!(
            shape.covers(&request(&in_category(0, 15, 3))),
            "x spans both"
        );
        // Different categories alone are not merged into one region.
        let apart = vec![
            seen(&in_category(0, 10, 1), 10),
            seen(&in_category(5, 15, 3), 10),
        ];
        assert!(approximate_merge(&apart, &limits(), &WidthEstimator).is_empty());
    }

    #[test]
    fn a_chain_of_sub_ranges_gives_the_hull_of_the_hot_range_first() {
        // Sub-ranges of [0, 42) linked by overlaps, and one far away; the pairs'
        // widest hulls would each answer fewer requests than the neighbourhood's.
        let mut history: Vec<HistoryEntry> = (0..5)
            .map(|i| seen(&range("x", i * 8, i * 8 + 10), 10))
            .collect();
        history.push(seen(&range("x", 500, 510), 10));
        let one = MergeLimits {
            merged_regions_max: 1,
            ..limits()
        };
        let merged = approximate_merge(&history, &one, &WidthEstimator);
        assert_eq!(merged.len(), 1);
        assert_eq!(
            merged[0].shape,
            request(&range("x", 0, 42)).materialized_shape()
        );
    }
}
