//! Errors of the geometry codecs: where in the input, and what was expected there.

/// A geometry could not be read: the byte offset in the input and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    /// Well-known text that does not follow the grammar.
    #[error("Failed to parse geometry: {reason} at offset {offset}")]
    Wkt {
        /// Byte offset of the offending token.
        offset: usize,
        /// What was expected there (and what was found).
        reason: String,
    },
    /// Well-known binary that is truncated or malformed.
    #[error("Invalid WKB at byte {offset}: {reason}")]
    Wkb {
        /// Byte offset of the offending value.
        offset: usize,
        /// What was expected there.
        reason: String,
    },
    /// Text that is not JSON.
    #[error("Malformed JSON at byte {offset} of input: {reason}")]
    Json {
        /// Byte offset of the offending character.
        offset: usize,
        /// What was expected there.
        reason: String,
    },
    /// JSON that is not a GeoJSON geometry.
    #[error("Invalid GeoJSON: {reason}")]
    GeoJson {
        /// Byte offset of the offending value.
        offset: usize,
        /// What the GeoJSON specification requires there.
        reason: String,
    },
    /// A geometry beyond [`crate::NESTING_MAX`] or [`crate::COORDINATES_MAX`].
    #[error("Geometry too large at byte {offset}: {reason}")]
    Limit {
        /// Byte offset where the limit was reached.
        offset: usize,
        /// Which limit.
        reason: String,
    },
}

impl GeometryError {
    /// The byte offset in the input the error points at.
    pub fn offset(&self) -> usize {
        match self {
            GeometryError::Wkt { offset, .. }
            | GeometryError::Wkb { offset, .. }
            | GeometryError::Json { offset, .. }
            | GeometryError::GeoJson { offset, .. }
            | GeometryError::Limit { offset, .. } => *offset,
        }
    }
}
