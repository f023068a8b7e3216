//! What a query reads of a JSON column, shared by both data sources.
//!
//! DataFusion pushes a projection and filters into a scan; [`extraction`] turns the JSON
//! accesses among them (`j->>'$.a.b'`, `json_get_int(j, 'n')`, casts of them) into the
//! paths a scan extracts and the decoded batch it builds ([`layout`]); [`pushable`]
//! recognizes those accesses, and [`document_filter`] the equality filters a scan can
//! judge per document while parsing.

pub mod document_filter;
pub mod extraction;
pub mod layout;
pub mod pushable;
