//! JSON values as the engine sees them: the parser's types (paths, the scanner, spans;
//! parsing itself lives in `tessera-json`) and the Arrow builders that turn located
//! values into columns. The SQL functions ([`crate::functions`]) and both scans build
//! their results with the same builders, so a path pushed into a scan answers exactly as
//! the function would.

pub mod json_type;
pub mod output;
pub mod sql_types;

pub use tessera_json::{Kind, Output, Scanner, Span, path, scanner, value};
