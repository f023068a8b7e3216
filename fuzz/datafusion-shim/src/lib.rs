//! `datafusion::sql::sqlparser`, for engine modules built by fuzz targets.

/// DataFusion's `sql` module: its SQL parser.
pub mod sql {
    pub use sqlparser;
}
