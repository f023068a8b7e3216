//! DuckDB's text of values JSON has no form of, as its casts to `VARCHAR` (and so
//! `to_json`) write them: a `BLOB` as its printable ASCII bytes, every other byte as
//! `\xNN`.

use std::fmt::Write as _;

/// `bytes` as DuckDB casts a `BLOB` to text: printable ASCII as is, except `\`, `"`
/// and `'` (which DuckDB escapes so that the text reads back unambiguously), every
/// other byte as `\x` and two upper-case hex digits.
pub fn blob_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' | b'"' | b'\'' => {
                let _ = write!(out, "\\x{b:02X}");
            }
            32..=126 => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02X}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value: the text is ASCII, and reading its escapes back gives the
    /// bytes (so no two blobs share a text).
    #[test]
    fn blob_text_reads_back_to_the_same_bytes() {
        let bytes: Vec<u8> = (0..=255).collect();
        let text = blob_text(&bytes);
        assert!(text.is_ascii());
        let mut back = Vec::new();
        let mut rest = text.as_bytes();
        while let Some((&b, tail)) = rest.split_first() {
            if b == b'\\' {
                let hex = std::str::from_utf8(&tail[1..3]).unwrap();
                back.push(u8::from_str_radix(hex, 16).unwrap());
                rest = &tail[3..];
            } else {
                back.push(b);
                rest = tail;
            }
        }
        assert_eq!(back, bytes);
        assert_eq!(blob_text(b"a\xaa\\"), "a\\xAA\\x5C");
    }
}
