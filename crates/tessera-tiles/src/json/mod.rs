//! Parsing JSON: paths, stage-one SIMD bitmaps, the validating scanner that extracts only
//! the paths asked for, and the conversion of located values into SQL values.

pub mod index;
pub mod path;
pub mod scanner;
pub mod value;

pub use path::{PathElem, PathTrie, parse_json_path};
pub use scanner::{Kind, Scanner, Span, SyntaxError, Validation};
pub use value::Output;
