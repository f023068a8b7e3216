//! The package's exceptions and warning, and how Rust errors become them: a failed
//! statement raises the one sentence the CLI prints for it (`describe_error`).

use datafusion::error::DataFusionError;
use pyo3::PyErr;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyUserWarning};
use tessera_engine::TesseraSession;

create_exception!(
    tessera,
    Error,
    PyException,
    "Base class of Tessera's errors; its message is one sentence saying what went wrong."
);
create_exception!(
    tessera,
    SQLError,
    Error,
    "A statement that cannot be parsed or planned: bad SQL, an unknown table, column or function."
);
create_exception!(
    tessera,
    ExecutionError,
    Error,
    "A statement that failed while running: unreadable or missing data, malformed JSON, \
     the memory limit, the object store."
);
create_exception!(
    tessera,
    RejectedLinesWarning,
    PyUserWarning,
    "Lines a query or ingest skipped as malformed (on_error='skip'): the count and the \
     first places."
);

/// Failures of the package itself, outside of any statement.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The connection was closed with `close()` or by leaving its `with` block.
    #[error("the connection is closed")]
    Closed,
    /// The Tokio runtime could not start its threads.
    #[error("cannot start the query runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// A connection setting (`on_error`, `memory_limit`, `dialect`, S3) is invalid.
    #[error("{0}")]
    Setting(String),
    /// The session's catalog refused a table (its name is taken, for one).
    #[error("{0}")]
    Catalog(#[source] DataFusionError),
    /// A Python object given as a table does not export an Arrow stream.
    #[error("'{name}' cannot be queried: {reason}")]
    NotArrow {
        /// The table name it was given.
        name: String,
        /// Why its Arrow stream could not be read.
        reason: String,
    },
}

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> Self {
        Error::new_err(failure.to_string())
    }
}

/// The exception for a failed statement: [`SQLError`] when it could not be planned,
/// [`ExecutionError`] otherwise, with the session's one-sentence description.
pub fn statement_error(session: &TesseraSession, error: &DataFusionError) -> PyErr {
    let sentence = session.describe_error(error);
    match error.find_root() {
        DataFusionError::SQL(..)
        | DataFusionError::Plan(_)
        | DataFusionError::SchemaError(..)
        | DataFusionError::NotImplemented(_) => SQLError::new_err(sentence),
        DataFusionError::Configuration(_) => Error::new_err(sentence),
        _ => ExecutionError::new_err(sentence),
    }
}
