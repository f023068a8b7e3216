//! Region predicates in disjunctive normal form and the region relations.
//!
//! "Crystal: A Unified Cache Storage System for Analytical Databases" (Section
//! 3.3) relates regions by their conjunctions: `r_x ⊇ r_y` if every conjunction of
//! `r_y` has a superset conjunction in `r_x`; they intersect if some pair of
//! conjunctions does; `r_x` is a partial superset if it covers at least one
//! conjunction of `r_y`; equality is containment both ways.
//!
//! The containment rule is sound but incomplete: a union of two conjunctions may
//! cover a third (`x<5 ∨ x>=5` covers `x=7`-ranges spanning 5) while no single one
//! does, and then `contains` answers false. That only loses cache hits.

use std::collections::BTreeSet;

use crate::semantic::conjunction::Conjunction;
use crate::semantic::normalize::{Nnf, NormalizeLimits, to_nnf};
use crate::semantic::predicate::{ColumnId, Predicate};

/// A disjunction of non-empty conjunctions; no conjunctions means FALSE.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dnf {
    conjunctions: Vec<Conjunction>,
}

impl Dnf {
    /// Normalizes a predicate: negation normal form, then AND distributed over OR
    /// (bounded by `limits.dnf_terms_max`); `None` = do not cache.
    pub fn from_predicate(p: &Predicate, limits: &NormalizeLimits) -> Option<Dnf> {
        to_dnf(p, limits)
    }

    /// Builds a DNF, dropping empty conjunctions and absorbing any conjunction
    /// contained in another (the union is unchanged, so this is exact).
    ///
    /// Sequential on purpose: a term is dropped only if a term kept at that
    /// moment contains it, and a kept term is replaced only by one containing
    /// it, so every dropped term stays inside a surviving one even though
    /// `contains` is incomplete (a pairwise rule could absorb a whole cycle).
    pub fn from_conjunctions(terms: Vec<Conjunction>) -> Dnf {
        let mut kept: Vec<Conjunction> = Vec::with_capacity(terms.len());
        for c in terms.into_iter().filter(|c| !c.is_empty()) {
            if kept.iter().any(|k| k.contains(&c)) {
                continue;
            }
            kept.retain(|k| !c.contains(k));
            kept.push(c);
        }
        Dnf { conjunctions: kept }
    }

    /// The TRUE predicate as a DNF.
    pub fn true_() -> Dnf {
        Dnf {
            conjunctions: vec![Conjunction::unconstrained()],
        }
    }

    /// The conjunctions (hyper-rectangles) of this DNF.
    pub fn conjunctions(&self) -> &[Conjunction] {
        &self.conjunctions
    }

    /// Consumes the DNF into its conjunctions.
    pub fn into_conjunctions(self) -> Vec<Conjunction> {
        self.conjunctions
    }

    /// Whether this DNF is FALSE (no conjunction).
    pub fn is_false(&self) -> bool {
        self.conjunctions.is_empty()
    }

    /// All predicated columns.
    pub fn columns(&self) -> BTreeSet<ColumnId> {
        self.conjunctions
            .iter()
            .flat_map(Conjunction::columns)
            .collect()
    }

    /// Whether some conjunction of self contains `c`.
    pub fn contains_conjunction(&self, c: &Conjunction) -> bool {
        c.is_empty() || self.conjunctions.iter().any(|mine| mine.contains(c))
    }

    /// Sound containment `self ⊇ other` by the paper's rule (incomplete; see
    /// module docs).
    pub fn contains(&self, other: &Dnf) -> bool {
        other
            .conjunctions
            .iter()
            .all(|c| self.contains_conjunction(c))
    }

    /// Sound intersection: false only if no row satisfies both.
    pub fn intersects(&self, other: &Dnf) -> bool {
        self.conjunctions
            .iter()
            .any(|a| other.conjunctions.iter().any(|b| a.intersects(b)))
    }

    /// Partial superset: self covers at least one conjunction of `other`.
    pub fn partially_contains(&self, other: &Dnf) -> bool {
        other
            .conjunctions
            .iter()
            .any(|c| self.contains_conjunction(c))
    }

    /// Equality as containment both ways (sound: true implies same rows).
    pub fn equivalent(&self, other: &Dnf) -> bool {
        self.contains(other) && other.contains(self)
    }

    /// Exact predicate: OR of the conjunctions (`Or([])` = FALSE).
    pub fn to_predicate(&self) -> Predicate {
        match self.conjunctions.as_slice() {
            [one] => one.to_predicate(),
            many => Predicate::Or(many.iter().map(Conjunction::to_predicate).collect()),
        }
    }

    /// A syntactic canonical form (conjunctions sorted) for fingerprints:
    /// equal canonical forms imply equal row sets, not conversely.
    pub fn canonical(&self) -> Dnf {
        let mut conjunctions = self.conjunctions.clone();
        conjunctions.sort();
        conjunctions.dedup();
        Dnf { conjunctions }
    }
}

/// Converts a predicate to a DNF, or `None` if a limit is exceeded.
///
/// Contradictory conjunctions are dropped as they are built, and conjunctions
/// contained in another are absorbed, so an empty result means FALSE.
fn to_dnf(p: &Predicate, limits: &NormalizeLimits) -> Option<Dnf> {
    assert!(
        limits.dnf_terms_max >= 1,
        "dnf_terms_max must allow one term"
    );
    let nnf = to_nnf(p, false, limits.predicate_depth_max)?;
    let terms = dnf_terms(&nnf, limits.dnf_terms_max)?;
    Some(Dnf::from_conjunctions(terms))
}

fn dnf_terms(n: &Nnf, terms_max: usize) -> Option<Vec<Conjunction>> {
    match n {
        Nnf::True => Some(vec![Conjunction::unconstrained()]),
        Nnf::False => Some(Vec::new()),
        Nnf::Atom(a) => {
            let c = Conjunction::from_atoms([a]);
            Some(if c.is_empty() { Vec::new() } else { vec![c] })
        }
        Nnf::Or(children) => {
            let mut out = Vec::new();
            for child in children {
                out.extend(dnf_terms(child, terms_max)?);
                out = within_limit(out, terms_max)?;
            }
            Some(out)
        }
        Nnf::And(children) => {
            let mut acc = vec![Conjunction::unconstrained()];
            for child in children {
                if acc.is_empty() {
                    break; // FALSE absorbs the rest
                }
                acc = distribute(&acc, &dnf_terms(child, terms_max)?, terms_max)?;
            }
            Some(acc)
        }
    }
}

/// `(a1 ∨ a2) ∧ (b1 ∨ b2)` = `∨ (ai ∧ bj)`, dropping empty products.
fn distribute(a: &[Conjunction], b: &[Conjunction], terms_max: usize) -> Option<Vec<Conjunction>> {
    let mut out = Vec::new();
    for x in a {
        for y in b {
            let c = x.intersect(y);
            if !c.is_empty() {
                out.push(c);
            }
            if out.len() > terms_max {
                out = within_limit(out, terms_max)?;
            }
        }
    }
    Some(out)
}

/// Absorbs redundant terms if over the limit; `None` if still over.
fn within_limit(terms: Vec<Conjunction>, terms_max: usize) -> Option<Vec<Conjunction>> {
    if terms.len() <= terms_max {
        return Some(terms);
    }
    let absorbed = Dnf::from_conjunctions(terms).into_conjunctions();
    (absorbed.len() <= terms_max).then_some(absorbed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::predicate::{CmpOp, Value};

    fn cmp(c: &str, op: CmpOp, v: i128) -> Predicate {
        Predicate::Compare {
            column: ColumnId::new(c),
            op,
            value: Value::Int(v),
        }
    }

    fn dnf(p: Predicate) -> Dnf {
        Dnf::from_predicate(&p, &NormalizeLimits::default()).unwrap()
    }

    #[test]
    fn region_relations_follow_the_paper() {
        // Region r_x = (x<10) ∨ (y>5); request r_y = (x<3 ∧ y=1) ∨ (y>7).
        let rx = dnf(Predicate::Or(vec![
            cmp("x", CmpOp::Lt, 10),
            cmp("y", CmpOp::Gt, 5),
        ]));
        let ry = dnf(Predicate::Or(vec![
            Predicate::And(vec![cmp("x", CmpOp::Lt, 3), cmp("y", CmpOp::Eq, 1)]),
            cmp("y", CmpOp::Gt, 7),
        ]));
        assert!(rx.contains(&ry));
        assert!(!ry.contains(&rx));
        assert!(rx.intersects(&ry));
        let partial = dnf(cmp("x", CmpOp::Lt, 10));
        assert!(!partial.contains(&ry));
        assert!(partial.partially_contains(&ry));
        assert!(rx.equivalent(&rx.canonical()));
    }

    #[test]
    fn union_coverage_is_not_detected_documented_incompleteness() {
        let split = dnf(Predicate::Or(vec![
            cmp("x", CmpOp::Lt, 5),
            cmp("x", CmpOp::GtEq, 5),
        ]));
        let span = dnf(Predicate::And(vec![
            cmp("x", CmpOp::Gt, 0),
            cmp("x", CmpOp::Lt, 9),
        ]));
        assert!(
            !split.contains(&span),
            "sound but incomplete, as in the paper"
        );
    }

    #[test]
    fn absorption_keeps_the_union() {
        let d = dnf(Predicate::Or(vec![
            cmp("x", CmpOp::Lt, 5),
            cmp("x", CmpOp::Lt, 3),
        ]));
        assert_eq!(d.conjunctions().len(), 1);
    }

    fn to_dnf(p: &Predicate, limits: &NormalizeLimits) -> Option<Dnf> {
        Dnf::from_predicate(p, limits)
    }

    fn lt(c: &str, v: i128) -> Predicate {
        cmp(c, CmpOp::Lt, v)
    }

    fn gt(c: &str, v: i128) -> Predicate {
        cmp(c, CmpOp::Gt, v)
    }

    #[test]
    fn paper_example_and_over_or_distributes() {
        // and(a, or(b, c)) -> or(and(a, b), and(a, c))
        let p = Predicate::And(vec![
            lt("a", 1),
            Predicate::Or(vec![lt("b", 1), lt("c", 1)]),
        ]);
        let dnf = to_dnf(&p, &NormalizeLimits::default()).unwrap();
        assert_eq!(dnf.conjunctions().len(), 2);
        for c in dnf.conjunctions() {
            assert!(c.restriction(&ColumnId::new("a")).is_some());
        }
    }

    #[test]
    fn contradictions_drop_and_false_is_empty() {
        let p = Predicate::Or(vec![
            Predicate::And(vec![lt("x", 1), gt("x", 5)]),
            Predicate::And(vec![
                Predicate::Compare {
                    column: ColumnId::new("x"),
                    op: CmpOp::Eq,
                    value: Value::Int(1),
                },
                Predicate::IsNull(ColumnId::new("x")),
            ]),
        ]);
        let dnf = to_dnf(&p, &NormalizeLimits::default()).unwrap();
        assert!(dnf.is_false());
    }

    #[test]
    fn is_not_true_is_cacheable_only_under_negation() {
        let inner = Box::new(lt("x", 1));
        let limits = NormalizeLimits::default();
        assert!(to_dnf(&Predicate::IsNotTrue(inner.clone()), &limits).is_none());
        let negated = Predicate::Not(Box::new(Predicate::IsNotTrue(inner)));
        assert_eq!(to_dnf(&negated, &limits), to_dnf(&lt("x", 1), &limits));
    }

    #[test]
    fn blowup_beyond_terms_max_is_not_cached() {
        // (a1<1 ∨ a1>5) ∧ … over 7 columns = 128 terms > 64.
        let factors = (0..7)
            .map(|i| Predicate::Or(vec![lt(&format!("a{i}"), 1), gt(&format!("a{i}"), 5)]))
            .collect();
        assert!(to_dnf(&Predicate::And(factors), &NormalizeLimits::default()).is_none());
        let deep = (0..100).fold(Predicate::True, |p, _| Predicate::Not(Box::new(p)));
        assert!(to_dnf(&deep, &NormalizeLimits::default()).is_none());
    }
}
