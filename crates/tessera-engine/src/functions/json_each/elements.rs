//! The elements of a JSON array as the items of `CAST(x AS JSON[])`, found by the
//! validating scanner and copied where their text is already what the writer writes
//! (`tessera_json::written_form`): most elements of machine-written JSON are, and
//! copying them skips a parse into a tape and a write back (numbers through their
//! shortest digits) per element. An element in another form is parsed alone and
//! written as before.

use std::ops::Range;
use std::sync::Arc;

use tessera_json::path::PathTrie;
use tessera_json::scanner::{Kind, Scanner, Span};
use tessera_json::tape::Tape;
use tessera_json::written_form::is_written_form;

use super::walk::write_json;
use crate::json::{function_scanner, function_tape};

/// Reads the elements of one array after another, reusing its buffers.
pub struct ElementCopier {
    /// Validates a whole array as the SQL functions read JSON (no paths extracted).
    scanner: Scanner,
    /// Parses an element that is not in written form.
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
    /// `sql_nulls`); `None` when `doc` is not an array the scanner accepts, which the
    /// caller's parse then reports (or reads as NULL under `TRY_CAST`).
    pub fn elements(
        &mut self,
        doc: &str,
        sql_nulls: bool,
    ) -> Option<impl Iterator<Item = Option<&str>>> {
        let bytes = doc.as_bytes();
        self.spans.clear();
        let spans = &mut self.spans;
        if !self
            .scanner
            .scan_elements(bytes, |element| spans.push(element))
            .ok()?
        {
            return None;
        }
        self.text.clear();
        self.items.clear();
        for span in &self.spans {
            if sql_nulls && span.kind == Kind::Null {
                self.items.push(None);
                continue;
            }
            let from = self.text.len();
            let raw = span.raw(bytes);
            match is_written_form(raw) {
                // Spans start and end at ASCII tokens, so they cut `doc` at characters.
                true => self
                    .text
                    .push_str(doc.get(span.start as usize..span.end as usize)?),
                false => {
                    self.tape.clear();
                    let parsed = self.tape.push(raw).ok()?;
                    write_json(self.tape.doc(0, parsed).root(), &mut self.text);
                }
            }
            self.items.push(Some(from..self.text.len()));
        }
        let text = self.text.as_str();
        Some(
            self.items
                .iter()
                .map(move |item| item.clone().map(|r| &text[r])),
        )
    }
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
                let copied = copier
                    .elements(doc, sql_nulls)
                    .map(|items| items.map(|i| i.map(str::to_string)).collect::<Vec<_>>());
                assert_eq!(copied, parsed(doc, sql_nulls), "{doc}");
            }
        }
    }

    #[test]
    fn what_is_no_array_is_left_to_the_parse() {
        let mut copier = ElementCopier::default();
        for doc in ["{\"a\":[1]}", "1", "[1,2", "[1 2]", "", "  ", "[\"a]"] {
            assert!(copier.elements(doc, false).is_none(), "{doc}");
        }
    }
}
