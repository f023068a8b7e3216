//! Geometries as DuckDB 2.0.0's core `GEOMETRY` type holds them, and their codecs.
//!
//! - [`model`]: the geometry tree (OGC simple features: points, line strings, polygons,
//!   their multi forms and collections) with one set of dimensions (Z, M) for the whole.
//! - [`wkb`]: ISO well-known binary, the stored form (little-endian written, both read).
//! - [`wkt`]: well-known text, parsed leniently and printed exactly as DuckDB prints it.
//! - [`geojson`]: GeoJSON geometry objects (RFC 7946), parsed and printed as DuckDB does.
//! - [`number`]: the two layouts of a coordinate (WKT's and JSON's).
//!
//! Every parser bounds its nesting by [`NESTING_MAX`] and its coordinates by
//! [`COORDINATES_MAX`], and reports errors with the byte offset and what was expected.
//! The crate depends on nothing of Tessera's, so fuzzers and other tools link it alone.

pub mod error;
pub mod geojson;
mod json;
pub mod model;
pub mod number;
pub mod wkb;
pub mod wkt;

pub use error::GeometryError;
pub use model::{Coord, Dims, Geometry, Shape};

/// Deepest nesting of geometries (collections in collections) and of JSON containers a
/// parser accepts: deeper input is an error, not a stack overflow.
pub const NESTING_MAX: usize = 64;

/// Most coordinates one geometry may hold (about 1 GiB of XYZM doubles): a parser stops
/// with an error beyond it rather than allocate without end.
pub const COORDINATES_MAX: usize = 1 << 25;
