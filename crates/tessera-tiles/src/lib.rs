//! JSON tiles for Tessera: documents mined, reordered and shredded into Parquet Variant
//! (JSON Tiles: Durner, Leis, Neumann, "JSON Tiles: Fast Analytics on Semi-Structured
//! Data", SIGMOD 2021). Documents are parsed by `tessera-json`'s tape.
//!
//! - [`fpgrowth`]: frequent-itemset mining with the paper's budget.
//! - [`reorder`]: documents reordered within partitions so tiles share structure.
//! - [`datetime`]: date and time strings typed in one exact rendering per path.
//! - [`keypaths`]: key-path items of documents and the choice of shredded paths.
//! - [`variant`]: exact JSON <-> Parquet Variant conversion.
//! - [`layout`]: the names of the document column's parts and leaf column paths.
//! - [`shred`]: documents shredded into the Variant column's Arrow arrays.
//! - [`side`]: side relations of high-cardinality arrays (Tiles-*), one file of elements
//!   per array path and data file.
//! - [`cluster`]: rows ordered by a file's low-cardinality paths, for page skipping.
//! - [`writer`]: one data file of shredded Variant; `compression`: the codec of each
//!   typed string leaf, by the read time of its bytes and their decoding.
//! - [`unshred`]: reading it back: JSON text written straight from shredded columns.
//! - [`summary`]: what a written file tells the table manifest (shredding schema, path
//!   statistics, distinct-count sketches, a Bloom filter of unshredded key paths).

pub mod checksum;
pub mod cluster;
mod compression;
pub mod datetime;
pub mod error;
pub mod fpgrowth;
pub mod keypaths;
pub mod layout;
pub mod reorder;
pub mod shred;
pub mod side;
pub mod summary;
pub mod unshred;
pub mod variant;
pub mod variant_view;
pub mod writer;

pub use error::TilesError;
pub use unshred::read_json;
pub use writer::{WrittenFile, WrittenSide, write_file, write_file_with_columns};

/// How documents are cut and shredded.
#[derive(Debug, Clone)]
pub struct TilesOptions {
    /// Documents per tile, the unit of mining (JSON Tiles: 1024).
    pub tile_docs: usize,
    /// Share of a tile's documents a key path must appear in to be extracted (60%).
    pub threshold: f64,
    /// Tiles per partition, the unit of reordering (JSON Tiles: 8); 1 keeps the
    /// documents in their input order.
    pub partition_tiles: usize,
    /// Most itemsets mined per tile (the budget `u` of JSON Tiles §3.3).
    pub itemset_budget: usize,
    /// Rows per Parquet row group.
    pub row_group_docs: usize,
    /// zstd level of the Parquet pages other than typed leaves (a string leaf's codec is
    /// chosen by the read time of its bytes: see `compression`).
    pub zstd_level: i32,
    /// Most low-cardinality shredded paths rows are ordered by ([`cluster`]); 0 keeps
    /// the tiles' order.
    pub cluster_keys: usize,
    /// Most rows per Parquet data page: the unit that page statistics skip, so smaller
    /// pages skip more precisely at some cost in size.
    pub page_rows: usize,
    /// Move the elements of high-cardinality arrays to side relations ([`side`]).
    pub side_arrays: bool,
}

impl Default for TilesOptions {
    fn default() -> Self {
        Self {
            tile_docs: 1024,
            threshold: 0.6,
            partition_tiles: 8,
            itemset_budget: fpgrowth::DEFAULT_BUDGET,
            row_group_docs: 262_144,
            zstd_level: 3,
            cluster_keys: 3,
            page_rows: 8192,
            side_arrays: true,
        }
    }
}
