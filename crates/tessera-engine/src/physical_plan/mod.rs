//! Tessera's own physical operators.
//!
//! - [`code_aggregate`]: `CodeAggregateExec`, grouping on the dictionary codes a Tessera
//!   table stores instead of hashing strings.

pub mod code_aggregate;
