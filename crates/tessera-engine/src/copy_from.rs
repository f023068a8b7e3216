//! DuckDB's `COPY t FROM 'file' [(FORMAT JSON|GEOJSON, ARRAY true, ...)]` (under
//! 'duckdb'): the file's JSON records appended to the existing table `t`, each column
//! of `t` read from the records' key of its name as its type (keys `t` lacks are
//! skipped, keys missing are NULL), as DuckDB's COPY reads JSON.
//!
//! DataFusion's parser knows only `COPY ... TO`, so the text becomes `INSERT INTO t
//! SELECT * FROM __tessera_copy_from('file', FORMAT=JSON, ...)` before parsing
//! ([`prepare`]); before planning, `describe::resolve` swaps the call for the file read
//! by `read_json` with `columns` set to `t`'s ([`table`]). Malformed records fail the
//! statement naming their place, or with `IGNORE_ERRORS true` are NULL rows counted in
//! the session's reject log, as `read_json` reports them.

use std::borrow::Cow;
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::{DataFusionError, Result, TableReference, plan_err};
use datafusion::execution::context::SessionContext;
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArgOperator, Ident, Value,
};
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use crate::datasource::read_json;
use crate::datasource::read_json::options::{ReadJsonOptions, Records};
use crate::dialect::prepare::{Edit, edited};
use crate::functions::type_of::sql_type_name;

/// The table function a COPY's source becomes.
pub(crate) const COPY_FUNCTION: &str = "__tessera_copy_from";

/// `script` with each `COPY t FROM 'file' [(options)]` statement made an INSERT from
/// [`COPY_FUNCTION`] (see the module documentation); anything else unchanged.
pub(crate) fn prepare<'a>(script: &'a str, grammar: &dyn Dialect) -> Cow<'a, str> {
    if !script.to_ascii_lowercase().contains("copy") {
        return Cow::Borrowed(script);
    }
    match edited(script, grammar, edits) {
        Some(out) => Cow::Owned(out),
        None => Cow::Borrowed(script),
    }
}

/// The edits of every COPY FROM statement, in the order they are made.
fn edits(tokens: &[&TokenWithSpan]) -> Vec<(Location, Edit)> {
    let mut out = Vec::new();
    let starts = std::iter::once(0).chain(
        tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| t.token == Token::SemiColon)
            .map(|(i, _)| i + 1),
    );
    for start in starts {
        let end = tokens[start..]
            .iter()
            .position(|t| t.token == Token::SemiColon)
            .map_or(tokens.len(), |p| start + p);
        out.extend(statement_edits(&tokens[start..end]));
    }
    out
}

/// The edits of one statement, if it is `COPY name FROM 'file' [(options)]`.
fn statement_edits(tokens: &[&TokenWithSpan]) -> Vec<(Location, Edit)> {
    let is = |i: usize, keyword| matches!(tokens.get(i).map(|t| &t.token), Some(Token::Word(w)) if w.keyword == keyword && w.quote_style.is_none());
    let Some(from) = (1..tokens.len()).find(|&i| is(i, Keyword::FROM)) else {
        return Vec::new();
    };
    if !is(0, Keyword::COPY) || !is_name(&tokens[1..from]) {
        return Vec::new();
    }
    let Some(file) = tokens.get(from + 1) else {
        return Vec::new();
    };
    if !matches!(file.token, Token::SingleQuotedString(_)) {
        return Vec::new();
    }
    let mut out = vec![
        (tokens[0].span.start, Edit::Replace(4, "INSERT INTO")),
        (
            tokens[from].span.start,
            Edit::Replace(4, "SELECT * FROM __tessera_copy_from("),
        ),
    ];
    match &tokens[from + 2..] {
        [] => out.push((file.span.end, Edit::Insert(")"))),
        [open, options @ .., close]
            if open.token == Token::LParen && close.token == Token::RParen =>
        {
            out.push((open.span.start, Edit::Replace(1, ",")));
            out.extend(option_edits(options));
        }
        _ => return Vec::new(),
    }
    out
}

/// `name value` options as `name=value` arguments (a name alone is `name=TRUE`, as
/// DuckDB reads it).
fn option_edits(options: &[&TokenWithSpan]) -> Vec<(Location, Edit)> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut group: Vec<&TokenWithSpan> = Vec::new();
    let mut finish = |group: &mut Vec<&TokenWithSpan>| {
        match group.as_slice() {
            [name] => out.push((name.span.end, Edit::Insert("=TRUE"))),
            [_, value, ..] => out.push((value.span.start, Edit::Insert("="))),
            [] => {}
        }
        group.clear();
    };
    for token in options {
        match token.token {
            Token::LParen | Token::LBrace | Token::LBracket => depth += 1,
            Token::RParen | Token::RBrace | Token::RBracket => depth = depth.saturating_sub(1),
            Token::Comma if depth == 0 => {
                finish(&mut group);
                continue;
            }
            _ => {}
        }
        group.push(token);
    }
    finish(&mut group);
    out
}

/// Whether `tokens` are a table's name: words joined by dots, nothing between them.
fn is_name(tokens: &[&TokenWithSpan]) -> bool {
    let adjacent = tokens.windows(2).all(|p| p[0].span.end == p[1].span.start);
    adjacent
        && tokens.len() % 2 == 1
        && tokens.iter().enumerate().all(|(i, t)| match i % 2 {
            0 => matches!(t.token, Token::Word(_)),
            _ => t.token == Token::Period,
        })
}

/// The records of a COPY's file (`args`: the file, then its options) as `target`'s
/// columns, in `target`'s order.
pub(crate) async fn table(
    ctx: &SessionContext,
    target: TableReference,
    args: &[FunctionArg],
) -> Result<Arc<dyn TableProvider>> {
    let schema = ctx.table_provider(target.clone()).await?.schema();
    let (args, auto_detect) = read_json_args(args)?;
    let mut options = ReadJsonOptions::parse("read_json", &args)?;
    options.auto_detect = auto_detect;
    options.columns = Some(
        schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), sql_type_name(f)))
            .collect(),
    );
    options.objects = false;
    // A table's row comes from an object's keys: other records are errors, as in DuckDB.
    options.records = Records::Yes;
    let files = options.paths.join(", ");
    // read_json's own errors name the file and line where a record is read; those
    // planning finds (a record that is no object) get the COPY's place.
    read_json::read_table(&ctx.state(), &options)
        .await
        .map_err(|e| match e {
            DataFusionError::Plan(why) => {
                DataFusionError::Plan(format!("COPY {target} FROM {files}: {why}"))
            }
            other => other,
        })
}

/// The COPY's options as `read_json`'s arguments, and `AUTO_DETECT` (set once the
/// columns are, which `read_json` asks for with it): `FORMAT JSON` is the default,
/// `FORMAT GEOJSON` is `geojson=true`, `ARRAY true|false` the array or
/// newline-delimited format, `AUTO_DETECT false` also newline-delimited unless a
/// format is given (as DuckDB's COPY reads then); other options pass on by name.
fn read_json_args(args: &[FunctionArg]) -> Result<(Vec<FunctionArg>, bool)> {
    let Some((file, options)) = args.split_first() else {
        return plan_err!("COPY FROM needs a file");
    };
    let mut out = vec![file.clone()];
    let mut format_given = false;
    let mut auto_detect = true;
    for option in options {
        let Some((name, value)) = read_json::options::named(option) else {
            return plan_err!("COPY FROM: options are `name value` pairs, not {option}");
        };
        let word = match value {
            Expr::Identifier(w) => Some(w.value.to_ascii_lowercase()),
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) => Some(s.to_ascii_lowercase()),
                Value::Boolean(b) => Some(b.to_string()),
                _ => None,
            },
            _ => None,
        };
        let text = |s: &str| Expr::value(Value::SingleQuotedString(s.into()));
        match (name.to_ascii_lowercase().as_str(), word.as_deref()) {
            ("format", Some("json")) => {}
            ("format", Some("geojson")) => {
                out.push(argument("geojson", Expr::value(Value::Boolean(true))))
            }
            ("format", _) => {
                return plan_err!("COPY FROM reads FORMAT JSON or GEOJSON, not {value}");
            }
            ("array", Some(flag @ ("true" | "false"))) => {
                let format = if flag == "true" {
                    "array"
                } else {
                    "newline_delimited"
                };
                out.push(argument("format", text(format)));
                format_given = true;
            }
            ("array", _) => {
                return plan_err!("COPY FROM: ARRAY must be true or false, not {value}");
            }
            ("auto_detect", Some(flag @ ("true" | "false"))) => auto_detect = flag == "true",
            (other, _) => out.push(argument(other, value.clone())),
        }
    }
    if !auto_detect && !format_given {
        out.push(argument(
            "format",
            Expr::value(Value::SingleQuotedString("newline_delimited".into())),
        ));
    }
    Ok((out, auto_detect))
}

/// `name=value`.
fn argument(name: &str, value: Expr) -> FunctionArg {
    FunctionArg::Named {
        name: Ident::new(name),
        arg: FunctionArgExpr::Expr(value),
        operator: FunctionArgOperator::Equals,
    }
}

#[cfg(test)]
mod tests;
