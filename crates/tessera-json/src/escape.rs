//! The one decoder of JSON string escapes (`\n`, `\"`, `\uXXXX`, surrogate pairs ...),
//! shared by the scanner's key matching, the SQL value conversions and the tape.
//!
//! Every caller gets the same strings: lone UTF-16 surrogates, invalid escapes and raw
//! control characters are errors (as in `serde_json` and DuckDB), never replaced, so a
//! string decodes alike in a raw scan, in a JSON function and in ingest. The two
//! policies differ only in what they are given. The tape parses unvalidated text
//! ([`Policy::Strict`]): a string ends at its closing quote. The scan's values come
//! from documents the scanner has already validated ([`Policy::Validated`]): the whole
//! input is the body, and runs between escapes are found with `memchr`.
//!
//! The decoder only ever cuts its input next to ASCII bytes (backslashes, quotes, escape
//! letters, hex digits), so decoding UTF-8 text yields UTF-8 text under either policy.

use std::ops::Range;

/// What the decoder is given; both reject the same malformed strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The body of a string the scanner accepted: the whole input is the body, and it
    /// holds no quote or control character, so only backslashes stop a run.
    Validated,
    /// Unvalidated text: fails on raw control characters too; the string ends at the
    /// first unescaped `"`.
    Strict,
}

/// Why a string body could not be decoded.
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

/// Unescapes the body of a string the scanner accepted into `out`
/// ([`Policy::Validated`]).
///
/// Used where keys are compared as bytes (the scanner's paths, `json_keys`); if `body`
/// is UTF-8, so is what is appended. A body the scanner did not accept (which no caller
/// passes) is appended up to its first bad escape.
pub fn unescape_into(body: &[u8], out: &mut Vec<u8>) {
    let decoded = decode(body, Policy::Validated, |piece| match piece {
        Piece::Run(run) => out.extend_from_slice(&body[run]),
        Piece::Char(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
    });
    debug_assert!(decoded.is_ok(), "validated strings decode: {decoded:?}");
}

/// Unescapes the string text at the start of `text` into `out` under `policy`; returns
/// the offset where decoding stopped: the closing quote for [`Policy::Strict`] (or
/// `text.len()` when there is none), `text.len()` for [`Policy::Validated`].
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
                let (c, next) = escape(body, i)?;
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
fn escape(body: &[u8], at: usize) -> Result<(char, usize), EscapeError> {
    let fail = |offset, reason| Err(EscapeError { offset, reason });
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
        b'u' => return unicode(body, at + 2),
        _ => return fail(at + 1, "invalid escape"),
    };
    Ok((c, at + 2))
}

/// The character of `\uXXXX` (with a second `\uXXXX` for a surrogate pair) whose hex
/// digits start at `hex`, and the offset after it.
fn unicode(body: &[u8], hex: usize) -> Result<(char, usize), EscapeError> {
    let fail = |offset, reason| Err(EscapeError { offset, reason });
    let Some(unit) = hex4(body, hex) else {
        return fail(hex, "expected 4 hex digits");
    };
    let after = hex + 4;
    match unit {
        0xD800..=0xDBFF => {
            if body.get(after..after + 2) != Some(b"\\u") {
                return fail(after, "lone leading surrogate in a \\u escape");
            }
            match hex4(body, after + 2) {
                Some(low @ 0xDC00..=0xDFFF) => {
                    let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    let c = char::from_u32(code).expect("a surrogate pair is a scalar value");
                    Ok((c, after + 6))
                }
                None => fail(after + 2, "expected 4 hex digits"),
                Some(_) => fail(after + 6, "lone leading surrogate in a \\u escape"),
            }
        }
        0xDC00..=0xDFFF => fail(after, "lone trailing surrogate in a \\u escape"),
        unit => Ok((
            char::from_u32(unit).expect("a unit outside the surrogates is a scalar value"),
            after,
        )),
    }
}

/// Four hex digits at `at` as a number.
pub(crate) fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits
        .iter()
        .try_fold(0, |acc, &d| Some(acc * 16 + (d as char).to_digit(16)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validated(body: &str) -> Result<String, EscapeError> {
        let mut out = String::new();
        let end = unescape_str(body, Policy::Validated, &mut out)?;
        assert_eq!(end, body.len());
        let mut bytes = Vec::new();
        unescape_into(body.as_bytes(), &mut bytes);
        assert_eq!(bytes, out.as_bytes(), "bytes and text decode alike: {body}");
        Ok(out)
    }

    fn strict(text: &str) -> Result<(String, usize), EscapeError> {
        let mut out = String::new();
        unescape_str(text, Policy::Strict, &mut out).map(|end| (out, end))
    }

    #[test]
    fn every_escape_decodes() {
        assert_eq!(
            validated(r#"\" \\ \/ \b \f \n \r \t \u0041 \u00e9 \u6771 x"#).unwrap(),
            "\" \\ / \u{8} \u{c} \n \r \t A é 東 x"
        );
        assert_eq!(validated("plain ünïcode").unwrap(), "plain ünïcode");
        assert_eq!(validated("").unwrap(), "");
        assert_eq!(validated(r"\ud83d\ude00").unwrap(), "😀");
        assert_eq!(validated(r"\uD83D\uDE00").unwrap(), "😀");
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
            // Never replaced by U+FFFD either: the scanner rejects such strings first,
            // and a decoder handed one anyway fails alike.
            if !reason.contains("control") {
                assert_eq!(validated(text), Err(err), "{text:?}");
            }
        }
    }
}
