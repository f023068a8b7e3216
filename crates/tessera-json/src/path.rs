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

/// Parses a DuckDB-style JSONPath: `$`, `$.key`, `$."quoted key"`, `$.a[0]`, `$.a[#-1]`.
pub fn parse_json_path(text: &str) -> Result<Vec<PathElem>, PathError> {
    let bytes = text.as_bytes();
    let err = |offset: usize, reason: &'static str| PathError {
        path: text.to_string(),
        offset,
        reason,
    };
    if bytes.first() != Some(&b'$') {
        return Err(err(0, "expected '$'"));
    }
    let mut out = Vec::new();
    let mut i = 1;
    while i < bytes.len() {
        if out.len() >= MAX_PATH_DEPTH {
            return Err(err(i, "path is deeper than 64 steps"));
        }
        match bytes[i] {
            b'.' => {
                i += 1;
                if bytes.get(i) == Some(&b'"') {
                    let (key, next) =
                        quoted(text, i).ok_or_else(|| err(i, "unterminated quoted key"))?;
                    out.push(PathElem::Key(key));
                    i = next;
                } else {
                    let start = i;
                    while i < bytes.len() && bytes[i] != b'.' && bytes[i] != b'[' {
                        i += 1;
                    }
                    if start == i {
                        return Err(err(i, "expected a key after '.'"));
                    }
                    let key = &text[start..i];
                    if key == "*" {
                        return Err(err(start, "wildcards are not supported"));
                    }
                    out.push(PathElem::Key(key.to_string()));
                }
            }
            b'[' => {
                i += 1;
                let close = text[i..]
                    .find(']')
                    .map(|p| p + i)
                    .ok_or_else(|| err(i, "expected ']'"))?;
                let inner = text[i..close].trim();
                let elem = if let Some(from_end) = inner.strip_prefix('#') {
                    let from_end = from_end.trim();
                    if from_end.is_empty() {
                        return Err(err(i, "expected '#-n' (counting from the end)"));
                    }
                    let n: i64 = from_end
                        .parse()
                        .map_err(|_| err(i, "expected '#-n' (counting from the end)"))?;
                    if n >= 0 {
                        return Err(err(
                            i,
                            "'#' indexes must be negative ('#-1' is the last element)",
                        ));
                    }
                    PathElem::Index(n)
                } else if inner.starts_with('"') || inner.starts_with('\'') {
                    let q = inner.as_bytes()[0] as char;
                    let key = inner
                        .strip_prefix(q)
                        .and_then(|s| s.strip_suffix(q))
                        .ok_or_else(|| err(i, "unterminated quoted key"))?;
                    PathElem::Key(key.to_string())
                } else {
                    if inner == "*" {
                        return Err(err(i, "wildcards are not supported"));
                    }
                    let n: i64 = inner
                        .parse()
                        .map_err(|_| err(i, "expected an array index"))?;
                    if n < 0 {
                        return Err(err(i, "negative indexes are written '#-n'"));
                    }
                    PathElem::Index(n)
                };
                out.push(elem);
                i = close + 1;
            }
            _ => return Err(err(i, "expected '.' or '['")),
        }
    }
    Ok(out)
}

/// Reads `"..."` starting at `start` (the quote), where `\` escapes the character after
/// it (`\"` and `\\` in what [`display_path`] writes).
fn quoted(text: &str, start: usize) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => return Some((out, i + 1)),
            // The escaped character is taken whole, whatever its length in UTF-8.
            b'\\' => {
                let ch = text[i + 1..].chars().next()?;
                out.push(ch);
                i += 1 + ch.len_utf8();
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
            ("$.a[-1]", "negative indexes"),
            ("$.*", "wildcards"),
            ("$a", "expected '.' or '['"),
        ] {
            let err = parse_json_path(text).unwrap_err();
            assert!(err.reason.contains(reason), "{text}: {err}");
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
        assert_eq!(
            parse_json_path(r#"$."\é""#).unwrap(),
            vec![PathElem::Key("é".into())]
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
}
