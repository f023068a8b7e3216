//! A validating JSON scanner that extracts only the paths a query needs.
//!
//! One pass over a document checks that it is well-formed JSON (RFC 8259: structure,
//! strings, escapes, numbers, literals; UTF-8 is checked by the caller in bulk) and
//! records, for every path of a [`PathTrie`], where its value lies in the input. Values
//! off every path are skipped without being materialized: strings are crossed 16 bytes
//! at a time with SIMD, containers by a tight loop. Nothing is allocated per document.

use std::sync::{Arc, LazyLock};

use super::path::{PathTrie, Slot};

/// Documents nested deeper than this are rejected instead of exhausting the stack.
pub const MAX_NESTING: u32 = 512;

/// The JSON type of a located value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number; `integer` is true when it has no fraction and no exponent.
    Number {
        /// No `.` and no exponent in the literal.
        integer: bool,
    },
    /// A string; `escaped` is true when it contains a backslash escape.
    String {
        /// The raw text contains `\` escapes and must be unescaped before use.
        escaped: bool,
    },
    /// An object.
    Object,
    /// An array.
    Array,
}

/// Where a value lies in the scanned document: `start..end` covers its raw text
/// (strings include their quotes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The value's type.
    pub kind: Kind,
    /// Offset of its first byte.
    pub start: u32,
    /// Offset one past its last byte.
    pub end: u32,
}

impl Span {
    /// The raw bytes of the value inside `doc`.
    #[inline]
    pub fn raw<'a>(&self, doc: &'a [u8]) -> &'a [u8] {
        &doc[self.start as usize..self.end as usize]
    }

    /// For a string value, the bytes between the quotes (still escaped if `escaped`).
    #[inline]
    pub fn string_body<'a>(&self, doc: &'a [u8]) -> &'a [u8] {
        &doc[self.start as usize + 1..self.end as usize - 1]
    }
}

/// A syntax error: the byte offset in the document and what was expected there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset of the problem, relative to the document start.
    pub offset: usize,
    /// What the scanner expected.
    pub expected: &'static str,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.expected, self.offset)
    }
}

/// Scans documents against one [`PathTrie`], reusing its output buffer across documents.
#[derive(Debug)]
pub struct Scanner {
    trie: Arc<PathTrie>,
    found: Vec<Option<Span>>,
    /// Element offsets of the current array, kept only for paths with negative indexes.
    element_starts: Vec<u32>,
}

impl Scanner {
    /// A scanner for the paths of `trie`.
    pub fn new(trie: Arc<PathTrie>) -> Self {
        Self {
            found: vec![None; trie.len()],
            trie,
            element_starts: Vec::new(),
        }
    }

    /// Scans one document; afterwards [`Self::get`] returns each path's value.
    ///
    /// The document must be one JSON value, optionally surrounded by whitespace.
    pub fn scan(&mut self, doc: &[u8]) -> Result<(), SyntaxError> {
        debug_assert!(
            doc.len() < u32::MAX as usize,
            "documents are limited to 4 GiB"
        );
        self.found.iter_mut().for_each(|f| *f = None);
        let mut cursor = Cursor { doc, pos: 0 };
        cursor.skip_ws();
        self.value(&mut cursor, Some(0), 0)?;
        cursor.skip_ws();
        if cursor.pos != doc.len() {
            return Err(cursor.error("end of the document after the JSON value"));
        }
        Ok(())
    }

    /// The paths this scanner extracts.
    pub fn trie(&self) -> &PathTrie {
        &self.trie
    }

    /// The span of `slot`'s value in the last scanned document; `None` when absent.
    #[inline]
    pub fn get(&self, slot: Slot) -> Option<Span> {
        self.found[slot]
    }

    fn record(&mut self, node: usize, span: Span) {
        for &slot in &self.trie.node(node).slots {
            // The first occurrence of a duplicated key wins, as in DuckDB and yyjson.
            if self.found[slot].is_none() {
                self.found[slot] = Some(span);
            }
        }
    }

    /// Parses the value at the cursor (which sits on its first byte) and returns its kind.
    fn value(
        &mut self,
        c: &mut Cursor,
        node: Option<usize>,
        depth: u32,
    ) -> Result<Kind, SyntaxError> {
        let start = c.pos;
        let kind = match c.peek() {
            Some(b'{') => {
                self.object(c, node.filter(|&n| self.trie.node(n).has_children()), depth)?;
                Kind::Object
            }
            Some(b'[') => {
                self.array(c, node.filter(|&n| self.trie.node(n).has_children()), depth)?;
                Kind::Array
            }
            Some(b'"') => Kind::String {
                escaped: c.string()?,
            },
            Some(b't') => {
                c.literal(b"true")?;
                Kind::Bool(true)
            }
            Some(b'f') => {
                c.literal(b"false")?;
                Kind::Bool(false)
            }
            Some(b'n') => {
                c.literal(b"null")?;
                Kind::Null
            }
            Some(b'-' | b'0'..=b'9') => Kind::Number {
                integer: c.number()?,
            },
            Some(_) => return Err(c.error("a JSON value")),
            None => return Err(c.error("a JSON value, not the end of the document")),
        };
        if let Some(node) = node {
            self.record(
                node,
                Span {
                    kind,
                    start: start as u32,
                    end: c.pos as u32,
                },
            );
        }
        Ok(kind)
    }

    fn object(
        &mut self,
        c: &mut Cursor,
        node: Option<usize>,
        depth: u32,
    ) -> Result<(), SyntaxError> {
        if depth >= MAX_NESTING {
            return Err(c.error("at most 512 levels of nesting"));
        }
        c.pos += 1;
        c.skip_ws();
        if c.peek() == Some(b'}') {
            c.pos += 1;
            return Ok(());
        }
        let mut key_buf = Vec::new();
        loop {
            if c.peek() != Some(b'"') {
                return Err(c.error("a string key"));
            }
            let key_start = c.pos + 1;
            let escaped = c.string()?;
            let child = match node {
                Some(n) => {
                    let raw = &c.doc[key_start..c.pos - 1];
                    let key: &[u8] = if escaped {
                        key_buf.clear();
                        super::value::unescape_into(raw, &mut key_buf);
                        &key_buf
                    } else {
                        raw
                    };
                    self.trie.node(n).child_by_key(key)
                }
                None => None,
            };
            c.skip_ws();
            if c.peek() != Some(b':') {
                return Err(c.error("':' after an object key"));
            }
            c.pos += 1;
            c.skip_ws();
            self.value(c, child, depth + 1)?;
            c.skip_ws();
            match c.peek() {
                Some(b',') => {
                    c.pos += 1;
                    c.skip_ws();
                }
                Some(b'}') => {
                    c.pos += 1;
                    return Ok(());
                }
                _ => return Err(c.error("',' or '}' after an object member")),
            }
        }
    }

    fn array(
        &mut self,
        c: &mut Cursor,
        node: Option<usize>,
        depth: u32,
    ) -> Result<(), SyntaxError> {
        if depth >= MAX_NESTING {
            return Err(c.error("at most 512 levels of nesting"));
        }
        c.pos += 1;
        c.skip_ws();
        if c.peek() == Some(b']') {
            c.pos += 1;
            return Ok(());
        }
        let negative = node.is_some_and(|n| self.trie.node(n).has_negative_indexes());
        let mut starts = if negative {
            std::mem::take(&mut self.element_starts)
        } else {
            Vec::new()
        };
        starts.clear();
        let mut index: i64 = 0;
        loop {
            if negative {
                starts.push(c.pos as u32);
            }
            let child = node.and_then(|n| self.trie.node(n).child_by_index(index));
            self.value(c, child, depth + 1)?;
            c.skip_ws();
            match c.peek() {
                Some(b',') => {
                    c.pos += 1;
                    c.skip_ws();
                    index += 1;
                }
                Some(b']') => {
                    c.pos += 1;
                    break;
                }
                _ => return Err(c.error("',' or ']' after an array element")),
            }
        }
        if let (true, Some(n)) = (negative, node) {
            let len = starts.len() as i64;
            let resume = c.pos;
            let trie = Arc::clone(&self.trie);
            for &(i, child) in &trie.node(n).indexes {
                if i < 0 && len + i >= 0 {
                    // Already validated above; this second visit only records spans.
                    c.pos = starts[(len + i) as usize] as usize;
                    self.value(c, Some(child), depth + 1)?;
                }
            }
            c.pos = resume;
            self.element_starts = starts;
        }
        Ok(())
    }
}

/// Visits the members of the container at `span` in a document that [`Scanner::scan`]
/// already validated: for objects `f(Some(key), value)` per member (the key span is a
/// string), for arrays `f(None, element)` per element. Scalars have no members.
pub fn for_each_member(doc: &[u8], span: Span, mut f: impl FnMut(Option<Span>, Span)) {
    let is_object = match span.kind {
        Kind::Object => true,
        Kind::Array => false,
        _ => return,
    };
    static NO_PATHS: LazyLock<Arc<PathTrie>> = LazyLock::new(|| Arc::new(PathTrie::new()));
    let mut skipper = Scanner::new(Arc::clone(&NO_PATHS));
    let mut c = Cursor {
        doc: &doc[..span.end as usize],
        pos: span.start as usize + 1,
    };
    c.skip_ws();
    if c.pos + 1 >= span.end as usize {
        return;
    }
    loop {
        let key = if is_object {
            let start = c.pos;
            let escaped = c.string().expect("validated document");
            let key = Span {
                kind: Kind::String { escaped },
                start: start as u32,
                end: c.pos as u32,
            };
            c.skip_ws();
            c.pos += 1;
            c.skip_ws();
            Some(key)
        } else {
            None
        };
        let start = c.pos;
        let kind = skipper.value(&mut c, None, 0).expect("validated document");
        f(
            key,
            Span {
                kind,
                start: start as u32,
                end: c.pos as u32,
            },
        );
        c.skip_ws();
        if c.peek() != Some(b',') {
            return;
        }
        c.pos += 1;
        c.skip_ws();
    }
}

/// A position in a document.
struct Cursor<'a> {
    doc: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.doc.get(self.pos).copied()
    }

    #[cold]
    fn error(&self, expected: &'static str) -> SyntaxError {
        SyntaxError {
            offset: self.pos,
            expected,
        }
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), SyntaxError> {
        if self.doc[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.error(match word {
                b"true" => "the literal 'true'",
                b"false" => "the literal 'false'",
                _ => "the literal 'null'",
            }))
        }
    }

    /// Crosses a string (cursor on the opening quote); returns whether it has escapes.
    #[inline]
    fn string(&mut self) -> Result<bool, SyntaxError> {
        let mut escaped = false;
        let mut i = self.pos + 1;
        loop {
            i = find_string_special(self.doc, i);
            match self.doc.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    escaped = true;
                    match self.doc.get(i + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                        Some(b'u') => {
                            let hex = self.doc.get(i + 2..i + 6);
                            if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                                self.pos = i;
                                return Err(self.error("four hex digits after '\\u'"));
                            }
                            i += 6;
                        }
                        _ => {
                            self.pos = i;
                            return Err(self.error(
                                "a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)",
                            ));
                        }
                    }
                }
                Some(_) => {
                    self.pos = i;
                    return Err(
                        self.error("no raw control characters inside a string (escape them)")
                    );
                }
                None => {
                    self.pos = i;
                    return Err(self.error("the closing '\"' of a string"));
                }
            }
        }
    }

    /// Crosses a number; returns true when it is an integer literal.
    fn number(&mut self) -> Result<bool, SyntaxError> {
        let d = self.doc;
        let mut i = self.pos;
        if d.get(i) == Some(&b'-') {
            i += 1;
        }
        match d.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while d.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
            }
            _ => {
                self.pos = i;
                return Err(self.error("a digit"));
            }
        }
        let mut integer = true;
        if d.get(i) == Some(&b'.') {
            integer = false;
            i += 1;
            if !d.get(i).is_some_and(u8::is_ascii_digit) {
                self.pos = i;
                return Err(self.error("a digit after the decimal point"));
            }
            while d.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        if let Some(b'e' | b'E') = d.get(i) {
            integer = false;
            i += 1;
            if let Some(b'+' | b'-') = d.get(i) {
                i += 1;
            }
            if !d.get(i).is_some_and(u8::is_ascii_digit) {
                self.pos = i;
                return Err(self.error("a digit in the exponent"));
            }
            while d.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        self.pos = i;
        Ok(integer)
    }
}

/// Offset of the first `"`, `\` or control character (< 0x20) at or after `from`, or
/// `bytes.len()` when there is none.
#[inline]
fn find_string_special(bytes: &[u8], from: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        // SSE2 is part of the x86_64 baseline, so no runtime detection is needed.
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
            _mm_or_si128, _mm_set1_epi8,
        };
        let mut i = from;
        // SAFETY: every load reads 16 bytes starting at `i` with `i + 16 <= len`.
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let control = _mm_set1_epi8(0x1f);
            while i + 16 <= bytes.len() {
                let v = _mm_loadu_si128(bytes.as_ptr().add(i) as *const __m128i);
                let is_control = _mm_cmpeq_epi8(_mm_min_epu8(v, control), v);
                let hits = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                    is_control,
                );
                let mask = _mm_movemask_epi8(hits);
                if mask != 0 {
                    return i + mask.trailing_zeros() as usize;
                }
                i += 16;
            }
        }
        scalar_find(bytes, i)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        scalar_find(bytes, from)
    }
}

#[inline]
fn scalar_find(bytes: &[u8], from: usize) -> usize {
    bytes[from.min(bytes.len())..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map_or(bytes.len(), |p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::path::{PathElem, parse_json_path};

    fn scan_paths(doc: &str, paths: &[&str]) -> Result<Vec<Option<String>>, SyntaxError> {
        let mut trie = PathTrie::new();
        let slots: Vec<_> = paths
            .iter()
            .map(|p| trie.add(&parse_json_path(p).unwrap()))
            .collect();
        let mut scanner = Scanner::new(Arc::new(trie));
        scanner.scan(doc.as_bytes())?;
        Ok(slots
            .iter()
            .map(|&s| {
                scanner
                    .get(s)
                    .map(|span| String::from_utf8(span.raw(doc.as_bytes()).to_vec()).unwrap())
            })
            .collect())
    }

    #[test]
    fn extracts_nested_paths_in_one_pass() {
        let doc = r#" {"did":"x","commit":{"op":"create","rec":{"langs":["en","de"],"n":-1.5e3}},"t":123} "#;
        let got = scan_paths(
            doc,
            &[
                "$.did",
                "$.commit.op",
                "$.commit.rec.langs[1]",
                "$.commit.rec.n",
                "$.t",
                "$.missing",
                "$.commit.rec.langs[#-2]",
                "$",
            ],
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                Some("\"x\"".into()),
                Some("\"create\"".into()),
                Some("\"de\"".into()),
                Some("-1.5e3".into()),
                Some("123".into()),
                None,
                Some("\"en\"".into()),
                Some(doc.trim().into()),
            ]
        );
    }

    #[test]
    fn kinds_are_reported() {
        let doc = br#"{"a":null,"b":true,"c":false,"d":1,"e":1.0,"f":"s\n","g":"s","h":{},"i":[]}"#;
        let mut trie = PathTrie::new();
        for k in ["a", "b", "c", "d", "e", "f", "g", "h", "i"] {
            trie.add(&[PathElem::Key(k.into())]);
        }
        let mut scanner = Scanner::new(Arc::new(trie));
        scanner.scan(doc).unwrap();
        let kinds: Vec<Kind> = (0..9).map(|s| scanner.get(s).unwrap().kind).collect();
        assert_eq!(
            kinds,
            vec![
                Kind::Null,
                Kind::Bool(true),
                Kind::Bool(false),
                Kind::Number { integer: true },
                Kind::Number { integer: false },
                Kind::String { escaped: true },
                Kind::String { escaped: false },
                Kind::Object,
                Kind::Array
            ]
        );
    }

    #[test]
    fn escaped_keys_match_and_first_duplicate_wins() {
        let got = scan_paths(r#"{"a\u0062":1,"ab":2}"#, &["$.ab"]).unwrap();
        assert_eq!(got, vec![Some("1".into())]);
    }

    #[test]
    fn paths_through_wrong_types_are_absent() {
        let got = scan_paths(
            r#"{"a":"str","b":[1],"c":{"0":1}}"#,
            &["$.a.x", "$.b.x", "$.c[0]", "$.b[5]"],
        )
        .unwrap();
        assert_eq!(got, vec![None, None, None, None]);
    }

    #[test]
    fn malformed_documents_are_rejected_with_offsets() {
        let cases: &[(&str, usize, &str)] = &[
            (r#"{"a":1"#, 6, "',' or '}'"),
            (r#"{"a" 1}"#, 5, "':'"),
            (r#"{a:1}"#, 1, "string key"),
            (r#"{"a":tru}"#, 5, "'true'"),
            (r#"{"a":01}"#, 6, "',' or '}'"),
            (r#"{"a":1.}"#, 7, "decimal point"),
            (r#"{"a":"x\q"}"#, 7, "valid escape"),
            (r#"{"a":"\u12G4"}"#, 6, "hex digits"),
            ("{\"a\":\"x\ty\"}", 7, "control characters"),
            (r#"{"a":"open}"#, 11, "closing '\"'"),
            (r#"{"a":1} x"#, 8, "end of the document"),
            (r#"[1,2"#, 4, "',' or ']'"),
            ("", 0, "JSON value"),
            (r#"{"a":-}"#, 6, "a digit"),
            (r#"{"a":1e}"#, 7, "exponent"),
        ];
        for &(doc, offset, expected) in cases {
            let err = scan_paths(doc, &["$.a"]).unwrap_err();
            assert_eq!(err.offset, offset, "{doc}: {err}");
            assert!(err.expected.contains(expected), "{doc}: {err}");
        }
    }

    #[test]
    fn members_are_visited_in_order() {
        let doc = br#"{"a" : 1, "b\n":[1, {"x":2}], "c":{}}"#;
        let trie = Arc::new(PathTrie::single(&[]));
        let mut scanner = Scanner::new(Arc::clone(&trie));
        scanner.scan(doc).unwrap();
        let mut seen = Vec::new();
        for_each_member(doc, scanner.get(0).unwrap(), |k, v| {
            let key = k.map(|k| String::from_utf8(k.raw(doc).to_vec()).unwrap());
            seen.push((key, String::from_utf8(v.raw(doc).to_vec()).unwrap()));
        });
        let expected = [
            ("\"a\"", "1"),
            ("\"b\\n\"", "[1, {\"x\":2}]"),
            ("\"c\"", "{}"),
        ];
        let expected: Vec<_> = expected
            .iter()
            .map(|(k, v)| (Some(k.to_string()), v.to_string()))
            .collect();
        assert_eq!(seen, expected);
        let mut count = 0;
        let empty = br#"[ ]"#;
        let mut scanner = Scanner::new(trie);
        scanner.scan(empty).unwrap();
        for_each_member(empty, scanner.get(0).unwrap(), |_, _| count += 1);
        assert_eq!(count, 0);
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let deep = "[".repeat(600) + &"]".repeat(600);
        let err = scan_paths(&deep, &["$.a"]).unwrap_err();
        assert!(err.expected.contains("nesting"));
        let ok = "[".repeat(100) + &"]".repeat(100);
        assert!(scan_paths(&ok, &["$.a"]).is_ok());
    }

    #[test]
    fn simd_and_scalar_string_search_agree() {
        let text = b"0123456789abcdef0123456789\"abcdef\\0123\x01456789";
        for from in 0..text.len() {
            assert_eq!(
                find_string_special(text, from),
                scalar_find(text, from),
                "from {from}"
            );
        }
    }
}
