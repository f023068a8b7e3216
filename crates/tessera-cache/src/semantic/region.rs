//! Cached regions, scan requests, and when a region answers a request.
//!
//! In "Crystal: A Unified Cache Storage System for Analytical Databases" a region
//! is a disjunction of hyper-rectangles plus its source files and projected schema;
//! here the source is a table at one snapshot `version`, so a region never answers
//! a request against another snapshot.

use std::collections::BTreeSet;

use crate::semantic::dnf::Dnf;
use crate::semantic::predicate::ColumnId;

/// Identifier of a materialized region (the caller maps it to a file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RegionId(pub u64);

/// A materialized region: the rows of `table@version` satisfying `predicate`,
/// projected to `columns`.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    /// Identity used by the caller to find and delete the file.
    pub id: RegionId,
    /// Source table.
    pub table: String,
    /// Source snapshot; regions of other snapshots never answer.
    pub version: u64,
    /// Rows kept.
    pub predicate: Dnf,
    /// Columns kept: projected ones plus any needed for residual filters.
    pub columns: BTreeSet<ColumnId>,
    /// Row count (statistics).
    pub rows: u64,
    /// Materialized size in bytes (the cache charge).
    pub bytes: u64,
}

/// A scan request pushed down by the engine (Crystal's "requested region").
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Request {
    /// Source table.
    pub table: String,
    /// Source snapshot.
    pub version: u64,
    /// Pushed-down filter, normalized.
    pub predicate: Dnf,
    /// Projected columns.
    pub columns: BTreeSet<ColumnId>,
}

/// A canonical, ordered key of a request: equal keys imply the same rows and
/// columns. Used for LRU-2 history and candidate de-duplication.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RequestKey(Request);

impl Request {
    /// Columns a region must hold to answer this request: the projection plus
    /// the predicate's columns, because the residual filter runs over the
    /// region's rows (a region may be a strict superset of the request).
    pub fn required_columns(&self) -> BTreeSet<ColumnId> {
        let mut out = self.columns.clone();
        out.extend(self.predicate.columns());
        out
    }

    /// Canonical key; see [`RequestKey`].
    pub fn key(&self) -> RequestKey {
        RequestKey(Request {
            predicate: self.predicate.canonical(),
            ..self.clone()
        })
    }

    /// The shape of a region that would store exactly this request's rows with
    /// every column needed to answer it (and similar requests) later.
    pub fn materialized_shape(&self) -> Request {
        Request {
            columns: self.required_columns(),
            ..self.clone()
        }
    }

    /// Whether a region with this shape (`self` read as a region) answers `other`.
    pub fn covers(&self, other: &Request) -> bool {
        shape_answers(
            &self.table,
            self.version,
            &self.predicate,
            &self.columns,
            other,
        )
    }
}

impl Region {
    /// Whether this region alone answers the request: same table and snapshot,
    /// predicate containment (paper's rule), and all required columns present.
    pub fn answers(&self, request: &Request) -> bool {
        shape_answers(
            &self.table,
            self.version,
            &self.predicate,
            &self.columns,
            request,
        )
    }

    /// The region's shape as a request (table, version, predicate, columns).
    pub fn shape(&self) -> Request {
        Request {
            table: self.table.clone(),
            version: self.version,
            predicate: self.predicate.clone(),
            columns: self.columns.clone(),
        }
    }
}

fn shape_answers(
    table: &str,
    version: u64,
    predicate: &Dnf,
    columns: &BTreeSet<ColumnId>,
    request: &Request,
) -> bool {
    table == request.table
        && version == request.version
        && request.required_columns().is_subset(columns)
        && predicate.contains(&request.predicate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::normalize::NormalizeLimits;
    use crate::semantic::predicate::{CmpOp, Predicate, Value};

    fn cols(names: &[&str]) -> BTreeSet<ColumnId> {
        names.iter().map(|n| ColumnId::new(*n)).collect()
    }

    fn lt(c: &str, v: i128) -> Dnf {
        let p = Predicate::Compare {
            column: ColumnId::new(c),
            op: CmpOp::Lt,
            value: Value::Int(v),
        };
        Dnf::from_predicate(&p, &NormalizeLimits::default()).unwrap()
    }

    #[test]
    fn answers_requires_table_version_containment_and_columns() {
        let region = Region {
            id: RegionId(1),
            table: "t".into(),
            version: 7,
            predicate: lt("x", 10),
            columns: cols(&["x", "y"]),
            rows: 10,
            bytes: 100,
        };
        let request = Request {
            table: "t".into(),
            version: 7,
            predicate: lt("x", 5),
            columns: cols(&["y"]),
        };
        assert!(region.answers(&request));
        assert!(!region.answers(&Request {
            version: 8,
            ..request.clone()
        }));
        assert!(!region.answers(&Request {
            predicate: lt("x", 11),
            ..request.clone()
        }));
        // The residual filter on z cannot run over a region without z.
        assert!(!region.answers(&Request {
            predicate: lt("z", 1),
            ..request.clone()
        }));
        assert!(!region.answers(&Request {
            columns: cols(&["w"]),
            ..request
        }));
    }
}
