//! Raw NDJSON in place: each line is one JSON document, exposed as a single JSON column.
//!
//! Files are read in large ranged requests (several in flight), split across cores by
//! byte range (compressed files stay whole), cut into lines without copying, and parsed
//! by the validating scanner of [`crate::json`], which extracts only the paths the query
//! pushed into the scan.

pub mod aggregated;
pub mod decode;
pub mod format;
pub mod lines;
pub mod open;
pub mod read;
pub mod select;
pub mod source;
#[cfg(test)]
mod validation_tests;

pub use format::{NdjsonFormat, NdjsonFormatFactory};
