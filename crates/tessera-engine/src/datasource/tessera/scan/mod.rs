//! Scanning a Tessera table: a DataFusion [`FileSource`] over one snapshot's data files.
//!
//! DataFusion pushes the query's projection and filters into the scan. Every JSON access
//! with a constant path (`j->>'$.a.b'`, `json_get_int(j, 'n')`, ...) becomes a column of
//! the scan (the same [`ExtractionPlan`] as the NDJSON scan uses), and each file answers
//! it from its own shredding schema: a path the file shreds is read as its typed Parquet
//! leaf plus the Variant binary of its outliers ([`super::leaves`]), an element of a
//! path it shreds as a list from the list's typed elements (other paths through the
//! list from the list's columns alone, and what a query reads of the rows `json_each`
//! gives over such a list from its elements' typed columns, [`elements`]; over an object,
//! or a value in a binary, from its members read lazily as Variant, [`members`]); a path
//! whose first key the file does not shred is found in each document's own Variant
//! binary; any other
//! access is answered from documents reconstructed from the Variant column, for that
//! file only.
//! Filters are evaluated inside the scan on the extracted columns, after files whose
//! statistics exclude them were skipped ([`super::prune`]). A table of fewer files than
//! partitions hands each partition a share of a file's rows (`opener`'s `Share`). With
//! `tessera.cache_dir` set, the rows that passed a scan's filters per row group are
//! remembered, so a later scan with the same or stronger filters reads only those
//! ([`predicate_cache`]). Its expected rows come from the manifest ([`statistics`]).

mod coded_filters;
mod decoder;
mod elements;
pub(crate) mod leaves;
mod members;
mod metrics;
mod opener;
mod output_source;
mod pinned;
mod predicate_cache;
mod prune;
mod schedule;
mod side;
mod source;
mod statistics;

pub use opener::SHARE_ROWS_ALIGN;
pub use pinned::{PinnedSnapshot, SnapshotFile};
pub(crate) use predicate_cache::ScanPredicateCache;
pub use source::TesseraSource;
pub(crate) use statistics::scan_statistics;
