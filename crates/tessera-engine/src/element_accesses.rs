//! Logical optimizer rule: what a query reads of the values of a lateral `json_each`'s
//! rows is computed below its UNNEST, as one list per document and access
//! ([`JsonEachValues`]), and the UNNEST repeats those lists instead of whole rows.
//!
//! `FROM t, json_each(t.j, '$.commits') AS e GROUP BY e.value->'author'->>'name'` plans
//! as an UNNEST of the entries (key, value text, type, paths) of each document, and an
//! access parsing each row's value text above it. When the UNNEST's rows are read only
//! through such accesses (or not at all, as by `count(*)`), each access becomes a list
//! computed where the entries were, which the scan then computes itself: the NDJSON
//! reader from the array's text, a table from the typed columns of a path it shreds as
//! a list of objects, with no value written as text (JSON Tiles, SIGMOD 2021, §4.3: the
//! elements of a long array are read like a relation of their own). It applies to
//! queries reading one thing of the rows (or nothing): each list is computed by a walk
//! of its own where no typed column answers it, so several accesses would walk each
//! value several times.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, ExprSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    Aggregate, Expr, LogicalPlan, LogicalPlanBuilder, Projection, ScalarUDF, Unnest,
};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};

use crate::functions::access_output;
use crate::functions::json_each::{JsonEachValues, JsonEntries};
use crate::json::Output;

/// Name prefix of the lists this rule unnests.
const ELEMENT_PREFIX: &str = "__tessera_element";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct ElementAccesses;

impl OptimizerRule for ElementAccesses {
    fn name(&self) -> &str {
        "tessera_element_accesses"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let names = || config.alias_generator().next(ELEMENT_PREFIX);
        let rewritten = match &plan {
            LogicalPlan::Projection(projection) => match projection.input.as_ref() {
                LogicalPlan::Unnest(unnest) => over_projection(projection, unnest, names)?,
                _ => None,
            },
            LogicalPlan::Aggregate(aggregate) => match aggregate.input.as_ref() {
                LogicalPlan::Unnest(unnest) => over_aggregate(aggregate, unnest, names)?,
                _ => None,
            },
            _ => None,
        };
        Ok(match rewritten {
            Some(plan) => Transformed::yes(plan),
            None => Transformed::no(plan),
        })
    }
}

/// The entries column an UNNEST unnests, when it is the UNNEST of a lateral
/// `json_each`/`json_tree` (one list of [`JsonEntries`] rows, one level deep).
fn entries_column(unnest: &Unnest) -> Option<&Column> {
    let [column] = unnest.exec_columns.as_slice() else {
        return None;
    };
    let [(_, list)] = unnest.list_type_columns.as_slice() else {
        return None;
    };
    if list.depth != 1 || !unnest.struct_type_columns.is_empty() {
        return None;
    }
    if !unnest.options.recursions.is_empty() {
        return None;
    }
    let field = unnest.input.schema().field_from_column(column).ok()?;
    (*field.data_type() == JsonEntries::list_type()).then_some(column)
}

/// One access to the rows' values: its output (`None`: rows alone) and path arguments.
type Access = (Option<Output>, Vec<Expr>);

/// The accesses found above one UNNEST and the names of their lists.
struct Found<F> {
    entries: Column,
    accesses: Vec<(Access, String)>,
    names: F,
}

impl<F: FnMut() -> String> Found<F> {
    /// Nothing found yet above `unnest`, when it is the UNNEST of a lateral `json_each`.
    fn above(unnest: &Unnest, names: F) -> Option<Self> {
        Some(Self {
            entries: entries_column(unnest)?.clone(),
            accesses: Vec::new(),
            names,
        })
    }

    /// `expr` with every access to the rows' values replaced by its list's column; `None`
    /// when `expr` still reads the rows otherwise (their key, type, paths).
    fn replace(&mut self, expr: Expr) -> Result<Option<Expr>> {
        let replaced = expr
            .transform_down(|e| {
                let Some(access) = value_access(&e, &self.entries) else {
                    return Ok(Transformed::no(e));
                };
                let name = self.name_of(access);
                Ok(Transformed::new(
                    Expr::Column(Column::new_unqualified(name)),
                    true,
                    TreeNodeRecursion::Jump,
                ))
            })?
            .data;
        let reads_rows = replaced.column_refs().contains(&self.entries);
        Ok((!reads_rows).then_some(replaced))
    }

    fn name_of(&mut self, access: Access) -> String {
        if let Some((_, name)) = self.accesses.iter().find(|(a, _)| *a == access) {
            return name.clone();
        }
        let name = (self.names)();
        self.accesses.push((access, name.clone()));
        name
    }

    /// `unnest` over the lists of the accesses found (of rows alone when none was)
    /// instead of the entries, the other columns passed through.
    fn unnest(mut self, unnest: &Unnest) -> Result<LogicalPlan> {
        if self.accesses.is_empty() {
            let name = (self.names)();
            self.accesses.push(((None, Vec::new()), name));
        }
        let schema = unnest.input.schema();
        let mut below: Vec<Expr> = schema
            .columns()
            .into_iter()
            .filter(|c| *c != self.entries)
            .map(Expr::Column)
            .collect();
        let mut lists = Vec::with_capacity(self.accesses.len());
        for ((output, path), name) in self.accesses {
            let function = Arc::new(ScalarUDF::from(JsonEachValues::new(output)));
            let mut args = vec![Expr::Column(self.entries.clone())];
            args.extend(path);
            below.push(Expr::ScalarFunction(ScalarFunction::new_udf(function, args)).alias(&name));
            lists.push(Column::from_name(name));
        }
        LogicalPlanBuilder::from(Arc::unwrap_or_clone(Arc::clone(&unnest.input)))
            .project(below)?
            .unnest_columns_with_options(lists, unnest.options.clone())?
            .build()
    }
}

/// `access(get_field(entries, 'value'), path...)` for a JSON access function with a
/// constant path, or `get_field(entries, 'value')` itself (the value's JSON text).
fn value_access(expr: &Expr, entries: &Column) -> Option<Access> {
    if is_value(expr, entries) {
        return Some((Some(Output::Json), Vec::new()));
    }
    let Expr::ScalarFunction(f) = expr else {
        return None;
    };
    let output = access_output(&f.func)?;
    let (value, path) = f.args.split_first()?;
    let constant = path.iter().all(|a| {
        matches!(
            a,
            Expr::Literal(ScalarValue::Utf8(Some(_)) | ScalarValue::Int64(Some(_)), _)
        )
    });
    (constant && is_value(value, entries)).then(|| (Some(output), path.to_vec()))
}

/// Whether `expr` is `get_field(entries, 'value')`.
fn is_value(expr: &Expr, entries: &Column) -> bool {
    let Expr::ScalarFunction(f) = expr else {
        return false;
    };
    f.func.name() == "get_field"
        && matches!(f.args.as_slice(), [Expr::Column(c), Expr::Literal(ScalarValue::Utf8(Some(name)), _)]
            if c == entries && name == "value")
}

fn over_projection(
    projection: &Projection,
    unnest: &Unnest,
    names: impl FnMut() -> String,
) -> Result<Option<LogicalPlan>> {
    let Some(mut found) = Found::above(unnest, names) else {
        return Ok(None);
    };
    let preserver = NamePreserver::new_for_projection();
    let mut exprs = Vec::with_capacity(projection.expr.len());
    for expr in &projection.expr {
        let name = preserver.save(expr);
        let Some(replaced) = found.replace(expr.clone())? else {
            return Ok(None);
        };
        exprs.push(name.restore(replaced));
    }
    // Each list is computed by a walk of its own wherever no typed column answers it
    // (the raw file, a value that is no shredded list): one access gains, several
    // would walk each value once per access, where the rows walk it once for all.
    if found.accesses.len() > 1 {
        return Ok(None);
    }
    let input = found.unnest(unnest)?;
    let projection = Projection::try_new(exprs, Arc::new(input))?;
    Ok(Some(LogicalPlan::Projection(projection)))
}

/// An aggregate reading nothing of the rows (`count(*)`) needs them counted only.
fn over_aggregate(
    aggregate: &Aggregate,
    unnest: &Unnest,
    names: impl FnMut() -> String,
) -> Result<Option<LogicalPlan>> {
    let Some(found) = Found::above(unnest, names) else {
        return Ok(None);
    };
    let reads_rows = aggregate
        .group_expr
        .iter()
        .chain(&aggregate.aggr_expr)
        .any(|e| e.column_refs().contains(&found.entries));
    if reads_rows {
        return Ok(None);
    }
    let input = found.unnest(unnest)?;
    let aggregate = Aggregate::try_new(
        Arc::new(input),
        aggregate.group_expr.clone(),
        aggregate.aggr_expr.clone(),
    )?;
    Ok(Some(LogicalPlan::Aggregate(aggregate)))
}
