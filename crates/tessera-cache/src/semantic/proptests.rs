//! Property tests: every relation is checked against the three-valued
//! evaluator over an exhaustive grid of rows (NULLs, kind mismatches, NaN and
//! signed zero included), so any unsound answer is a counterexample.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use proptest::prelude::*;

use crate::semantic::cover::{RegionIndex, cover};
use crate::semantic::dnf::Dnf;
use crate::semantic::normalize::NormalizeLimits;
use crate::semantic::oracle::history::HistoryEntry;
use crate::semantic::oracle::{Oracle, OracleConfig, SizeEstimate, SizeEstimator};
use crate::semantic::predicate::{CmpOp, ColumnId, Predicate, Row, Value};
use crate::semantic::region::{Region, RegionId, Request};
use crate::semantic::requested::{Admission, RequestedCache};

const COLUMNS: [&str; 3] = ["a", "b", "c"];

fn cell_domain() -> Vec<Option<Value>> {
    let mut out = vec![None];
    out.extend((-3..=3).map(|i| Some(Value::Int(i))));
    out.extend([0.0, 1.0, 2.5, f64::NAN].map(|f| Some(Value::Float(f))));
    out.extend(["a", "ab", "b"].map(|s| Some(Value::Text(s.into()))));
    out.extend([false, true].map(|b| Some(Value::Bool(b))));
    out
}

/// Every combination of cell values over the three columns (17³ rows).
fn rows() -> &'static [Row] {
    static ROWS: OnceLock<Vec<Row>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let cells = cell_domain();
        let mut out = Vec::new();
        for x in &cells {
            for y in &cells {
                for z in &cells {
                    let row: Row = COLUMNS
                        .iter()
                        .zip([x, y, z])
                        .map(|(c, v)| (ColumnId::new(*c), v.clone()))
                        .collect();
                    out.push(row);
                }
            }
        }
        out
    })
}

fn is_true(p: &Predicate, row: &Row) -> bool {
    p.eval(row) == Some(true)
}

fn literal() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => (-2i128..=2).prop_map(Value::Int),
        1 => prop::sample::select(vec![-0.0f64, 0.0, 2.5, f64::NAN]).prop_map(Value::Float),
        1 => prop::sample::select(vec!["a", "b"]).prop_map(|s| Value::Text(s.into())),
        1 => any::<bool>().prop_map(Value::Bool),
    ]
}

fn column() -> impl Strategy<Value = ColumnId> {
    prop::sample::select(COLUMNS.to_vec()).prop_map(ColumnId::new)
}

fn op() -> impl Strategy<Value = CmpOp> {
    prop::sample::select(vec![
        CmpOp::Lt,
        CmpOp::LtEq,
        CmpOp::Eq,
        CmpOp::NotEq,
        CmpOp::Gt,
        CmpOp::GtEq,
    ])
}

fn leaf() -> impl Strategy<Value = Predicate> {
    prop_oneof![
        6 => (column(), op(), literal()).prop_map(|(column, op, value)| Predicate::Compare { column, op, value }),
        1 => column().prop_map(Predicate::IsNull),
        1 => column().prop_map(Predicate::IsNotNull),
        1 => (column(), prop::collection::vec(literal(), 0..3), any::<bool>())
            .prop_map(|(column, values, negated)| Predicate::InList { column, values, negated }),
        1 => Just(Predicate::True),
    ]
}

/// Arbitrary predicate trees over three columns.
fn predicate() -> impl Strategy<Value = Predicate> {
    leaf().prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Predicate::And),
            prop::collection::vec(inner.clone(), 0..4).prop_map(Predicate::Or),
            inner.clone().prop_map(|p| Predicate::Not(Box::new(p))),
            inner.prop_map(|p| Predicate::Not(Box::new(Predicate::IsNotTrue(Box::new(p))))),
        ]
    })
}

/// Unions of integer boxes: where containment is most often true.
fn boxes() -> impl Strategy<Value = Predicate> {
    let atom = (column(), op(), -2i128..=2).prop_map(|(column, op, v)| Predicate::Compare {
        column,
        op,
        value: Value::Int(v),
    });
    prop::collection::vec(
        prop::collection::vec(atom, 1..4).prop_map(Predicate::And),
        1..3,
    )
    .prop_map(Predicate::Or)
}

fn any_predicate() -> impl Strategy<Value = Predicate> {
    prop_oneof![predicate(), boxes()]
}

fn to_dnf(p: &Predicate) -> Option<Dnf> {
    Dnf::from_predicate(p, &NormalizeLimits::default())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// (b) Soundness of contains / intersects / partially_contains and of the
    /// hull used by approximative merging.
    #[test]
    fn relations_are_sound(p in any_predicate(), q in any_predicate(), extra in any_predicate(), mode in 0u8..3) {
        let q = match mode {
            0 => q,
            1 => Predicate::And(vec![p.clone(), extra]),
            _ => Predicate::And(vec![q, extra]),
        };
        let (Some(a), Some(b)) = (to_dnf(&p), to_dnf(&q)) else { return Ok(()) };
        let (contains, intersects) = (a.contains(&b), a.intersects(&b));
        for row in rows() {
            let (ta, tb) = (is_true(&p, row), is_true(&q, row));
            prop_assert!(!contains || !tb || ta, "contains but row {:?} escapes", row);
            prop_assert!(intersects || !(ta && tb), "disjoint but row {:?} in both", row);
        }
        for cb in b.conjunctions().iter().filter(|c| a.contains_conjunction(c)) {
            let cp = cb.to_predicate();
            prop_assert!(rows().iter().all(|r| !is_true(&cp, r) || is_true(&p, r)));
        }
        for (ca, cb) in a.conjunctions().iter().zip(b.conjunctions()) {
            let h = ca.hull(cb).to_predicate();
            let (pa, pb) = (ca.to_predicate(), cb.to_predicate());
            for row in rows() {
                prop_assert!(!(is_true(&pa, row) || is_true(&pb, row)) || is_true(&h, row), "hull misses {:?}", row);
            }
        }
    }

    /// (d) The requested cache never exceeds `bytes_max`, and its accounting
    /// matches its contents.
    #[test]
    fn requested_cache_respects_bytes_max(ops in prop::collection::vec((0u8..4, 0i128..6, 0u64..150), 1..80)) {
        let mut cache = RequestedCache::new(100, 8);
        let mut next_id = 0;
        for (kind, key, bytes) in ops {
            let predicate = to_dnf(&Predicate::Compare { column: ColumnId::new("a"), op: CmpOp::Eq, value: Value::Int(key) }).unwrap();
            let req = Request { table: "t".into(), version: 1, predicate, columns: [ColumnId::new("a")].into() };
            let resident: Vec<RegionId> = cache.index().regions().map(|r| r.id).collect();
            match kind {
                0 | 1 => if let Admission::Admit(ticket) = cache.observe_miss(&req) {
                    next_id += 1;
                    let region = Region { id: RegionId(next_id), table: "t".into(), version: 1, predicate: req.predicate.clone(), columns: req.columns.clone(), rows: 1, bytes };
                    if let Ok(evicted) = cache.insert(region, ticket) {
                        for e in evicted {
                            prop_assert!(cache.index().regions().all(|r| r.id != e.id));
                        }
                    }
                },
                2 => { if let Some(id) = resident.get(key as usize) { cache.record_hit(*id); } }
                _ => { if let Some(id) = resident.get(key as usize) { cache.remove(*id); } }
            }
            let sum: u64 = cache.index().regions().map(|r| r.bytes).sum();
            prop_assert!(cache.used_bytes() <= cache.bytes_max());
            prop_assert_eq!(sum, cache.used_bytes());
        }
    }

    /// (e) The oracle plan fits the budget and never holds a region contained
    /// in another held region.
    #[test]
    fn oracle_plan_fits_and_has_no_nested_regions(
        history in prop::collection::vec((0i128..20, 1i128..10, 1u64..50, any::<bool>(), 0u8..3), 1..40),
        existing in prop::collection::vec((0i128..20, 1i128..10, 1u64..50), 0..3),
        cache_bytes_max in 0u64..300,
    ) {
        let range_on = |col: &str, lo: i128, width: i128| Predicate::And(vec![
            Predicate::Compare { column: ColumnId::new(col), op: CmpOp::GtEq, value: Value::Int(lo) },
            Predicate::Compare { column: ColumnId::new(col), op: CmpOp::Lt, value: Value::Int(lo + width) },
        ]);
        let mut oracle = Oracle::new(OracleConfig::default());
        for (lo, width, bytes, on_b, repeat) in history {
            let p = range_on(if on_b { "b" } else { "a" }, lo, width);
            let request = Request { table: "t".into(), version: 1, predicate: to_dnf(&p).unwrap(), columns: [ColumnId::new("c")].into() };
            for _ in 0..=repeat {
                oracle.record(HistoryEntry { request: request.clone(), rows: bytes, bytes });
            }
        }
        let existing: Vec<Region> = existing.into_iter().enumerate().map(|(i, (lo, width, bytes))| Region {
            id: RegionId(i as u64), table: "t".into(), version: 1, predicate: to_dnf(&range_on("a", lo, width)).unwrap(),
            columns: COLUMNS.iter().map(|c| ColumnId::new(*c)).collect(), rows: bytes, bytes,
        }).collect();
        let plan = oracle.plan(&existing, cache_bytes_max, &GridEstimator);
        let mut held: Vec<(Request, u64)> = plan.create.iter().map(|p| (p.shape.clone(), p.bytes)).collect();
        held.extend(existing.iter().filter(|r| plan.keep.contains(&r.id)).map(|r| (r.shape(), r.bytes)));
        prop_assert!(held.iter().map(|(_, b)| *b).sum::<u64>() <= cache_bytes_max);
        for (i, (x, _)) in held.iter().enumerate() {
            for (j, (y, _)) in held.iter().enumerate() {
                prop_assert!(i == j || !x.covers(y), "held region {} contains held region {}", i, j);
            }
        }
        prop_assert_eq!(plan.keep.len() + plan.drop.len(), existing.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// (a) NNF + DNF (with contradiction dropping and absorption) keeps the
    /// TRUE set of the original predicate exactly.
    #[test]
    fn normalization_preserves_true_rows(p in any_predicate(), q in boxes()) {
        // Conjoining boxes puts several bounds on one column, so bound merging
        // (which bound is tighter) is exercised, not just the tree rewrites.
        let p = Predicate::And(vec![p, q]);
        if let Some(d) = to_dnf(&p) {
            let q = d.to_predicate();
            for row in rows() {
                prop_assert_eq!(is_true(&p, row), is_true(&q, row), "row {:?} dnf {:?}", row, d);
            }
        }
    }
}

proptest! {
    // Multi-piece covers are a minority of generated cases; run more of them.
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// (c) Cover pieces and the remainder partition the request: each TRUE row
    /// of the request is produced exactly once, no other row is produced, and a
    /// piece only yields rows its region holds.
    #[test]
    fn cover_partitions_the_request(
        parts in prop::collection::vec(any_predicate(), 1..5),
        regions in prop::collection::vec((any_predicate(), 0u8..16, 0usize..5), 0..6),
        extra in any_predicate(),
    ) {
        // Regions built from parts of the request exercise the greedy path;
        // masks >= 8 (half the cases) give a region every column.
        let r = Predicate::Or(parts.clone());
        let Some(rd) = to_dnf(&r) else { return Ok(()) };
        let request = Request { table: "t".into(), version: 1, predicate: rd, columns: [ColumnId::new("a")].into() };
        let (mut oracle, mut requested) = (RegionIndex::new(), RegionIndex::new());
        let mut originals = Vec::new();
        for (i, (p, mask, choice)) in regions.into_iter().enumerate() {
            let p = match parts.get(choice) {
                Some(part) if choice % 2 == 0 => Predicate::Or(vec![part.clone(), extra.clone()]),
                Some(part) => part.clone(),
                None => p,
            };
            let Some(d) = to_dnf(&p) else { continue };
            let columns: BTreeSet<ColumnId> = COLUMNS.iter().enumerate()
                .filter(|(k, _)| mask & (1 << k) != 0 || mask >= 8).map(|(_, c)| ColumnId::new(*c)).collect();
            let region = Region { id: RegionId(i as u64), table: "t".into(), version: 1, predicate: d, columns, rows: 1, bytes: 1 };
            originals.push((region.clone(), p));
            if i % 2 == 0 { oracle.insert(region) } else { requested.insert(region) }
        }
        let c = cover(&request, &oracle, &requested);
        let required = request.required_columns();
        for row in rows() {
            let mut produced = 0;
            for piece in &c.pieces {
                let (region, p) = originals.iter().find(|(g, _)| g.id == piece.region).expect("known region");
                prop_assert!(required.is_subset(&region.columns));
                if is_true(&piece.residual, row) {
                    produced += 1;
                    prop_assert!(is_true(p, row), "piece reads a row its region lacks: {:?}", row);
                }
            }
            produced += usize::from(c.remainder.as_ref().is_some_and(|m| is_true(m, row)));
            prop_assert_eq!(produced, usize::from(is_true(&r, row)), "row {:?}", row);
        }
    }
}

/// Size = number of grid points (a, b) in [-5, 35)² the shape's predicate keeps.
struct GridEstimator;

impl SizeEstimator for GridEstimator {
    fn estimate(&self, shape: &Request) -> Option<SizeEstimate> {
        let p = shape.predicate.to_predicate();
        let mut n = 0;
        for a in -5..35 {
            for b in -5..35 {
                let row: Row = [
                    (ColumnId::new("a"), Some(Value::Int(a))),
                    (ColumnId::new("b"), Some(Value::Int(b))),
                ]
                .into();
                n += u64::from(is_true(&p, &row));
            }
        }
        Some(SizeEstimate {
            rows: n,
            bytes: n / 10,
        })
    }
}
