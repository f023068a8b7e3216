//! The nesting limit that raw queries and ingest share, so that every document a raw
//! scan accepts can also be ingested, and the other way round.

/// Deepest nesting of arrays and objects accepted, counting the outermost container as
/// level 1; deeper documents are rejected with [`NESTING_ERROR`].
///
/// What bounds it is the code that recurses once per level on a thread's stack: this
/// crate's scanner and tape parser, Tessera's Variant encoder and JSON renderer, and
/// above all `parquet-variant`'s full validation of a Variant value, which every read
/// of a stored document runs and which needs several kilobytes of stack per level in
/// a debug build. A document 128 levels deep is ingested and read back on a default
/// 2 MiB thread stack (tessera-tiles' `nesting` test checks it in a debug build);
/// 512 levels overflow it. 128 is also `serde_json`'s limit, so every document Tessera
/// accepts parses in the tools that read its output.
pub const MAX_NESTING: usize = 128;

/// The reason both parsers give for a document nested deeper than [`MAX_NESTING`].
pub const NESTING_ERROR: &str = "at most 128 levels of nesting of arrays and objects";

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::path::{PathTrie, parse_json_path};
    use crate::scanner::{Scanner, Validation};
    use crate::tape::Tape;

    /// `depth` nested containers: objects `{"a":...}` and arrays alternating, a
    /// number at the bottom.
    fn nested(depth: usize) -> String {
        let (mut open, mut close) = (String::new(), String::new());
        for level in 0..depth {
            let (o, c) = if level % 2 == 0 {
                ("{\"a\":", "}")
            } else {
                ("[", "]")
            };
            open.push_str(o);
            close.insert_str(0, c);
        }
        open + "1" + &close
    }

    /// The outcome of every scan mode and of the tape on `doc`.
    fn outcomes(doc: &str) -> Vec<Result<(), &'static str>> {
        let mut out = Vec::new();
        for path in [None, Some("$.a"), Some("$.a[0].a[0].b")] {
            for validation in [Validation::Full, Validation::Structure] {
                let mut trie = PathTrie::new();
                if let Some(path) = path {
                    trie.add(&parse_json_path(path).unwrap());
                }
                let mut scanner = Scanner::new(Arc::new(trie)).with_validation(validation);
                out.push(scanner.scan(doc.as_bytes()).map_err(|e| e.expected));
            }
        }
        let mut tape = Tape::default();
        out.push(tape.push(doc.as_bytes()).map(|_| ()).map_err(|e| e.reason));
        out
    }

    #[test]
    fn the_limit_is_accepted_by_scanner_and_tape_alike() {
        assert!(outcomes(&nested(MAX_NESTING)).iter().all(Result::is_ok));
        let deeper = outcomes(&nested(MAX_NESTING + 1));
        assert!(
            deeper.iter().all(|r| *r == Err(NESTING_ERROR)),
            "{deeper:?}"
        );
    }

    #[test]
    fn the_error_names_the_limit() {
        assert!(NESTING_ERROR.contains(&format!(" {MAX_NESTING} ")));
    }
}
