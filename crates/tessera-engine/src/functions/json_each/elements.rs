//! The elements of a JSON array as the items of `CAST(x AS JSON[])`. They are found by
//! the validating scanner and copied where their text is already what the writer writes
//! (`tessera_json::written_form`): most elements of machine-written JSON are, and
//! copying them skips a parse into a tape and a write back (numbers through their
//! shortest digits) per element. An element in another form is parsed alone and
//! written; a document the scanner does not take as an array is parsed whole, which
//! says what is wrong with it.

use std::ops::Range;
use std::sync::Arc;

use tessera_json::path::PathTrie;
use tessera_json::scanner::{Kind, Scanner, Span};
use tessera_json::tape::{self, ParseError, Tape, Value};
use tessera_json::written_form::is_written_form;

use super::walk::write_json;
use crate::json::{function_scanner, function_tape};

/// Why a document has no elements.
#[derive(Debug)]
pub enum NoElements {
    /// It is not JSON.
    Malformed(ParseError),
    /// It is JSON but not an array.
    NotArray,
}

/// Reads the elements of one array after another, reusing its buffers.
pub struct ElementCopier {
    /// Validates a whole array as the SQL functions read JSON (no paths extracted).
    scanner: Scanner,
    /// Parses what is not copied: an element not in written form, or a whole document
    /// the scanner refused.
    tape: Tape,
    spans: Vec<Span>,
    /// The elements' text, one after the other.
    text: String,
    /// Each element's range of `text`; `None` for a SQL NULL.
    items: Vec<Option<Range<usize>>>,
}

impl Default for ElementCopier {
    fn default() -> Self {
        Self {
            scanner: function_scanner(Arc::new(PathTrie::new())),
            tape: function_tape(),
            spans: Vec::new(),
            text: String::new(),
            items: Vec::new(),
        }
    }
}

impl ElementCopier {
    /// The elements of the array `doc` as JSON text (a `null` element as SQL NULL when
    /// `sql_nulls`), or why it has none.
    pub fn elements(
        &mut self,
        doc: &str,
        sql_nulls: bool,
    ) -> Result<impl Iterator<Item = Option<&str>>, NoElements> {
        if !self.copy(doc, sql_nulls) {
            self.parse(doc, sql_nulls)?;
        }
        Ok(self.items())
    }

    fn items(&self) -> impl Iterator<Item = Option<&str>> {
        let text = self.text.as_str();
        self.items
            .iter()
            .map(move |item| item.clone().map(|r| &text[r]))
    }

    /// Fills the items from the scanner's element spans; false (the items unusable)
    /// when the scanner does not take `doc` as an array.
    fn copy(&mut self, doc: &str, sql_nulls: bool) -> bool {
        let bytes = doc.as_bytes();
        self.spans.clear();
        let spans = &mut self.spans;
        if self
            .scanner
            .scan_elements(bytes, |element| spans.push(element))
            != Ok(true)
        {
            return false;
        }
        self.text.clear();
        self.items.clear();
        for span in &self.spans {
            let raw = span.raw(bytes);
            if sql_nulls && span.kind == Kind::Null {
                self.items.push(None);
            } else if is_written_form(raw) {
                // Spans start and end at ASCII tokens, so they cut `doc` at characters.
                let Some(text) = doc.get(span.start as usize..span.end as usize) else {
                    return false;
                };
                let from = self.text.len();
                self.text.push_str(text);
                self.items.push(Some(from..self.text.len()));
            } else {
                self.tape.clear();
                let Ok(parsed) = self.tape.push(raw) else {
                    return false;
                };
                let root = self.tape.doc(0, parsed).root();
                push_written(&mut self.text, &mut self.items, root, false);
            }
        }
        true
    }

    /// Fills the items from a parse of the whole document.
    fn parse(&mut self, doc: &str, sql_nulls: bool) -> Result<(), NoElements> {
        self.text.clear();
        self.items.clear();
        self.tape.clear();
        let parsed = self
            .tape
            .push(doc.as_bytes())
            .map_err(NoElements::Malformed)?;
        let root = self.tape.doc(0, parsed).root();
        if root.node().kind() != tape::Kind::Array {
            return Err(NoElements::NotArray);
        }
        for element in root.elements() {
            push_written(&mut self.text, &mut self.items, element, sql_nulls);
        }
        Ok(())
    }
}

/// Appends `value` as the writer writes it to `text`, and its range to `items` (a SQL
/// NULL for `null` when `sql_nulls`).
fn push_written(
    text: &mut String,
    items: &mut Vec<Option<Range<usize>>>,
    value: Value<'_>,
    sql_nulls: bool,
) {
    if sql_nulls && value.node().kind() == tape::Kind::Null {
        items.push(None);
        return;
    }
    let from = text.len();
    write_json(value, text);
    items.push(Some(from..text.len()));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The elements as the parse path gives them: the whole array parsed, each element
    /// written back.
    fn parsed(doc: &str, sql_nulls: bool) -> Option<Vec<Option<String>>> {
        let mut tape = function_tape();
        let parsed = tape.push(doc.as_bytes()).ok()?;
        let root = tape.doc(0, parsed).root();
        if root.node().kind() != tessera_json::tape::Kind::Array {
            return None;
        }
        let items = root.elements().map(|element| {
            if sql_nulls && element.node().kind() == tessera_json::tape::Kind::Null {
                return None;
            }
            let mut text = String::new();
            write_json(element, &mut text);
            Some(text)
        });
        Some(items.collect())
    }

    #[test]
    fn copied_elements_are_the_parsed_and_written_ones() {
        let mut copier = ElementCopier::default();
        let docs = [
            r#"[{"sku":"s1","qty":5,"price":59.84},{"sku":"s2","qty":8,"price":236.5}]"#,
            r#" [ 1 , 2.50 , -0 , 1e5 , 0.0000001 , "a\nb" , "\u00e9" , null , [ ] , { } ] "#,
            r#"[NaN,-Infinity,1.7976931348623157e308,12345678901234567890123,[1,],{"a":1,}]"#,
            r#"[{"a":1,"a":2},"é/",true,false,null,0.000001,-0.0,5.0,10.0,[[[]]]]"#,
            "[]",
            "[1,2,]",
        ];
        for doc in docs {
            for sql_nulls in [false, true] {
                let copied = copier.copy(doc, sql_nulls).then(|| {
                    copier
                        .items()
                        .map(|i| i.map(str::to_string))
                        .collect::<Vec<_>>()
                });
                assert_eq!(copied, parsed(doc, sql_nulls), "{doc}");
            }
        }
    }

    #[test]
    fn what_is_no_array_is_left_to_the_parse() {
        let mut copier = ElementCopier::default();
        for doc in ["{\"a\":[1]}", "1", "[1,2", "[1 2]", "", "  ", "[\"a]"] {
            assert!(!copier.copy(doc, false), "{doc}");
        }
    }
}
