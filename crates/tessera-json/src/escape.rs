//! The one decoder of JSON string escapes (`\n`, `\"`, `\uXXXX`, surrogate pairs ...),
//! shared by the scanner's key matching, the SQL value conversions and the tape.
//!
//! Two callers want two policies. The raw scan has already validated its documents and
//! only needs text out of them, so it decodes leniently ([`Policy::Lenient`]): a lone
//! UTF-16 surrogate (valid JSON, but not encodable in UTF-8) becomes U+FFFD, as it did
//! before the decoders were merged. The tape parses unvalidated text and keeps what
//! `serde_json` accepts ([`Policy::Strict`]): lone surrogates, invalid escapes and raw
//! control characters are errors, and a string ends at its closing quote.
//!
//! The decoder only ever cuts its input next to ASCII bytes (backslashes, quotes, escape
//! letters, hex digits), so decoding UTF-8 text yields UTF-8 text under either policy.

use std::ops::Range;

/// What lenient decoding puts for an escape it cannot decode (U+FFFD).
const REPLACEMENT: char = '\u{FFFD}';

/// How the decoder treats what RFC 8259 strings may not hold or UTF-8 cannot encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Never fails: lone surrogates and malformed escapes become U+FFFD, raw control
    /// characters and quotes are kept. The whole input is the string body.
    Lenient,
    /// Fails on lone surrogates, malformed escapes and raw control characters; the
    /// string ends at the first unescaped `"`.
    Strict,
}

/// Why a string body could not be decoded under [`Policy::Strict`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{reason} at byte {offset} of the string")]
pub struct EscapeError {
    /// Byte offset of the problem from the start of the decoded input.
    pub offset: usize,
    /// What was wrong there.
    pub reason: &'static str,
}

/// One piece of decoded output: a run of the input copied unchanged, or one character
/// an escape stands for.
enum Piece {
    Run(Range<usize>),
    Char(char),
}

/// Unescapes a string body into `out`, leniently ([`Policy::Lenient`]).
///
/// Used where keys are compared as bytes (the scanner's paths, `json_keys`); if `body`
/// is UTF-8, so is what is appended.
pub fn unescape_into(body: &[u8], out: &mut Vec<u8>) {
    let decoded = decode(body, Policy::Lenient, |piece| match piece {
        Piece::Run(run) => out.extend_from_slice(&body[run]),
        Piece::Char(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
    });
    debug_assert!(decoded.is_ok(), "lenient decoding does not fail");
}

/// Unescapes the string text at the start of `text` into `out` under `policy`; returns
/// the offset where decoding stopped: the closing quote for [`Policy::Strict`] (or
/// `text.len()` when there is none), `text.len()` for [`Policy::Lenient`].
///
/// Working on `str` keeps the result UTF-8 without unsafe code or re-validation: every
/// run copied starts and ends next to an ASCII byte, so slicing `text` never splits a
/// character.
pub fn unescape_str(text: &str, policy: Policy, out: &mut String) -> Result<usize, EscapeError> {
    decode(text.as_bytes(), policy, |piece| match piece {
        Piece::Run(run) => out.push_str(&text[run]),
        Piece::Char(c) => out.push(c),
    })
}

/// The decoder: walks `body`, hands each decoded piece to `emit`, and returns where it
/// stopped (see [`unescape_str`]).
fn decode(body: &[u8], policy: Policy, mut emit: impl FnMut(Piece)) -> Result<usize, EscapeError> {
    let strict = policy == Policy::Strict;
    let mut i = 0;
    loop {
        let stop = next_stop(body, i, strict);
        if stop > i {
            emit(Piece::Run(i..stop));
        }
        i = stop;
        match body.get(i) {
            None => return Ok(i),
            Some(b'"') => return Ok(i),
            Some(b'\\') => {
                let (c, next) = escape(body, i, policy)?;
                emit(Piece::Char(c));
                i = next;
            }
            Some(_) => {
                return Err(EscapeError {
                    offset: i,
                    reason: "control character in a string",
                });
            }
        }
    }
}

/// The first byte at or after `from` that ends a run: a backslash, and when `strict`
/// also a quote or a control character.
#[inline]
fn next_stop(body: &[u8], from: usize, strict: bool) -> usize {
    let rest = &body[from..];
    let found = if strict {
        rest.iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
    } else {
        memchr::memchr(b'\\', rest)
    };
    found.map_or(body.len(), |at| from + at)
}

/// The character of the escape whose backslash is at `at`, and the offset after it.
fn escape(body: &[u8], at: usize, policy: Policy) -> Result<(char, usize), EscapeError> {
    let fail = |offset, reason| match policy {
        // Only the backslash is consumed, so the next run starts on a whole character.
        Policy::Lenient => Ok((REPLACEMENT, at + 1)),
        Policy::Strict => Err(EscapeError { offset, reason }),
    };
    let Some(&letter) = body.get(at + 1) else {
        return fail(at + 1, "unterminated string");
    };
    let c = match letter {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => return unicode(body, at + 2, policy),
        _ => return fail(at + 1, "invalid escape"),
    };
    Ok((c, at + 2))
}

/// The character of `\uXXXX` (with a second `\uXXXX` for a surrogate pair) whose hex
/// digits start at `hex`, and the offset after it.
fn unicode(body: &[u8], hex: usize, policy: Policy) -> Result<(char, usize), EscapeError> {
    let lenient = policy == Policy::Lenient;
    let Some(unit) = hex4(body, hex) else {
        return match lenient {
            // The backslash and `u` are consumed; the non-hex text stays as it was.
            true => Ok((REPLACEMENT, hex)),
            false => Err(EscapeError {
                offset: hex,
                reason: "expected 4 hex digits",
            }),
        };
    };
    let after = hex + 4;
    let lone = |reason| match lenient {
        true => Ok((REPLACEMENT, after)),
        false => Err(EscapeError {
            offset: after,
            reason,
        }),
    };
    match unit {
        0xD800..=0xDBFF => {
            if body.get(after..after + 2) != Some(b"\\u") {
                return lone("lone leading surrogate in a \\u escape");
            }
            match hex4(body, after + 2) {
                Some(low @ 0xDC00..=0xDFFF) => {
                    let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    Ok((char::from_u32(code).unwrap_or(REPLACEMENT), after + 6))
                }
                // A lenient decoder leaves the second escape for the next step.
                _ if lenient => Ok((REPLACEMENT, after)),
                None => Err(EscapeError {
                    offset: after + 2,
                    reason: "expected 4 hex digits",
                }),
                Some(_) => Err(EscapeError {
                    offset: after + 6,
                    reason: "lone leading surrogate in a \\u escape",
                }),
            }
        }
        0xDC00..=0xDFFF => lone("lone trailing surrogate in a \\u escape"),
        unit => Ok((char::from_u32(unit).unwrap_or(REPLACEMENT), after)),
    }
}

/// Four hex digits at `at` as a number.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits
        .iter()
        .try_fold(0, |acc, &d| Some(acc * 16 + (d as char).to_digit(16)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lenient(body: &str) -> String {
        let mut out = String::new();
        assert_eq!(
            unescape_str(body, Policy::Lenient, &mut out),
            Ok(body.len())
        );
        let mut bytes = Vec::new();
        unescape_into(body.as_bytes(), &mut bytes);
        assert_eq!(bytes, out.as_bytes(), "bytes and text decode alike: {body}");
        out
    }

    fn strict(text: &str) -> Result<(String, usize), EscapeError> {
        let mut out = String::new();
        unescape_str(text, Policy::Strict, &mut out).map(|end| (out, end))
    }

    #[test]
    fn every_escape_decodes() {
        assert_eq!(
            lenient(r#"\" \\ \/ \b \f \n \r \t \u0041 \u00e9 \u6771 x"#),
            "\" \\ / \u{8} \u{c} \n \r \t A é 東 x"
        );
        assert_eq!(lenient("plain ünïcode"), "plain ünïcode");
        assert_eq!(lenient(""), "");
    }

    #[test]
    fn surrogate_pairs_join_and_lone_surrogates_are_replaced_leniently() {
        assert_eq!(lenient(r"\ud83d\ude00"), "😀");
        assert_eq!(lenient(r"\uD83D\uDE00"), "😀");
        // A leading surrogate without its trailing half; the next escape still counts.
        assert_eq!(lenient(r"\ud800x"), "\u{FFFD}x");
        assert_eq!(lenient(r"\ud800\u0041"), "\u{FFFD}A");
        assert_eq!(lenient(r"\ud800\ud800\udc00"), "\u{FFFD}\u{10000}");
        assert_eq!(lenient(r"\udc00"), "\u{FFFD}");
        assert_eq!(lenient(r"a\ud800"), "a\u{FFFD}");
    }

    #[test]
    fn malformed_escapes_never_split_characters_leniently() {
        assert_eq!(lenient(r"\q"), "\u{FFFD}q");
        assert_eq!(lenient("\\é"), "\u{FFFD}é");
        assert_eq!(lenient(r"\u12G4"), "\u{FFFD}12G4");
        assert_eq!(lenient("\\uéé"), "\u{FFFD}éé");
        assert_eq!(lenient("a\\"), "a\u{FFFD}");
    }

    #[test]
    fn strict_decoding_stops_at_the_closing_quote() {
        assert_eq!(strict(r#"a\"b" tail"#), Ok(("a\"b".into(), 4)));
        assert_eq!(strict(r"\ud83d\ude00"), Ok(("😀".into(), 12)));
        // No closing quote: decoding runs to the end, which the caller reports.
        assert_eq!(strict("open"), Ok(("open".into(), 4)));
    }

    #[test]
    fn strict_decoding_rejects_what_serde_json_rejects() {
        let cases: &[(&str, usize, &str)] = &[
            (r"\x", 1, "invalid escape"),
            ("\\", 1, "unterminated"),
            (r"\u12G4", 2, "hex digits"),
            (r"\u12", 2, "hex digits"),
            (r"\ud800", 6, "lone leading"),
            (r"\ud800x", 6, "lone leading"),
            (r"\ud800\u0041", 12, "lone leading"),
            (r"\ud800\u00", 8, "hex digits"),
            (r"\udc00", 6, "lone trailing"),
            ("a\u{1}", 1, "control character"),
        ];
        for &(text, offset, reason) in cases {
            let err = strict(text).unwrap_err();
            assert_eq!(err.offset, offset, "{text:?}: {err}");
            assert!(err.reason.contains(reason), "{text:?}: {err}");
            assert!(serde_json::from_str::<String>(&format!("\"{text}\"")).is_err());
        }
    }
}
