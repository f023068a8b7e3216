//! Predicate normalization to negation normal form, from which the region
//! predicates' disjunctive normal form is built (`Dnf::from_predicate`).
//!
//! Follows "Crystal: A Unified Cache Storage System for Analytical Databases"
//! (Section 3.1): push negations down with De Morgan and by inverting atoms
//! (`not(lt(id,1))` → `gteq(id,1)`), then distribute AND over OR. The paper notes
//! the 2^n worst case was never observed; we still bound it by `dnf_terms_max`
//! and give up (the query is simply not cached) beyond it.
//!
//! Why inverting atoms is exact here: the cache only needs the rows where a
//! predicate is TRUE (SQL WHERE semantics). `NOT (x < 1)` is TRUE exactly when
//! `x < 1` is FALSE, i.e. x is non-NULL, of the literal's kind, and `x >= 1`;
//! that is exactly where `x >= 1` is TRUE. On NULL (or a kind mismatch) both
//! sides are UNKNOWN, hence not TRUE. Likewise `NOT (x IS NULL)` is
//! `x IS NOT NULL` (never UNKNOWN), and `x NOT IN (a, b)` is TRUE exactly where
//! `x <> a AND x <> b` is TRUE. De Morgan holds in three-valued logic, so the
//! whole NNF has the same TRUE set as the input (in fact the same truth value).

use crate::semantic::predicate::{Atom, AtomTest, CmpOp, Predicate};

/// Default cap on DNF terms; beyond it a request is not cached.
pub const DNF_TERMS_MAX_DEFAULT: usize = 64;
/// Default cap on predicate nesting depth (bounds recursion).
pub const PREDICATE_DEPTH_MAX_DEFAULT: usize = 64;

/// Limits of normalization; exceeding any returns `None` (do not cache).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NormalizeLimits {
    /// Maximum number of conjunctions in the resulting (and any intermediate) DNF.
    pub dnf_terms_max: usize,
    /// Maximum nesting depth of the input predicate.
    pub predicate_depth_max: usize,
}

impl Default for NormalizeLimits {
    fn default() -> Self {
        NormalizeLimits {
            dnf_terms_max: DNF_TERMS_MAX_DEFAULT,
            predicate_depth_max: PREDICATE_DEPTH_MAX_DEFAULT,
        }
    }
}

/// Negation normal form: negations only inside atoms.
#[derive(Debug, Clone, PartialEq)]
pub enum Nnf {
    /// TRUE.
    True,
    /// FALSE.
    False,
    /// An atomic predicate.
    Atom(Atom),
    /// Conjunction.
    And(Vec<Nnf>),
    /// Disjunction.
    Or(Vec<Nnf>),
}

/// Converts a predicate to NNF (`negated` = convert its negation instead).
/// Returns `None` if the nesting exceeds `depth_max` or the predicate holds an
/// un-negated `IS NOT TRUE` (see [`Predicate::IsNotTrue`]).
pub fn to_nnf(p: &Predicate, negated: bool, depth_max: usize) -> Option<Nnf> {
    let depth = depth_max.checked_sub(1)?;
    let children = |cs: &[Predicate]| -> Option<Vec<Nnf>> {
        cs.iter().map(|c| to_nnf(c, negated, depth)).collect()
    };
    let atom = |column: &crate::semantic::predicate::ColumnId, test: AtomTest| {
        let a = Atom {
            column: column.clone(),
            test,
        };
        Nnf::Atom(if negated { a.negate() } else { a })
    };
    Some(match p {
        Predicate::True => {
            if negated {
                Nnf::False
            } else {
                Nnf::True
            }
        }
        // De Morgan: NOT(AND) = OR(NOT), NOT(OR) = AND(NOT).
        Predicate::And(cs) if negated => Nnf::Or(children(cs)?),
        Predicate::And(cs) => Nnf::And(children(cs)?),
        Predicate::Or(cs) if negated => Nnf::And(children(cs)?),
        Predicate::Or(cs) => Nnf::Or(children(cs)?),
        Predicate::Not(c) => to_nnf(c, !negated, depth)?,
        // NOT (p IS NOT TRUE) has exactly p's TRUE rows.
        Predicate::IsNotTrue(c) if negated => to_nnf(c, false, depth)?,
        // The complement of a TRUE set includes UNKNOWN rows (NULLs, kind
        // mismatches), which restrictions cannot express: not cacheable.
        Predicate::IsNotTrue(_) => return None,
        Predicate::Compare { column, op, value } => {
            atom(column, AtomTest::Compare(*op, value.clone()))
        }
        Predicate::IsNull(column) => atom(column, AtomTest::IsNull),
        Predicate::IsNotNull(column) => atom(column, AtomTest::IsNotNull),
        Predicate::InList {
            column,
            values,
            negated: not_in,
        } => in_list_nnf(column, values, *not_in != negated),
    })
}

/// `x IN (v..)` is `OR(x = v)`; `x NOT IN (v..)` is `AND(x <> v)` (see module
/// docs for why this is exact on TRUE sets). Empty lists: FALSE / TRUE.
fn in_list_nnf(
    column: &crate::semantic::predicate::ColumnId,
    values: &[crate::semantic::predicate::Value],
    not_in: bool,
) -> Nnf {
    let op = if not_in { CmpOp::NotEq } else { CmpOp::Eq };
    let atoms = values
        .iter()
        .map(|v| {
            Nnf::Atom(Atom {
                column: column.clone(),
                test: AtomTest::Compare(op, v.clone()),
            })
        })
        .collect();
    if not_in {
        Nnf::And(atoms)
    } else {
        Nnf::Or(atoms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::predicate::{ColumnId, Value};

    fn lt(c: &str, v: i128) -> Predicate {
        Predicate::Compare {
            column: ColumnId::new(c),
            op: CmpOp::Lt,
            value: Value::Int(v),
        }
    }

    #[test]
    fn paper_example_not_lt_becomes_gteq() {
        let p = Predicate::Not(Box::new(lt("id", 1)));
        let nnf = to_nnf(&p, false, 8).unwrap();
        let expected = Nnf::Atom(Atom {
            column: ColumnId::new("id"),
            test: AtomTest::Compare(CmpOp::GtEq, Value::Int(1)),
        });
        assert_eq!(nnf, expected);
    }
}
