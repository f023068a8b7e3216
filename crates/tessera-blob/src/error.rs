//! Errors raised by the retrieval layer itself (configuration and location problems).

/// An error raised by `tessera-blob` itself (configuration or location problems).
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// A location string could not be understood.
    #[error("invalid location '{location}': {reason}")]
    InvalidLocation {
        /// The text as given.
        location: String,
        /// Why it was rejected.
        reason: String,
    },
    /// S3 settings are inconsistent or unreadable.
    #[error("S3 configuration: {0}")]
    Config(String),
    /// The store could not be built from valid settings.
    #[error("cannot open {url}: {source}")]
    Open {
        /// The store URL (`s3://bucket`).
        url: String,
        /// The underlying failure.
        source: object_store::Error,
    },
}
