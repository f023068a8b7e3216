//! Storage-side pushdown: the parts of a scan a store can run before sending bytes.
//!
//! After "PushdownDB: Accelerating a DBMS using S3 Computation" (ICDE 2020), which
//! pushed filters and projections into S3 Select, and Modularis, which made the
//! storage-side scan one more platform-specific sub-operator of the same plan. This
//! crate holds what does not depend on the query engine: the S3 Select SQL of a scan
//! ([`select_sql`], conditions that hold for at least what the scan keeps, written in
//! the forms a store's evaluator accepts on heterogeneous JSON) and what the values a
//! store returns still mean ([`rendering`]), and the Bloom filters of a Bloom join in
//! a form S3 Select can test ([`bloom`]), and aggregations the store computes
//! whole, per object and group ([`select_aggregate`]), and the S3 Select SQL of a CSV
//! scan ([`select_csv`]). The engine translates its plans into a
//! [`select_sql::SelectScan`] and reads the answers.

pub mod bloom;
pub mod cost;
pub mod rendering;
pub mod select_aggregate;
pub mod select_csv;
pub mod select_sql;
