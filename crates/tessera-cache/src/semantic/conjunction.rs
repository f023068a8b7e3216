//! A conjunction of per-column restrictions: one hyper-rectangle of a region.
//!
//! "Crystal: A Unified Cache Storage System for Analytical Databases" (Section
//! 3.2) stores each DNF term as a list of column restrictions; "every conjunction
//! has exactly one restriction for each predicated column" and a missing column is
//! unconstrained. Because restrictions on distinct columns are independent, the
//! conjunction's row set is the product of its restrictions' value sets.

use std::collections::{BTreeMap, BTreeSet};

use crate::semantic::predicate::{Atom, ColumnId, Predicate, Value};
use crate::semantic::restriction::Restriction;

/// A conjunction: column → restriction; absent columns are unconstrained.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Conjunction {
    restrictions: BTreeMap<ColumnId, Restriction>,
}

impl Conjunction {
    /// The TRUE conjunction (no restriction on any column).
    pub fn unconstrained() -> Self {
        Conjunction::default()
    }

    /// The conjunction of the given atoms.
    pub fn from_atoms<'a>(atoms: impl IntoIterator<Item = &'a Atom>) -> Self {
        let mut c = Conjunction::unconstrained();
        atoms.into_iter().for_each(|a| c.add(a));
        c
    }

    /// Narrows the conjunction by one atom.
    pub fn add(&mut self, atom: &Atom) {
        self.restrictions
            .entry(atom.column.clone())
            .or_default()
            .add(&atom.test);
    }

    /// The restriction on `column`, if the conjunction constrains it.
    pub fn restriction(&self, column: &ColumnId) -> Option<&Restriction> {
        self.restrictions.get(column)
    }

    /// All (column, restriction) pairs in column order.
    pub fn restrictions(&self) -> impl Iterator<Item = (&ColumnId, &Restriction)> {
        self.restrictions.iter()
    }

    /// The constrained columns.
    pub fn columns(&self) -> BTreeSet<ColumnId> {
        self.restrictions.keys().cloned().collect()
    }

    /// Sound emptiness: true only if no row satisfies the conjunction.
    pub fn is_empty(&self) -> bool {
        self.restrictions.values().any(Restriction::is_empty)
    }

    /// The conjunction allowing exactly the rows both allow.
    pub fn intersect(&self, other: &Conjunction) -> Conjunction {
        let mut out = self.clone();
        for (column, r) in &other.restrictions {
            let merged = match out.restrictions.get(column) {
                Some(mine) => mine.intersect(r),
                None => r.clone(),
            };
            out.restrictions.insert(column.clone(), merged);
        }
        out
    }

    /// Sound containment `self ⊇ other`: each of self's restrictions contains
    /// other's restriction on the same column (an absent one is unconstrained).
    pub fn contains(&self, other: &Conjunction) -> bool {
        if other.is_empty() {
            return true;
        }
        let free = Restriction::unconstrained();
        self.restrictions
            .iter()
            .all(|(column, mine)| mine.contains(other.restrictions.get(column).unwrap_or(&free)))
    }

    /// Sound intersection: false only if no row satisfies both.
    pub fn intersects(&self, other: &Conjunction) -> bool {
        !self.intersect(other).is_empty()
    }

    /// The conjunction as an exact predicate (`True` when unconstrained).
    pub fn to_predicate(&self) -> Predicate {
        let atoms: Vec<Predicate> = self
            .restrictions
            .iter()
            .flat_map(|(column, r)| {
                r.to_tests().into_iter().map(move |test| {
                    Atom {
                        column: column.clone(),
                        test,
                    }
                    .to_predicate()
                })
            })
            .collect();
        if atoms.is_empty() {
            Predicate::True
        } else {
            Predicate::And(atoms)
        }
    }

    /// Bounding hull: per column, a restriction containing both; a column
    /// constrained by only one side becomes unconstrained (Algorithm 3).
    pub fn hull(&self, other: &Conjunction) -> Conjunction {
        let restrictions = self
            .restrictions
            .iter()
            .filter_map(|(column, mine)| {
                let theirs = other.restrictions.get(column)?;
                let h = mine.hull(theirs);
                (!h.is_unconstrained()).then(|| (column.clone(), h))
            })
            .collect();
        Conjunction { restrictions }
    }

    /// Whether the two conjunctions approximately intersect as regions: they touch in
    /// every dimension both constrain (a dimension one leaves free always meets).
    pub fn touches(&self, other: &Conjunction) -> bool {
        self.restrictions.iter().all(|(column, mine)| {
            other
                .restrictions
                .get(column)
                .is_none_or(|theirs| mine.touches(theirs))
        })
    }

    /// The columns pinned to one value, with their values: conjunctions with different
    /// ones lie in different categories (a collection, a tenant), which a hull keeps
    /// apart rather than spanning every value between them.
    pub fn equalities(&self) -> BTreeMap<ColumnId, Value> {
        self.restrictions
            .iter()
            .filter_map(|(column, r)| Some((column.clone(), r.equality()?.clone())))
            .collect()
    }

    /// Whether the two conjunctions approximately intersect in at least one
    /// dimension constrained by both (Algorithm 3's merge precondition).
    pub fn touches_in_some_dimension(&self, other: &Conjunction) -> bool {
        self.restrictions.iter().any(|(column, mine)| {
            other
                .restrictions
                .get(column)
                .is_some_and(|theirs| mine.touches(theirs))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::predicate::{AtomTest, CmpOp, Value};

    fn atom(c: &str, op: CmpOp, v: i128) -> Atom {
        Atom {
            column: ColumnId::new(c),
            test: AtomTest::Compare(op, Value::Int(v)),
        }
    }

    #[test]
    fn missing_column_is_unconstrained() {
        let wide = Conjunction::from_atoms(&[atom("x", CmpOp::Lt, 10)]);
        let narrow = Conjunction::from_atoms(&[atom("x", CmpOp::Lt, 5), atom("y", CmpOp::Eq, 1)]);
        assert!(wide.contains(&narrow));
        assert!(!narrow.contains(&wide));
        assert!(wide.intersects(&narrow));
        let apart = Conjunction::from_atoms(&[atom("x", CmpOp::GtEq, 10)]);
        assert!(!wide.intersects(&apart));
    }
}
