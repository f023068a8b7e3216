//! What can stop a scheduler or an executor.

use ballista_core::error::BallistaError;

/// A cluster process could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// Ballista refused the settings or failed while serving.
    #[error("{what}: {source}")]
    Ballista {
        /// Which process, doing what.
        what: &'static str,
        /// Ballista's error.
        #[source]
        source: BallistaError,
    },
    /// The settings cannot describe a process.
    #[error("{0}")]
    Settings(String),
}

impl ClusterError {
    /// A closure naming `what` failed, for `map_err`.
    pub(crate) fn ballista(what: &'static str) -> impl FnOnce(BallistaError) -> Self {
        move |source| Self::Ballista { what, source }
    }
}
