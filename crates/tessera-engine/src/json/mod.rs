//! JSON in SQL: paths, the validating path-projecting scanner, value conversions,
//! the JSON functions and the `->` / `->>` operators.

pub mod functions;
pub mod index;
pub mod operators;
pub mod output;
pub mod path;
pub mod scanner;
pub mod value;

pub use functions::{JsonFunction, Probe, access_output, all_functions};
pub use output::OutputBuilder;
pub use path::{PathElem, PathTrie, parse_json_path};
pub use scanner::{Kind, Scanner, Span, SyntaxError};
pub use value::Output;
