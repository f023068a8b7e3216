//! A small JSON reader for GeoJSON: values with their byte offsets (for errors that say
//! where), nesting bounded by [`crate::NESTING_MAX`], the first of duplicate keys kept
//! as DuckDB keeps it.

use crate::{GeometryError, NESTING_MAX};

/// A JSON value and where it starts in the input.
#[derive(Debug)]
pub(crate) struct Node {
    pub offset: usize,
    pub value: Value,
}

/// A JSON value.
#[derive(Debug)]
pub(crate) enum Value {
    Null,
    Bool,
    Number(f64),
    /// A number beyond a double's range (`1e400`): valid JSON, but no coordinate.
    OutOfRange,
    String(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl Node {
    /// The first member named `key` of an object.
    pub fn member(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Parses one JSON document (surrounding whitespace allowed).
pub(crate) fn parse(text: &str) -> Result<Node, GeometryError> {
    let mut reader = Reader {
        text: text.as_bytes(),
        at: 0,
    };
    let node = reader.value(0)?;
    reader.skip_space();
    if reader.at < reader.text.len() {
        return Err(reader.error("unexpected content after the document"));
    }
    Ok(node)
}

struct Reader<'a> {
    text: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn error(&self, reason: &str) -> GeometryError {
        GeometryError::Json {
            offset: self.at,
            reason: reason.to_string(),
        }
    }

    fn skip_space(&mut self) {
        while matches!(self.text.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, GeometryError> {
        self.skip_space();
        let offset = self.at;
        let value = match self.text.get(self.at) {
            None => return Err(self.error("expected a value, the input ends first")),
            Some(b'{' | b'[') if depth >= NESTING_MAX => {
                return Err(GeometryError::Limit {
                    offset,
                    reason: format!("JSON nested deeper than {NESTING_MAX}"),
                });
            }
            Some(b'{') => Value::Object(self.object(depth)?),
            Some(b'[') => Value::Array(self.array(depth)?),
            Some(b'"') => Value::String(self.string()?),
            Some(b't') => self.literal("true", Value::Bool)?,
            Some(b'f') => self.literal("false", Value::Bool)?,
            Some(b'n') => self.literal("null", Value::Null)?,
            Some(b'-' | b'0'..=b'9') => match self.number()? {
                v if v.is_finite() => Value::Number(v),
                _ => Value::OutOfRange,
            },
            Some(_) => return Err(self.error("invalid literal")),
        };
        Ok(Node { offset, value })
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, GeometryError> {
        match self.text[self.at..].starts_with(word.as_bytes()) {
            true => {
                self.at += word.len();
                Ok(value)
            }
            false => Err(self.error("invalid literal")),
        }
    }

    fn number(&mut self) -> Result<f64, GeometryError> {
        let start = self.at;
        let numeric = |b: &u8| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E');
        while self.text.get(self.at).is_some_and(numeric) {
            self.at += 1;
        }
        let token = std::str::from_utf8(&self.text[start..self.at]).unwrap_or_default();
        let valid = token
            .trim_start_matches('-')
            .starts_with(|c: char| c.is_ascii_digit());
        match token.parse::<f64>() {
            Ok(v) if valid => Ok(v),
            _ => {
                self.at = start;
                Err(self.error("invalid number"))
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, GeometryError> {
        let digits = self.text.get(self.at..self.at + 4).unwrap_or_default();
        let text = std::str::from_utf8(digits).unwrap_or_default();
        match (text.len(), u32::from_str_radix(text, 16)) {
            (4, Ok(v)) => {
                self.at += 4;
                Ok(v)
            }
            _ => Err(self.error("expected four hex digits after \\u")),
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), GeometryError> {
        let byte = self.text.get(self.at).copied();
        self.at += 1;
        let c = match byte {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let high = self.hex4()?;
                let code = match (0xd800..0xdc00).contains(&high)
                    && self.text[self.at..].starts_with(b"\\u")
                {
                    true => {
                        self.at += 2;
                        let low = self.hex4()?;
                        0x10000 + ((high - 0xd800) << 10) + (low.wrapping_sub(0xdc00) & 0x3ff)
                    }
                    false => high,
                };
                char::from_u32(code).unwrap_or('\u{fffd}')
            }
            _ => return Err(self.error("invalid escape")),
        };
        out.push(c);
        Ok(())
    }

    fn string(&mut self) -> Result<String, GeometryError> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let start = self.at;
            while self
                .text
                .get(self.at)
                .is_some_and(|b| !matches!(b, b'"' | b'\\' | 0..=0x1f))
            {
                self.at += 1;
            }
            // The input is a &str, and a run ends at an ASCII byte: a char boundary.
            out.push_str(std::str::from_utf8(&self.text[start..self.at]).unwrap_or_default());
            match self.text.get(self.at) {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    self.escape(&mut out)?;
                }
                Some(_) => return Err(self.error("control character in a string")),
                None => return Err(self.error("unterminated string")),
            }
        }
    }

    fn expect(&mut self, byte: u8, reason: &str) -> Result<(), GeometryError> {
        self.skip_space();
        match self.text.get(self.at) == Some(&byte) {
            true => {
                self.at += 1;
                Ok(())
            }
            false => Err(self.error(reason)),
        }
    }

    /// Whether the container ends here (consumed), after the opening bracket.
    fn ends(&mut self, close: u8) -> bool {
        self.skip_space();
        let hit = self.text.get(self.at) == Some(&close);
        self.at += usize::from(hit);
        hit
    }

    fn array(&mut self, depth: usize) -> Result<Vec<Node>, GeometryError> {
        self.at += 1;
        let mut items = Vec::new();
        if self.ends(b']') {
            return Ok(items);
        }
        loop {
            items.push(self.value(depth + 1)?);
            if self.ends(b']') {
                return Ok(items);
            }
            self.expect(b',', "expected ',' or ']'")?;
        }
    }

    fn object(&mut self, depth: usize) -> Result<Vec<(String, Node)>, GeometryError> {
        self.at += 1;
        let mut members = Vec::new();
        if self.ends(b'}') {
            return Ok(members);
        }
        loop {
            self.skip_space();
            if self.text.get(self.at) != Some(&b'"') {
                return Err(self.error("expected a string key"));
            }
            let key = self.string()?;
            self.expect(b':', "expected ':' after a key")?;
            members.push((key, self.value(depth + 1)?));
            if self.ends(b'}') {
                return Ok(members);
            }
            self.expect(b',', "expected ',' or '}'")?;
        }
    }
}
