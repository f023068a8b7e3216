//! Per-column restriction of one conjunction, and its set relations.
//!
//! "Crystal: A Unified Cache Storage System for Analytical Databases" (Section
//! 3.3) describes a restriction by its column, a `(min, max)` range, an optional
//! equal value, a set of not-equal values, and the isNull / isNotNull flags. This
//! module builds one by intersecting atoms and decides emptiness, containment,
//! intersection and (for Algorithm 3) a bounding hull.
//!
//! Semantics: a restriction denotes the set of cell values (NULL or a [`Value`])
//! for which all of its atoms are TRUE. Any comparison is TRUE only on a non-NULL
//! value of the literal's kind, so a comparison implies IS NOT NULL and fixes the
//! kind. Soundness rules: `is_empty` answers true only when the set is empty;
//! `contains` answers true only when it holds; `intersects` answers false only
//! when the sets are disjoint.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use crate::semantic::predicate::{AtomTest, CmpOp, Value, ValueKind};

/// One end of a value range.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Bound {
    /// No limit on this side.
    #[default]
    Unbounded,
    /// The value itself is allowed.
    Inclusive(Value),
    /// The value itself is excluded.
    Exclusive(Value),
}

impl Bound {
    fn value(&self) -> Option<&Value> {
        match self {
            Bound::Unbounded => None,
            Bound::Inclusive(v) | Bound::Exclusive(v) => Some(v),
        }
    }
}

/// Whether lower bound `a` admits everything lower bound `b` admits (same kind
/// assumed; an unknown comparison answers false, the safe side for `contains`).
pub fn lower_looser(a: &Bound, b: &Bound) -> bool {
    match (a, b) {
        (Bound::Unbounded, _) => true,
        (_, Bound::Unbounded) => false,
        (Bound::Exclusive(x), Bound::Inclusive(y)) => x.sql_cmp(y) == Some(Ordering::Less),
        (Bound::Inclusive(x) | Bound::Exclusive(x), Bound::Inclusive(y) | Bound::Exclusive(y)) => {
            matches!(x.sql_cmp(y), Some(Ordering::Less | Ordering::Equal))
        }
    }
}

/// Whether upper bound `a` admits everything upper bound `b` admits.
pub fn upper_looser(a: &Bound, b: &Bound) -> bool {
    match (a, b) {
        (Bound::Unbounded, _) => true,
        (_, Bound::Unbounded) => false,
        (Bound::Exclusive(x), Bound::Inclusive(y)) => x.sql_cmp(y) == Some(Ordering::Greater),
        (Bound::Inclusive(x) | Bound::Exclusive(x), Bound::Inclusive(y) | Bound::Exclusive(y)) => {
            matches!(x.sql_cmp(y), Some(Ordering::Greater | Ordering::Equal))
        }
    }
}

fn above_lower(v: &Value, lower: &Bound) -> bool {
    match lower {
        Bound::Unbounded => true,
        Bound::Inclusive(b) => matches!(v.sql_cmp(b), Some(Ordering::Greater | Ordering::Equal)),
        Bound::Exclusive(b) => v.sql_cmp(b) == Some(Ordering::Greater),
    }
}

fn below_upper(v: &Value, upper: &Bound) -> bool {
    match upper {
        Bound::Unbounded => true,
        Bound::Inclusive(b) => matches!(v.sql_cmp(b), Some(Ordering::Less | Ordering::Equal)),
        Bound::Exclusive(b) => v.sql_cmp(b) == Some(Ordering::Less),
    }
}

/// The restriction on one column within one conjunction (Crystal Section 3.3).
///
/// Invariant: every value in `lower`, `upper`, `eq` and `not_eq` has one kind;
/// comparisons against literals of another kind are kept verbatim in `foreign`
/// and only ever make answers more conservative.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Restriction {
    lower: Bound,
    upper: Bound,
    eq: Option<Value>,
    not_eq: BTreeSet<Value>,
    is_null: bool,
    is_not_null: bool,
    /// Comparisons whose literal kind differs from the restriction's kind.
    foreign: Vec<(CmpOp, Value)>,
    /// Set when merging proved emptiness that fields cannot express (`x=1 AND x=2`).
    proven_empty: bool,
}

impl Restriction {
    /// The restriction that allows every value and NULL.
    pub fn unconstrained() -> Self {
        Restriction::default()
    }

    /// Intersection of the given atomic tests on one column.
    pub fn from_tests<'a>(tests: impl IntoIterator<Item = &'a AtomTest>) -> Self {
        let mut r = Restriction::unconstrained();
        tests.into_iter().for_each(|t| r.add(t));
        r
    }

    /// Narrows this restriction by one more atomic test (set intersection).
    pub fn add(&mut self, test: &AtomTest) {
        match test {
            AtomTest::IsNull => self.is_null = true,
            AtomTest::IsNotNull => self.is_not_null = true,
            AtomTest::Compare(op, v) => self.add_compare(*op, v),
        }
    }

    fn add_compare(&mut self, op: CmpOp, v: &Value) {
        if self.kind().is_some_and(|k| k != v.kind()) {
            // Why verbatim: comparing across kinds is unknown, so we cannot pick
            // the tighter bound; keeping the atom keeps `to_tests` exact.
            self.foreign.push((op, v.clone()));
            return;
        }
        match op {
            CmpOp::Lt => self.tighten_upper(Bound::Exclusive(v.clone())),
            CmpOp::LtEq => self.tighten_upper(Bound::Inclusive(v.clone())),
            CmpOp::Gt => self.tighten_lower(Bound::Exclusive(v.clone())),
            CmpOp::GtEq => self.tighten_lower(Bound::Inclusive(v.clone())),
            CmpOp::NotEq => {
                self.not_eq.insert(v.clone());
            }
            CmpOp::Eq => match &self.eq {
                None => self.eq = Some(v.clone()),
                Some(e) if e == v => {}
                Some(_) => self.proven_empty = true,
            },
        }
    }

    fn tighten_lower(&mut self, b: Bound) {
        if lower_looser(&self.lower, &b) {
            self.lower = b;
        }
    }

    fn tighten_upper(&mut self, b: Bound) {
        if upper_looser(&self.upper, &b) {
            self.upper = b;
        }
    }

    /// The kind fixed by this restriction's merged comparisons, if any.
    pub fn kind(&self) -> Option<ValueKind> {
        self.lower
            .value()
            .or(self.upper.value())
            .or(self.eq.as_ref())
            .or(self.not_eq.iter().next())
            .map(Value::kind)
    }

    /// Whether any comparison (merged or foreign) is present; each excludes NULL.
    fn has_value_test(&self) -> bool {
        self.kind().is_some() || !self.foreign.is_empty()
    }

    /// The single value an equality test pins the column to, if any.
    pub fn equality(&self) -> Option<&Value> {
        self.eq.as_ref()
    }

    /// Whether NULL satisfies the restriction (exact).
    pub fn allows_null(&self) -> bool {
        !self.proven_empty && !self.is_not_null && !self.has_value_test()
    }

    /// Whether the non-NULL value `v` satisfies the restriction (exact).
    pub fn allows_value(&self, v: &Value) -> bool {
        !self.proven_empty
            && !self.is_null
            && self.foreign.is_empty() // a foreign test is unknown on any value of the merged kind
            && self.kind().is_none_or(|k| k == v.kind())
            && self.in_range(v)
            && self.eq.as_ref().is_none_or(|e| e == v)
            && !self.not_eq.contains(v)
    }

    fn in_range(&self, v: &Value) -> bool {
        above_lower(v, &self.lower) && below_upper(v, &self.upper)
    }

    /// Whether the range `[lower, upper]` is empty; same kind is guaranteed.
    fn range_empty(&self) -> bool {
        let (Some(lo), Some(hi)) = (self.lower.value(), self.upper.value()) else {
            return false;
        };
        match lo.sql_cmp(hi) {
            Some(Ordering::Greater) => true,
            Some(Ordering::Equal) => !matches!(
                (&self.lower, &self.upper),
                (Bound::Inclusive(_), Bound::Inclusive(_))
            ),
            _ => false,
        }
    }

    /// Sound emptiness: true only if no cell value satisfies the restriction.
    ///
    /// Incomplete on purpose: discrete gaps (`x > 1 AND x < 2` on integers) and
    /// foreign-kind mixes answer false, which only costs cache opportunities.
    pub fn is_empty(&self) -> bool {
        if self.proven_empty || (self.is_null && (self.is_not_null || self.has_value_test())) {
            return true;
        }
        if self.range_empty() {
            return true;
        }
        // A pinned value (`x = a`, or `x >= a AND x <= a`) that is excluded or out of range.
        self.point()
            .is_some_and(|p| !self.in_range(p) || self.not_eq.contains(p))
    }

    /// A single value the merged part pins the column to (`=` or `[a, a]`).
    fn point(&self) -> Option<&Value> {
        if let Some(e) = &self.eq {
            return Some(e);
        }
        match (&self.lower, &self.upper) {
            (Bound::Inclusive(a), Bound::Inclusive(b)) if a.sql_cmp(b) == Some(Ordering::Equal) => {
                Some(a)
            }
            _ => None,
        }
    }

    /// Sound containment: true only if every cell value allowed by `other` is
    /// allowed by `self` (the paper's `p_x ⊇ p_y`: null flags, range, not-equal
    /// values, equal value).
    pub fn contains(&self, other: &Restriction) -> bool {
        if other.is_empty() {
            return true;
        }
        if self.proven_empty || !self.foreign.is_empty() {
            return false; // conservative: cannot reason about foreign-kind tests
        }
        if other.allows_null() && !self.allows_null() {
            return false;
        }
        if other.is_null {
            return true; // other allows NULL at most, checked above
        }
        self.contains_values(other)
    }

    /// Containment of the non-NULL parts; `other` is non-empty and not IS NULL.
    fn contains_values(&self, other: &Restriction) -> bool {
        if self.is_null {
            return false;
        }
        let Some(kind) = self.kind() else {
            return true; // self allows every non-NULL value
        };
        if other.kind() != Some(kind) {
            return false; // other allows values of another (or any) kind
        }
        if let Some(p) = other.point() {
            return self.allows_value(p);
        }
        if self.eq.is_some() {
            return false; // incomplete for discrete domains; safe
        }
        lower_looser(&self.lower, &other.lower)
            && upper_looser(&self.upper, &other.upper)
            && self
                .not_eq
                .iter()
                .all(|n| other.not_eq.contains(n) || !other.in_range(n))
    }

    /// The restriction allowing exactly the values both allow.
    pub fn intersect(&self, other: &Restriction) -> Restriction {
        let mut r = self.clone();
        other.to_tests().iter().for_each(|t| r.add(t));
        r.proven_empty |= other.proven_empty;
        r
    }

    /// Sound intersection test: false only if no cell value satisfies both.
    pub fn intersects(&self, other: &Restriction) -> bool {
        !self.intersect(other).is_empty()
    }

    /// Whether the restriction constrains nothing (allows NULL and every value).
    pub fn is_unconstrained(&self) -> bool {
        *self == Restriction::unconstrained()
    }

    /// The atomic tests whose conjunction is exactly this restriction; a proven
    /// empty restriction yields `x IS NULL AND x IS NOT NULL` (also empty).
    pub fn to_tests(&self) -> Vec<AtomTest> {
        if self.proven_empty {
            return vec![AtomTest::IsNull, AtomTest::IsNotNull];
        }
        let mut out = Vec::new();
        match &self.lower {
            Bound::Unbounded => {}
            Bound::Inclusive(v) => out.push(AtomTest::Compare(CmpOp::GtEq, v.clone())),
            Bound::Exclusive(v) => out.push(AtomTest::Compare(CmpOp::Gt, v.clone())),
        }
        match &self.upper {
            Bound::Unbounded => {}
            Bound::Inclusive(v) => out.push(AtomTest::Compare(CmpOp::LtEq, v.clone())),
            Bound::Exclusive(v) => out.push(AtomTest::Compare(CmpOp::Lt, v.clone())),
        }
        if let Some(e) = &self.eq {
            out.push(AtomTest::Compare(CmpOp::Eq, e.clone()));
        }
        out.extend(
            self.not_eq
                .iter()
                .map(|n| AtomTest::Compare(CmpOp::NotEq, n.clone())),
        );
        if self.is_null {
            out.push(AtomTest::IsNull);
        }
        if self.is_not_null {
            out.push(AtomTest::IsNotNull);
        }
        out.extend(
            self.foreign
                .iter()
                .map(|(op, v)| AtomTest::Compare(*op, v.clone())),
        );
        out
    }

    /// Effective inclusive-or-not lower bound of the merged values (`=` pins it).
    fn effective_lower(&self) -> Bound {
        self.eq.clone().map_or(self.lower.clone(), Bound::Inclusive)
    }

    /// Effective upper bound of the merged values.
    fn effective_upper(&self) -> Bound {
        self.eq.clone().map_or(self.upper.clone(), Bound::Inclusive)
    }

    /// Whether both restrictions constrain values of one kind and their ranges
    /// overlap or touch. This is Algorithm 3's "approximative intersection" of
    /// "Crystal: A Unified Cache Storage System for Analytical Databases": the
    /// paper's small delta is realised as "no value lies strictly between the
    /// ranges": closures touching (`x < 1`, `x >= 1`), or an integer gap of one
    /// (`x <= 1`, `x >= 2`). Both IS NULL also counts (same single point).
    pub fn touches(&self, other: &Restriction) -> bool {
        if self.is_null && other.is_null {
            return true;
        }
        let Some(kind) = self.kind() else {
            return false;
        };
        if other.kind() != Some(kind) || self.is_empty() || other.is_empty() {
            return false;
        }
        gap_closed(&self.effective_upper(), &other.effective_lower())
            && gap_closed(&other.effective_upper(), &self.effective_lower())
    }

    /// A restriction containing both inputs (used by Algorithm 3 to enlarge
    /// regions by per-dimension global min and max). Not always the tightest:
    /// "NULL or a range" is not expressible, so that case widens to unconstrained.
    pub fn hull(&self, other: &Restriction) -> Restriction {
        if self.is_empty() {
            return other.clone();
        }
        if other.is_empty() {
            return self.clone();
        }
        let null_ok = self.allows_null() || other.allows_null();
        let values = ValueSpan::of(self).union(ValueSpan::of(other), self, other);
        let out = match (null_ok, values) {
            (true, ValueSpan::Nothing) => Restriction::from_tests(&[AtomTest::IsNull]),
            (true, _) => Restriction::unconstrained(),
            (false, ValueSpan::Nothing | ValueSpan::Any) => {
                Restriction::from_tests(&[AtomTest::IsNotNull])
            }
            (false, ValueSpan::Typed(r)) => r,
        };
        debug_assert!(
            out.contains(self) && out.contains(other),
            "hull must contain both"
        );
        out
    }
}

/// Whether no value lies strictly between an upper bound and a lower bound.
fn gap_closed(upper: &Bound, lower: &Bound) -> bool {
    let (Some(hi), Some(lo)) = (upper.value(), lower.value()) else {
        return true;
    };
    match (hi, lo) {
        (Value::Int(h), Value::Int(l)) => h.checked_add(1).is_none_or(|h1| h1 >= *l),
        _ => matches!(hi.sql_cmp(lo), Some(Ordering::Greater | Ordering::Equal)),
    }
}

/// The non-NULL part of a restriction, for hull construction.
enum ValueSpan {
    /// No non-NULL value (IS NULL).
    Nothing,
    /// Every non-NULL value (no comparison, or foreign tests we widen away).
    Any,
    /// A merged single-kind restriction (without null flags).
    Typed(Restriction),
}

impl ValueSpan {
    fn of(r: &Restriction) -> ValueSpan {
        if r.is_null {
            return ValueSpan::Nothing;
        }
        if r.kind().is_none() || !r.foreign.is_empty() {
            return ValueSpan::Any;
        }
        ValueSpan::Typed(Restriction {
            lower: r.effective_lower(),
            upper: r.effective_upper(),
            eq: r.eq.clone(),
            not_eq: r.not_eq.clone(),
            ..Restriction::default()
        })
    }

    fn union(self, other: ValueSpan, a: &Restriction, b: &Restriction) -> ValueSpan {
        match (self, other) {
            (ValueSpan::Nothing, x) | (x, ValueSpan::Nothing) => x,
            (ValueSpan::Any, _) | (_, ValueSpan::Any) => ValueSpan::Any,
            (ValueSpan::Typed(x), ValueSpan::Typed(y)) if x.kind() == y.kind() => {
                let lower = if lower_looser(&x.lower, &y.lower) {
                    x.lower
                } else {
                    y.lower
                };
                let upper = if upper_looser(&x.upper, &y.upper) {
                    x.upper
                } else {
                    y.upper
                };
                let eq = if x.eq == y.eq { x.eq } else { None };
                // Exclude a value only if both inputs exclude it.
                let not_eq = x
                    .not_eq
                    .union(&y.not_eq)
                    .filter(|n| !a.allows_value(n) && !b.allows_value(n))
                    .cloned()
                    .collect();
                let (lower, upper) = if eq.is_some() {
                    (Bound::Unbounded, Bound::Unbounded)
                } else {
                    (lower, upper)
                };
                ValueSpan::Typed(Restriction {
                    lower,
                    upper,
                    eq,
                    not_eq,
                    ..Restriction::default()
                })
            }
            _ => ValueSpan::Any,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(op: CmpOp, v: i128) -> AtomTest {
        AtomTest::Compare(op, Value::Int(v))
    }

    fn r(tests: &[AtomTest]) -> Restriction {
        Restriction::from_tests(tests)
    }

    #[test]
    fn contradictions_are_empty() {
        assert!(r(&[cmp(CmpOp::Lt, 1), cmp(CmpOp::Gt, 5)]).is_empty());
        assert!(r(&[cmp(CmpOp::Eq, 1), AtomTest::IsNull]).is_empty());
        assert!(r(&[cmp(CmpOp::Eq, 1), cmp(CmpOp::Eq, 2)]).is_empty());
        assert!(r(&[cmp(CmpOp::Eq, 1), cmp(CmpOp::NotEq, 1)]).is_empty());
        assert!(
            r(&[
                cmp(CmpOp::GtEq, 1),
                cmp(CmpOp::LtEq, 1),
                cmp(CmpOp::NotEq, 1)
            ])
            .is_empty()
        );
        assert!(r(&[cmp(CmpOp::GtEq, 1), cmp(CmpOp::Lt, 1)]).is_empty());
        assert!(!r(&[cmp(CmpOp::GtEq, 1), cmp(CmpOp::LtEq, 1)]).is_empty());
    }

    #[test]
    fn foreign_kinds_answer_conservatively() {
        let mixed = r(&[
            cmp(CmpOp::Lt, 5),
            AtomTest::Compare(CmpOp::Gt, Value::Text("a".into())),
        ]);
        assert!(!mixed.is_empty(), "conservative: not claimed empty");
        assert!(!mixed.contains(&r(&[cmp(CmpOp::Eq, 1)])));
        let text = r(&[AtomTest::Compare(CmpOp::Eq, Value::Text("a".into()))]);
        assert!(!r(&[cmp(CmpOp::Lt, 5)]).contains(&text));
        assert!(
            r(&[cmp(CmpOp::Lt, 5)]).intersects(&text),
            "conservative: may intersect"
        );
    }

    #[test]
    fn containment_follows_the_paper_rules() {
        let wide = r(&[cmp(CmpOp::GtEq, 0), cmp(CmpOp::Lt, 10)]);
        assert!(wide.contains(&r(&[cmp(CmpOp::Gt, 0), cmp(CmpOp::LtEq, 9)])));
        assert!(wide.contains(&r(&[cmp(CmpOp::Eq, 0)])));
        assert!(!wide.contains(&r(&[cmp(CmpOp::Eq, 10)])));
        assert!(!wide.contains(&r(&[cmp(CmpOp::GtEq, 0), cmp(CmpOp::LtEq, 10)])));
        let holed = r(&[cmp(CmpOp::NotEq, 3)]);
        assert!(!holed.contains(&r(&[cmp(CmpOp::Gt, 0)])));
        assert!(holed.contains(&r(&[cmp(CmpOp::Gt, 3)])));
        assert!(
            !holed.contains(&Restriction::unconstrained()),
            "NULL is not allowed by x <> 3"
        );
        assert!(r(&[AtomTest::IsNotNull]).contains(&holed));
        assert!(Restriction::unconstrained().contains(&r(&[AtomTest::IsNull])));
        assert!(!r(&[AtomTest::IsNotNull]).contains(&r(&[AtomTest::IsNull])));
    }

    #[test]
    fn adjacency_and_hull() {
        let left = r(&[cmp(CmpOp::GtEq, 0), cmp(CmpOp::Lt, 1)]);
        let right = r(&[cmp(CmpOp::GtEq, 1), cmp(CmpOp::Lt, 5)]);
        assert!(left.touches(&right));
        assert!(r(&[cmp(CmpOp::LtEq, 1)]).touches(&r(&[cmp(CmpOp::GtEq, 2)])));
        assert!(!r(&[cmp(CmpOp::LtEq, 1)]).touches(&r(&[cmp(CmpOp::GtEq, 3)])));
        let hull = left.hull(&right);
        assert_eq!(hull, r(&[cmp(CmpOp::GtEq, 0), cmp(CmpOp::Lt, 5)]));
    }
}
