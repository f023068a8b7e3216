//! Semantic region cache core after "Crystal: A Unified Cache Storage System
//! for Analytical Databases" (Durner, Chandramouli, Li; VLDB 2021).
//!
//! Pure logic only: no I/O, no clocks, no threads. The engine supplies pushed-down
//! predicates, statistics and size estimates; this module decides which cached
//! regions answer a request, what to fetch remotely, what the small requested-region
//! (RR) cache admits and evicts, and what the large oracle-region (OR) cache should
//! hold.
//!
//! Pipeline: [`predicate::Predicate`] → [`normalize`] (NNF, then DNF bounded by
//! `dnf_terms_max`) → [`dnf::Dnf`] of [`conjunction::Conjunction`]s of per-column
//! [`restriction::Restriction`]s → [`region`] / [`cover`] (Algorithm 1) →
//! [`requested`] (LRU-2) and [`oracle`] (Algorithms 2 and 3), sized by [`budget`].
//!
//! Soundness is the invariant everywhere: a relation (`contains`, `is_empty`, …)
//! may answer "don't know" in the safe direction, never in the unsafe one.

pub mod budget;
pub mod conjunction;
pub mod cover;
pub mod dnf;
pub mod normalize;
pub mod oracle;
pub mod predicate;
pub mod region;
pub mod requested;
pub mod restriction;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod testkit;
