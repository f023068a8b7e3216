//! DuckDB's `(DESCRIBE ...)`, `(SUMMARIZE ...)` and `SUMMARIZE ...`, which sqlparser
//! does not read, rewritten before parsing into queries over the table functions of
//! [`super`]: `(DESCRIBE SELECT 1)` becomes `(SELECT * FROM
//! __tessera_describe((SELECT 1)))`, `SUMMARIZE t` becomes `SELECT * FROM
//! __tessera_summarize(t)`.

use std::borrow::Cow;

use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use crate::dialect::prepare::{Edit, edited};

/// The two statements, by what they become.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Describe,
    Summarize,
}

/// What follows the keyword.
enum Described {
    /// A table's name (`t`, `s.t`): the call takes the name as a string, so that the
    /// table's own nullability and keys show.
    Table,
    /// A query (`SELECT`, `FROM`, `WITH`, `VALUES`, or a parenthesized one).
    Query,
    /// Anything else a FROM clause takes (`'file.json'`, `read_json(...)`).
    Relation,
}

/// `script` with each parenthesized DESCRIBE or SUMMARIZE, and each SUMMARIZE
/// statement, made a query over the matching table function (see the module
/// documentation); anything else, and text that does not tokenize, unchanged.
pub(crate) fn prepare<'a>(script: &'a str, grammar: &dyn Dialect) -> Cow<'a, str> {
    let lower = script.to_ascii_lowercase();
    if !lower.contains("desc") && !lower.contains("summarize") {
        return Cow::Borrowed(script);
    }
    match edited(script, grammar, edits) {
        Some(out) => Cow::Owned(out),
        None => Cow::Borrowed(script),
    }
}

/// The edits of every DESCRIBE or SUMMARIZE to rewrite, in the order they are made.
fn edits(tokens: &[&TokenWithSpan]) -> Vec<(Location, Edit)> {
    let mut out = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let Some((kind, length_bytes)) = kind_of(&token.token) else {
            continue;
        };
        let previous = i.checked_sub(1).map(|p| &tokens[p].token);
        let end = match previous {
            Some(Token::LParen) => closing(&tokens[i..]),
            None | Some(Token::SemiColon) if kind == Kind::Summarize => Some(
                tokens[i..]
                    .iter()
                    .position(|t| t.token == Token::SemiColon)
                    .unwrap_or(tokens.len() - i),
            ),
            _ => None,
        };
        let Some(rest) = end.map(|end| &tokens[i + 1..i + end]) else {
            continue;
        };
        let (Some(first), Some(last)) = (rest.first(), rest.last()) else {
            continue;
        };
        if !balanced(rest) {
            continue;
        }
        let (open, close) = match described(rest) {
            Described::Table => ("'", "')"),
            Described::Query => ("(", "))"),
            Described::Relation => ("(SELECT * FROM ", "))"),
        };
        out.push((token.span.start, Edit::Insert(kind.select_from())));
        out.push((token.span.start, Edit::Replace(length_bytes, "(")));
        out.push((first.span.start, Edit::Insert(open)));
        out.push((last.span.end, Edit::Insert(close)));
    }
    out
}

impl Kind {
    /// `SELECT * FROM ` and the table function's name.
    fn select_from(self) -> &'static str {
        match self {
            Kind::Describe => "SELECT * FROM __tessera_describe",
            Kind::Summarize => "SELECT * FROM __tessera_summarize",
        }
    }
}

/// The statement an unquoted `DESCRIBE`/`SUMMARIZE` starts, and the keyword's length.
fn kind_of(token: &Token) -> Option<(Kind, usize)> {
    let Token::Word(word) = token else {
        return None;
    };
    if word.quote_style.is_some() {
        return None;
    }
    let kind = match word.value.to_ascii_lowercase().as_str() {
        "describe" | "desc" => Kind::Describe,
        "summarize" => Kind::Summarize,
        _ => return None,
    };
    Some((kind, word.value.len()))
}

/// Whether every parenthesis of `tokens` is closed among them (a rewrite of text that
/// is not would close one, and a second preparation would rewrite more).
fn balanced(tokens: &[&TokenWithSpan]) -> bool {
    let mut depth = 0usize;
    for token in tokens {
        match token.token {
            Token::LParen => depth += 1,
            Token::RParen => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    depth == 0
}

/// The index, in `tokens` (which start just inside a parenthesis), of the `)` closing
/// it.
fn closing(tokens: &[&TokenWithSpan]) -> Option<usize> {
    let mut depth = 1usize;
    for (i, token) in tokens.iter().enumerate() {
        match token.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// What the tokens after the keyword describe.
fn described(rest: &[&TokenWithSpan]) -> Described {
    // The name goes in a string as written; one holding a `'` is read as a relation.
    let adjacent = rest.windows(2).all(|p| p[0].span.end == p[1].span.start);
    let name = adjacent
        && rest.len() % 2 == 1
        && rest.iter().enumerate().all(|(i, t)| match i % 2 {
            0 => matches!(&t.token, Token::Word(w) if !w.value.contains('\'')),
            _ => t.token == Token::Period,
        });
    if name {
        return Described::Table;
    }
    let query = [
        Keyword::SELECT,
        Keyword::FROM,
        Keyword::WITH,
        Keyword::VALUES,
    ];
    match &rest[0].token {
        Token::LParen => Described::Query,
        Token::Word(w) if w.quote_style.is_none() && query.contains(&w.keyword) => Described::Query,
        _ => Described::Relation,
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::DuckDbDialect;

    use super::*;
    use crate::describe::{DESCRIBE_FUNCTION, SUMMARIZE_FUNCTION};

    fn prepared(sql: &str) -> String {
        prepare(sql, &DuckDbDialect {}).into_owned()
    }

    #[test]
    fn calls_name_the_table_functions() {
        let prefix = |kind: Kind| kind.select_from().strip_prefix("SELECT * FROM ");
        assert_eq!(prefix(Kind::Describe), Some(DESCRIBE_FUNCTION));
        assert_eq!(prefix(Kind::Summarize), Some(SUMMARIZE_FUNCTION));
    }

    #[test]
    fn parenthesized_describes_become_calls() {
        assert_eq!(
            prepared("SELECT column_name FROM (DESCRIBE SELECT 42 AS a);"),
            "SELECT column_name FROM (SELECT * FROM __tessera_describe( (SELECT 42 AS a)));"
        );
        assert_eq!(
            prepared("FROM (describe s.t) x"),
            "FROM (SELECT * FROM __tessera_describe( 's.t')) x"
        );
        assert_eq!(
            prepared("FROM (DESCRIBE read_json('a.json', x=1) -- c\n)"),
            "FROM (SELECT * FROM __tessera_describe( (SELECT * FROM read_json('a.json', x=1))) -- c\n)"
        );
    }

    #[test]
    fn summarize_statements_become_queries() {
        assert_eq!(
            prepared("summarize test; SUMMARIZE SELECT 1 -- end"),
            "SELECT * FROM __tessera_summarize( 'test'); SELECT * FROM __tessera_summarize( (SELECT 1)) -- end"
        );
        assert_eq!(
            prepared("SELECT * FROM (SUMMARIZE 'a.json')"),
            "SELECT * FROM (SELECT * FROM __tessera_summarize( (SELECT * FROM 'a.json')))"
        );
    }

    #[test]
    fn other_text_is_left_alone() {
        for sql in [
            "DESCRIBE t",
            "DESCRIBE SELECT 1",
            "SELECT 'summarize x', \"describe\" FROM t",
            "SELECT describe FROM t",
            "SELECT (DESCRIBE)",
            "SELECT * FROM t ORDER BY (x) DESC",
            "SUMMARIZE t (",
            "SELECT * FROM (DESCRIBE t",
            "SELECT 'unterminated (DESCRIBE t)",
        ] {
            assert_eq!(prepared(sql), sql);
        }
    }

    /// Scripts pieced together from fragments: preparing never fails and is
    /// idempotent.
    #[test]
    fn generated_scripts_are_rewritten_once() {
        const FRAGMENTS: [&str; 16] = [
            "(",
            ")",
            "DESCRIBE",
            "summarize",
            " t",
            ".",
            "SELECT",
            " 1",
            ";",
            "'(DESCRIBE'",
            "-- x\n",
            "é",
            " FROM ",
            "read_json('a')",
            ",",
            "\"SUMMARIZE\"",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..20_000 {
            let mut script = String::new();
            for _ in 0..(state % 10) {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                script.push_str(FRAGMENTS[(state >> 60) as usize]);
                script.push(' ');
            }
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let once = prepared(&script);
            assert_eq!(prepared(&once), once, "{script:?}");
        }
    }
}
