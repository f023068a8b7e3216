//! JSON in SQL: the JSON functions, the `->` / `->>` operators and Arrow builders for
//! their results. Parsing itself (paths, the scanner) lives in `tessera-json`.

pub mod functions;
pub mod operators;
pub mod output;

pub use functions::{JsonFunction, Probe, access_output, all_functions};
pub use output::OutputBuilder;
pub use tessera_json::{
    Kind, Output, PathElem, PathTrie, Scanner, Span, SyntaxError, index, parse_json_path, path,
    scanner, value,
};
