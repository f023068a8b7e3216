//! `NaN` and `Infinity` as numbers, the way DuckDB's JSON functions read them.
//!
//! JSON has no spelling for a double that is not finite, yet DuckDB's reader accepts
//! `nan`, `inf` and `infinity` in any case, optionally after `-` (not after `+`), and so
//! do the users' documents written by engines that print such doubles. Tessera's SQL
//! functions read them the same way (both parsers take them when asked to); ingest does
//! not, because a table stores only what JSON spells.

/// The words a non-finite number may be written as, longest first so that `infinity`
/// is not read as `inf` followed by garbage.
const WORDS: [&[u8]; 3] = [b"infinity", b"inf", b"nan"];

/// The length of the non-finite number at the start of `text` (an optional `-` and one
/// of the words, in any case), or `None` when `text` does not start with one.
pub fn word_len(text: &[u8]) -> Option<usize> {
    let sign = usize::from(text.first() == Some(&b'-'));
    let rest = &text[sign..];
    WORDS
        .iter()
        .find(|word| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word))
        .map(|word| sign + word.len())
}

/// Whether `byte` can start a non-finite number's word (after the optional `-`).
pub fn starts_word(byte: u8) -> bool {
    matches!(byte, b'n' | b'N' | b'i' | b'I')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_in_any_case_with_a_minus_only() {
        for (text, len) in [
            ("nan", Some(3)),
            ("NaN,", Some(3)),
            ("-Infinity]", Some(9)),
            ("INF", Some(3)),
            ("-inf", Some(4)),
            ("infinite", Some(3)),
            ("+inf", None),
            ("na", None),
            ("null", None),
            ("-", None),
            ("", None),
        ] {
            assert_eq!(word_len(text.as_bytes()), len, "{text}");
        }
    }

    #[test]
    fn every_word_reads_as_a_double_that_is_not_finite() {
        for text in ["nan", "NaN", "-Infinity", "inf", "-INF", "infinity"] {
            let value: f64 = text.parse().unwrap();
            assert!(!value.is_finite(), "{text}");
            assert_eq!(word_len(text.as_bytes()), Some(text.len()));
        }
    }
}

#[cfg(test)]
mod parsers {
    use std::sync::Arc;

    use crate::path::PathTrie;
    use crate::scanner::Scanner;
    use crate::tape::{Kind, Tape};

    /// Documents with non-finite numbers in every place a number can be, and near
    /// misses that stay errors in both modes.
    const READ_ONLY_WHEN_ASKED: [&str; 6] = [
        "NaN",
        "-Infinity",
        r#"{"a":nan,"b":[inf,-INF,1]}"#,
        r#"[Infinity , NaN]"#,
        r#"{"null":NaN}"#,
        "[null,nan,null]",
    ];
    const NEVER: [&str; 6] = ["+inf", "nul", "[na]", "infinite", "-", r#"{"a":-nan1}"#];

    fn scanner_accepts(text: &str, non_finite: bool) -> bool {
        let mut scanner = Scanner::new(Arc::new(PathTrie::new()))
            .with_validation(crate::scanner::Validation::Structure)
            .with_non_finite_numbers(non_finite);
        scanner.scan(text.as_bytes()).is_ok()
    }

    fn tape_accepts(text: &str, non_finite: bool) -> bool {
        let mut tape = Tape::default().with_non_finite_numbers(non_finite);
        tape.push(text.as_bytes()).is_ok()
    }

    #[test]
    fn both_parsers_read_non_finite_numbers_only_when_asked() {
        for text in READ_ONLY_WHEN_ASKED {
            assert!(scanner_accepts(text, true), "scanner, asked: {text}");
            assert!(tape_accepts(text, true), "tape, asked: {text}");
            assert!(!scanner_accepts(text, false), "scanner, strict: {text}");
            assert!(!tape_accepts(text, false), "tape, strict: {text}");
        }
        for text in NEVER {
            assert!(!scanner_accepts(text, true), "scanner: {text}");
            assert!(!tape_accepts(text, true), "tape: {text}");
        }
    }

    #[test]
    fn the_tape_holds_the_double_the_word_names() {
        let mut tape = Tape::default().with_non_finite_numbers(true);
        let text = tape.push(b"[nan,-Infinity,INF]").unwrap();
        let doc = tape.doc(0, text);
        let values: Vec<f64> = doc.root().elements().map(|e| e.node().float()).collect();
        assert!(values[0].is_nan());
        assert_eq!(&values[1..], &[f64::NEG_INFINITY, f64::INFINITY]);
        assert!(
            doc.root()
                .elements()
                .all(|e| e.node().kind() == Kind::Float)
        );
    }
}
