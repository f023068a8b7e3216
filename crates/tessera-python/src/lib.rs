//! The native module `tessera._native` behind the Python package `tessera`.
//!
//! A [`Connection`] owns a Tessera session and the Tokio runtime its queries run on;
//! [`Relation`]s are planned statements that run when fetched and hand their rows to
//! Python through the Arrow PyCapsule stream interface. Queries run with the GIL
//! released and stop on Ctrl-C ([`engine`]); Python objects that export Arrow streams
//! are queried by name ([`arrow_input`]); errors become the exceptions of [`exceptions`].

mod arrow_input;
mod connection;
mod engine;
mod exceptions;
mod ingest;
mod relation;

use pyo3::prelude::*;

pub use connection::Connection;
pub use ingest::IngestSummary;
pub use relation::Relation;

/// The module's classes and exceptions; `tessera/__init__.py` re-exports them.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add_class::<Connection>()?;
    module.add_class::<Relation>()?;
    module.add_class::<IngestSummary>()?;
    module.add("Error", py.get_type::<exceptions::Error>())?;
    module.add("SQLError", py.get_type::<exceptions::SQLError>())?;
    module.add(
        "ExecutionError",
        py.get_type::<exceptions::ExecutionError>(),
    )?;
    module.add(
        "RejectedLinesWarning",
        py.get_type::<exceptions::RejectedLinesWarning>(),
    )?;
    Ok(())
}
