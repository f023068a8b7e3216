//! The values a DuckDB path selects in a scanned document: wildcards, recursive descent
//! and single steps walked over the spans the scanner validated, in DuckDB's order.
//! (Paths themselves are parsed in [`crate::path`]; this walks them over documents.)

use crate::escape::unescape_into;
use crate::path::{PathElem, PathStep};
use crate::scanner::{Kind, Span, for_each_member};

/// Most values one path may select in one document: `..` steps multiply, so a short
/// path could otherwise select a number of values quadratic (or worse) in the document.
pub const MAX_SELECTED: usize = 1 << 20;

/// A path selected more than [`MAX_SELECTED`] values of one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a JSON path selected more than {MAX_SELECTED} values of one document")]
pub struct TooManyValues;

/// Appends to `out` the values that `steps` select below `value` of `doc`, a document
/// [`crate::Scanner::scan`] accepted, in DuckDB's order: members and elements in
/// document order, `..` breadth first. A key selects its first occurrence.
pub fn select(
    doc: &[u8],
    value: Span,
    steps: &[PathStep],
    out: &mut Vec<Span>,
) -> Result<(), TooManyValues> {
    let Some((step, rest)) = steps.split_first() else {
        if out.len() >= MAX_SELECTED {
            return Err(TooManyValues);
        }
        out.push(value);
        return Ok(());
    };
    match step {
        PathStep::Elem(PathElem::Key(key)) => match member(doc, value, key) {
            Some(child) => select(doc, child, rest, out),
            None => Ok(()),
        },
        PathStep::Elem(PathElem::Index(i)) => match element(doc, value, *i) {
            Some(child) => select(doc, child, rest, out),
            None => Ok(()),
        },
        PathStep::KeyOrIndex(token) => {
            let child = match value.kind {
                Kind::Array => token.parse().ok().and_then(|i| element(doc, value, i)),
                _ => member(doc, value, token),
            };
            child.map_or(Ok(()), |c| select(doc, c, rest, out))
        }
        PathStep::AnyKey | PathStep::AnyIndex | PathStep::AnyChild => {
            let wanted = match step {
                PathStep::AnyKey => value.kind == Kind::Object,
                PathStep::AnyIndex => value.kind == Kind::Array,
                _ => true,
            };
            if !wanted {
                return Ok(());
            }
            for child in children(doc, value) {
                select(doc, child.1, rest, out)?;
            }
            Ok(())
        }
        PathStep::Descend => {
            // Breadth first, as DuckDB orders `$..*`; the queue holds each value once.
            let mut queue = std::collections::VecDeque::from([value]);
            while let Some(next) = queue.pop_front() {
                select(doc, next, rest, out)?;
                queue.extend(children(doc, next).into_iter().map(|(_, c)| c));
            }
            Ok(())
        }
    }
}

/// The members (key and value) or elements (no key) of a container at `value` of a
/// validated document, in document order; none of a scalar.
pub fn children(doc: &[u8], value: Span) -> Vec<(Option<Span>, Span)> {
    let mut out = Vec::new();
    if !matches!(value.kind, Kind::Object | Kind::Array) {
        return out;
    }
    // The container alone is scanned, so each call costs its size, not the document's.
    let base = value.start;
    let shift = |s: Span| Span {
        start: s.start + base,
        end: s.end + base,
        ..s
    };
    let local = Span {
        start: 0,
        end: value.end - base,
        ..value
    };
    for_each_member(&doc[base as usize..value.end as usize], local, |k, v| {
        out.push((k.map(shift), shift(v)))
    });
    out
}

/// The value of the first member named `key` of an object (duplicates after it are not
/// read, as everywhere in Tessera); `None` for other values.
pub fn member(doc: &[u8], value: Span, key: &str) -> Option<Span> {
    if value.kind != Kind::Object {
        return None;
    }
    let mut unescaped = Vec::new();
    children(doc, value).into_iter().find_map(|(k, v)| {
        let body = k?.string_body(doc);
        unescaped.clear();
        unescape_into(body, &mut unescaped);
        (unescaped == key.as_bytes()).then_some(v)
    })
}

/// Element `index` of an array; negative counts from the end.
fn element(doc: &[u8], value: Span, index: i64) -> Option<Span> {
    if value.kind != Kind::Array {
        return None;
    }
    let elements = children(doc, value);
    let position = if index < 0 {
        i64::try_from(elements.len()).ok()?.checked_add(index)?
    } else {
        index
    };
    elements
        .get(usize::try_from(position).ok()?)
        .map(|(_, v)| *v)
}
