//! JSON parsing for Tessera, with no dependency on tiles or Parquet: raw NDJSON scans
//! use it alone, and ingest builds JSON tiles on top of it.
//!
//! - [`path`]: JSON paths (`$.a[0]."b c"`) and the trie that lets one scan serve many.
//! - [`escape`]: the one decoder of string escapes; lone surrogates are errors everywhere.
//! - [`limits`]: the nesting limit raw queries and ingest share.
//! - [`index`]: stage-one SIMD bitmaps of a document (quotes, escapes, brackets).
//! - [`scanner`]: a validating scanner that locates only the paths a query needs.
//! - [`select`]: the values a DuckDB path (wildcards, `..`) selects in a scanned document.
//! - [`value`]: located values converted with the semantics of each SQL access form.
//! - [`tape`]: one validating parse per document into a flat tape of nodes, for ingest.
//! - [`canonical`]: a document's value as an owned tree that compares by meaning.
//! - [`tree`]: an owned JSON value and the one writer of JSON text (DuckDB's layout).
//! - [`modify`]: merge patches and set/insert/replace/remove at a path, on trees.
//! - [`merge`]: DuckDB's coalescing deep merge and the merge patch between two documents.
//! - [`normalize`]: keys sorted at every level; `null` members stripped.
//! - [`non_finite`]: `NaN` and `Infinity` as numbers, as DuckDB's JSON functions read them.
//!
//! ```
//! use std::sync::Arc;
//! use tessera_json::{PathTrie, Scanner, parse_json_path};
//! let trie = Arc::new(PathTrie::single(&parse_json_path("$.commit.collection").unwrap()));
//! let mut scanner = Scanner::new(trie);
//! let doc = br#"{"kind":"commit","commit":{"collection":"app.bsky.feed.like"}}"#;
//! scanner.scan(doc).unwrap();
//! let span = scanner.get(0).unwrap();
//! assert_eq!(span.raw(doc), br#""app.bsky.feed.like""#);
//! ```

pub mod canonical;
pub mod escape;
pub mod index;
pub mod limits;
pub mod merge;
pub mod modify;
pub mod non_finite;
pub mod normalize;
pub mod path;
pub mod scanner;
pub mod select;
pub mod tape;
pub mod tree;
pub mod value;
pub mod written_form;

pub use limits::MAX_NESTING;
pub use path::{PathElem, PathTrie, parse_json_path};
pub use scanner::{Kind, Scanner, Span, SyntaxError, Validation};
pub use value::Output;
