//! The walk of one document behind `json_each`/`json_tree`, and JSON written back as
//! DuckDB writes it. Depends on `tessera-json` only, so the fuzz target `json_each`
//! includes this file as is.

use std::fmt::Write as _;

use tessera_json::path::PathElem;
use tessera_json::tape::{Kind, ParseError, Tape, Value};
use tessera_json::tree::{push_float, push_integer, push_string};

/// Which rows a walk produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Walk {
    /// `json_each`: the members or elements of the value (the value, if a scalar).
    Each,
    /// `json_tree`: the value and every value below it, in pre-order.
    Tree,
}

impl Walk {
    /// The SQL name of the table function.
    pub fn name(self) -> &'static str {
        match self {
            Walk::Each => "json_each",
            Walk::Tree => "json_tree",
        }
    }

    /// The walk named `name` (`json_each` or `json_tree`).
    pub fn from_name(name: &str) -> Option<Walk> {
        match name.to_ascii_lowercase().as_str() {
            "json_each" => Some(Walk::Each),
            "json_tree" => Some(Walk::Tree),
            _ => None,
        }
    }
}

/// Appends `key` with its quotes and backslashes escaped, as inside a quoted path key.
pub fn escape_key(key: &str, out: &mut String) {
    for c in key.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// One output row, borrowed from the walker's buffers.
#[derive(Debug)]
pub struct Row<'a> {
    /// The member's key or the element's index; NULL (None) for the start value.
    pub key: Option<&'a str>,
    /// The value as JSON text.
    pub value: &'a str,
    /// DuckDB's type name.
    pub type_name: &'static str,
    /// Whether `atom` is the value (scalars but null).
    pub atom: bool,
    /// Position among the document's keys and values in pre-order.
    pub id: u64,
    /// `json_tree`: the id of the container.
    pub parent: Option<u64>,
    /// The path of the value.
    pub fullkey: &'a str,
    /// The path of its container (of the start value: its own).
    pub path: &'a str,
}

/// Parses documents (as the SQL functions read JSON: `NaN` and `Infinity` are numbers)
/// and writes their rows; reused across documents so its buffers are allocated once.
pub struct Walker {
    tape: Tape,
    value: String,
    fullkey: String,
    path: String,
    rows: usize,
    /// Leaves `Row::value` empty: no column read needs the value's text, which is most
    /// of a walk's cost (json_tree would write each subtree again at every level).
    skip_values: bool,
    /// Leaves `Row::fullkey` and `Row::path` empty.
    skip_paths: bool,
}

impl Walker {
    /// A walker that writes only what the columns read need: the value's text if
    /// `values`, the full key and path if `paths`.
    pub fn writing(values: bool, paths: bool) -> Self {
        Self {
            tape: crate::json::function_tape(),
            value: String::new(),
            fullkey: String::new(),
            path: String::new(),
            rows: 0,
            skip_values: !values,
            skip_paths: !paths,
        }
    }

    /// Appends the rows of `walk` over `text` from `start` to `out`; returns how many.
    /// `Err` holds the byte offset and reason of malformed JSON.
    pub fn walk(
        &mut self,
        text: &[u8],
        path: &[PathElem],
        path_text: &str,
        walk: Walk,
        out: &mut dyn FnMut(&Row<'_>),
    ) -> Result<usize, ParseError> {
        self.tape.clear();
        let text = self.tape.push(text)?;
        let tape = std::mem::take(&mut self.tape);
        let doc = tape.doc(0, text);
        let root = doc.root();
        self.rows = 0;
        if let Some(at) = find(root, path) {
            self.fullkey.clear();
            self.fullkey.push_str(path_text);
            let base = root.index();
            match walk {
                Walk::Each => self.each(at, base, out),
                Walk::Tree => self.tree(at, base, None, None, out),
            }
        }
        self.tape = tape;
        Ok(self.rows)
    }

    /// `json_each`: the children of `at`, or `at` itself when it is a scalar.
    fn each(&mut self, at: Value<'_>, base: usize, out: &mut dyn FnMut(&Row<'_>)) {
        self.path.clear();
        self.path.push_str(&self.fullkey);
        let fullkey_len = self.fullkey.len();
        match at.node().kind() {
            Kind::Object => {
                for (key, value) in at.members() {
                    self.key_suffix(key.str());
                    self.emit(value, base, Some(key.str()), None, out);
                    self.fullkey.truncate(fullkey_len);
                }
            }
            Kind::Array => {
                let mut digits = [0; INDEX_DIGITS_MAX];
                for (i, value) in at.elements().enumerate() {
                    self.index_suffix(i);
                    self.emit(value, base, Some(index_text(i, &mut digits)), None, out);
                    self.fullkey.truncate(fullkey_len);
                }
            }
            _ => self.emit(at, base, None, None, out),
        }
    }

    /// `json_tree`: `at` (reached by `key` from `parent`) and everything below it. The
    /// tape limits nesting to 128 levels, which bounds the recursion.
    fn tree(
        &mut self,
        at: Value<'_>,
        base: usize,
        key: Option<&str>,
        parent: Option<u64>,
        out: &mut dyn FnMut(&Row<'_>),
    ) {
        self.emit(at, base, key, parent, out);
        let id = Some((at.index() - base) as u64);
        let fullkey_len = self.fullkey.len();
        match at.node().kind() {
            Kind::Object => {
                for (k, value) in at.members() {
                    self.path.clear();
                    self.path.push_str(&self.fullkey);
                    self.key_suffix(k.str());
                    self.tree(value, base, Some(k.str()), id, out);
                    self.fullkey.truncate(fullkey_len);
                }
            }
            Kind::Array => {
                for (i, value) in at.elements().enumerate() {
                    self.path.clear();
                    self.path.push_str(&self.fullkey);
                    self.index_suffix(i);
                    let mut digits = [0; INDEX_DIGITS_MAX];
                    self.tree(value, base, Some(index_text(i, &mut digits)), id, out);
                    self.fullkey.truncate(fullkey_len);
                }
            }
            _ => {}
        }
    }

    /// Appends the row of `value`, whose `fullkey` and `path` are in the buffers.
    fn emit(
        &mut self,
        value: Value<'_>,
        base: usize,
        key: Option<&str>,
        parent: Option<u64>,
        out: &mut dyn FnMut(&Row<'_>),
    ) {
        if parent.is_none() && key.is_none() && !self.skip_paths {
            // The start value itself: its path is its own full key.
            self.path.clear();
            self.path.push_str(&self.fullkey);
        }
        self.value.clear();
        if !self.skip_values {
            write_json(value, &mut self.value);
        }
        let kind = value.node().kind();
        self.rows += 1;
        out(&Row {
            key,
            value: &self.value,
            type_name: type_name(value),
            atom: !matches!(kind, Kind::Object | Kind::Array | Kind::Null),
            id: (value.index() - base) as u64,
            parent,
            fullkey: &self.fullkey,
            path: &self.path,
        });
    }

    /// `.key`, quoted unless it is an ASCII letter followed by letters, digits and `_`
    /// (SQLite's rule, which DuckDB follows).
    fn key_suffix(&mut self, key: &str) {
        if self.skip_paths {
            return;
        }
        let plain = key.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        self.fullkey.push('.');
        if plain {
            self.fullkey.push_str(key);
            return;
        }
        self.fullkey.push('"');
        escape_key(key, &mut self.fullkey);
        self.fullkey.push('"');
    }

    fn index_suffix(&mut self, index: usize) {
        if self.skip_paths {
            return;
        }
        let _ = write!(self.fullkey, "[{index}]");
    }
}

/// Decimal digits of the largest `usize`.
const INDEX_DIGITS_MAX: usize = 20;

/// `index` in decimal, written into `digits`: the key of an array element, without an
/// allocation per element.
fn index_text(mut index: usize, digits: &mut [u8; INDEX_DIGITS_MAX]) -> &str {
    let mut start = INDEX_DIGITS_MAX;
    loop {
        start -= 1;
        digits[start] = b'0' + (index % 10) as u8;
        index /= 10;
        if index == 0 {
            break;
        }
    }
    std::str::from_utf8(&digits[start..]).expect("ASCII digits")
}

/// The value at `path` below `root`: the first member of a repeated key (as DuckDB
/// reads it), negative indexes from the end.
fn find<'a>(root: Value<'a>, path: &[PathElem]) -> Option<Value<'a>> {
    let mut at = root;
    for elem in path {
        at = match (elem, at.node().kind()) {
            (PathElem::Key(k), Kind::Object) => at.members().find(|(key, _)| key.str() == k)?.1,
            (PathElem::Index(i), Kind::Array) => {
                let len = at.node().container_len() as i64;
                let i = if *i < 0 { len + i } else { *i };
                at.elements().nth(usize::try_from(i).ok()?)?
            }
            _ => return None,
        };
    }
    Some(at)
}

/// DuckDB's type name of a JSON value.
fn type_name(value: Value<'_>) -> &'static str {
    match value.node().kind() {
        Kind::Null => "NULL",
        Kind::True | Kind::False => "BOOLEAN",
        Kind::Int if value.node().int() < 0 => "BIGINT",
        Kind::Int | Kind::UInt => "UBIGINT",
        Kind::Decimal | Kind::Float => "DOUBLE",
        Kind::String | Kind::Key => "VARCHAR",
        Kind::Object => "OBJECT",
        Kind::Array => "ARRAY",
    }
}

/// Writes `value` as DuckDB writes JSON: no whitespace, strings with the minimal
/// escapes, numbers in their shortest form (`tessera_json::tree::push_float`).
pub fn write_json(value: Value<'_>, out: &mut String) {
    let node = value.node();
    match node.kind() {
        Kind::Null => out.push_str("null"),
        Kind::True => out.push_str("true"),
        Kind::False => out.push_str("false"),
        Kind::Int => push_integer(out, node.int()),
        Kind::UInt => push_integer(out, node.uint()),
        // DuckDB keeps the digits of an integer beyond u64 as written.
        Kind::Decimal => push_integer(out, value.decimal()),
        Kind::Float => push_float(out, node.float()),
        Kind::String | Kind::Key => push_string(out, value.str()),
        Kind::Object => {
            out.push('{');
            for (i, (key, member)) in value.members().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_string(out, key.str());
                out.push(':');
                write_json(member, out);
            }
            out.push('}');
        }
        Kind::Array => {
            out.push('[');
            for (i, element) in value.elements().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(element, out);
            }
            out.push(']');
        }
    }
}
