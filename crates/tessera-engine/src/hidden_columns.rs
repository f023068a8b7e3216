//! DuckDB's hidden columns, read by name but not part of `*`: `rowid` of a table (the
//! row's position) and `rowid`, `json`, `root` of `json_each`/`json_tree`.
//!
//! DataFusion has no hidden columns, so before planning a relation gets the ones its
//! SELECT reads (by its name or alias, or unqualified) and no others, and the
//! SELECT's wildcards exclude them again. A table's `rowid` is its row number in scan
//! order (`row_number() OVER () - 1`), which is the position for Tessera's in-memory
//! tables; `json_each_rewrite` adds a walk's hidden columns.

use std::ops::ControlFlow;

use datafusion::common::Result;
use datafusion::sql::sqlparser::ast::{
    self, ExcludeSelectItem, Ident, ObjectName, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, TableFactor, VisitMut, VisitorMut,
    WildcardAdditionalOptions,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::functions::json_each::HIDDEN_COLUMNS;
use crate::output_names::normalized;

/// One reference to a hidden column's name: its qualifier, if any, and the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HiddenRef {
    qualifier: Option<String>,
    name: &'static str,
}

/// The hidden-column names `select` reads, outside nested queries, with those of the
/// enclosing query's ORDER BY (`order`).
pub(crate) fn references(select: &Select, order: &[HiddenRef]) -> Vec<HiddenRef> {
    let mut finder = RefFinder {
        depth: 0,
        found: order.to_vec(),
    };
    let _ = select.clone().visit(&mut finder);
    finder.found
}

/// The hidden-column names the ORDER BY of `query` reads, when its body is a SELECT.
pub(crate) fn order_references(query: &Query) -> Vec<HiddenRef> {
    let (Some(order), SetExpr::Select(_)) = (&query.order_by, query.body.as_ref()) else {
        return Vec::new();
    };
    let mut finder = RefFinder {
        depth: 0,
        found: Vec::new(),
    };
    let _ = order.clone().visit(&mut finder);
    finder.found
}

/// The hidden columns a relation named `qualifier` must answer: those read through its
/// name, and unqualified ones it may answer (`unqualified`).
pub(crate) fn wanted(
    refs: &[HiddenRef],
    qualifier: &str,
    unqualified: impl Fn(&str) -> bool,
) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for r in refs {
        let matches = match &r.qualifier {
            Some(q) => q == qualifier,
            None => unqualified(r.name),
        };
        if matches && !names.contains(&r.name) {
            names.push(r.name);
        }
    }
    names
}

/// Gives a table in FROM (not a function or subquery) a `rowid` column when `refs`
/// read it, returning whether it did; `alias_default` names it when it has no alias.
pub(crate) fn table_rowid(factor: &mut TableFactor, refs: &[HiddenRef]) -> Result<Option<String>> {
    let TableFactor::Table {
        name,
        alias,
        args: None,
        ..
    } = factor
    else {
        return Ok(None);
    };
    let Some(last) = name.0.last().and_then(|p| p.as_ident()) else {
        return Ok(None);
    };
    let qualifier = match alias {
        Some(alias) => normalized(&alias.name),
        None => normalized(last),
    };
    if !wanted(refs, &qualifier, |n| n == "rowid").contains(&"rowid") {
        return Ok(None);
    }
    let alias_text = match alias {
        Some(alias) => ast::TableAlias {
            explicit: false,
            ..alias.clone()
        }
        .to_string(),
        None => last.to_string(),
    };
    let sql = format!(
        "SELECT 1 FROM (SELECT *, CAST(row_number() OVER () AS BIGINT) - 1 AS rowid \
         FROM {name}) AS {alias_text}"
    );
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, &sql)?;
    if let Some(ast::Statement::Query(query)) = statements.pop()
        && let SetExpr::Select(mut select) = *query.body
        && let Some(from) = select.from.pop()
    {
        *factor = from.relation;
        return Ok(Some(qualifier));
    }
    Ok(None)
}

/// Makes the wildcards of `items` leave out the hidden columns added: `added` holds,
/// per relation, its qualifier and the columns it was given.
pub(crate) fn exclude_from_wildcards(items: &mut [SelectItem], added: &[(String, Vec<&str>)]) {
    for item in items {
        let (qualifier, options) = match item {
            SelectItem::Wildcard(options) => (None, options),
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(n), o) => {
                (n.0.last().and_then(|p| p.as_ident()).map(normalized), o)
            }
            _ => continue,
        };
        let mut names: Vec<&str> = Vec::new();
        for (relation, columns) in added {
            if qualifier.as_ref().is_none_or(|q| q == relation) {
                for column in columns {
                    if !names.contains(column) {
                        names.push(column);
                    }
                }
            }
        }
        exclude(options, &names);
    }
}

fn exclude(options: &mut WildcardAdditionalOptions, names: &[&str]) {
    if names.is_empty() {
        return;
    }
    let mut idents: Vec<ObjectName> = match options.opt_exclude.take() {
        Some(ExcludeSelectItem::Single(i)) => vec![i],
        Some(ExcludeSelectItem::Multiple(is)) => is,
        None => Vec::new(),
    };
    idents.extend(names.iter().map(|n| ObjectName::from(vec![Ident::new(*n)])));
    options.opt_exclude = Some(ExcludeSelectItem::Multiple(idents));
}

struct RefFinder {
    depth: usize,
    found: Vec<HiddenRef>,
}

impl VisitorMut for RefFinder {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if self.depth > 0 {
            return ControlFlow::Continue(());
        }
        let (qualifier, name) = match expr {
            ast::Expr::Identifier(name) => (None, &*name),
            ast::Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [.., qualifier, name] => (Some(normalized(qualifier)), name),
                _ => return ControlFlow::Continue(()),
            },
            _ => return ControlFlow::Continue(()),
        };
        let name = normalized(name);
        if let Some(name) = HIDDEN_COLUMNS.iter().copied().find(|c| *c == name) {
            let found = HiddenRef { qualifier, name };
            if !self.found.contains(&found) {
                self.found.push(found);
            }
        }
        ControlFlow::Continue(())
    }
}
