//! Test helpers shared by unit and property tests (compiled only for tests).

use std::collections::BTreeSet;

use crate::semantic::dnf::Dnf;
use crate::semantic::normalize::NormalizeLimits;
use crate::semantic::oracle::history::HistoryEntry;
use crate::semantic::oracle::{SizeEstimate, SizeEstimator};
use crate::semantic::predicate::{CmpOp, ColumnId, Predicate, Value};
use crate::semantic::region::{Region, RegionId, Request};

/// `column op int`.
pub fn cmp(column: &str, op: CmpOp, v: i128) -> Predicate {
    Predicate::Compare {
        column: ColumnId::new(column),
        op,
        value: Value::Int(v),
    }
}

/// `lo <= column < hi`.
pub fn range(column: &str, lo: i128, hi: i128) -> Predicate {
    Predicate::And(vec![
        cmp(column, CmpOp::GtEq, lo),
        cmp(column, CmpOp::Lt, hi),
    ])
}

/// Normalizes with default limits, panicking if not cacheable.
pub fn dnf(p: &Predicate) -> Dnf {
    Dnf::from_predicate(p, &NormalizeLimits::default()).expect("cacheable predicate")
}

/// Column set from names.
pub fn cols(names: &[&str]) -> BTreeSet<ColumnId> {
    names.iter().map(|n| ColumnId::new(*n)).collect()
}

/// A request on table `t` version 1 projecting x and y.
pub fn request(p: &Predicate) -> Request {
    Request {
        table: "t".into(),
        version: 1,
        predicate: dnf(p),
        columns: cols(&["x", "y"]),
    }
}

/// A region on table `t` version 1 holding x, y and z.
pub fn region(id: u64, p: &Predicate, bytes: u64) -> Region {
    Region {
        id: RegionId(id),
        table: "t".into(),
        version: 1,
        predicate: dnf(p),
        columns: cols(&["x", "y", "z"]),
        rows: bytes,
        bytes,
    }
}

/// A history entry for `range(column, lo, hi)` of the given size.
pub fn seen(p: &Predicate, bytes: u64) -> HistoryEntry {
    HistoryEntry {
        request: request(p),
        rows: bytes,
        bytes,
    }
}

/// Estimates bytes as the width of the bounding x-range (unbounded: 10_000).
pub struct WidthEstimator;

impl SizeEstimator for WidthEstimator {
    fn estimate(&self, shape: &Request) -> Option<SizeEstimate> {
        let row: u64 = (-100..200)
            .filter(|&x| {
                let row = [(ColumnId::new("x"), Some(Value::Int(x)))].into();
                shape.predicate.to_predicate().eval(&row) == Some(true)
            })
            .count() as u64;
        let bytes = if row >= 300 { 10_000 } else { row };
        Some(SizeEstimate { rows: bytes, bytes })
    }
}
