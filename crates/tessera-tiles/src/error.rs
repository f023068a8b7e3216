//! Errors of shredding and reading JSON tiles.

/// What can go wrong writing or reading a data file of JSON tiles.
#[derive(Debug, thiserror::Error)]
pub enum TilesError {
    /// A document is not valid JSON.
    #[error("document {index} is not valid JSON (line {line}, column {column}): {reason}")]
    Json {
        /// 0-based position of the document in the batch given to the writer.
        index: usize,
        /// Line of the problem inside the document.
        line: usize,
        /// Column of the problem inside that line.
        column: usize,
        /// What the parser expected.
        reason: String,
    },
    /// More JSON text than one file takes.
    #[error("{bytes} bytes of JSON for one file; at most {limit} go into one file")]
    TooLarge {
        /// Bytes given.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Options no writer can follow.
    #[error("invalid tiles options: {0}")]
    Options(&'static str),
    /// The relational columns given with the documents do not fit them.
    #[error("relational columns: {0}")]
    Columns(String),
    /// Building or reading a Variant failed.
    #[error("variant: {0}")]
    Variant(String),
    /// Encoding or decoding Parquet failed.
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// A broken invariant of the writer.
    #[error("internal error: {0}")]
    Internal(String),
}

impl TilesError {
    pub(crate) fn variant(e: impl std::fmt::Display) -> Self {
        TilesError::Variant(e.to_string())
    }
}
