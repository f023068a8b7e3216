//! The chain of projections, filters and repartitions between an operator and the
//! NDJSON scan asking S3 Select that feeds it, as the rules that hand a scan a
//! condition known only at run time walk it: `bloom_join` (the build side's
//! keys), `select_top_k` (a sampled top-K threshold) and `select_aggregation` (the
//! objects the store aggregated). Each finds what the operator's expressions read at
//! the scan, and rebuilds the chain over a scan that knows; all run only where the plan
//! stays in this process. The last two sample the chain first ([`over_sample`]).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::physical_plan::{
    FileGroup, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, replace_children_if_necessary};

use super::select_pushdown::ndjson_scan;
use crate::access::pushable::{cast_parts, pushable_access};
use crate::datasource::ndjson::source::NdjsonSource;
use crate::json::Output;
use crate::json::path::PathElem;
use crate::options::TesseraOptions;

/// A node as a rule rewrites it, or `None` when the rule leaves it.
pub(super) type NodeRewrite<'a> =
    &'a dyn Fn(&Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>>;

/// `plan` with each node `rewrite` rewrites (bottom up) rewritten, when the session's
/// options say the rule is `on` and no cluster runs the plan: the condition a rule
/// hands its scan is shared within this process, and a cluster's plan crosses
/// processes.
pub(super) fn rewrite_in_process(
    plan: Arc<dyn ExecutionPlan>,
    config: &ConfigOptions,
    on: fn(&TesseraOptions) -> bool,
    rewrite: NodeRewrite,
) -> Result<Arc<dyn ExecutionPlan>> {
    let wanted = config
        .extensions
        .get::<TesseraOptions>()
        .is_some_and(|o| on(o) && o.cluster.trim().is_empty());
    if !wanted {
        return Ok(plan);
    }
    plan.transform_up(|node| {
        Ok(match rewrite(&node)? {
            Some(rewritten) => Transformed::yes(rewritten),
            None => Transformed::no(node),
        })
    })
    .map(|t| t.data)
}

/// What a rule reads an expression at the scan as: the JSON path it accesses, if it is
/// the kind of access the rule pushes.
pub(super) type ScanRead<'a> = &'a dyn Fn(&Arc<dyn PhysicalExpr>) -> Option<Vec<PathElem>>;

/// The JSON path `read` finds in `expr` (over `plan`'s output) when `plan` is a chain
/// of projections, filters and repartitions over an NDJSON scan asking S3 Select that
/// `open` accepts, and `expr` names a column the scan computes.
pub(super) fn scan_path(
    plan: &Arc<dyn ExecutionPlan>,
    expr: &Arc<dyn PhysicalExpr>,
    open: &dyn Fn(&NdjsonSource) -> bool,
    read: ScanRead,
) -> Option<Vec<PathElem>> {
    if let Some((_, source)) = ndjson_scan(plan) {
        if !source.asks_select() || !open(source) {
            return None;
        }
        let projection = FileSource::projection(source)?;
        let access = match expr.downcast_ref::<Column>() {
            Some(column) => &projection.iter().nth(column.index())?.expr,
            None => expr,
        };
        return read(access);
    }
    let (input, expr) = below(plan, expr)?;
    scan_path(input, &expr, open, read)
}

/// A plan's input, and an expression over that input's rows.
type Below<'a> = (&'a Arc<dyn ExecutionPlan>, Arc<dyn PhysicalExpr>);

/// The input of the projection, filter or repartition `plan` and what `expr` (over
/// `plan`'s output) is over that input.
fn below<'a>(plan: &'a Arc<dyn ExecutionPlan>, expr: &Arc<dyn PhysicalExpr>) -> Option<Below<'a>> {
    if let Some(projection) = plan.downcast_ref::<ProjectionExec>() {
        let column = expr.downcast_ref::<Column>()?;
        let computed = &projection.expr().get(column.index())?.expr;
        return Some((projection.input(), Arc::clone(computed)));
    }
    if let Some(filter) = plan.downcast_ref::<FilterExec>() {
        let expr = match (filter.projection(), expr.downcast_ref::<Column>()) {
            (Some(kept), Some(column)) => {
                let index = *kept.get(column.index())?;
                let name = filter.input().schema().field(index).name().clone();
                Arc::new(Column::new(&name, index)) as Arc<dyn PhysicalExpr>
            }
            (Some(_), None) => return None,
            (None, _) => Arc::clone(expr),
        };
        return Some((filter.input(), expr));
    }
    // A repartition moves rows between partitions; it keeps and drops none.
    let repartition = plan.downcast_ref::<RepartitionExec>()?;
    Some((repartition.input(), Arc::clone(expr)))
}

/// The path of `expr` when it reads an integer of the document: `json_get_int`, or a
/// cast of a text access to `BIGINT`.
pub(super) fn integer_access(expr: &Arc<dyn PhysicalExpr>) -> Option<Vec<PathElem>> {
    number_access(expr, Output::Int, &DataType::Int64)
}

/// The path of `expr` when it reads a number of the document: `json_get_int`,
/// `json_get_float`, or a cast of a text access to `BIGINT` or `DOUBLE`.
pub(super) fn numeric_access(expr: &Arc<dyn PhysicalExpr>) -> Option<Vec<PathElem>> {
    integer_access(expr).or_else(|| number_access(expr, Output::Float, &DataType::Float64))
}

fn number_access(
    expr: &Arc<dyn PhysicalExpr>,
    output: Output,
    cast_to: &DataType,
) -> Option<Vec<PathElem>> {
    if let Some((path, read)) = pushable_access(expr)
        && read == output
    {
        return Some(path);
    }
    let (operand, to, _) = cast_parts(expr)?;
    match pushable_access(operand)? {
        (path, Output::Text | Output::Str) if to == cast_to => Some(path),
        _ => None,
    }
}

/// How a rule changes the scan at the bottom of a chain: its configuration, given its
/// source.
pub(super) type ScanChange<'a> =
    &'a dyn Fn(FileScanConfigBuilder, &NdjsonSource) -> FileScanConfigBuilder;

/// `plan` (a chain [`scan_path`] walked) over its scan as `change` makes it.
pub(super) fn with_scan(
    plan: &Arc<dyn ExecutionPlan>,
    change: ScanChange,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if let Some((config, source)) = ndjson_scan(plan) {
        let config = change(FileScanConfigBuilder::from(config.clone()), source).build();
        return Ok(Some(DataSourceExec::from_data_source(config)));
    }
    let Some(input) = plan.children().first().copied() else {
        return Ok(None);
    };
    match with_scan(input, change)? {
        Some(input) => Ok(Some(replace_children_if_necessary(
            Arc::clone(plan),
            vec![input],
        )?)),
        None => Ok(None),
    }
}

/// Bytes per document assumed when estimating a scan's documents from its bytes.
const DOCUMENT_BYTES: u64 = 200;

/// `input` (a chain over a scan asking S3 Select) over the first documents of the
/// scan's first object that the store's conditions keep: `rows(N)` of them, N the
/// scan's documents estimated from its bytes.
pub(super) fn over_sample(
    input: &Arc<dyn ExecutionPlan>,
    rows: &dyn Fn(u64) -> u64,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some((config, _)) = scan_of(input) else {
        return Ok(None);
    };
    let files = || config.file_groups.iter().flat_map(|g| g.files());
    let Some(first) = files().next().cloned() else {
        return Ok(None);
    };
    let bytes: u64 = files().map(|f| f.object_meta.size).sum();
    let rows = rows((bytes / DOCUMENT_BYTES).max(1));
    let sampling = |config: FileScanConfigBuilder, source: &NdjsonSource| {
        config
            .with_file_groups(vec![FileGroup::new(vec![first.clone()])])
            // An object the store cannot answer is read here, as far as the sample goes.
            .with_limit(Some(rows as usize))
            .with_source(Arc::new(source.with_sample_rows(rows)))
    };
    with_scan(input, &sampling)
}

/// The scan at the bottom of the chain `plan`.
pub(super) fn scan_of(plan: &Arc<dyn ExecutionPlan>) -> Option<(&FileScanConfig, &NdjsonSource)> {
    if let Some(scan) = ndjson_scan(plan) {
        return Some(scan);
    }
    scan_of(plan.children().first()?)
}
