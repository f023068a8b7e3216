//! Cutting a JSON file into records: one JSON value per line (`newline_delimited`),
//! the elements of one top-level array (`array`), or values one after another in any
//! layout (`unstructured`); `auto` picks array or unstructured from the bytes.
//!
//! Only the boundaries are found here (strings and nesting tracked, nothing parsed);
//! each record is then parsed and validated on its own, so an error names the record.
//! Depends on `std` only, so the fuzz target can include this file as it is.

use std::ops::Range;

/// How records are laid out in a file, as DuckDB's `format` parameter names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Array when the file is one top-level array, else unstructured.
    Auto,
    /// One value per line; empty lines are skipped.
    NewlineDelimited,
    /// One top-level array whose elements are the records.
    Array,
    /// Values one after another, separated by whitespace or nothing.
    Unstructured,
}

/// Why a file could not be cut into records, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitError {
    /// Byte offset of the problem in the file.
    pub offset: usize,
    /// What was expected there.
    pub reason: &'static str,
}

/// The byte ranges of the records of `bytes` in `format` (never `Auto` in the answer's
/// second element: the layout found), at most `records_max` of them.
pub fn split(
    bytes: &[u8],
    format: Format,
    records_max: usize,
) -> Result<(Vec<Range<usize>>, Format), SplitError> {
    if let Some(body) = bytes.strip_prefix(BYTE_ORDER_MARK) {
        let (records, format) = split(body, format, records_max)?;
        let shift =
            |r: Range<usize>| r.start + BYTE_ORDER_MARK.len()..r.end + BYTE_ORDER_MARK.len();
        return Ok((records.into_iter().map(shift).collect(), format));
    }
    let format = match format {
        Format::Auto => detect(bytes, records_max),
        other => other,
    };
    let records = match format {
        Format::NewlineDelimited => lines(bytes, records_max)?,
        Format::Array => array_elements(bytes, records_max)?,
        _ => values(bytes, 0, records_max)?,
    };
    Ok((records, format))
}

/// UTF-8's byte order mark, skipped at the start of a file.
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// Array when the first value is an array that ends the file; else newline-delimited
/// when every value sits on a line of its own (or the values cannot be cut apart, so
/// that lines can be rejected one by one); else unstructured.
fn detect(bytes: &[u8], records_max: usize) -> Format {
    let start = skip_whitespace(bytes, 0);
    if bytes.get(start) == Some(&b'[')
        && matches!(value_end(bytes, start), Ok(end) if skip_whitespace(bytes, end) == bytes.len())
    {
        return Format::Array;
    }
    let Ok(records) = values(bytes, 0, records_max) else {
        return Format::NewlineDelimited;
    };
    let one_line = |r: &Range<usize>| !bytes[r.clone()].contains(&b'\n');
    let apart = records
        .windows(2)
        .all(|w| bytes[w[0].end..w[1].start].contains(&b'\n'));
    match records.iter().all(one_line) && apart {
        true => Format::NewlineDelimited,
        false => Format::Unstructured,
    }
}

/// The non-blank lines, without their line ends (a `\r` before `\n` included).
fn lines(bytes: &[u8], records_max: usize) -> Result<Vec<Range<usize>>, SplitError> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| start + p);
        let line = trim(bytes, start..end);
        if !line.is_empty() {
            push_bounded(&mut out, line, records_max, start)?;
        }
        start = end + 1;
    }
    Ok(out)
}

/// The elements of the one top-level array.
fn array_elements(bytes: &[u8], records_max: usize) -> Result<Vec<Range<usize>>, SplitError> {
    let mut at = skip_whitespace(bytes, 0);
    if bytes.get(at) != Some(&b'[') {
        return Err(SplitError {
            offset: at,
            reason: "expected '[' to start an array of records (format 'array')",
        });
    }
    at = skip_whitespace(bytes, at + 1);
    let mut out = Vec::new();
    if bytes.get(at) == Some(&b']') {
        return expect_end(bytes, at + 1).map(|()| out);
    }
    loop {
        let end = value_end(bytes, at)?;
        push_bounded(&mut out, at..end, records_max, at)?;
        at = skip_whitespace(bytes, end);
        match bytes.get(at) {
            Some(b',') => at = skip_whitespace(bytes, at + 1),
            Some(b']') => return expect_end(bytes, at + 1).map(|()| out),
            _ => {
                return Err(SplitError {
                    offset: at,
                    reason: "expected ',' or ']' after an array element",
                });
            }
        }
    }
}

/// Values one after another from `at` to the end.
fn values(bytes: &[u8], at: usize, records_max: usize) -> Result<Vec<Range<usize>>, SplitError> {
    let mut out = Vec::new();
    let mut at = skip_whitespace(bytes, at);
    while at < bytes.len() {
        let end = value_end(bytes, at)?;
        push_bounded(&mut out, at..end, records_max, at)?;
        at = skip_whitespace(bytes, end);
    }
    Ok(out)
}

fn push_bounded(
    out: &mut Vec<Range<usize>>,
    record: Range<usize>,
    records_max: usize,
    offset: usize,
) -> Result<(), SplitError> {
    if out.len() >= records_max {
        return Err(SplitError {
            offset,
            reason: "more records than one read may hold",
        });
    }
    out.push(record);
    Ok(())
}

fn expect_end(bytes: &[u8], at: usize) -> Result<(), SplitError> {
    let at = skip_whitespace(bytes, at);
    match at == bytes.len() {
        true => Ok(()),
        false => Err(SplitError {
            offset: at,
            reason: "expected the end of the file after the array of records",
        }),
    }
}

/// The end of the value starting at `start`: a string's closing quote, the bracket
/// closing a container (strings inside skipped), or the end of a bare word.
fn value_end(bytes: &[u8], start: usize) -> Result<usize, SplitError> {
    let unterminated = |reason| SplitError {
        offset: start,
        reason,
    };
    match bytes.get(start) {
        Some(b'"') => string_end(bytes, start + 1)
            .ok_or_else(|| unterminated("unterminated string (no closing '\"')")),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut at = start;
            while at < bytes.len() {
                match bytes[at] {
                    b'"' => {
                        at = string_end(bytes, at + 1).ok_or_else(|| {
                            unterminated("unterminated string inside a value (no closing '\"')")
                        })?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
            Err(unterminated(
                "unterminated object or array (missing '}' or ']')",
            ))
        }
        Some(b'}' | b']' | b',') => Err(unterminated("expected a JSON value")),
        _ => Ok(bytes[start..]
            .iter()
            .position(|&b| is_delimiter(b))
            .map_or(bytes.len(), |p| start + p.max(1))),
    }
}

/// The offset just past the closing quote of a string whose content starts at `at`.
fn string_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return Some(at + 1),
            _ => at += 1,
        }
    }
    None
}

fn is_delimiter(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b',' | b'[' | b']' | b'{' | b'}' | b'"')
}

fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && bytes[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

fn trim(bytes: &[u8], mut range: Range<usize>) -> Range<usize> {
    while range.start < range.end && bytes[range.start].is_ascii_whitespace() {
        range.start += 1;
    }
    while range.end > range.start && bytes[range.end - 1].is_ascii_whitespace() {
        range.end -= 1;
    }
    range
}

/// The 1-based line of byte `offset` in `bytes`.
pub fn line_of(bytes: &[u8], offset: usize) -> usize {
    1 + bytes[..offset.min(bytes.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so that failures reproduce.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self, below: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % below
        }
    }

    /// A random JSON value with strings holding the bytes that confuse boundary finding.
    fn value(rng: &mut Rng, depth: u32) -> String {
        let pick = if depth > 3 { rng.next(4) } else { rng.next(6) };
        match pick {
            0 => ["null", "true", "-12", "3.5e7"][rng.next(4) as usize].to_string(),
            1 => "\"a]}\\\"{[,\\\\\"".to_string(),
            2 => "\"\"".to_string(),
            3 => format!("{}", rng.next(1000)),
            4 => {
                let items: Vec<String> = (0..rng.next(4)).map(|_| value(rng, depth + 1)).collect();
                format!("[{}]", items.join(", "))
            }
            _ => {
                let members: Vec<String> = (0..rng.next(4))
                    .map(|i| format!("\"k{i}\" : {}", value(rng, depth + 1)))
                    .collect();
                format!("{{{}}}", members.join(","))
            }
        }
    }

    fn records(bytes: &str, format: Format) -> (Vec<&str>, Format) {
        let (ranges, found) = split(bytes.as_bytes(), format, usize::MAX).unwrap();
        (ranges.into_iter().map(|r| &bytes[r]).collect(), found)
    }

    #[test]
    fn generated_files_split_into_the_values_written() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..500 {
            let values: Vec<String> = (0..1 + rng.next(6)).map(|_| value(&mut rng, 0)).collect();
            let lines = values.join("\n") + "\n";
            assert_eq!(records(&lines, Format::NewlineDelimited).0, values);
            // One top-level array is an array of records; anything else is lines.
            if !(values.len() == 1 && values[0].starts_with('[')) {
                assert_eq!(
                    records(&lines, Format::Auto),
                    (
                        values.iter().map(String::as_str).collect(),
                        Format::NewlineDelimited
                    ),
                    "{lines}"
                );
            }
            let array = format!(" [\n{}\n] ", values.join(" ,\n"));
            let (elements, found) = records(&array, Format::Auto);
            assert_eq!(
                (elements, found),
                (values.iter().map(String::as_str).collect(), Format::Array)
            );
            let packed: String = values.iter().map(|v| format!("{v}\t")).collect();
            let containers = values.iter().all(|v| v.starts_with(['{', '[', '"']));
            if containers {
                let glued = values.concat();
                assert_eq!(records(&glued, Format::Unstructured).0, values);
            }
            assert_eq!(records(&packed, Format::Unstructured).0, values);
        }
    }

    #[test]
    fn byte_order_mark_and_blank_lines_are_skipped() {
        let text = "\u{feff}{\"a\":1}\r\n\n  \n{\"a\":2}";
        assert_eq!(
            records(text, Format::NewlineDelimited).0,
            ["{\"a\":1}", "{\"a\":2}"]
        );
        assert_eq!(records(text, Format::Auto).0, ["{\"a\":1}", "{\"a\":2}"]);
    }

    #[test]
    fn errors_say_where_and_what() {
        let bad = split(b"{\"a\":1}\n{\"b\":\"x}", Format::Unstructured, 10).unwrap_err();
        assert_eq!(bad.offset, 8);
        assert!(bad.reason.contains("unterminated"), "{}", bad.reason);
        let not_array = split(b"{\"a\":1}", Format::Array, 10).unwrap_err();
        assert_eq!(not_array.offset, 0);
        let trailing = split(b"[1, 2] x", Format::Array, 10).unwrap_err();
        assert_eq!(trailing.offset, 7);
        let too_many = split(b"1 2 3", Format::Unstructured, 2).unwrap_err();
        assert_eq!(too_many.offset, 4);
        // Lines that cannot be cut apart are read line by line, so each can be rejected.
        let (_, found) = split(b"{\"a\":\"x}\n{\"a\":1}", Format::Auto, 10).unwrap();
        assert_eq!(found, Format::NewlineDelimited);
    }

    #[test]
    fn line_numbers_count_from_one() {
        assert_eq!(line_of(b"a\nb\nc", 0), 1);
        assert_eq!(line_of(b"a\nb\nc", 2), 2);
        assert_eq!(line_of(b"a\nb\nc", 99), 3);
    }
}
