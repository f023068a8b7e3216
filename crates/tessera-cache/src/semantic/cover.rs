//! Request matching: which cached regions answer a request, and what is left.
//!
//! "Crystal: A Unified Cache Storage System for Analytical Databases" (Sections
//! 3.3–3.4, Algorithm 1): prefer a single full superset (oracle cache first, then
//! the requested-region cache), because every extra returned region costs the
//! engine (about 50 ms each in Spark) and overlapping regions need de-duplication.
//! Otherwise greedily pick the region that satisfies the most still-unsatisfied
//! conjunctions of the request, and return disjoint pieces ("A and B − A") so no
//! row is produced twice. Unlike the paper (which then falls back to a full
//! remote scan), conjunctions no region covers are returned as a remainder to
//! fetch remotely, also disjoint from the pieces.

use std::collections::BTreeMap;

use crate::semantic::conjunction::Conjunction;
use crate::semantic::predicate::Predicate;
use crate::semantic::region::{Region, RegionId, Request};

/// Regions of one cache, sharded by `(table, version)`.
///
/// The paper partitions by a bitset of remote files (sharded by table) and then
/// by a schema bitset, scanning only superset partitions. Here a table snapshot
/// plays the role of the file set, so a map lookup replaces the first stage, and
/// the schema stage is a linear `is_subset` filter: regions per table snapshot are
/// few (bounded by the cache size), so an R-tree or bitset index is not needed yet.
#[derive(Debug, Clone, Default)]
pub struct RegionIndex {
    shards: BTreeMap<(String, u64), Vec<Region>>,
}

impl RegionIndex {
    /// An empty index.
    pub fn new() -> Self {
        RegionIndex::default()
    }

    /// Adds a region (ids are assumed unique; the caller owns id allocation).
    pub fn insert(&mut self, region: Region) {
        let key = (region.table.clone(), region.version);
        self.shards.entry(key).or_default().push(region);
    }

    /// Removes and returns the region with `id`, if present.
    pub fn remove(&mut self, id: RegionId) -> Option<Region> {
        for shard in self.shards.values_mut() {
            if let Some(pos) = shard.iter().position(|r| r.id == id) {
                return Some(shard.swap_remove(pos));
            }
        }
        None
    }

    /// All regions, shard by shard.
    pub fn regions(&self) -> impl Iterator<Item = &Region> {
        self.shards.values().flatten()
    }

    /// Regions of the request's table snapshot holding all required columns.
    pub fn candidates<'a>(&'a self, request: &'a Request) -> impl Iterator<Item = &'a Region> {
        let required = request.required_columns();
        self.shards
            .get(&(request.table.clone(), request.version))
            .into_iter()
            .flatten()
            .filter(move |r| required.is_subset(&r.columns))
    }
}

/// Which cache a region comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CacheKind {
    /// The large oracle-region cache.
    Oracle,
    /// The small requested-region cache.
    Requested,
}

/// Read `region`, keep rows where `residual` is TRUE.
#[derive(Debug, Clone, PartialEq)]
pub struct CoverPiece {
    /// Region to read.
    pub region: RegionId,
    /// Cache holding it.
    pub cache: CacheKind,
    /// Filter over the region's rows; pieces are pairwise disjoint.
    pub residual: Predicate,
}

/// The answer to a request: local pieces plus what to fetch remotely.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cover {
    /// Local pieces, in pick order.
    pub pieces: Vec<CoverPiece>,
    /// Filter for the remote scan, disjoint from the pieces; `None` = fully local.
    pub remainder: Option<Predicate>,
}

/// Matches a request against both caches (Algorithm 1 with a remainder).
///
/// Residuals use the request's own conjunctions, not the picked regions'
/// predicates: `B − A` is written as "request conjunctions newly covered by B,
/// AND the conjunctions covered by earlier picks IS NOT TRUE". That is the same row set
/// within the request, and it references only request columns, which every
/// candidate holds, whereas A's predicate may use columns B lacks.
pub fn cover(request: &Request, oracle: &RegionIndex, requested: &RegionIndex) -> Cover {
    if request.predicate.is_false() {
        return Cover::default();
    }
    let candidates: Vec<(CacheKind, &Region)> = oracle
        .candidates(request)
        .map(|r| (CacheKind::Oracle, r))
        .chain(
            requested
                .candidates(request)
                .map(|r| (CacheKind::Requested, r)),
        )
        .collect();
    if let Some((cache, region)) = candidates.iter().find(|(_, r)| r.answers(request)) {
        return Cover {
            pieces: vec![CoverPiece {
                region: region.id,
                cache: *cache,
                residual: request.predicate.to_predicate(),
            }],
            remainder: None,
        };
    }
    greedy_cover(request.predicate.conjunctions(), &candidates)
}

/// The greedy loop of Algorithm 1 over pre-filtered candidates.
fn greedy_cover(conjunctions: &[Conjunction], candidates: &[(CacheKind, &Region)]) -> Cover {
    let satisfies: Vec<Vec<bool>> = candidates
        .iter()
        .map(|(_, r)| {
            conjunctions
                .iter()
                .map(|c| r.predicate.contains_conjunction(c))
                .collect()
        })
        .collect();
    let mut satisfied = vec![false; conjunctions.len()];
    let mut used = vec![false; candidates.len()];
    let mut pieces = Vec::new();
    loop {
        let gain = |i: usize| {
            (0..conjunctions.len())
                .filter(|&j| satisfies[i][j] && !satisfied[j])
                .count()
        };
        // Strictly greater keeps the earliest best: oracle regions win ties.
        let mut best: Option<(usize, usize)> = None;
        for i in (0..candidates.len()).filter(|&i| !used[i]) {
            let g = gain(i);
            if g > 0 && best.is_none_or(|(_, bg)| g > bg) {
                best = Some((i, g));
            }
        }
        let Some((i, _)) = best else { break };
        used[i] = true;
        let newly: Vec<usize> = (0..conjunctions.len())
            .filter(|&j| satisfies[i][j] && !satisfied[j])
            .collect();
        let residual = disjoint_part(conjunctions, &newly, &satisfied);
        newly.iter().for_each(|&j| satisfied[j] = true);
        let (cache, region) = candidates[i];
        pieces.push(CoverPiece {
            region: region.id,
            cache,
            residual,
        });
    }
    let missing: Vec<usize> = (0..conjunctions.len()).filter(|&j| !satisfied[j]).collect();
    let remainder =
        (!missing.is_empty()).then(|| disjoint_part(conjunctions, &missing, &satisfied));
    debug_assert!(
        pieces.len() <= conjunctions.len(),
        "each pick covers a new conjunction"
    );
    Cover { pieces, remainder }
}

/// `OR(conjunctions[take]) AND (OR(conjunctions[already]) IS NOT TRUE)`.
///
/// Why `IS NOT TRUE` and not `NOT`: a row where an earlier conjunction is
/// UNKNOWN (it tests a column that is NULL in that row) is not produced by the
/// earlier piece, and `NOT UNKNOWN` would drop it here too. `IS NOT TRUE` is the
/// exact complement of the TRUE rows whatever the engine's NULL and coercion
/// rules, so the pieces partition the request.
fn disjoint_part(conjunctions: &[Conjunction], take: &[usize], already: &[bool]) -> Predicate {
    let or_of = |idx: &mut dyn Iterator<Item = usize>| {
        Predicate::Or(idx.map(|j| conjunctions[j].to_predicate()).collect())
    };
    let wanted = or_of(&mut take.iter().copied());
    if !already.contains(&true) {
        return wanted;
    }
    let earlier = or_of(&mut (0..conjunctions.len()).filter(|&j| already[j]));
    Predicate::And(vec![wanted, Predicate::IsNotTrue(Box::new(earlier))])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::dnf::Dnf;
    use crate::semantic::normalize::NormalizeLimits;
    use crate::semantic::predicate::{CmpOp, ColumnId, Value};
    use std::collections::BTreeSet;

    fn range(c: &str, lo: i128, hi: i128) -> Predicate {
        let cmp = |op, v| Predicate::Compare {
            column: ColumnId::new(c),
            op,
            value: Value::Int(v),
        };
        Predicate::And(vec![cmp(CmpOp::GtEq, lo), cmp(CmpOp::Lt, hi)])
    }

    fn dnf(p: Predicate) -> Dnf {
        Dnf::from_predicate(&p, &NormalizeLimits::default()).unwrap()
    }

    fn cols() -> BTreeSet<ColumnId> {
        ["x", "y"].iter().map(|c| ColumnId::new(*c)).collect()
    }

    fn region(id: u64, p: Predicate) -> Region {
        Region {
            id: RegionId(id),
            table: "t".into(),
            version: 1,
            predicate: dnf(p),
            columns: cols(),
            rows: 1,
            bytes: 1,
        }
    }

    fn request(p: Predicate) -> Request {
        Request {
            table: "t".into(),
            version: 1,
            predicate: dnf(p),
            columns: cols(),
        }
    }

    #[test]
    fn single_superset_wins_and_oracle_first() {
        let mut oracle = RegionIndex::new();
        let mut requested = RegionIndex::new();
        requested.insert(region(2, range("x", 0, 100)));
        oracle.insert(region(1, range("x", 0, 50)));
        let c = cover(&request(range("x", 10, 20)), &oracle, &requested);
        assert_eq!(c.pieces.len(), 1);
        assert_eq!(
            (c.pieces[0].region, c.pieces[0].cache),
            (RegionId(1), CacheKind::Oracle)
        );
        assert!(c.remainder.is_none());
    }

    #[test]
    fn figure_6_style_two_rectangles_from_two_regions_plus_remainder() {
        // Request = three rectangles; region 1 covers the first, region 2 the
        // second; the third is fetched remotely.
        let mut oracle = RegionIndex::new();
        oracle.insert(region(1, range("x", 0, 10)));
        oracle.insert(region(2, range("y", 0, 10)));
        oracle.insert(region(3, range("x", 500, 600)));
        let req = request(Predicate::Or(vec![
            range("x", 2, 4),
            range("y", 3, 5),
            range("x", 50, 60),
        ]));
        let c = cover(&req, &oracle, &RegionIndex::new());
        let ids: Vec<RegionId> = c.pieces.iter().map(|p| p.region).collect();
        assert_eq!(ids, vec![RegionId(1), RegionId(2)]);
        assert!(
            matches!(c.pieces[1].residual, Predicate::And(_)),
            "B − A residual"
        );
        assert!(c.remainder.is_some());
    }

    #[test]
    fn residual_keeps_rows_where_earlier_pick_is_unknown() {
        // Regression found by the cover property test: request (x<5) ∨ (y=1);
        // region 1 covers x<5, region 2 covers y=1. A row with x NULL, y=1 is
        // not in piece 1, and `y=1 AND NOT(x<5)` would be UNKNOWN there.
        let mut oracle = RegionIndex::new();
        oracle.insert(region(1, range("x", -100, 5)));
        oracle.insert(region(2, range("y", 1, 2)));
        let req = request(Predicate::Or(vec![range("x", 0, 5), range("y", 1, 2)]));
        let c = cover(&req, &oracle, &RegionIndex::new());
        assert_eq!(c.pieces.len(), 2);
        let row = [
            (ColumnId::new("x"), None),
            (ColumnId::new("y"), Some(Value::Int(1))),
        ]
        .into();
        let produced: Vec<bool> = c
            .pieces
            .iter()
            .map(|p| p.residual.eval(&row) == Some(true))
            .collect();
        assert_eq!(produced, vec![false, true]);
    }

    #[test]
    fn other_snapshot_or_missing_columns_never_match() {
        let mut oracle = RegionIndex::new();
        oracle.insert(Region {
            version: 2,
            ..region(1, range("x", 0, 10))
        });
        oracle.insert(Region {
            columns: BTreeSet::from([ColumnId::new("y")]),
            ..region(2, range("x", 0, 10))
        });
        let c = cover(&request(range("x", 2, 4)), &oracle, &RegionIndex::new());
        assert!(c.pieces.is_empty());
        assert!(c.remainder.is_some());
    }
}
