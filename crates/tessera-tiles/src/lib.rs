//! JSON for Tessera.
//!
//! - [`json`]: parsing — JSON paths, stage-one SIMD bitmaps, a validating scanner that
//!   extracts only the paths a query needs, and value conversions.
//! - [`summary`]: what a written file tells the table manifest (shredding schema, path
//!   statistics, distinct-count sketches, a Bloom filter of unshredded key paths).
//!
//! ```
//! use std::sync::Arc;
//! use tessera_tiles::json::{PathTrie, Scanner, parse_json_path};
//! let trie = Arc::new(PathTrie::single(&parse_json_path("$.commit.collection").unwrap()));
//! let mut scanner = Scanner::new(trie);
//! let doc = br#"{"kind":"commit","commit":{"collection":"app.bsky.feed.like"}}"#;
//! scanner.scan(doc).unwrap();
//! let span = scanner.get(0).unwrap();
//! assert_eq!(span.raw(doc), br#""app.bsky.feed.like""#);
//! ```

pub mod json;
pub mod summary;
