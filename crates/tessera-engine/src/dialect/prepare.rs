//! DuckDB's text that sqlparser reads otherwise, rewritten before parsing. Its own
//! file, using sqlparser only, so that the fuzz target `dialect_prepare` builds it
//! without DataFusion.

use std::borrow::Cow;

use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

/// `script` as sqlparser should see it to read it as DuckDB does (`grammar`: DuckDB's
/// tokens): the brackets of
/// each list after `IN` / `NOT IN` become parentheses (`x IN ['a', 'b']` is
/// `x IN ('a', 'b')`), and a parenthesized query that starts with FROM and has no
/// SELECT (DuckDB's `(FROM t)`, which sqlparser reads only outside parentheses) gets
/// `SELECT * ` before its FROM. Brackets elsewhere (list literals, subscripts) and
/// anything inside strings, quoted names and comments are left alone. Text that does
/// not tokenize is returned unchanged for the parser to report. Each `?` parameter
/// becomes `$n`, numbered within its statement, as DataFusion names parameters
/// (DuckDB's `PREPARE q AS SELECT ?` is `PREPARE q AS SELECT $1`).
pub(crate) fn duckdb_text<'a>(script: &'a str, grammar: &dyn Dialect) -> Cow<'a, str> {
    let numbered = match script.contains('?') {
        true => edited(script, grammar, numbered_parameters),
        false => None,
    };
    match numbered {
        Some(numbered) => Cow::Owned(lists_and_selects(&numbered, grammar).into_owned()),
        None => lists_and_selects(script, grammar),
    }
}

/// [`duckdb_text`]'s lists and `(FROM ...)` subqueries.
fn lists_and_selects<'a>(script: &'a str, grammar: &dyn Dialect) -> Cow<'a, str> {
    if !script.contains(['[', '(']) {
        return Cow::Borrowed(script);
    }
    // Lists first: `x IN [FROM t]` becomes `x IN (FROM t)`, which then takes a SELECT.
    let lists = edited(script, grammar, |tokens| {
        in_list_brackets(tokens)
            .into_iter()
            .map(|(location, bracket)| (location, Edit::Replace(1, bracket)))
            .collect()
    });
    let text = lists.as_deref().unwrap_or(script);
    let selects = edited(text, grammar, |tokens| {
        from_first_subqueries(tokens)
            .into_iter()
            .map(|location| (location, Edit::Insert("SELECT * ")))
            .collect()
    });
    match (selects, lists) {
        (Some(out), _) | (None, Some(out)) => Cow::Owned(out),
        (None, None) => Cow::Borrowed(script),
    }
}

/// `script` with the edits `find` finds in its tokens (whitespace left out) made, or
/// `None` when there are none or the text does not tokenize. Edits at one place are
/// made in the order `find` gives them.
pub(crate) fn edited(
    script: &str,
    grammar: &dyn Dialect,
    find: impl FnOnce(&[&TokenWithSpan]) -> Vec<(Location, Edit)>,
) -> Option<String> {
    let tokens = Tokenizer::new(grammar, script)
        .tokenize_with_location()
        .ok()?;
    let significant: Vec<&TokenWithSpan> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let offsets = LineOffsets::new(script);
    let mut edits: Vec<(usize, Edit)> = find(&significant)
        .into_iter()
        .filter_map(|(location, edit)| Some((offsets.byte_offset(script, location)?, edit)))
        .collect();
    if edits.is_empty() {
        return None;
    }
    edits.sort_by_key(|(offset, _)| *offset);
    let mut out = String::with_capacity(script.len() + 9 * edits.len());
    let mut copied = 0;
    for (offset, edit) in edits {
        out.push_str(script.get(copied..offset)?);
        copied = offset;
        match edit {
            Edit::Replace(length_bytes, text) => {
                script.get(offset..offset + length_bytes)?;
                out.push_str(text);
                copied += length_bytes;
            }
            Edit::Insert(text) => out.push_str(text),
            Edit::Parameter(n) if script.as_bytes()[offset] == b'?' => {
                out.push_str(&format!("${n}"));
                copied += 1;
            }
            Edit::Parameter(_) => {}
        }
    }
    out.push_str(&script[copied..]);
    Some(out)
}

/// One change made at a byte offset of the script.
pub(crate) enum Edit {
    /// The token of this many bytes there becomes this text (a bracket a parenthesis).
    Replace(usize, &'static str),
    /// This text goes before the token there.
    Insert(&'static str),
    /// The `?` there becomes `$n`.
    Parameter(usize),
}

/// Each `?` parameter with its number within its statement (from 1; `;` starts over).
fn numbered_parameters(tokens: &[&TokenWithSpan]) -> Vec<(Location, Edit)> {
    let mut out = Vec::new();
    let mut number = 0;
    for token in tokens {
        match &token.token {
            Token::SemiColon => number = 0,
            Token::Placeholder(p) if p == "?" => {
                number += 1;
                out.push((token.span.start, Edit::Parameter(number)));
            }
            _ => {}
        }
    }
    out
}

/// Where the FROM of each `(FROM ...)` without a SELECT of its own is.
fn from_first_subqueries(tokens: &[&TokenWithSpan]) -> Vec<Location> {
    let is = |token: &Token, keyword| matches!(token, Token::Word(w) if w.keyword == keyword);
    let mut out = Vec::new();
    for (i, pair) in tokens.windows(2).enumerate() {
        if pair[0].token != Token::LParen || !is(&pair[1].token, Keyword::FROM) {
            continue;
        }
        let mut depth = 0usize;
        let mut select = false;
        for token in &tokens[i..] {
            match &token.token {
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                other if depth == 1 && is(other, Keyword::SELECT) => select = true,
                _ => {}
            }
        }
        if !select {
            out.push(pair[1].span.start);
        }
    }
    out
}

/// Where the brackets of lists after `IN` are, each with the parenthesis replacing it.
fn in_list_brackets(significant: &[&TokenWithSpan]) -> Vec<(Location, &'static str)> {
    let mut out = Vec::new();
    for (i, pair) in significant.windows(2).enumerate() {
        let after_in = matches!(&pair[0].token, Token::Word(w) if w.keyword == Keyword::IN);
        if !after_in || pair[1].token != Token::LBracket {
            continue;
        }
        if let Some(close) = matching_bracket(&significant[i + 1..]) {
            out.push((pair[1].span.start, "("));
            out.push((close, ")"));
        }
    }
    out
}

/// The location of the `]` closing the `[` that `tokens` starts with.
fn matching_bracket(tokens: &[&TokenWithSpan]) -> Option<Location> {
    let mut depth = 0usize;
    for token in tokens {
        match token.token {
            Token::LBracket => depth += 1,
            Token::RBracket => {
                depth -= 1;
                if depth == 0 {
                    return Some(token.span.start);
                }
            }
            _ => {}
        }
    }
    None
}

/// Byte offsets of the starts of a text's lines, to turn the tokenizer's (line,
/// column in characters) locations into byte offsets.
struct LineOffsets(Vec<usize>);

impl LineOffsets {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
        Self(starts.collect())
    }

    fn byte_offset(&self, text: &str, location: Location) -> Option<usize> {
        let line_start = *self
            .0
            .get(usize::try_from(location.line).ok()?.checked_sub(1)?)?;
        let column = usize::try_from(location.column).ok()?.checked_sub(1)?;
        let rest = text.get(line_start..)?;
        // A token's end may be just past the text's last character.
        let mut ends = rest.char_indices().map(|(i, _)| i).chain([rest.len()]);
        Some(line_start + ends.nth(column)?)
    }
}
