//! Errors of table operations, each naming the table location and what went wrong.

/// What can go wrong opening, reading or committing to a table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// No table (no manifest version) exists under the prefix.
    #[error("no Tessera table at {0}")]
    NotFound(String),
    /// `create` found a table already there.
    #[error("a Tessera table already exists at {0}")]
    AlreadyExists(String),
    /// `create` found other objects where the table would go.
    #[error(
        "cannot create a Tessera table at {location}: it holds other objects ({found}); \
         a table needs a location of its own (to query files in place, name them, e.g. \
         STORED AS NDJSON)"
    )]
    NotEmpty {
        /// The table location.
        location: String,
        /// One of the objects or directories found there.
        found: String,
    },
    /// A table's columns are not a valid schema.
    #[error("invalid table schema: {0}")]
    Schema(String),
    /// A manifest could not be parsed.
    #[error("manifest {path} is not valid: {reason}")]
    Manifest {
        /// The manifest object.
        path: String,
        /// What was wrong with it.
        reason: String,
    },
    /// A delete names a file that a concurrent commit removed.
    #[error("cannot delete from {0}: the file is no longer part of the table")]
    Conflict(String),
    /// Concurrent writers kept winning the race for the next version.
    #[error(
        "gave up committing to {location} after {attempts} attempts lost to concurrent writers"
    )]
    TooManyAttempts {
        /// The table.
        location: String,
        /// Attempts made.
        attempts: usize,
    },
    /// Every manifest PUT of a commit failed, and the table shows none of them landed:
    /// the table is unchanged (its data files are left for `vacuum`).
    #[error(
        "could not commit to {location}: {attempts} manifest writes failed, the last with: {source}; the table is unchanged"
    )]
    CommitFailed {
        /// The table.
        location: String,
        /// Manifest PUTs tried.
        attempts: usize,
        /// The last failure.
        source: Box<TableError>,
    },
    /// A manifest PUT failed in a way that may have written it, and the table could not
    /// be read to find out: the commit may or may not be visible.
    #[error(
        "the commit to {location} may or may not have landed as version {version}: {source}; read the table to find out"
    )]
    CommitUnknown {
        /// The table.
        location: String,
        /// The newest version the commit may have written.
        version: u64,
        /// What failed.
        source: Box<TableError>,
    },
    /// A delete names a row the file does not have.
    #[error("row {row} is out of range for {path} ({rows} rows)")]
    RowOutOfRange {
        /// The data file.
        path: String,
        /// The row asked for.
        row: u64,
        /// Rows in the file.
        rows: u64,
    },
    /// A data file could not be stored; it is not part of any version.
    #[error("could not write data file {path}: {source}")]
    DataFile {
        /// The data file's key.
        path: String,
        /// The store's error.
        source: object_store::Error,
    },
    /// A data file of a commit is gone, or a vacuum holds it to delete it: it was left
    /// unreferenced longer than the vacuum's retention. Nothing was committed.
    #[error(
        "data file {0} cannot be committed: vacuum removed it (or is removing it) because it stayed unreferenced longer than vacuum's retention; nothing was committed"
    )]
    Removed(String),
    /// A data file of a commit is being committed by another commit right now.
    #[error("data file {0} is being committed by another commit; nothing was committed")]
    Claimed(String),
    /// A commit still had not landed when the time it may hold its data files against
    /// vacuum ran out.
    #[error(
        "gave up committing to {location}: its data files were held against vacuum for longer than {held:?}"
    )]
    ClaimsExpired {
        /// The table.
        location: String,
        /// How long a commit may hold its files.
        held: std::time::Duration,
    },
    /// The local directory of a table could not be cleaned.
    #[error("cleaning {path}: {source}")]
    Local {
        /// The file or directory.
        path: String,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The object store failed.
    #[error(transparent)]
    Store(#[from] object_store::Error),
    /// A data file could not be read as Parquet.
    #[error("reading {path}: {source}")]
    Parquet {
        /// The data file.
        path: String,
        /// The Parquet error.
        source: parquet::errors::ParquetError,
    },
}

impl TableError {
    /// True when the table does not exist (as opposed to existing but failing).
    pub fn is_not_found(&self) -> bool {
        matches!(self, TableError::NotFound(_))
    }
}
