//! JSON paths: the elements of an access like `j->'a'->0` or `j->>'$.a[0].b'`, and the
//! trie that lets one scan of a document serve many paths at once.

use std::fmt;

/// The deepest path Tessera accepts; deeper accesses are rejected when planned.
pub const MAX_PATH_DEPTH: usize = 64;

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathElem {
    /// An object member by key.
    Key(String),
    /// An array element; negative values count from the end (`-1` is the last).
    Index(i64),
}

impl fmt::Display for PathElem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElem::Key(k) if is_plain_key(k) => write!(f, ".{k}"),
            PathElem::Key(k) => {
                let escaped = k.replace('\\', "\\\\").replace('"', "\\\"");
                write!(f, ".\"{escaped}\"")
            }
            PathElem::Index(i) if *i < 0 => write!(f, "[#{i}]"),
            PathElem::Index(i) => write!(f, "[{i}]"),
        }
    }
}

fn is_plain_key(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Renders a path in the JSONPath form `$.a[0]."b c"` that [`parse_json_path`] reads back.
pub fn display_path(path: &[PathElem]) -> String {
    let mut out = String::from("$");
    for elem in path {
        out.push_str(&elem.to_string());
    }
    out
}

/// A path that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON path '{path}': {reason} at offset {offset}")]
pub struct PathError {
    /// The path text.
    pub path: String,
    /// Byte offset of the problem.
    pub offset: usize,
    /// What was expected there.
    pub reason: &'static str,
}

/// Parses a JSONPath of single steps only (`$`, `$.key`, `$."quoted key"`, `$.a[0]`,
/// `$.a[#-1]`, `$.a[-1]`): the paths a scan can locate while parsing. Wildcards and
/// recursive descent are refused at their offset; [`parse_path`] reads them.
pub fn parse_json_path(text: &str) -> Result<Vec<PathElem>, PathError> {
    let mut out = Vec::new();
    JsonPathParser::new(text).parse(|step, offset| match step {
        PathStep::Elem(elem) => {
            out.push(elem);
            Ok(())
        }
        _ => Err(offset),
    })?;
    Ok(out)
}

/// One step of a path as DuckDB reads it. A path of [`PathStep::Elem`] steps selects at
/// most one value; the others can select many.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathStep {
    /// A member by key or an element by index (`.a`, `[0]`, `[#-1]`).
    Elem(PathElem),
    /// A JSON Pointer token of decimal digits (`/1`): a key of an object, an index of an
    /// array (as RFC 6901 reads it).
    KeyOrIndex(String),
    /// `.*`: every member value of an object.
    AnyKey,
    /// `[*]`: every element of an array.
    AnyIndex,
    /// `..*` or `.**`: every member and element.
    AnyChild,
    /// `..`: the value and all values below it, breadth first; the next step applies to
    /// each.
    Descend,
}

/// A path as DuckDB's JSON functions read it: JSONPath (`$.a[*]..b`), JSON Pointer
/// (`/a/0`), the empty path (the whole document) or a bare key (`'a'`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct JsonPath {
    /// The steps from the document's root.
    pub steps: Vec<PathStep>,
}

impl JsonPath {
    /// The plain elements when every step selects at most one value by key or index, so
    /// that a scan can locate the path while parsing.
    pub fn elems(&self) -> Option<Vec<PathElem>> {
        self.steps
            .iter()
            .map(|s| match s {
                PathStep::Elem(e) => Some(e.clone()),
                _ => None,
            })
            .collect()
    }

    /// True when the path can select more than one value (its result is a list).
    pub fn is_multi(&self) -> bool {
        self.steps.iter().any(|s| {
            matches!(
                s,
                PathStep::AnyKey | PathStep::AnyIndex | PathStep::AnyChild | PathStep::Descend
            )
        })
    }
}

impl fmt::Display for JsonPath {
    /// JSON Pointer text when the path has a pointer token (the only way to write one),
    /// JSONPath text otherwise; either parses back to the same path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pointer = self
            .steps
            .iter()
            .any(|s| matches!(s, PathStep::KeyOrIndex(_)));
        if pointer {
            for step in &self.steps {
                let token = match step {
                    PathStep::KeyOrIndex(t) | PathStep::Elem(PathElem::Key(t)) => t,
                    _ => return Err(fmt::Error),
                };
                write!(f, "/{}", token.replace('~', "~0").replace('/', "~1"))?;
            }
            return Ok(());
        }
        f.write_str("$")?;
        let mut after_descend = false;
        for step in &self.steps {
            match step {
                // After `..` the key's own `.` is already written.
                PathStep::Elem(PathElem::Key(k)) if after_descend => {
                    f.write_str(&PathElem::Key(k.clone()).to_string()[1..])?
                }
                PathStep::Elem(e) => write!(f, "{e}")?,
                PathStep::AnyKey => f.write_str(".*")?,
                PathStep::AnyIndex => f.write_str("[*]")?,
                PathStep::AnyChild if after_descend => f.write_str("*")?,
                PathStep::AnyChild => f.write_str(".**")?,
                PathStep::Descend => f.write_str("..")?,
                PathStep::KeyOrIndex(_) => return Err(fmt::Error),
            }
            after_descend = *step == PathStep::Descend;
        }
        Ok(())
    }
}

/// Parses a path as DuckDB's JSON functions read it: text starting with `$` is
/// JSONPath (with `*`, `[*]`, `..`, `.**`), text starting with `/` is a JSON Pointer,
/// the empty text is the whole document, and any other text is one key.
pub fn parse_path(text: &str) -> Result<JsonPath, PathError> {
    let mut steps = Vec::new();
    match text.as_bytes().first() {
        None => {}
        Some(b'$') => {
            JsonPathParser::new(text).parse(|step, _| {
                steps.push(step);
                Ok(())
            })?;
        }
        Some(b'/') => steps = parse_pointer(text)?,
        Some(_) => steps.push(PathStep::Elem(PathElem::Key(text.to_string()))),
    }
    Ok(JsonPath { steps })
}

/// Reads a JSON Pointer (RFC 6901): `/`-separated tokens with `~1` for `/` and `~0`
/// for `~`. A token of canonical decimal digits also indexes arrays.
fn parse_pointer(text: &str) -> Result<Vec<PathStep>, PathError> {
    let mut steps = Vec::new();
    let mut offset = 1;
    for raw in text[1..].split('/') {
        if steps.len() >= MAX_PATH_DEPTH {
            return Err(path_error(text, offset, "path is deeper than 64 steps"));
        }
        let mut token = String::with_capacity(raw.len());
        let mut chars = raw.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c != '~' {
                token.push(c);
                continue;
            }
            match chars.next() {
                Some((_, '0')) => token.push('~'),
                Some((_, '1')) => token.push('/'),
                _ => return Err(path_error(text, offset + i, "expected '~0' or '~1'")),
            }
        }
        let canonical = token == "0"
            || (!token.is_empty()
                && !token.starts_with('0')
                && token.len() <= 18
                && token.bytes().all(|b| b.is_ascii_digit()));
        steps.push(if canonical {
            PathStep::KeyOrIndex(token)
        } else {
            PathStep::Elem(PathElem::Key(token))
        });
        offset += raw.len() + 1;
    }
    Ok(steps)
}

fn path_error(text: &str, offset: usize, reason: &'static str) -> PathError {
    PathError {
        path: text.to_string(),
        offset,
        reason,
    }
}

/// The JSONPath reader shared by [`parse_json_path`] and [`parse_path`]; each step is
/// handed to a sink with its offset, which may refuse it.
struct JsonPathParser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    steps: usize,
}

impl<'a> JsonPathParser<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            steps: 0,
        }
    }

    fn err(&self, offset: usize, reason: &'static str) -> PathError {
        path_error(self.text, offset, reason)
    }

    /// Hands one step to the sink, within the depth limit.
    fn emit(
        &mut self,
        sink: &mut impl FnMut(PathStep, usize) -> Result<(), usize>,
        step: PathStep,
        offset: usize,
    ) -> Result<(), PathError> {
        self.steps += 1;
        if self.steps > MAX_PATH_DEPTH {
            return Err(self.err(offset, "path is deeper than 64 steps"));
        }
        sink(step, offset).map_err(|at| {
            self.err(
                at,
                "wildcards and '..' select many values (use json_extract)",
            )
        })
    }

    fn parse(
        mut self,
        mut sink: impl FnMut(PathStep, usize) -> Result<(), usize>,
    ) -> Result<(), PathError> {
        if self.bytes.first() != Some(&b'$') {
            return Err(self.err(0, "expected '$'"));
        }
        self.pos = 1;
        while self.pos < self.bytes.len() {
            let at = self.pos;
            match &self.bytes[at..] {
                [b'.', b'.', rest @ ..] => {
                    self.emit(&mut sink, PathStep::Descend, at)?;
                    self.pos = at + 2;
                    let step = match rest {
                        [b'[', ..] => self.bracket()?,
                        [b'*', b'*', ..] => return Err(self.err(self.pos, "expected a key")),
                        [b'*', ..] => {
                            self.pos += 1;
                            PathStep::AnyChild
                        }
                        _ => self.key()?,
                    };
                    self.emit(&mut sink, step, at + 2)?;
                }
                [b'.', b'*', b'*', ..] => {
                    self.emit(&mut sink, PathStep::Descend, at)?;
                    self.pos = at + 3;
                    self.emit(&mut sink, PathStep::AnyChild, at)?;
                }
                [b'.', b'*', ..] => {
                    self.pos = at + 2;
                    self.emit(&mut sink, PathStep::AnyKey, at)?;
                }
                [b'.', ..] => {
                    self.pos = at + 1;
                    let step = self.key()?;
                    self.emit(&mut sink, step, at)?;
                }
                [b'[', ..] => {
                    let step = self.bracket()?;
                    self.emit(&mut sink, step, at)?;
                }
                _ => return Err(self.err(at, "expected '.' or '['")),
            }
        }
        Ok(())
    }

    /// A key after `.` or `..`: quoted (`"a.b"`), or bare up to the next `.` or `[`.
    fn key(&mut self) -> Result<PathStep, PathError> {
        let start = self.pos;
        if self.bytes.get(start) == Some(&b'"') {
            let (key, next) = quoted(self.text, start)
                .ok_or_else(|| self.err(start, "unterminated quoted key"))?;
            self.pos = next;
            return Ok(PathStep::Elem(PathElem::Key(key)));
        }
        let mut end = start;
        while end < self.bytes.len() && !matches!(self.bytes[end], b'.' | b'[') {
            end += 1;
        }
        let key = &self.text[start..end];
        if key.is_empty() {
            return Err(self.err(start, "expected a key"));
        }
        if key.contains(['*', ']', '"']) {
            return Err(self.err(
                start,
                "expected a key (quote keys that hold '*', ']' or '\"')",
            ));
        }
        self.pos = end;
        Ok(PathStep::Elem(PathElem::Key(key.to_string())))
    }

    /// `[*]`, `[n]`, `[-n]`, `[#]`, `[#-n]` or a quoted key `["k"]` / `['k']`.
    fn bracket(&mut self) -> Result<PathStep, PathError> {
        let inner_start = self.pos + 1;
        if let Some(&q) = self
            .bytes
            .get(inner_start)
            .filter(|b| matches!(b, b'"' | b'\''))
        {
            let close = self.text[inner_start + 1..]
                .find(q as char)
                .map(|p| p + inner_start + 1)
                .ok_or_else(|| self.err(inner_start, "unterminated quoted key"))?;
            if self.bytes.get(close + 1) != Some(&b']') {
                return Err(self.err(close + 1, "expected ']'"));
            }
            self.pos = close + 2;
            let key = self.text[inner_start + 1..close].to_string();
            return Ok(PathStep::Elem(PathElem::Key(key)));
        }
        let close = self.text[inner_start..]
            .find(']')
            .map(|p| p + inner_start)
            .ok_or_else(|| self.err(inner_start, "expected ']'"))?;
        let inner = &self.text[inner_start..close];
        self.pos = close + 1;
        if inner == "*" {
            return Ok(PathStep::AnyIndex);
        }
        let index_err = |parser: &Self| {
            parser.err(
                inner_start,
                "expected an array index ('n', '-n', '#' or '#-n') or '*'",
            )
        };
        let (from_end, number) = match inner.strip_prefix('#') {
            // `[#]` is one past the last element: it never matches.
            Some("") => return Ok(PathStep::Elem(PathElem::Index(i64::MIN))),
            Some(rest) => (true, rest),
            None => (false, inner),
        };
        let digits = number.strip_prefix('-').unwrap_or(number);
        let negative = digits.len() < number.len();
        if (from_end && !negative)
            || digits.is_empty()
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(index_err(self));
        }
        // DuckDB reads up to 19 digits. An index beyond i64's range names no element of
        // any array (none is that long), so it saturates instead of being an error.
        if digits.len() > INDEX_DIGITS_MAX {
            return Err(index_err(self));
        }
        let magnitude: u64 = digits.parse().map_err(|_| index_err(self))?;
        let magnitude = i64::try_from(magnitude).unwrap_or(i64::MAX);
        let n = if negative { -magnitude } else { magnitude };
        Ok(PathStep::Elem(PathElem::Index(n)))
    }
}

/// Most digits of an array index in a path, as DuckDB reads them (19: every such number
/// fits `u64`).
const INDEX_DIGITS_MAX: usize = 19;

/// Reads `"..."` starting at `start` (the quote). `\"` and `\\` stand for `"` and `\`
/// (what [`display_path`] writes); a backslash before any other character is kept, as
/// DuckDB reads `$."du\ck"`.
fn quoted(text: &str, start: usize) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => return Some((out, i + 1)),
            b'\\' => {
                let escaped = *bytes.get(i + 1)?;
                if !matches!(escaped, b'"' | b'\\') {
                    out.push('\\');
                }
                i += 1;
                if matches!(escaped, b'"' | b'\\') {
                    out.push(escaped as char);
                    i += 1;
                }
            }
            _ => {
                let ch = text[i..].chars().next()?;
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    None
}

/// Identifies one path added to a [`PathTrie`]; indexes the scanner's output.
pub type Slot = usize;

/// One node of a [`PathTrie`]: the children by key and by index, and the slots of the
/// paths that end here.
#[derive(Debug, Default, Clone)]
pub struct TrieNode {
    /// Children by object key (raw UTF-8 of the unescaped key).
    pub keys: Vec<(Box<[u8]>, usize)>,
    /// Children by array index (negative counts from the end).
    pub indexes: Vec<(i64, usize)>,
    /// Paths that end at this node.
    pub slots: Vec<Slot>,
}

impl TrieNode {
    /// The child for an object key, if any path continues through it.
    #[inline]
    pub fn child_by_key(&self, key: &[u8]) -> Option<usize> {
        // Keys are short: comparing bytes inline beats a call to memcmp per candidate.
        self.keys
            .iter()
            .find(|(k, _)| k.len() == key.len() && k.iter().zip(key).all(|(a, b)| a == b))
            .map(|(_, c)| *c)
    }

    /// The child for a non-negative array position, if any path continues through it.
    #[inline]
    pub fn child_by_index(&self, index: i64) -> Option<usize> {
        self.indexes
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, c)| *c)
    }

    /// True when some path continues below this node.
    #[inline]
    pub fn has_children(&self) -> bool {
        !self.keys.is_empty() || !self.indexes.is_empty()
    }

    /// True when some path continues through a negative (from the end) index.
    #[inline]
    pub fn has_negative_indexes(&self) -> bool {
        self.indexes.iter().any(|(i, _)| *i < 0)
    }
}

/// A set of paths merged by common prefix, so one scan of a document finds all of them.
#[derive(Debug, Clone)]
pub struct PathTrie {
    nodes: Vec<TrieNode>,
    paths: Vec<Vec<PathElem>>,
}

impl Default for PathTrie {
    fn default() -> Self {
        Self::new()
    }
}

impl PathTrie {
    /// An empty trie (a root and no paths).
    pub fn new() -> Self {
        Self {
            nodes: vec![TrieNode::default()],
            paths: Vec::new(),
        }
    }

    /// A trie of exactly one path, whose slot is 0.
    pub fn single(path: &[PathElem]) -> Self {
        let mut trie = Self::new();
        trie.add(path);
        trie
    }

    /// Adds a path and returns its slot; adding the same path again returns the same slot.
    pub fn add(&mut self, path: &[PathElem]) -> Slot {
        if let Some(slot) = self.paths.iter().position(|p| p == path) {
            return slot;
        }
        let mut node = 0;
        for elem in path {
            let existing = match elem {
                PathElem::Key(k) => self.nodes[node].child_by_key(k.as_bytes()),
                PathElem::Index(i) => self.nodes[node].child_by_index(*i),
            };
            node = match existing {
                Some(child) => child,
                None => {
                    let child = self.nodes.len();
                    self.nodes.push(TrieNode::default());
                    match elem {
                        PathElem::Key(k) => self.nodes[node]
                            .keys
                            .push((k.as_bytes().to_vec().into_boxed_slice(), child)),
                        PathElem::Index(i) => self.nodes[node].indexes.push((*i, child)),
                    }
                    child
                }
            };
        }
        let slot = self.paths.len();
        self.nodes[node].slots.push(slot);
        self.paths.push(path.to_vec());
        slot
    }

    /// The node at `id` (0 is the root).
    #[inline]
    pub fn node(&self, id: usize) -> &TrieNode {
        &self.nodes[id]
    }

    /// Number of nodes (node ids are `0..node_count()`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of distinct paths (slots).
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// True when no path was added.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The path of a slot.
    pub fn path(&self, slot: Slot) -> &[PathElem] {
        &self.paths[slot]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> PathElem {
        PathElem::Key(k.to_string())
    }

    #[test]
    fn parses_jsonpath_forms() {
        assert_eq!(parse_json_path("$").unwrap(), vec![]);
        assert_eq!(
            parse_json_path("$.commit.collection").unwrap(),
            vec![key("commit"), key("collection")]
        );
        assert_eq!(
            parse_json_path("$.a[0][#-1].\"x.y\"['z']").unwrap(),
            vec![
                key("a"),
                PathElem::Index(0),
                PathElem::Index(-1),
                key("x.y"),
                key("z")
            ]
        );
    }

    #[test]
    fn rejects_malformed_paths_with_offsets() {
        for (text, reason) in [
            ("a.b", "expected '$'"),
            ("$.", "expected a key"),
            ("$.a[", "expected ']'"),
            ("$.a[x]", "expected an array index"),
            ("$.*", "wildcards"),
            ("$..a", "wildcards"),
            ("$a", "expected '.' or '['"),
        ] {
            let err = parse_json_path(text).unwrap_err();
            assert!(err.reason.contains(reason), "{text}: {err}");
        }
    }

    #[test]
    fn indexes_of_up_to_19_digits_read_and_saturate_beyond_i64() {
        let mut state: u64 = 0x853c_49e6_748f_ea9b;
        for len in 1..=24usize {
            for _ in 0..20 {
                let digits: String = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        char::from(b'0' + (state % 10) as u8)
                    })
                    .collect();
                let magnitude = digits.parse::<u128>().unwrap().min(i64::MAX as u128) as i64;
                for (form, sign) in [("", 1), ("-", -1), ("#-", -1)] {
                    let text = format!("$[{form}{digits}]");
                    match parse_json_path(&text) {
                        Ok(path) if len <= INDEX_DIGITS_MAX => {
                            assert_eq!(path, vec![PathElem::Index(sign * magnitude)], "{text}")
                        }
                        Err(e) if len > INDEX_DIGITS_MAX => {
                            assert!(e.reason.contains("array index"), "{text}: {e}")
                        }
                        other => panic!("{text}: {other:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn keys_with_backslashes_and_escaped_non_ascii_round_trip() {
        // Found by the json_path fuzz target: a backslash in a key displayed unescaped
        // and read back without it. An escaped multi-byte character panicked.
        for text in [r#"$."back\\slash""#, r#"$."\é\"q""#, r#"$."a\\""#] {
            let path = parse_json_path(text).unwrap();
            assert_eq!(
                parse_json_path(&display_path(&path)).unwrap(),
                path,
                "{text}"
            );
        }
        // DuckDB keeps a backslash before anything but `"` and `\`.
        assert_eq!(
            parse_json_path(r#"$."\é""#).unwrap(),
            vec![PathElem::Key("\\é".into())]
        );
        assert!(parse_json_path(r#"$."\"#).is_err());
    }

    #[test]
    fn display_round_trips() {
        for text in ["$", "$.a.b", "$.a[3][#-2]", "$.\"we ird\".k"] {
            let path = parse_json_path(text).unwrap();
            assert_eq!(parse_json_path(&display_path(&path)).unwrap(), path);
        }
    }

    #[test]
    fn trie_shares_prefixes_and_dedups_paths() {
        let mut trie = PathTrie::new();
        let a = trie.add(&[key("commit"), key("collection")]);
        let b = trie.add(&[key("commit"), key("operation")]);
        let c = trie.add(&[key("did")]);
        assert_eq!(trie.add(&[key("commit"), key("collection")]), a);
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(trie.len(), 3);
        let root = trie.node(0);
        assert_eq!(root.keys.len(), 2);
        let commit = trie.node(root.child_by_key(b"commit").unwrap());
        assert_eq!(commit.keys.len(), 2);
        assert_eq!(trie.path(b), &[key("commit"), key("operation")]);
    }

    fn steps(text: &str) -> Vec<PathStep> {
        parse_path(text).unwrap().steps
    }

    fn elem_key(k: &str) -> PathStep {
        PathStep::Elem(key(k))
    }

    #[test]
    fn duckdb_path_forms() {
        use PathStep::*;
        assert_eq!(steps(""), vec![]);
        assert_eq!(steps("$"), vec![]);
        assert_eq!(steps("a.b"), vec![elem_key("a.b")]);
        assert_eq!(
            steps("/a~1b/m~0n/1/01/"),
            vec![
                elem_key("a/b"),
                elem_key("m~n"),
                KeyOrIndex("1".into()),
                elem_key("01"),
                elem_key("")
            ]
        );
        assert_eq!(steps("$.*[-1]"), vec![AnyKey, Elem(PathElem::Index(-1))]);
        assert_eq!(steps("$[*]..*"), vec![AnyIndex, Descend, AnyChild]);
        assert_eq!(steps("$.**"), vec![Descend, AnyChild]);
        assert_eq!(steps("$..b"), vec![Descend, elem_key("b")]);
        assert_eq!(steps("$..[0]"), vec![Descend, Elem(PathElem::Index(0))]);
        assert_eq!(steps("$..[*]"), vec![Descend, AnyIndex]);
        assert_eq!(
            steps("$.b[#-0]"),
            vec![elem_key("b"), Elem(PathElem::Index(0))]
        );
        assert_eq!(
            steps("$.b[#-000001]"),
            vec![elem_key("b"), Elem(PathElem::Index(-1))]
        );
        assert_eq!(
            steps("$.b[#]"),
            vec![elem_key("b"), Elem(PathElem::Index(i64::MIN))]
        );
        assert_eq!(steps(r"$.du\ck"), vec![elem_key(r"du\ck")]);
        assert_eq!(steps(r#"$."\"du\\ck\"""#), vec![elem_key(r#""du\ck""#)]);
        assert_eq!(steps(r#"$."\"du\ck\"""#), vec![elem_key(r#""du\ck""#)]);
        assert!(parse_path("$..a").unwrap().is_multi());
        assert_eq!(parse_path("/a/1").unwrap().elems(), None);
        assert!(!parse_path("/a/1").unwrap().is_multi());
    }

    #[test]
    fn duckdb_path_errors_name_offsets() {
        // DuckDB 2.0.0 refuses each of these ("JSON path error").
        for (text, offset) in [
            ("$.b[#-]", 4),
            ("$.b[-]", 4),
            ("$.b[#9]", 4),
            ("$.b[#+2]", 4),
            ("$.b[#-1", 4),
            ("$.b[#-1x]", 4),
            ("$.a[]", 4),
            ("$[]", 2),
            ("$[#", 2),
            ("$.a[!]", 4),
            ("$.a..", 5),
            ("$[[", 2),
            ("$[.", 2),
            ("$]", 1),
            ("$[*.duck", 2),
            ("$*.duck", 1),
            ("$.[*]", 2),
            ("$duck", 1),
            ("$[99999999999999999999]", 2),
            ("$[ 1 ]", 2),
            ("/a~2", 2),
        ] {
            let err = parse_path(text).unwrap_err();
            assert_eq!(err.offset, offset, "{text}: {err}");
            assert!(err.to_string().contains(text), "{err}");
        }
    }

    /// A small deterministic generator (xorshift) for the property tests.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        fn key(&mut self) -> String {
            const CHARS: &[char] = &[
                'a', 'Z', '0', '.', '[', ']', '*', '"', '\\', '/', '~', ' ', 'é', '#', '$', '\'',
            ];
            (0..self.below(5))
                .map(|_| CHARS[self.below(CHARS.len() as u64) as usize])
                .collect()
        }

        fn path(&mut self) -> JsonPath {
            let mut steps = Vec::new();
            let pointer = self.below(4) == 0;
            for _ in 0..self.below(8) {
                let step = if pointer {
                    match self.below(3) {
                        0 => PathStep::KeyOrIndex(self.below(1000).to_string()),
                        _ => PathStep::Elem(PathElem::Key(format!("x{}", self.key()))),
                    }
                } else {
                    match self.below(8) {
                        0 => PathStep::AnyKey,
                        1 => PathStep::AnyIndex,
                        2 => PathStep::Elem(PathElem::Index(self.below(20) as i64 - 10)),
                        3 => {
                            steps.push(PathStep::Descend);
                            match self.below(3) {
                                0 => PathStep::AnyChild,
                                1 => PathStep::AnyIndex,
                                _ => PathStep::Elem(PathElem::Key(self.key())),
                            }
                        }
                        _ => PathStep::Elem(PathElem::Key(self.key())),
                    }
                };
                steps.push(step);
            }
            if pointer && !steps.iter().any(|s| matches!(s, PathStep::KeyOrIndex(_))) {
                steps.push(PathStep::KeyOrIndex("0".into()));
            }
            JsonPath { steps }
        }
    }

    #[test]
    fn generated_paths_display_as_text_that_parses_back() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let path = rng.path();
            let text = path.to_string();
            let again = parse_path(&text).unwrap_or_else(|e| panic!("{path:?} as {text}: {e}"));
            assert_eq!(again, path, "{text}");
            if let Some(elems) = path.elems() {
                assert_eq!(parse_json_path(&display_path(&elems)).unwrap(), elems);
            }
        }
    }

    #[test]
    fn generated_path_texts_never_panic() {
        const PIECES: &[&str] = &[
            "$",
            ".",
            "..",
            "*",
            "**",
            "[",
            "]",
            "#",
            "-",
            "1",
            "0",
            "\"",
            "'",
            "\\",
            "/",
            "~0",
            "~1",
            "~",
            "a",
            "é",
            " ",
            "99999999999999999999",
        ];
        let mut rng = Rng(7);
        for _ in 0..50_000 {
            let text: String = (0..rng.below(12))
                .map(|_| PIECES[rng.below(PIECES.len() as u64) as usize])
                .collect();
            if let Ok(path) = parse_path(&text) {
                let shown = path.to_string();
                assert_eq!(parse_path(&shown).unwrap(), path, "{text} shown as {shown}");
            }
            let _ = parse_json_path(&text);
        }
    }

    fn selected(doc: &str, path: &str) -> Vec<String> {
        let mut scanner = crate::scanner::Scanner::new(std::sync::Arc::new(PathTrie::single(&[])));
        scanner.scan(doc.as_bytes()).unwrap();
        let mut out = Vec::new();
        let root = scanner.get(0).unwrap();
        crate::select::select(doc.as_bytes(), root, &steps(path), &mut out).unwrap();
        out.iter()
            .map(|s| String::from_utf8(s.raw(doc.as_bytes()).to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn selection_follows_duckdb_order() {
        // The answers are DuckDB 2.0.0's (test_json_extract.test, test_json_path.test).
        let doc = r#"{"a":{"b":1,"c":2},"d":["g","h",[{"b":5},{"x":42}]]}"#;
        assert_eq!(
            selected(doc, "$..*"),
            [
                r#"{"b":1,"c":2}"#,
                r#"["g","h",[{"b":5},{"x":42}]]"#,
                "1",
                "2",
                r#""g""#,
                r#""h""#,
                r#"[{"b":5},{"x":42}]"#,
                r#"{"b":5}"#,
                r#"{"x":42}"#,
                "5",
                "42"
            ]
        );
        assert_eq!(selected(doc, "$..b"), ["1", "5"]);
        assert_eq!(selected(doc, "$..[0]"), [r#""g""#, r#"{"b":5}"#]);
        let nested = r#"[{"duck":42},{"duck":{"a":43,"b":[null]}}]"#;
        assert_eq!(
            selected(nested, "$[*]..*"),
            ["42", r#"{"a":43,"b":[null]}"#, "43", "[null]", "null"]
        );
        assert_eq!(selected(nested, "$.*"), Vec::<String>::new());
        assert_eq!(selected(r#"{"duck":[42,43]}"#, "$.*[-1]"), ["43"]);
        assert_eq!(selected(r#"{"a" : 1, "a":2}"#, "$.a"), ["1"]);
        assert_eq!(selected(r#"{"a" : 1, "a":2}"#, "$.*"), ["1", "2"]);
        assert_eq!(selected(r#"{"0":1}"#, "/0"), ["1"]);
        assert_eq!(selected("[5, 6]", "/1"), ["6"]);
        assert_eq!(selected("[5, 6]", "/01"), Vec::<String>::new());
        assert_eq!(selected(r#"{"\u0061":[1,2]}"#, "$.a[#-1]"), ["2"]);
        assert_eq!(selected("[1]", "$[#]"), Vec::<String>::new());
    }
}
