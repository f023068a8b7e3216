//! One parse per document: JSON text -> a flat tape of nodes that mining, Variant
//! encoding and shredding all walk, so no document is parsed twice and no value tree is
//! allocated.
//!
//! A document is a contiguous run of nodes in pre-order. An object node is followed by
//! its members as (key, value) node pairs, an array node by its elements; a container
//! records where the node after it starts, so whole subtrees are skipped in O(1).
//! Strings without escapes point into the document text; the others are unescaped once
//! into the tape's side buffer.
//!
//! Numbers keep their value and their integer/float kind, which the round trip through a
//! table relies on: integers that fit `i64` are `Int`, larger ones up to `u64::MAX` are
//! `UInt`, integers of up to 38 digits beyond that are `Decimal` (a Parquet Variant
//! `Decimal16` of scale 0 holds them exactly), and every number with a fraction or an
//! exponent is a `Float`. The integer `-0` is the integer 0 (DuckDB reads it so); the
//! float `-0.0` keeps its sign. A number no Variant type holds exactly (an integer of
//! more than 38 digits, a float beyond the range of `f64` such as `1e400`) is an error,
//! so that a table never stores a value other than the one written.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use crate::escape::{Policy, unescape_str};
use crate::limits::{MAX_NESTING, NESTING_ERROR};
use crate::non_finite;

/// Most digits of an integer: a Variant `Decimal16` holds 38.
pub const MAX_DECIMAL_DIGITS: usize = 38;

/// Largest document accepted: offsets inside a document are 32-bit.
pub const MAX_DOC_BYTES: usize = u32::MAX as usize;

/// A multiply-rotate hasher (the Fx hash of rustc) for interning keys and paths: keys
/// are short and hashed once per key of every document, where SipHash would cost a
/// large share of ingest.
#[derive(Default)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    /// The product's high bits depend on every input bit, its low bits only on the low
    /// input bits; hash tables pick buckets by the low bits, so they are rotated in.
    /// Without it, path ids `(parent << 32) | key` of one key under thousands of parents
    /// (member names of maps) shared one probe chain, and ingest went quadratic.
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// The kind of a tape node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// JSON `null`.
    Null,
    /// JSON `true`.
    True,
    /// JSON `false`.
    False,
    /// An integer that fits `i64`.
    Int,
    /// An integer above `i64::MAX` that fits `u64`.
    UInt,
    /// An integer of up to 38 digits that fits neither `i64` nor `u64`; its digits are
    /// the node's text ([`Value::decimal`]).
    Decimal,
    /// Any other number.
    Float,
    /// A string value.
    String,
    /// An object key (always followed by its value); it also carries the key's id in
    /// the tape's key dictionary.
    Key,
    /// An object; `len` members follow.
    Object,
    /// An array; `len` elements follow.
    Array,
}

/// One tape node (16 bytes).
#[derive(Debug, Clone, Copy)]
pub struct Node {
    kind: Kind,
    /// For strings and keys: the bytes sit in the tape's side buffer, not the document.
    escaped: bool,
    /// String length in bytes, or the member/element count of a container.
    len: u32,
    /// String offset (for a key: offset in the low 32 bits, key id in the high 32),
    /// number bits (for a `Decimal`, the offset of its text), or for a container the
    /// index of the node after it.
    payload: u64,
}

impl Node {
    /// What the node is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The integer of an `Int` node.
    pub fn int(&self) -> i64 {
        self.payload as i64
    }

    /// The integer of a `UInt` node.
    pub fn uint(&self) -> u64 {
        self.payload
    }

    /// The number of a `Float` node.
    pub fn float(&self) -> f64 {
        f64::from_bits(self.payload)
    }

    /// The element count of an `Array` node (member count of an `Object`), read
    /// without walking the children.
    pub fn container_len(&self) -> usize {
        debug_assert!(matches!(self.kind, Kind::Array | Kind::Object));
        self.len as usize
    }
}

/// Why a document is not valid JSON: where (byte offset in the document) and what was
/// expected there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset of the problem from the document start.
    pub offset: usize,
    /// What the parser expected or found.
    pub reason: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

impl ParseError {
    /// 1-based line and column of the error inside `doc`.
    pub fn line_column(&self, doc: &[u8]) -> (usize, usize) {
        let before = &doc[..self.offset.min(doc.len())];
        let line = memchr::memchr_iter(b'\n', before).count() + 1;
        let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        (line, self.offset - line_start + 1)
    }
}

/// The parsed documents of one file.
#[derive(Debug, Default)]
pub struct Tape {
    nodes: Vec<Node>,
    /// Index of each document's root node; one more entry marks the end.
    starts: Vec<usize>,
    /// Unescaped strings and keys.
    unescaped: String,
    /// Open containers while parsing: their node index.
    stack: Vec<usize>,
    /// Every distinct object key, by id, and the ids by key.
    key_names: Vec<Box<[u8]>>,
    key_ids: HashMap<Box<[u8]>, u32, BuildHasherDefault<FxHasher>>,
    /// Whether `NaN` and `Infinity` are numbers (see [`crate::non_finite`]).
    non_finite: bool,
    /// Whether a container may end with a `,` (see [`Tape::with_trailing_commas`]).
    trailing_commas: bool,
}

/// One document of a tape, with the text its strings point into.
#[derive(Clone, Copy)]
pub struct Doc<'a> {
    tape: &'a Tape,
    text: &'a str,
    root: usize,
    end: usize,
}

impl Tape {
    /// An empty tape with room for about `docs` documents of `bytes` text in all.
    pub fn with_capacity(docs: usize, bytes: usize) -> Self {
        Self {
            nodes: Vec::with_capacity(bytes / 12),
            starts: Vec::with_capacity(docs + 1),
            unescaped: String::new(),
            stack: Vec::with_capacity(MAX_NESTING),
            key_names: Vec::new(),
            key_ids: HashMap::default(),
            non_finite: false,
            trailing_commas: false,
        }
    }

    /// The same tape reading `NaN` and `Infinity` as (non-finite) float numbers, as
    /// DuckDB's JSON functions do (see [`crate::non_finite`]); without it they are
    /// syntax errors, as a table that stores JSON needs.
    pub fn with_non_finite_numbers(mut self, non_finite: bool) -> Self {
        self.non_finite = non_finite;
        self
    }

    /// The same tape accepting one `,` before a container's closing bracket (`[1,2,]`,
    /// `{"a":1,}`), as DuckDB's JSON functions do (its parser's trailing-comma option);
    /// without it that is a syntax error, as a table that stores JSON needs.
    pub fn with_trailing_commas(mut self, trailing_commas: bool) -> Self {
        self.trailing_commas = trailing_commas;
        self
    }

    /// An empty tape that reads JSON as this one does (the same options), with none of
    /// its documents, keys or allocations: for a caller whose key dictionary grew too big.
    pub fn emptied(&self) -> Self {
        Self::default()
            .with_non_finite_numbers(self.non_finite)
            .with_trailing_commas(self.trailing_commas)
    }

    /// Forgets every document (keeping the key dictionary and the allocations), for a
    /// tape that only checks documents one at a time.
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.starts.clear();
        self.unescaped.clear();
        self.stack.clear();
    }

    /// The bytes of key `id`.
    pub fn key_name(&self, id: u32) -> &[u8] {
        &self.key_names[id as usize]
    }

    /// Number of distinct keys seen (ids are `0..key_count()`).
    pub fn key_count(&self) -> usize {
        self.key_names.len()
    }

    /// The id of `key`, if any document had it.
    pub fn key_id(&self, key: &[u8]) -> Option<u32> {
        self.key_ids.get(key).copied()
    }

    /// The id of `key`, interned on first sight.
    fn intern(&mut self, key: &[u8]) -> u32 {
        if let Some(&id) = self.key_ids.get(key) {
            return id;
        }
        let id = self.key_names.len() as u32;
        self.key_names.push(key.into());
        self.key_ids.insert(key.into(), id);
        id
    }

    /// Number of documents parsed.
    pub fn docs(&self) -> usize {
        self.starts.len()
    }

    /// Document `index`, whose text was `text` when it was parsed (the text
    /// [`Tape::push`] returned).
    ///
    /// Strings are cut out of `text` with checked `str` slicing, so another text can
    /// only make them wrong or panic, never invalid UTF-8.
    pub fn doc<'a>(&'a self, index: usize, text: &'a str) -> Doc<'a> {
        Doc {
            tape: self,
            text,
            root: self.starts[index],
            end: self
                .starts
                .get(index + 1)
                .copied()
                .unwrap_or(self.nodes.len()),
        }
    }

    /// Parses `text` as one JSON document and appends it; on error the tape is unchanged.
    ///
    /// Returns `text` validated as UTF-8: the text to read the document back with
    /// ([`Tape::doc`]).
    pub fn push<'b>(&mut self, text: &'b [u8]) -> Result<&'b str, ParseError> {
        let node_mark = self.nodes.len();
        let unescaped_mark = self.unescaped.len();
        if text.len() > MAX_DOC_BYTES {
            return Err(ParseError {
                offset: MAX_DOC_BYTES,
                reason: "document larger than 4 GiB",
            });
        }
        let source = simdutf8::compat::from_utf8(text).map_err(|e| ParseError {
            offset: e.valid_up_to(),
            reason: "invalid UTF-8",
        })?;
        let mut parser = Parser {
            text,
            source,
            pos: 0,
            tape: self,
        };
        match parser.document() {
            Ok(()) => {
                self.starts.push(node_mark);
                Ok(source)
            }
            Err(e) => {
                self.nodes.truncate(node_mark);
                self.unescaped.truncate(unescaped_mark);
                self.stack.clear();
                Err(e)
            }
        }
    }
}

impl<'a> Doc<'a> {
    /// The document's root value.
    pub fn root(&self) -> Value<'a> {
        Value {
            doc: *self,
            index: self.root,
        }
    }

    /// The key id of every object key of the document (with repeats), in document
    /// order.
    pub fn keys(&self) -> impl Iterator<Item = u32> + 'a {
        let nodes = &self.tape.nodes[self.root..self.end];
        nodes
            .iter()
            .filter(|n| n.kind == Kind::Key)
            .map(|n| (n.payload >> 32) as u32)
    }
}

/// A value on the tape.
#[derive(Clone, Copy)]
pub struct Value<'a> {
    doc: Doc<'a>,
    index: usize,
}

impl<'a> Value<'a> {
    /// The value's node.
    pub fn node(&self) -> Node {
        self.doc.tape.nodes[self.index]
    }

    /// Position of the value's node on the tape, an identity within its file.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The value at tape position `index` of the same document.
    pub fn at(&self, index: usize) -> Value<'a> {
        debug_assert!((self.doc.root..self.doc.end).contains(&index));
        Value {
            doc: self.doc,
            index,
        }
    }

    /// The integer of a `Decimal` node (at most 38 digits, so it fits `i128`).
    pub fn decimal(&self) -> i128 {
        let node = self.node();
        debug_assert_eq!(node.kind, Kind::Decimal);
        let start = node.payload as usize;
        let text = &self.doc.text.as_bytes()[start..start + node.len as usize];
        let (negative, digits) = match text.split_first() {
            Some((b'-', digits)) => (true, digits),
            _ => (false, text),
        };
        let magnitude = digits
            .iter()
            .fold(0i128, |acc, &d| acc * 10 + i128::from(d - b'0'));
        if negative { -magnitude } else { magnitude }
    }

    /// The bytes of a `String` or `Key` node.
    pub fn str_bytes(&self) -> &'a [u8] {
        self.str().as_bytes()
    }

    /// The id of a `Key` node's key in the tape's key dictionary.
    pub fn key_id(&self) -> u32 {
        debug_assert_eq!(self.node().kind, Kind::Key);
        (self.node().payload >> 32) as u32
    }

    /// The text of a `String` or `Key` node.
    pub fn str(&self) -> &'a str {
        let node = self.node();
        let start = match node.kind {
            Kind::Key => (node.payload & u64::from(u32::MAX)) as usize,
            _ => node.payload as usize,
        };
        let text = match node.escaped {
            true => self.doc.tape.unescaped.as_str(),
            false => self.doc.text,
        };
        &text[start..start + node.len as usize]
    }

    /// Index of the node after this value's subtree.
    fn end(&self) -> usize {
        let node = self.node();
        match node.kind {
            Kind::Object | Kind::Array => node.payload as usize,
            _ => self.index + 1,
        }
    }

    /// The members of an object as (key, value) pairs, in document order.
    pub fn members(&self) -> Members<'a> {
        debug_assert_eq!(self.node().kind, Kind::Object);
        Members(self.children())
    }

    /// The elements of an array, in order.
    pub fn elements(&self) -> Elements<'a> {
        debug_assert_eq!(self.node().kind, Kind::Array);
        Elements(self.children())
    }

    fn children(&self) -> Cursor<'a> {
        Cursor {
            doc: self.doc,
            next: self.index + 1,
            left: self.node().len,
        }
    }
}

/// The children of a container still to visit: where the next one starts, how many.
struct Cursor<'a> {
    doc: Doc<'a>,
    next: usize,
    left: u32,
}

impl<'a> Cursor<'a> {
    /// The next child; with `keyed`, the key node before it too.
    fn step(&mut self, keyed: bool) -> Option<(usize, Value<'a>)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let at = self.next;
        let value = Value {
            doc: self.doc,
            index: at + usize::from(keyed),
        };
        self.next = value.end();
        Some((at, value))
    }
}

/// Iterator over an object's members.
pub struct Members<'a>(Cursor<'a>);

impl<'a> Iterator for Members<'a> {
    type Item = (Value<'a>, Value<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let (key, value) = self.0.step(true)?;
        Some((value.at(key), value))
    }
}

/// Iterator over an array's elements.
pub struct Elements<'a>(Cursor<'a>);

impl<'a> Iterator for Elements<'a> {
    type Item = Value<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.step(false).map(|(_, value)| value)
    }
}

/// Bytes that end the fast scan of a string body: the quote, a backslash, and control
/// characters (which JSON forbids unescaped).
static STRING_STOP: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

struct Parser<'t, 'a> {
    text: &'a [u8],
    /// The same text, validated as UTF-8.
    source: &'a str,
    pos: usize,
    tape: &'t mut Tape,
}

impl Parser<'_, '_> {
    fn error<T>(&self, reason: &'static str) -> Result<T, ParseError> {
        Err(ParseError {
            offset: self.pos,
            reason,
        })
    }

    fn skip_whitespace(&mut self) {
        while let Some(&b) = self.text.get(self.pos) {
            if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                break;
            }
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.text.get(self.pos).copied()
    }

    fn push_node(&mut self, kind: Kind, len: u32, payload: u64) {
        self.tape.nodes.push(Node {
            kind,
            escaped: false,
            len,
            payload,
        });
    }

    /// The whole document: one value, then only whitespace. Open containers are kept on
    /// an explicit stack; only the first element of a container recurses, so recursion
    /// is bounded by [`MAX_NESTING`] too.
    fn document(&mut self) -> Result<(), ParseError> {
        self.value()?;
        while let Some(&open) = self.tape.stack.last() {
            let kind = self.tape.nodes[open].kind;
            let close = if kind == Kind::Object { b'}' } else { b']' };
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    // A trailing comma is left for the next turn to close the container.
                    if !(self.tape.trailing_commas && self.peek() == Some(close)) {
                        self.element(kind)?;
                    }
                }
                Some(b) if b == close => {
                    self.pos += 1;
                    self.tape.stack.pop();
                    let end = self.tape.nodes.len() as u64;
                    self.tape.nodes[open].payload = end;
                }
                Some(_) if kind == Kind::Object => return self.error("expected `,` or `}`"),
                Some(_) => return self.error("expected `,` or `]`"),
                None => return self.error("unexpected end of document"),
            }
        }
        if self.peek().is_some() {
            return self.error("trailing characters after the document");
        }
        Ok(())
    }

    /// One more member of the innermost open object, or element of the array.
    fn element(&mut self, container: Kind) -> Result<(), ParseError> {
        let open = *self.tape.stack.last().expect("inside a container");
        self.tape.nodes[open].len = self.tape.nodes[open].len.checked_add(1).ok_or(ParseError {
            offset: self.pos,
            reason: "more than 2^32 members",
        })?;
        if container == Kind::Object {
            if self.peek() != Some(b'"') {
                return self.error("expected a string key");
            }
            self.pos += 1;
            self.string(Kind::Key)?;
            if self.peek() != Some(b':') {
                return self.error("expected `:`");
            }
            self.pos += 1;
        }
        self.value()
    }

    /// A value; a container is opened (its first member parsed) and left on the stack.
    fn value(&mut self) -> Result<(), ParseError> {
        let Some(b) = self.peek() else {
            return self.error("expected a value");
        };
        match b {
            b'{' | b'[' => {
                if self.tape.stack.len() >= MAX_NESTING {
                    return self.error(NESTING_ERROR);
                }
                self.pos += 1;
                let (kind, close) = if b == b'{' {
                    (Kind::Object, b'}')
                } else {
                    (Kind::Array, b']')
                };
                let index = self.tape.nodes.len();
                self.push_node(kind, 0, 0);
                if self.peek() == Some(close) {
                    self.pos += 1;
                    self.tape.nodes[index].payload = index as u64 + 1;
                    return Ok(());
                }
                self.tape.stack.push(index);
                self.element(kind)
            }
            b'"' => {
                self.pos += 1;
                self.string(Kind::String)
            }
            b't' => self.literal(b"true", Kind::True),
            b'f' => self.literal(b"false", Kind::False),
            b'n' if !self.tape.non_finite || self.text[self.pos..].starts_with(b"null") => {
                self.literal(b"null", Kind::Null)
            }
            b'-' | b'0'..=b'9' => self.number(),
            b if self.tape.non_finite && non_finite::starts_word(b) => self.number(),
            _ => self.error("expected a value"),
        }
    }

    fn literal(&mut self, word: &[u8], kind: Kind) -> Result<(), ParseError> {
        if !self.text[self.pos..].starts_with(word) {
            return self.error("expected `true`, `false` or `null`");
        }
        self.pos += word.len();
        self.push_node(kind, 0, 0);
        Ok(())
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.text.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<(), ParseError> {
        let start = self.pos;
        if self.tape.non_finite
            && let Some(len) = non_finite::word_len(&self.text[start..])
        {
            self.pos += len;
            let value: f64 = self.source[start..self.pos]
                .parse()
                .expect("a non-finite word reads as a double");
            self.push_node(Kind::Float, 0, value.to_bits());
            return Ok(());
        }
        let negative = self.text[self.pos] == b'-';
        if negative {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.text.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.error("expected a digit"),
        }
        let int_end = self.pos;
        let mut integral = true;
        if self.text.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return self.error("expected a digit after `.`");
            }
            integral = false;
        }
        if matches!(self.text.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.text.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return self.error("expected a digit in the exponent");
            }
            integral = false;
        }
        if integral {
            let text = self.text;
            return self.integer(start, negative, &text[int_start..int_end]);
        }
        let value: f64 = self.source[start..self.pos]
            .parse()
            .map_err(|_| ParseError {
                offset: start,
                reason: "malformed number",
            })?;
        if !value.is_finite() {
            return Err(ParseError {
                offset: start,
                reason: "number beyond the range of a double",
            });
        }
        self.push_node(Kind::Float, 0, value.to_bits());
        Ok(())
    }

    /// An integer whose text starts at `start` and whose digits are `digits`, in the
    /// narrowest kind that holds it exactly.
    fn integer(&mut self, start: usize, negative: bool, digits: &[u8]) -> Result<(), ParseError> {
        match parse_u64(digits) {
            // `-0` is the integer 0, as DuckDB reads it.
            Some(magnitude) if (!negative && magnitude <= i64::MAX as u64) || magnitude == 0 => {
                self.push_node(Kind::Int, 0, magnitude);
            }
            Some(magnitude) if !negative => self.push_node(Kind::UInt, 0, magnitude),
            Some(magnitude) if magnitude <= 1 << 63 => {
                self.push_node(Kind::Int, 0, magnitude.wrapping_neg());
            }
            _ if digits.len() <= MAX_DECIMAL_DIGITS => {
                let len = self.pos - start;
                self.push_node(Kind::Decimal, len as u32, start as u64);
            }
            _ => {
                return Err(ParseError {
                    offset: start,
                    reason: "integer of more than 38 digits",
                });
            }
        }
        Ok(())
    }

    /// A string body after its opening quote, as a `String` or `Key` node.
    fn string(&mut self, kind: Kind) -> Result<(), ParseError> {
        let start = self.pos;
        let mut pos = self.pos;
        while pos < self.text.len() && !STRING_STOP[self.text[pos] as usize] {
            pos += 1;
        }
        self.pos = pos;
        match self.text.get(pos) {
            Some(b'"') => {
                self.pos += 1;
                let payload = match kind {
                    Kind::Key => {
                        let id = self.tape.intern(&self.text[start..pos]);
                        (u64::from(id) << 32) | start as u64
                    }
                    _ => start as u64,
                };
                self.tape.nodes.push(Node {
                    kind,
                    escaped: false,
                    len: (pos - start) as u32,
                    payload,
                });
                Ok(())
            }
            Some(b'\\') => self.escaped_string(kind, start),
            Some(_) => self.error("control character in a string"),
            None => self.error("unterminated string"),
        }
    }

    /// The slow path: a string with escapes, unescaped into the side buffer.
    fn escaped_string(&mut self, kind: Kind, start: usize) -> Result<(), ParseError> {
        let out_start = self.tape.unescaped.len();
        let end = unescape_str(
            &self.source[start..],
            Policy::Strict,
            &mut self.tape.unescaped,
        )
        .map_err(|e| ParseError {
            offset: start + e.offset,
            reason: e.reason,
        })?;
        self.pos = start + end;
        if self.pos == self.text.len() {
            return self.error("unterminated string");
        }
        self.pos += 1;
        let len = self.tape.unescaped.len() - out_start;
        let payload = match kind {
            Kind::Key => {
                // A key's offset shares its node with the key id: 32 bits.
                if self.tape.unescaped.len() > MAX_DOC_BYTES {
                    return self.error("more than 4 GiB of escaped text in one tape");
                }
                let key = self.tape.unescaped.as_bytes()[out_start..].to_vec();
                let id = self.tape.intern(&key);
                (u64::from(id) << 32) | out_start as u64
            }
            _ => out_start as u64,
        };
        self.tape.nodes.push(Node {
            kind,
            escaped: true,
            len: len as u32,
            payload,
        });
        Ok(())
    }
}

/// Digits as a `u64`, `None` on overflow (the caller then parses a float).
fn parse_u64(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One key under many parents (ids `(parent << 32) | key`) spreads over a hash
    /// table's buckets, which are picked by the hash's low bits.
    #[test]
    fn path_ids_of_one_key_spread_over_buckets() {
        let buckets: std::collections::HashSet<u64> = (0..4096u64)
            .map(|parent| {
                let mut hasher = FxHasher::default();
                hasher.write_u64((parent << 32) | 7);
                hasher.finish() & 0xfff
            })
            .collect();
        // Uniform hashing fills about 2,590; unrotated, all land in one.
        assert!(buckets.len() > 1024, "{} buckets of 4096", buckets.len());
    }

    fn parse(text: &str) -> Result<Tape, ParseError> {
        let mut tape = Tape::default();
        tape.push(text.as_bytes()).map(|_| tape)
    }

    /// A parsed value as a serde_json value, to compare with serde_json's parse.
    fn to_json(value: Value<'_>) -> serde_json::Value {
        use serde_json::Value as J;
        let node = value.node();
        match node.kind() {
            Kind::Null => J::Null,
            Kind::True => J::Bool(true),
            Kind::False => J::Bool(false),
            Kind::Int => J::from(node.int()),
            Kind::UInt => J::from(node.uint()),
            Kind::Decimal => unreachable!("serde_json holds no integer beyond u64"),
            Kind::Float => J::from(node.float()),
            Kind::String | Kind::Key => J::from(value.str()),
            Kind::Object => J::Object(
                value
                    .members()
                    .map(|(k, v)| (k.str().to_string(), to_json(v)))
                    .collect(),
            ),
            Kind::Array => J::Array(value.elements().map(to_json).collect()),
        }
    }

    #[test]
    fn parses_like_serde_json() {
        for text in [
            r#"{"a":1,"b":[true,false,null,{"c":"d"}],"e":{},"f":[]}"#,
            r#" [ 1 , 0 , 0.5 , -1.5e3 , 1E2 , 9223372036854775807 , -9223372036854775808 ] "#,
            r#"[18446744073709551615, -0.0, 1e308, 5e-324]"#,
            r#""d\u00e9j\u00e0 \"vu\"\n\t\/\\ \ud83d\ude00 東京""#,
            r#"{"k\u0041":"v","":""}"#,
            "[[[[[[]]]]]]",
            "\"\"",
            "0",
        ] {
            let tape = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let got = to_json(tape.doc(0, text).root());
            let expected: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(got, expected, "{text}");
        }
    }

    #[test]
    fn numbers_keep_their_kind() {
        for (text, kind) in [
            ("9223372036854775807", Kind::Int),
            ("-9223372036854775808", Kind::Int),
            ("9223372036854775808", Kind::UInt),
            ("18446744073709551615", Kind::UInt),
            ("18446744073709551616", Kind::Decimal),
            ("-9223372036854775809", Kind::Decimal),
            ("1.0", Kind::Float),
            ("1e2", Kind::Float),
            ("-0", Kind::Int),
            ("-0.0", Kind::Float),
            ("0", Kind::Int),
        ] {
            let tape = parse(text).unwrap();
            assert_eq!(tape.doc(0, text).root().node().kind(), kind, "{text}");
        }
    }

    /// Integers beyond 64 bits keep every digit up to 38 (a Variant decimal's precision);
    /// `-0` is the integer 0, `-0.0` the negative zero double.
    #[test]
    fn integers_are_exact_up_to_38_digits() {
        let nines = "9".repeat(38);
        for (text, expected) in [
            (
                "123456789012345678901234567890",
                123456789012345678901234567890i128,
            ),
            ("-99999999999999999999", -99999999999999999999),
            ("18446744073709551616", 1 << 64),
            ("-9223372036854775809", -(1 << 63) - 1),
            (nines.as_str(), 10i128.pow(38) - 1),
            (&format!("-{nines}"), 1 - 10i128.pow(38)),
        ] {
            let tape = parse(text).unwrap();
            assert_eq!(tape.doc(0, text).root().decimal(), expected, "{text}");
        }
        let zero = parse("-0").unwrap();
        assert_eq!(zero.doc(0, "-0").root().node().int(), 0);
        let negative_zero = parse("-0.0").unwrap().doc(0, "-0.0").root().node().float();
        assert!(negative_zero == 0.0 && negative_zero.is_sign_negative());
        for text in [format!("1{nines}"), format!("[-1{nines}]")] {
            let error = parse(&text).unwrap_err();
            assert!(error.reason.contains("38 digits"), "{text}: {error}");
        }
    }

    #[test]
    fn malformed_documents_are_rejected_where_they_break() {
        for (text, offset) in [
            ("", 0),
            ("{", 1),
            (r#"{"a" 1}"#, 5),
            (r#"{"a":1,}"#, 7),
            ("[1,]", 3),
            ("[1 2]", 3),
            ("01", 1),
            ("1.", 2),
            ("1e", 2),
            ("-", 1),
            ("tru", 0),
            ("\"abc", 4),
            ("\"a\u{1}\"", 2),
            (r#""\x""#, 2),
            (r#""\ud800""#, 7),
            (r#""\udc00""#, 7),
            ("1e400", 0),
            ("{} x", 3),
            ("{'a':1}", 1),
        ] {
            let error = parse(text)
                .err()
                .unwrap_or_else(|| panic!("{text:?} parsed"));
            assert_eq!(error.offset, offset, "{text:?}: {error}");
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_err(),
                "{text:?}"
            );
        }
        assert!(parse(&format!("{}{}", "[".repeat(129), "]".repeat(129))).is_err());
        assert!(parse(&format!("{}{}", "[".repeat(128), "]".repeat(128))).is_ok());
        let mut tape = Tape::default();
        assert!(tape.push(&[b'"', 0xff, b'"']).is_err());
    }

    #[test]
    fn errors_know_their_line_and_column() {
        let text = b"{\"a\":1,\n  \"b\": x}";
        let error = parse(std::str::from_utf8(text).unwrap()).unwrap_err();
        assert_eq!(error.line_column(text), (2, 8));
    }

    #[test]
    #[should_panic(expected = "char boundary")]
    fn strings_read_with_another_text_are_never_invalid_utf8() {
        let mut tape = Tape::default();
        tape.push(br#"["abc"]"#).unwrap();
        // The string is bytes 2..5, which in "[é€]" cut through both characters.
        let element = tape.doc(0, "[é€]").root().elements().next().unwrap();
        let _ = element.str();
    }

    #[test]
    fn a_failed_document_leaves_the_tape_unchanged() {
        let mut tape = Tape::default();
        tape.push(br#"{"a":"x\ny"}"#).unwrap();
        let nodes = tape.nodes.len();
        assert!(tape.push(br#"{"b":["p\tq",{"c":1}"#).is_err());
        assert_eq!((tape.docs(), tape.nodes.len()), (1, nodes));
        tape.push(b"[2]").unwrap();
        let second = tape.doc(1, "[2]").root();
        assert_eq!(
            second
                .elements()
                .map(|e| e.node().int())
                .collect::<Vec<_>>(),
            [2]
        );
    }
}
