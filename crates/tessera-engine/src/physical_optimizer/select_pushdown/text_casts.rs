//! Numeric casts of a scan's text accesses moved into the scan.
//!
//! `(j->>'n')::DOUBLE` plans as the scan's access `j->>'n'` and a cast above it. A store
//! writes the numbers it returns anew (`1.50` as `1.5`), so the text of a number it
//! returns is not the document's, and a scan whose output is that text must read the
//! object itself. When every expression of the projection (and filter) above the scan
//! reads the access only through one numeric cast, the cast moves into the scan, whose
//! output is then the number: what a store writes anew is read as the same number.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{CastExpr, Column, TryCastExpr};
use datafusion::physical_expr::projection::{ProjectionExpr, ProjectionExprs};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::projection::ProjectionExec;

use super::condition::{Read, read_of};
use crate::access::pushable::cast_parts;
use crate::datasource::ndjson::source::NdjsonSource;
use crate::json::Output;

/// A numeric cast of a column: whether it is a `TRY_CAST`, and the type.
#[derive(Debug, Clone, PartialEq)]
struct NumericCast {
    try_cast: bool,
    to: DataType,
}

impl NumericCast {
    /// `expr` as a numeric cast of column `column`.
    fn of(expr: &Arc<dyn PhysicalExpr>, column: usize) -> Option<Self> {
        let (operand, to, try_cast) = cast_parts(expr)?;
        let numeric = matches!(to, DataType::Float64 | DataType::Int64);
        let of_column = operand
            .downcast_ref::<Column>()
            .is_some_and(|c| c.index() == column);
        (numeric && of_column).then(|| Self {
            try_cast,
            to: to.clone(),
        })
    }

    fn apply(&self, expr: Arc<dyn PhysicalExpr>) -> Arc<dyn PhysicalExpr> {
        match self.try_cast {
            false => Arc::new(CastExpr::new(expr, self.to.clone(), None)),
            true => Arc::new(TryCastExpr::new(expr, self.to.clone())),
        }
    }
}

/// `projection` (over an optional filter) over an NDJSON scan that asks S3 Select, with
/// the numeric casts of the scan's text accesses moved into the scan; `None` when none
/// moves.
pub(super) fn moved_into_scan(
    projection: &ProjectionExec,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let input = projection.input();
    // The filter's own projection picks scan columns: the projection's column `k` is
    // scan column `picked[k]`.
    let (filter, scan, picked) = match input.downcast_ref::<FilterExec>() {
        Some(filter) => (
            Some(filter),
            filter.input(),
            filter.projection().as_ref().map(|p| p.to_vec()),
        ),
        None => (None, input, None),
    };
    let Some((config, source)) = super::ndjson_scan(scan) else {
        return Ok(None);
    };
    let Some(outputs) = datafusion::datasource::physical_plan::FileSource::projection(source)
    else {
        return Ok(None);
    };
    if !source.asks_select() {
        return Ok(None);
    }
    let to_scan = |k: usize| picked.as_ref().map_or(Some(k), |p| p.get(k).copied());
    let mut above = projection
        .expr()
        .iter()
        .map(|p| renumbered(&p.expr, &to_scan))
        .collect::<Result<Vec<_>>>()?;
    above.extend(filter.map(|f| Arc::clone(f.predicate())));
    let casts: Vec<(usize, NumericCast)> = (0..outputs.iter().count())
        .filter(|&i| is_text_access(outputs, i))
        .filter_map(|i| Some((i, only_cast(&above, i)?)))
        .collect();
    if casts.is_empty() {
        return Ok(None);
    }
    let scan = typed_scan(config, source, outputs, &casts);
    let input: Arc<dyn ExecutionPlan> = match filter {
        Some(filter) => Arc::new(
            FilterExecBuilder::from(filter)
                .with_input(scan)
                .with_predicate(uncast(filter.predicate(), &casts)?)
                .build()?,
        ),
        None => scan,
    };
    // The same casts, numbered as the projection's columns.
    let width = projection.input().schema().fields().len();
    let casts_above: Vec<(usize, NumericCast)> = (0..width)
        .filter_map(|k| {
            let i = to_scan(k)?;
            let (_, cast) = casts.iter().find(|(at, _)| *at == i)?;
            Some((k, cast.clone()))
        })
        .collect();
    let exprs = projection
        .expr()
        .iter()
        .map(|p| {
            Ok(ProjectionExpr::new(
                uncast(&p.expr, &casts_above)?,
                p.alias.clone(),
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(Arc::new(ProjectionExec::try_new(exprs, input)?)))
}

/// `expr` with each column `k` numbered `to_scan(k)` (unknown ones kept).
fn renumbered(
    expr: &Arc<dyn PhysicalExpr>,
    to_scan: &impl Fn(usize) -> Option<usize>,
) -> Result<Arc<dyn PhysicalExpr>> {
    Arc::clone(expr)
        .transform_up(|node| {
            Ok(match node.downcast_ref::<Column>() {
                Some(c) => match to_scan(c.index()) {
                    Some(i) if i != c.index() => {
                        Transformed::yes(Arc::new(Column::new(c.name(), i)) as Arc<dyn PhysicalExpr>)
                    }
                    _ => Transformed::no(node),
                },
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
}

/// Whether scan output `i` is a `->>` access.
fn is_text_access(outputs: &ProjectionExprs, i: usize) -> bool {
    let column: Arc<dyn PhysicalExpr> = Arc::new(Column::new("", i));
    matches!(
        read_of(&column, outputs),
        Some(Read::Access(_, Output::Text))
    )
}

/// The one numeric cast every read of column `i` in `exprs` goes through, if every
/// read does.
fn only_cast(exprs: &[Arc<dyn PhysicalExpr>], i: usize) -> Option<NumericCast> {
    let mut found: Option<NumericCast> = None;
    let mut bare = false;
    for expr in exprs {
        let _ = expr.apply(|node| {
            if let Some(cast) = NumericCast::of(node, i) {
                bare |= found.as_ref().is_some_and(|f| *f != cast);
                found = Some(cast);
                return Ok(TreeNodeRecursion::Jump);
            }
            bare |= node
                .downcast_ref::<Column>()
                .is_some_and(|c| c.index() == i);
            Ok(TreeNodeRecursion::Continue)
        });
    }
    found.filter(|_| !bare)
}

/// The scan with output `i` cast as `casts` says.
fn typed_scan(
    config: &FileScanConfig,
    source: &NdjsonSource,
    outputs: &ProjectionExprs,
    casts: &[(usize, NumericCast)],
) -> Arc<dyn ExecutionPlan> {
    let exprs =
        outputs
            .iter()
            .enumerate()
            .map(|(i, p)| match casts.iter().find(|(at, _)| *at == i) {
                Some((_, cast)) => {
                    ProjectionExpr::new(cast.apply(Arc::clone(&p.expr)), p.alias.clone())
                }
                None => p.clone(),
            });
    let source = source.with_projection(ProjectionExprs::new(exprs));
    let config = FileScanConfigBuilder::from(config.clone())
        .with_source(Arc::new(source))
        .build();
    DataSourceExec::from_data_source(config)
}

/// `expr` with the casts the scan now computes replaced by its typed columns.
fn uncast(
    expr: &Arc<dyn PhysicalExpr>,
    casts: &[(usize, NumericCast)],
) -> Result<Arc<dyn PhysicalExpr>> {
    Arc::clone(expr)
        .transform_down(|node| {
            let moved = casts
                .iter()
                .any(|(i, cast)| NumericCast::of(&node, *i).as_ref() == Some(cast));
            // The cast's operand is the column, which the scan now outputs typed.
            Ok(match cast_parts(&node).filter(|_| moved) {
                Some((column, _, _)) => {
                    Transformed::new(Arc::clone(column), true, TreeNodeRecursion::Jump)
                }
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
}
