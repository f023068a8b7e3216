//! A validating JSON scanner that extracts only the paths a query needs.
//!
//! One pass over a document records, for every path of a [`PathTrie`], where its value
//! lies in the input, and checks that the document is well-formed JSON. Values off every
//! path are skipped without being materialized, strings 32 bytes at a time with SIMD.
//! Nothing is allocated per document.
//!
//! Both levels of [`Validation`] accept and reject exactly the same documents, with the
//! same error at the same offset: all of RFC 8259 (structure, keys, literals, numbers,
//! escapes, surrogate pairs, no control characters in strings, nothing but whitespace
//! around the value, no byte-order mark), so that whether a line is malformed never
//! depends on what a query reads of it. They differ in cost only. `Full` descends
//! through the whole document. `Structure`, the default for scans, stops locating once
//! the last needed value is found and crosses the rest with a loop over tokens (no
//! recursion, no path lookups), each token still checked. String contents (escapes,
//! surrogates, control characters) are checked once per document from the stage-one
//! bitmaps, so neither level reads a string byte by byte. UTF-8 is checked by the
//! caller, in bulk.

use std::sync::{Arc, LazyLock};

use crate::escape::hex4;
use crate::index::Marks;
use crate::limits::{MAX_NESTING, NESTING_ERROR};
use crate::non_finite;
use crate::path::{PathTrie, Slot};
use crate::tape::MAX_DECIMAL_DIGITS;

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

/// How much of a document a scan checks; see the module documentation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Validation {
    /// The whole document is parsed by the descent that locates values.
    Full,
    /// The descent stops at the last value needed; the rest is checked token by token
    /// by a cheaper loop. Accepts exactly what `Full` accepts.
    #[default]
    Structure,
}

/// A syntax error: the byte offset in the document and what was expected there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset of the problem, relative to the document start.
    pub offset: usize,
    /// What the scanner expected.
    pub expected: &'static str,
}

/// Why the recursive descent stopped early.
enum Stop {
    /// The document is malformed.
    Syntax(SyntaxError),
    /// Every path was found; the rest is checked without locating anything.
    Complete,
}

impl From<SyntaxError> for Stop {
    fn from(e: SyntaxError) -> Self {
        Stop::Syntax(e)
    }
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
    validation: Validation,
    found: Vec<Option<Span>>,
    /// Paths not found yet in the current document.
    remaining: usize,
    /// Closing brackets of the containers the cursor is inside, innermost last.
    open: Vec<u8>,
    /// Stage-one bitmaps of the current document (buffers reused across documents).
    marks: Marks,
    /// Element offsets of the current array, kept only for paths with negative indexes.
    element_starts: Vec<u32>,
    /// Trie nodes whose value the current document has reached: a node reached again
    /// is a duplicated key, whose later values are not read (first occurrence wins).
    entered: Vec<bool>,
    /// Whether numbers a Tessera table cannot store exactly are syntax errors.
    storable: bool,
    /// Whether `NaN` and `Infinity` are numbers (see [`crate::non_finite`]).
    non_finite: bool,
    /// Whether a container may end with a `,` (see [`Scanner::with_trailing_commas`]).
    trailing_commas: bool,
}

impl Scanner {
    /// A scanner for the paths of `trie`.
    pub fn new(trie: Arc<PathTrie>) -> Self {
        Self {
            validation: Validation::default(),
            found: vec![None; trie.len()],
            remaining: 0,
            open: Vec::new(),
            marks: Marks::default(),
            entered: vec![false; trie.node_count()],
            trie,
            element_starts: Vec::new(),
            storable: false,
            non_finite: false,
            trailing_commas: false,
        }
    }

    /// The same scanner with another validation level.
    pub fn with_validation(mut self, validation: Validation) -> Self {
        self.validation = validation;
        self
    }

    /// The same scanner reading `NaN` and `Infinity` as numbers, as DuckDB's JSON
    /// functions do (see [`crate::non_finite`]); without it they are syntax errors.
    pub fn with_non_finite_numbers(mut self, non_finite: bool) -> Self {
        self.non_finite = non_finite;
        self
    }

    /// The same scanner accepting one `,` before a container's closing bracket (`[1,]`),
    /// as DuckDB's JSON functions do; without it that is a syntax error.
    pub fn with_trailing_commas(mut self, trailing_commas: bool) -> Self {
        self.trailing_commas = trailing_commas;
        self
    }

    /// Whether this scanner also rejects numbers a Tessera table cannot store exactly:
    /// an integer of more than [`MAX_DECIMAL_DIGITS`] digits, a float beyond `f64`'s
    /// range (`1e400`). Ingest uses it so that such a line is a bad line with its place,
    /// found in the one validating pass instead of a second parse.
    pub fn set_storable_numbers(&mut self, storable: bool) {
        self.storable = storable;
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
        self.remaining = self.found.len();
        self.entered.fill(false);
        self.open.clear();
        let mut marks = std::mem::take(&mut self.marks);
        marks.index(doc);
        let result = self.scan_indexed(doc, &marks);
        self.marks = marks;
        result
    }

    fn scan_indexed(&mut self, doc: &[u8], marks: &Marks) -> Result<(), SyntaxError> {
        let mut cursor = Cursor {
            doc,
            pos: 0,
            marks,
            storable: self.storable,
            non_finite: self.non_finite,
            trailing_commas: self.trailing_commas,
        };
        // Control characters and escapes are checked once for all strings of the document.
        cursor.check_strings(0, doc.len())?;
        cursor.skip_ws();
        if self.remaining == 0 && self.validation == Validation::Structure {
            // Nothing to extract: one whole value, token by token.
            skip_rest(&mut cursor, &mut self.open)?;
        } else {
            match self.value(&mut cursor, Some(0), 0) {
                Ok(_) => {}
                // Completed inside containers: cross the rest of them. (With none open,
                // the completed value was the whole document.)
                Err(Stop::Complete) if !self.open.is_empty() => {
                    skip_rest(&mut cursor, &mut self.open)?;
                }
                Err(Stop::Complete) => {}
                Err(Stop::Syntax(e)) => return Err(e),
            }
        }
        cursor.skip_ws();
        if cursor.pos != doc.len() {
            return Err(cursor.error("end of the document after the JSON value"));
        }
        Ok(())
    }

    /// Scans one document that should be an array, validating it as [`Self::scan`]
    /// does, and gives `f` the span of each element in order: the elements of a JSON
    /// array in one pass. `Ok(false)`, with nothing given, when the document is not an
    /// array; an error (and possibly some elements given) when it is malformed.
    pub fn scan_elements(
        &mut self,
        doc: &[u8],
        mut f: impl FnMut(Span),
    ) -> Result<bool, SyntaxError> {
        self.open.clear();
        let mut marks = std::mem::take(&mut self.marks);
        marks.index(doc);
        let mut cursor = Cursor {
            doc,
            pos: 0,
            marks: &marks,
            storable: self.storable,
            non_finite: self.non_finite,
            trailing_commas: self.trailing_commas,
        };
        let result = self.elements(&mut cursor, &mut f);
        self.marks = marks;
        result
    }

    fn elements(&mut self, c: &mut Cursor, f: &mut impl FnMut(Span)) -> Result<bool, SyntaxError> {
        c.check_strings(0, c.doc.len())?;
        c.skip_ws();
        if c.peek() != Some(b'[') {
            return Ok(false);
        }
        let syntax = |stop| match stop {
            Stop::Syntax(e) => e,
            Stop::Complete => unreachable!("nothing is located, so nothing completes"),
        };
        let mut open = self.enter(c, 0, b']').map_err(syntax)?;
        while open {
            let start = c.pos;
            let kind = self.value(c, None, 1).map_err(syntax)?;
            f(Span {
                kind,
                start: start as u32,
                end: c.pos as u32,
            });
            c.skip_ws();
            open = match c.peek() {
                Some(b',') => !c.comma_closes(b']'),
                Some(b']') => false,
                _ => return Err(c.after_element(b']')),
            };
        }
        // A non-empty array ends with the cursor on its `]` (an empty one was crossed).
        if !self.open.is_empty() {
            c.pos += 1;
            self.open.pop();
        }
        c.skip_ws();
        if c.pos != c.doc.len() {
            return Err(c.error("end of the document after the JSON value"));
        }
        Ok(true)
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

    /// Records a found value; `Stop::Complete` when it was the last one needed.
    fn record(&mut self, node: usize, span: Span) -> Result<(), Stop> {
        for &slot in &self.trie.node(node).slots {
            // The first occurrence of a duplicated key wins, as in DuckDB and yyjson.
            if self.found[slot].is_none() {
                self.found[slot] = Some(span);
                self.remaining -= 1;
            }
        }
        if self.remaining == 0 && self.validation == Validation::Structure {
            return Err(Stop::Complete);
        }
        Ok(())
    }

    /// Parses the value at the cursor (which sits on its first byte) and returns its kind.
    fn value(&mut self, c: &mut Cursor, node: Option<usize>, depth: u32) -> Result<Kind, Stop> {
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
            _ => c.scalar()?,
        };
        if let Some(node) = node {
            self.record(
                node,
                Span {
                    kind,
                    start: start as u32,
                    end: c.pos as u32,
                },
            )?;
        }
        Ok(kind)
    }

    /// Crosses the opening bracket of a container at `depth` that `close` closes; false
    /// when the container is empty (and crossed), else true with `close` pushed.
    fn enter(&mut self, c: &mut Cursor, depth: u32, close: u8) -> Result<bool, Stop> {
        if depth as usize >= MAX_NESTING {
            return Err(c.error(NESTING_ERROR).into());
        }
        c.pos += 1;
        c.skip_ws();
        if c.peek() == Some(close) {
            c.pos += 1;
            return Ok(false);
        }
        self.open.push(close);
        Ok(true)
    }

    fn object(&mut self, c: &mut Cursor, node: Option<usize>, depth: u32) -> Result<(), Stop> {
        if !self.enter(c, depth, b'}')? {
            return Ok(());
        }
        let mut key_buf = Vec::new();
        loop {
            if c.peek() != Some(b'"') {
                return Err(c.error("a string key").into());
            }
            let key_start = c.pos + 1;
            let escaped = c.string()?;
            let child = match node {
                Some(n) => {
                    let raw = &c.doc[key_start..c.pos - 1];
                    let key: &[u8] = if escaped {
                        key_buf.clear();
                        crate::escape::unescape_into(raw, &mut key_buf);
                        &key_buf
                    } else {
                        raw
                    };
                    self.trie.node(n).child_by_key(key)
                }
                None => None,
            };
            // The first occurrence of a duplicated key wins, below it too.
            let child = child.filter(|&ch| !std::mem::replace(&mut self.entered[ch], true));
            c.skip_ws();
            if c.peek() != Some(b':') {
                return Err(c.error("':' after an object key").into());
            }
            c.pos += 1;
            c.skip_ws();
            self.value(c, child, depth + 1)?;
            c.skip_ws();
            let closes = match c.peek() {
                Some(b',') => c.comma_closes(b'}'),
                Some(b'}') => true,
                _ => return Err(c.after_element(b'}').into()),
            };
            if closes {
                c.pos += 1;
                self.open.pop();
                return Ok(());
            }
        }
    }

    fn array(&mut self, c: &mut Cursor, node: Option<usize>, depth: u32) -> Result<(), Stop> {
        if !self.enter(c, depth, b']')? {
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
            let closes = match c.peek() {
                Some(b',') => c.comma_closes(b']'),
                Some(b']') => true,
                _ => return Err(c.after_element(b']').into()),
            };
            if closes {
                c.pos += 1;
                self.open.pop();
                break;
            }
            index += 1;
        }
        if let (true, Some(n)) = (negative, node) {
            let len = starts.len() as i64;
            let resume = c.pos;
            let trie = Arc::clone(&self.trie);
            let mut result = Ok(());
            for &(i, child) in &trie.node(n).indexes {
                if i < 0 && len + i >= 0 {
                    // Already validated above; this second visit only records spans.
                    c.pos = starts[(len + i) as usize] as usize;
                    let open = self.open.len();
                    result = self.value(c, Some(child), depth + 1).map(|_| ());
                    // A completion inside the revisited element resumes after the array.
                    self.open.truncate(open);
                    if result.is_err() {
                        break;
                    }
                }
            }
            c.pos = resume;
            self.element_starts = starts;
            result?;
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
    let doc = &doc[..span.end as usize];
    let mut marks = Marks::default();
    marks.index(doc);
    let mut c = Cursor {
        doc,
        pos: span.start as usize + 1,
        marks: &marks,
        storable: false,
        // The document is validated already: whatever numbers and commas its scan accepted.
        non_finite: true,
        trailing_commas: true,
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
        let Ok(kind) = skipper.value(&mut c, None, 0) else {
            unreachable!("a validated document")
        };
        f(
            key,
            Span {
                kind,
                start: start as u32,
                end: c.pos as u32,
            },
        );
        c.skip_ws();
        if c.peek() != Some(b',') || c.comma_closes(if is_object { b'}' } else { b']' }) {
            return;
        }
    }
}

/// What [`skip_rest`] expects at the next token.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value (after `:`, inside an array, or the whole document).
    Value,
    /// A string key (inside an object).
    Key,
    /// `,` or the innermost container's closing bracket (after a value).
    Separator,
}

/// Crosses the rest of a document without locating anything: from just after a value
/// inside the containers whose closing brackets are `open` (or, when none are open, one
/// whole value), to the end of the outermost one.
///
/// Every token is checked as [`Scanner::value`] checks it, with the same errors at the
/// same offsets, so that what a query reads never changes whether a document is
/// malformed. It is cheaper than the descent because it is a loop over tokens with an
/// explicit stack: no recursion, no path lookups, and strings crossed by the stage-one
/// quote bitmap (their contents were checked for the whole document at once).
fn skip_rest(c: &mut Cursor, open: &mut Vec<u8>) -> Result<(), SyntaxError> {
    let mut expect = if open.is_empty() {
        Expect::Value
    } else {
        Expect::Separator
    };
    loop {
        c.skip_ws();
        let byte = c.peek();
        expect = match (expect, byte) {
            (Expect::Value, Some(b @ (b'{' | b'['))) => {
                if open.len() >= MAX_NESTING {
                    return Err(c.error(NESTING_ERROR));
                }
                c.pos += 1;
                c.skip_ws();
                match (b, c.peek()) {
                    // Empty containers are never pushed, as in the descent.
                    (b'{', Some(b'}')) | (b'[', Some(b']')) => {
                        c.pos += 1;
                        Expect::Separator
                    }
                    (b'{', _) => {
                        open.push(b'}');
                        Expect::Key
                    }
                    _ => {
                        open.push(b']');
                        Expect::Value
                    }
                }
            }
            (Expect::Value, _) => {
                c.scalar()?;
                Expect::Separator
            }
            (Expect::Key, Some(b'"')) => {
                c.string()?;
                c.skip_ws();
                if c.peek() != Some(b':') {
                    return Err(c.error("':' after an object key"));
                }
                c.pos += 1;
                Expect::Value
            }
            (Expect::Key, _) => return Err(c.error("a string key")),
            (Expect::Separator, _) => {
                let Some(&close) = open.last() else {
                    return Ok(());
                };
                let closes = match byte {
                    Some(b',') => c.comma_closes(close),
                    Some(b) if b == close => true,
                    _ => return Err(c.after_element(close)),
                };
                if closes {
                    c.pos += 1;
                    open.pop();
                    Expect::Separator
                } else if close == b'}' {
                    Expect::Key
                } else {
                    Expect::Value
                }
            }
        };
    }
}

/// What the scanner expects after a high surrogate escape with no low one after it.
const LONE_HIGH_SURROGATE: &str =
    "a low surrogate escape (\\uDC00-\\uDFFF) after a high surrogate (\\uD800-\\uDBFF)";

/// What the scanner expects instead of a low surrogate escape with no high one before it.
const LONE_LOW_SURROGATE: &str =
    "no low surrogate escape (\\uDC00-\\uDFFF) without a high surrogate before it";

/// A position in a document.
struct Cursor<'a> {
    doc: &'a [u8],
    pos: usize,
    marks: &'a Marks,
    /// See [`Scanner::set_storable_numbers`].
    storable: bool,
    /// See [`Scanner::with_non_finite_numbers`].
    non_finite: bool,
    /// See [`Scanner::with_trailing_commas`].
    trailing_commas: bool,
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

    /// On a `,` inside a container that `close` closes: crosses it and the whitespace
    /// after it, and says whether the container ends there (a trailing comma, accepted
    /// only when asked; the cursor then sits on `close`).
    #[inline]
    fn comma_closes(&mut self, close: u8) -> bool {
        self.pos += 1;
        self.skip_ws();
        self.trailing_commas && self.peek() == Some(close)
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.pos += 1;
        }
    }

    /// Crosses the scalar at the cursor (anything but an object or an array) and
    /// returns its kind.
    #[inline]
    fn scalar(&mut self) -> Result<Kind, SyntaxError> {
        Ok(match self.peek() {
            Some(b'"') => Kind::String {
                escaped: self.string()?,
            },
            Some(b't') => {
                self.literal(b"true")?;
                Kind::Bool(true)
            }
            Some(b'f') => {
                self.literal(b"false")?;
                Kind::Bool(false)
            }
            Some(b'n') if !self.non_finite || self.doc[self.pos..].starts_with(b"null") => {
                self.literal(b"null")?;
                Kind::Null
            }
            Some(b'-' | b'0'..=b'9') => Kind::Number {
                integer: self.number()?,
            },
            Some(b) if self.non_finite && non_finite::starts_word(b) => Kind::Number {
                integer: self.number()?,
            },
            Some(_) => return Err(self.error("a JSON value")),
            None => return Err(self.error("a JSON value, not the end of the document")),
        })
    }

    /// The error after a member or element of the container that `close` closes, where
    /// neither `,` nor `close` follows.
    #[cold]
    fn after_element(&self, close: u8) -> SyntaxError {
        self.error(match (close, self.peek()) {
            (b'}', None) => "'}' to close an object, not the end of the document",
            (b'}', _) => "',' or '}' after an object member",
            (_, None) => "']' to close an array, not the end of the document",
            _ => "',' or ']' after an array element",
        })
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
        let open = self.pos;
        let Some(close) = self.marks.first(|b| b.quotes, open + 1, self.doc.len()) else {
            self.pos = self.doc.len();
            return Err(self.error("the closing '\"' of a string"));
        };
        self.pos = close + 1;
        Ok(self.marks.any.backslashes != 0
            && self
                .marks
                .first(|b| b.backslashes, open + 1, close)
                .is_some())
    }

    /// Checks the string contents in `from..to` (a whole document: one pass over the
    /// bitmaps): no raw control characters, and every escape one of JSON's.
    #[inline]
    fn check_strings(&mut self, from: usize, to: usize) -> Result<(), SyntaxError> {
        if self.marks.any.controls == 0 && self.marks.any.escaped == 0 {
            return Ok(());
        }
        if let Some(bad) = self.marks.first(|b| b.controls, from, to) {
            self.pos = bad;
            return Err(self.error("no raw control characters inside a string (escape them)"));
        }
        let mut at = from;
        while let Some(escaped) = self.marks.first(|b| b.escaped, at, to) {
            match self.doc[escaped] {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                b'u' => {
                    let fail = |c: &mut Self, expected| {
                        c.pos = escaped - 1;
                        Err(c.error(expected))
                    };
                    let Some(unit) = hex4(self.doc, escaped + 1) else {
                        return fail(self, "four hex digits after '\\u'");
                    };
                    match unit {
                        // UTF-16 surrogates stand for text only in pairs (RFC 8259 7).
                        0xD800..=0xDBFF => {
                            let after = escaped + 5;
                            let low = (self.doc.get(after..after + 2) == Some(b"\\u"))
                                .then(|| hex4(self.doc, after + 2))
                                .flatten();
                            if !matches!(low, Some(0xDC00..=0xDFFF)) {
                                return fail(self, LONE_HIGH_SURROGATE);
                            }
                            // The pair's second escape is checked: resume after its `u`.
                            at = after + 2;
                            continue;
                        }
                        0xDC00..=0xDFFF => return fail(self, LONE_LOW_SURROGATE),
                        _ => {}
                    }
                }
                _ => {
                    self.pos = escaped - 1;
                    return Err(
                        self.error("a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
                    );
                }
            }
            at = escaped + 1;
        }
        Ok(())
    }

    /// Crosses a number; returns true when it is an integer literal.
    fn number(&mut self) -> Result<bool, SyntaxError> {
        let d = self.doc;
        let start = self.pos;
        if self.non_finite
            && let Some(len) = non_finite::word_len(&d[start..])
        {
            self.pos = start + len;
            return Ok(false);
        }
        let mut i = start;
        if d.get(i) == Some(&b'-') {
            i += 1;
        }
        let int_start = i;
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
        let int_digits = i - int_start;
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
        let mut exponent: i64 = 0;
        if let Some(b'e' | b'E') = d.get(i) {
            integer = false;
            i += 1;
            let negative = d.get(i) == Some(&b'-');
            if let Some(b'+' | b'-') = d.get(i) {
                i += 1;
            }
            if !d.get(i).is_some_and(u8::is_ascii_digit) {
                self.pos = i;
                return Err(self.error("a digit in the exponent"));
            }
            while let Some(&digit) = d.get(i).filter(|b| b.is_ascii_digit()) {
                exponent = (exponent * 10 + i64::from(digit - b'0')).min(1 << 20);
                i += 1;
            }
            if negative {
                exponent = -exponent;
            }
        }
        if self.storable {
            self.check_storable(start, i, integer, int_digits, exponent)?;
        }
        self.pos = i;
        Ok(integer)
    }

    /// Whether the number `doc[start..end]` fits a Tessera table exactly (see
    /// [`Scanner::set_storable_numbers`]). Only a float whose decimal exponent reaches
    /// `f64`'s is parsed: the rest cannot overflow.
    #[cold]
    fn check_storable(
        &self,
        start: usize,
        end: usize,
        integer: bool,
        int_digits: usize,
        exponent: i64,
    ) -> Result<(), SyntaxError> {
        let at_start = |expected| SyntaxError {
            offset: start,
            expected,
        };
        if integer {
            return match int_digits > MAX_DECIMAL_DIGITS {
                true => Err(at_start(TOO_MANY_DIGITS)),
                false => Ok(()),
            };
        }
        let magnitude_exponent = int_digits as i64 - 1 + exponent;
        if magnitude_exponent < F64_MAX_EXPONENT {
            return Ok(());
        }
        // SAFETY: a number's bytes are ASCII.
        let text = unsafe { std::str::from_utf8_unchecked(&self.doc[start..end]) };
        match text.parse::<f64>().is_ok_and(f64::is_finite) {
            true => Ok(()),
            false => Err(at_start(BEYOND_DOUBLE)),
        }
    }
}

/// The decimal exponent of `f64::MAX` (1.797e308): no number of a lower one overflows.
const F64_MAX_EXPONENT: i64 = 308;

/// What a Tessera table expects instead of a longer integer.
const TOO_MANY_DIGITS: &str =
    "an integer of at most 38 digits (a Tessera table stores no more exactly)";

/// What a Tessera table expects instead of `1e400`.
const BEYOND_DOUBLE: &str =
    "a number within the range of a double (a Tessera table stores no larger)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::{PathElem, parse_json_path};

    fn scan_paths(doc: &str, paths: &[&str]) -> Result<Vec<Option<String>>, SyntaxError> {
        scan_with(doc, paths, Validation::Full)
    }

    fn scan_with(
        doc: &str,
        paths: &[&str],
        validation: Validation,
    ) -> Result<Vec<Option<String>>, SyntaxError> {
        scan_with_commas(doc, paths, validation, false)
    }

    /// [`scan_with`], with trailing commas accepted or not.
    fn scan_with_commas(
        doc: &str,
        paths: &[&str],
        validation: Validation,
        trailing_commas: bool,
    ) -> Result<Vec<Option<String>>, SyntaxError> {
        let mut trie = PathTrie::new();
        let slots: Vec<_> = paths
            .iter()
            .map(|p| trie.add(&parse_json_path(p).unwrap()))
            .collect();
        let mut scanner = Scanner::new(Arc::new(trie))
            .with_validation(validation)
            .with_trailing_commas(trailing_commas);
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
    fn structure_mode_finds_the_same_values() {
        let docs = [
            r#"{"did":"x","commit":{"op":"create","rec":{"langs":["en","de"],"n":-1.5e3}},"t":123}"#,
            r#"{"commit":{"rec":{"langs":["a","b","c"]}},"did":"y"}"#,
            r#"[{"did":1}]"#,
            r#""str""#,
            r#"{"t":{"x":[1,{"y":"}"}]},"did":null}"#,
        ];
        let paths = ["$.did", "$.commit.rec.langs[#-1]", "$.t", "$"];
        for doc in docs {
            for subset in [&paths[..1], &paths[..2], &paths[1..3], &paths[3..], &[]] {
                assert_eq!(
                    scan_with(doc, subset, Validation::Structure).unwrap(),
                    scan_with(doc, subset, Validation::Full).unwrap(),
                    "{doc} {subset:?}"
                );
            }
        }
    }

    #[test]
    fn structure_mode_still_rejects_broken_structure() {
        let cases: &[(&str, usize, &str)] = &[
            (
                r#"{"a":1,"b":{"c":[1,2}}"#,
                20,
                "',' or ']' after an array element",
            ),
            (r#"{"a":1,"b":{"c":"#, 16, "a JSON value, not the end"),
            (r#"{"a":1,"b":"no end}"#, 19, "closing '\"'"),
            (r#"{"a":1,"b":"\q"}"#, 12, "valid escape"),
            (r#"{"a":1,"b":[]}]"#, 14, "end of the document"),
            (
                r#"{"a":1,"b":[1,2]"#,
                16,
                "'}' to close an object, not the end",
            ),
            (r#"{"a" 1,"b":2}"#, 5, "':'"),
        ];
        for &(doc, offset, expected) in cases {
            let err = scan_with(doc, &["$.a"], Validation::Structure).unwrap_err();
            assert_eq!(err.offset, offset, "{doc}: {err}");
            assert!(err.expected.contains(expected), "{doc}: {err}");
            assert_eq!(Err(err), scan_with(doc, &["$.a"], Validation::Full));
        }
        // With nothing to extract, a document is crossed token by token from its start.
        assert!(scan_with(r#"{"a":[}"#, &[], Validation::Structure).is_err());
        assert!(scan_with(r#"{"a":[]} x"#, &[], Validation::Structure).is_err());
    }

    #[test]
    fn structure_mode_rejects_bad_tokens_after_the_last_needed_value() {
        // Each line of the issue's example, behind a value the query reads and alone.
        let bad = [
            r#"{"a":1,"b":tru,"c":01}"#,
            r#"{"a":1,}"#,
            r#"{"a":1,"b":{c:1}}"#,
            r#"{"a":1,"b":[1,2,]}"#,
            r#"{"a":1,"b":01}"#,
            r#"{"a":1,"b":NaN}"#,
            r#"{"a":1,"b":-}"#,
            r#"{"a":1,"b":1.}"#,
            r#"{"a":1,"b":[1 2]}"#,
            r#"{"a":1,"b" "c"}"#,
            r#"{"a":1,,"b":2}"#,
            r#"{"a":1,"b":truex}"#,
            "\u{feff}{\"a\":1}",
            "tru",
            "01",
            "-",
            "[1,]",
        ];
        for doc in bad {
            let full = scan_with(doc, &["$.a"], Validation::Full).unwrap_err();
            for paths in [&["$.a"][..], &[]] {
                let structure = scan_with(doc, paths, Validation::Structure).unwrap_err();
                assert_eq!(structure, full, "{doc} {paths:?}");
            }
        }
    }

    #[test]
    fn lone_surrogate_escapes_are_malformed_in_both_modes() {
        let cases: &[(&str, usize, &str)] = &[
            (r#"{"a":"\ud800"}"#, 6, "after a high surrogate"),
            (r#"{"a":"\ud800x"}"#, 6, "after a high surrogate"),
            (r#"{"a":"\ud800\u0041"}"#, 6, "after a high surrogate"),
            (r#"{"a":"\ud800\ud800\udc00"}"#, 6, "after a high surrogate"),
            (r#"{"a":"\udc00"}"#, 6, "without a high surrogate"),
            (r#"{"a":"x\uDFFF"}"#, 7, "without a high surrogate"),
            (
                r#"{"b":1,"a":"\ud83d\ude00\udc00"}"#,
                24,
                "without a high surrogate",
            ),
        ];
        for &(doc, offset, expected) in cases {
            for validation in [Validation::Full, Validation::Structure] {
                for paths in [&["$.b"][..], &[]] {
                    let err = scan_with(doc, paths, validation).unwrap_err();
                    assert_eq!(err.offset, offset, "{doc}: {err}");
                    assert!(err.expected.contains(expected), "{doc}: {err}");
                }
            }
        }
        let paired = scan_paths(r#"{"a":"\ud83d\ude00\uD800\uDC00"}"#, &["$.a"]).unwrap();
        assert_eq!(paired[0].as_deref(), Some(r#""\ud83d\ude00\uD800\uDC00""#));
    }

    /// A pseudo-random generator for the differential tests (xorshift; no dependency).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// A random valid document of at most `depth` levels, with the scalars and escapes
    /// whose grammar is easiest to get wrong. (No number beyond a double's range: the
    /// oracle, serde_json without `arbitrary_precision`, refuses them; the fuzz target
    /// `json_scanner` covers them.)
    fn document(rng: &mut Rng, depth: usize, out: &mut String) {
        const SCALARS: &[&str] = &[
            "0",
            "-0",
            "1",
            "-12",
            "3.25",
            "1e5",
            "-0.5E-3",
            "1E+2",
            "true",
            "false",
            "null",
            r#""""#,
            r#""s""#,
            r#""a\"b""#,
            r#""\u00e9\ud83d\ude00""#,
            r#""\\""#,
            "\"ünï\"",
            r#""}]""#,
        ];
        match (depth, rng.below(4)) {
            (0, _) | (_, 0) => out.push_str(SCALARS[rng.below(SCALARS.len())]),
            (_, 1) => {
                out.push('[');
                for i in 0..rng.below(4) {
                    out.push_str(if i > 0 { ", " } else { "" });
                    document(rng, depth - 1, out);
                }
                out.push(']');
            }
            _ => {
                out.push('{');
                for i in 0..rng.below(4) {
                    let key = ["a", "b", "c", "a\\u0062"][rng.below(4)];
                    out.push_str(if i > 0 { "," } else { "" });
                    out.push_str(&format!("\"{key}\" :"));
                    document(rng, depth - 1, out);
                }
                out.push('}');
            }
        }
    }

    /// `doc` with a few bytes deleted, inserted or replaced by ones that matter to JSON.
    fn mutate(rng: &mut Rng, doc: &str) -> Vec<u8> {
        const BYTES: &[u8] = b"{}[]:,\"\\ 0-+.eE1tfnu\x01\xef";
        let mut bytes = doc.as_bytes().to_vec();
        for _ in 0..1 + rng.below(2) {
            let at = rng.below(bytes.len() + 1);
            let byte = BYTES[rng.below(BYTES.len())];
            match rng.below(3) {
                0 if at < bytes.len() => {
                    bytes.remove(at);
                }
                1 if at < bytes.len() => bytes[at] = byte,
                _ => bytes.insert(at, byte),
            }
        }
        bytes
    }

    #[test]
    fn structure_and_full_agree_on_mutated_documents() {
        let path_sets: &[&[&str]] = &[
            &[],
            &["$"],
            &["$.a"],
            &["$.a", "$.b.c"],
            &["$[0]"],
            &["$.c[#-1]", "$.b"],
        ];
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let (mut accepted, mut rejected) = (0, 0);
        for _ in 0..4000 {
            let mut valid = String::new();
            document(&mut rng, 4, &mut valid);
            let mutated = mutate(&mut rng, &valid);
            // The scanner's callers check UTF-8 first.
            let Ok(doc) = std::str::from_utf8(&mutated) else {
                continue;
            };
            let oracle = serde_json::from_str::<serde_json::Value>(doc).is_ok();
            for paths in path_sets {
                let full = scan_with(doc, paths, Validation::Full).map(|_| ());
                let structure = scan_with(doc, paths, Validation::Structure).map(|_| ());
                assert_eq!(structure, full, "{doc:?} {paths:?}");
                assert_eq!(full.is_ok(), oracle, "{doc:?} {paths:?}: {full:?}");
            }
            if oracle {
                accepted += 1;
            } else {
                rejected += 1;
            }
        }
        // The mutations must exercise both outcomes, or the test proves nothing.
        assert!(accepted > 300 && rejected > 300, "{accepted} {rejected}");
    }

    /// The elements of an array in one pass are the array's as `scan` and
    /// `for_each_member` find them, and the pass accepts and rejects what `scan` does,
    /// at the same offsets.
    #[test]
    fn elements_in_one_pass_agree_with_scan_on_mutated_arrays() {
        let no_paths = Arc::new(PathTrie::new());
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut arrays, mut rejected) = (0, 0);
        for _ in 0..4000 {
            let mut valid = String::from(" [");
            for i in 0..rng.below(5) {
                valid.push_str(if i > 0 { " ," } else { "" });
                document(&mut rng, 3, &mut valid);
            }
            valid.push_str("] ");
            let mutated = mutate(&mut rng, &valid);
            let Ok(doc) = std::str::from_utf8(&mutated) else {
                continue;
            };
            let mut scanner = Scanner::new(Arc::clone(&no_paths)).with_trailing_commas(true);
            let mut spans = Vec::new();
            let one_pass = scanner.scan_elements(doc.as_bytes(), |span| spans.push(span));
            let scanned = scanner.scan(doc.as_bytes());
            let trimmed = doc.trim_matches(' ');
            let is_array = trimmed.starts_with('[');
            match (&one_pass, &scanned) {
                (Ok(true), Ok(())) => {
                    let start = doc.len() - doc.trim_start_matches(' ').len();
                    let root = Span {
                        kind: Kind::Array,
                        start: start as u32,
                        end: (start + trimmed.len()) as u32,
                    };
                    let mut expected = Vec::new();
                    for_each_member(doc.as_bytes(), root, |_, span| expected.push(span));
                    assert_eq!(spans, expected, "{doc:?}");
                    arrays += 1;
                }
                (Ok(false), _) => assert!(!is_array, "{doc:?}"),
                (Err(e), Err(f)) => {
                    assert_eq!(e, f, "{doc:?}");
                    rejected += 1;
                }
                _ => panic!("{doc:?}: one pass {one_pass:?}, scan {scanned:?}"),
            }
        }
        assert!(arrays > 300 && rejected > 300, "{arrays} {rejected}");
    }

    /// A random JSON number near the limits a table stores: integers of 30 to 45 digits,
    /// floats whose decimal exponent is near `f64`'s (with long integer parts, fractions
    /// and signed exponents).
    fn number_near_limits(rng: &mut Rng) -> String {
        let digits = |rng: &mut Rng, n: usize| -> String {
            (0..n)
                .map(|i| char::from(b'0' + (rng.below(9) + usize::from(i == 0)) as u8))
                .collect()
        };
        let mut text = String::new();
        if rng.below(2) == 0 {
            text.push('-');
        }
        match rng.below(3) {
            0 => {
                let len = 30 + rng.below(16);
                text += &digits(rng, len);
            }
            1 => {
                let (int_len, fraction_len) = (1 + rng.below(4), 1 + rng.below(3));
                text += &digits(rng, int_len);
                let fraction = digits(rng, fraction_len);
                text += &format!(".{fraction}e{}", 300 + rng.below(12));
            }
            _ => {
                let int_len = 300 + rng.below(12);
                text += &digits(rng, int_len);
                if rng.below(2) == 0 {
                    text += &format!("e-{}", rng.below(4));
                }
            }
        }
        text
    }

    /// Ingest's storable check in the scan rejects exactly the numbers the table writer's
    /// parser (the tape) rejects, at the same offset.
    #[test]
    fn storable_numbers_agree_with_the_tape() {
        let no_paths = Arc::new(PathTrie::new());
        let mut scanner = Scanner::new(Arc::clone(&no_paths));
        scanner.set_storable_numbers(true);
        let mut tape = crate::tape::Tape::default();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut accepted, mut rejected) = (0, 0);
        for _ in 0..3000 {
            let doc = format!(r#"{{"a":[1,{}]}}"#, number_near_limits(&mut rng));
            tape.clear();
            let oracle = tape.push(doc.as_bytes()).map_err(|e| e.offset);
            let scanned = scanner.scan(doc.as_bytes()).map_err(|e| e.offset);
            assert_eq!(scanned, oracle.map(|_| ()), "{doc}");
            match scanned {
                Ok(()) => accepted += 1,
                Err(_) => rejected += 1,
            }
        }
        assert!(accepted > 500 && rejected > 500, "{accepted} {rejected}");
        // Without the check, every one of them is valid JSON.
        assert!(Scanner::new(no_paths).scan(b"[1e400]").is_ok());
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

    /// Below a duplicated key, paths read the first value too: the second value's
    /// children are not the document's (the property test against tables found this).
    #[test]
    fn paths_below_a_duplicate_key_read_its_first_value() {
        let doc = r#"{"f":{"k1":"str","k1":{"k4":"v"}},"g":{"x":{"y":1}},"g":{"x":{"y":2,"z":3}}}"#;
        let paths = ["$.f.k1.k4", "$.f.k1", "$.g.x.y", "$.g.x.z"];
        for validation in [Validation::Full, Validation::Structure] {
            let got = scan_with(doc, &paths, validation).unwrap();
            let want = [None, Some(r#""str""#.into()), Some("1".into()), None];
            assert_eq!(got, want, "{validation:?}");
        }
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
            (r#"{"a":1"#, 6, "'}' to close an object, not the end"),
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
            (r#"[1,2"#, 4, "']' to close an array, not the end"),
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

    /// `doc` with a `,` added before about half the closing brackets of its non-empty
    /// containers (outside strings), and whether any was added.
    fn add_trailing_commas(rng: &mut Rng, doc: &str) -> (String, bool) {
        let (mut out, mut added) = (String::new(), false);
        let (mut in_string, mut escaped, mut last) = (false, false, ' ');
        for ch in doc.chars() {
            if in_string {
                (in_string, escaped) = (escaped || ch != '"', !escaped && ch == '\\');
            } else if matches!(ch, ']' | '}') && !matches!(last, '[' | '{') && rng.below(2) == 0 {
                out.push(',');
                added = true;
            } else if ch == '"' {
                in_string = true;
            }
            out.push(ch);
            if !ch.is_ascii_whitespace() {
                last = ch;
            }
        }
        (out, added)
    }

    fn tape_text(doc: &str, trailing_commas: bool) -> Option<String> {
        let mut tape = crate::tape::Tape::default().with_trailing_commas(trailing_commas);
        crate::tree::Json::parse(doc.as_bytes(), &mut tape)
            .ok()
            .map(|json| json.to_text())
    }

    /// What each path selects, as minified text (`None` when absent).
    fn minified(values: Vec<Option<String>>) -> Vec<Option<String>> {
        values
            .into_iter()
            .map(|v| v.map(|v| tape_text(&v, true).expect("a scanned value parses")))
            .collect()
    }

    #[test]
    fn trailing_commas_are_read_only_when_asked() {
        let paths: &[&str] = &["$.a", "$.b.c", "$[0]", "$.c[#-1]", "$[1].a"];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut added_count = 0;
        for _ in 0..3000 {
            let mut valid = String::new();
            document(&mut rng, 4, &mut valid);
            let (commas, added) = add_trailing_commas(&mut rng, &valid);
            let expected = minified(scan_with(&valid, paths, Validation::Full).unwrap());
            for validation in [Validation::Full, Validation::Structure] {
                for p in [paths, &[]] {
                    let lenient = scan_with_commas(&commas, p, validation, true);
                    let lenient = lenient.unwrap_or_else(|e| panic!("{commas:?}: {e}"));
                    if p.len() == paths.len() {
                        assert_eq!(minified(lenient), expected, "{commas:?}");
                    }
                    let strict = scan_with(&commas, p, validation);
                    assert_eq!(strict.is_err(), added, "{commas:?}");
                }
            }
            assert_eq!(tape_text(&commas, true), tape_text(&valid, false));
            assert_eq!(tape_text(&commas, false).is_none(), added, "{commas:?}");
            added_count += usize::from(added);
            // Broken near the commas, both lenient parsers still agree.
            let mutated = mutate(&mut rng, &commas);
            if let Ok(doc) = std::str::from_utf8(&mutated) {
                let tape = tape_text(doc, true).is_some();
                for validation in [Validation::Full, Validation::Structure] {
                    let scan = scan_with_commas(doc, paths, validation, true);
                    assert_eq!(scan.is_ok(), tape, "{doc:?}: {scan:?}");
                }
            }
        }
        assert!(
            added_count > 1000,
            "only {added_count} documents with a trailing comma"
        );
        for never in [
            "[,]",
            "{,}",
            "[1,,]",
            r#"{"a":1,,}"#,
            "[1,,2]",
            ",",
            "[1],",
            "[1 , , ]",
        ] {
            assert!(tape_text(never, true).is_none(), "tape: {never}");
            for validation in [Validation::Full, Validation::Structure] {
                assert!(
                    scan_with_commas(never, paths, validation, true).is_err(),
                    "{never}"
                );
            }
        }
    }
}
