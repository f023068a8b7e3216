//! Filters the NDJSON scan evaluates on each document while parsing it.
//!
//! A comparison of a JSON path's text with constants (`j->>'kind' = 'commit'`,
//! `j->>'$.commit.collection' IN ('a', 'b')`) is decided from the located value before
//! any column is built, so rows that fail it cost no materialization at all. DataFusion
//! offers every filter to the scan; the scan takes those of that shape and leaves the
//! rest to a filter operator above it.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{BinaryExpr, InListExpr};

use super::pushable::{pushable_access, string_literal};
use crate::json::Output;
use crate::json::path::{PathElem, display_path};

/// `path's text ∈ accepted`, where the text follows `output`'s semantics; NULL (an
/// absent path, a JSON null, another type for `Str`) never passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocPredicate {
    /// The JSON path compared.
    pub path: Vec<PathElem>,
    /// How the value becomes text (`->>` or `json_get_str`).
    pub output: Output,
    /// The accepted texts.
    pub accepted: BTreeSet<Vec<u8>>,
}

impl fmt::Display for DocPredicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values: Vec<String> = self
            .accepted
            .iter()
            .map(|v| format!("'{}'", String::from_utf8_lossy(v)))
            .collect();
        write!(f, "{} IN ({})", display_path(&self.path), values.join(", "))
    }
}

/// The predicates of `filter` when all of it can be evaluated per document.
pub fn doc_predicates(filter: &Arc<dyn PhysicalExpr>) -> Option<Vec<DocPredicate>> {
    if let Some(binary) = filter.downcast_ref::<BinaryExpr>() {
        match binary.op() {
            Operator::And => {
                let mut out = doc_predicates(binary.left())?;
                out.extend(doc_predicates(binary.right())?);
                return Some(out);
            }
            // Short IN lists arrive as ORs of equalities on one path.
            Operator::Or => {
                let mut left = doc_predicates(binary.left())?;
                let right = doc_predicates(binary.right())?;
                return match (left.as_mut_slice(), right.as_slice()) {
                    ([l], [r]) if l.path == r.path && l.output == r.output => {
                        l.accepted.extend(r.accepted.iter().cloned());
                        Some(left)
                    }
                    _ => None,
                };
            }
            Operator::Eq => {
                let (access, literal) = match text_literal(binary.right()) {
                    Some(l) => (binary.left(), l),
                    None => (binary.right(), text_literal(binary.left())?),
                };
                return Some(vec![predicate(access, BTreeSet::from([literal]))?]);
            }
            _ => return None,
        }
    }
    let in_list = filter.downcast_ref::<InListExpr>()?;
    if in_list.negated() {
        return None;
    }
    let accepted = in_list
        .list()
        .iter()
        .map(text_literal)
        .collect::<Option<BTreeSet<_>>>()?;
    Some(vec![predicate(in_list.expr(), accepted)?])
}

fn predicate(access: &Arc<dyn PhysicalExpr>, accepted: BTreeSet<Vec<u8>>) -> Option<DocPredicate> {
    let (path, output) = pushable_access(access)?;
    matches!(output, Output::Text | Output::Str).then_some(DocPredicate {
        path,
        output,
        accepted,
    })
}

fn text_literal(expr: &Arc<dyn PhysicalExpr>) -> Option<Vec<u8>> {
    string_literal(expr).map(|s| s.as_bytes().to_vec())
}
