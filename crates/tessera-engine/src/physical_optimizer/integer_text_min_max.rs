//! `MIN`/`MAX` of the text of an integer path are computed on the integers.
//!
//! `min(j->>'time_us')` compares texts, so it needs every value rendered and compared
//! byte by byte, where the file holds the integers typed. When the statistics of every
//! file the scan reads show that the path holds only integers (no value in the Variant
//! binary), none negative, all with the same number of digits, their texts sort as the
//! integers do, so the minimum text is the text of the minimum integer. This physical
//! rule then aggregates `CAST(... AS BIGINT)` (which the scan reads from the typed
//! column) and renders the one result per group. The statistics are those of the very
//! files the plan scans, so the condition holds for every row it reads.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::aggregate::{AggregateExprBuilder, AggregateFunctionExpr};
use datafusion::physical_expr::expressions::{CastExpr, Column};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, replace_children_if_necessary};
use tessera_tiles::summary::{FileSummary, LeafType, StatValue};

use super::aggregate_rewrite::{rewrite_aggregates, scanned_summaries, tessera_scan};

/// The physical optimizer rule; it runs before [`super::CastPushdown`], which then has
/// the scan read the integers.
#[derive(Debug, Default)]
pub struct IntegerTextMinMax;

impl PhysicalOptimizerRule for IntegerTextMinMax {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        rewrite_aggregates(plan, on_integers)
    }

    fn name(&self) -> &str {
        "tessera_integer_text_min_max"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `aggregate` (a final or single phase) with its `MIN`/`MAX` of integer texts computed
/// on the integers and rendered above it, when there are any.
fn on_integers(aggregate: &AggregateExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    match aggregate.mode() {
        AggregateMode::Single | AggregateMode::SinglePartitioned => {
            rewrite(aggregate, aggregate, Vec::new())
        }
        AggregateMode::Final | AggregateMode::FinalPartitioned => {
            let mut between: Vec<Arc<dyn ExecutionPlan>> = Vec::new();
            let mut node = Arc::clone(aggregate.input());
            while node.downcast_ref::<RepartitionExec>().is_some()
                || node.downcast_ref::<CoalescePartitionsExec>().is_some()
            {
                let child = Arc::clone(node.children()[0]);
                between.push(node);
                node = child;
            }
            match node.downcast_ref::<AggregateExec>() {
                Some(partial) if *partial.mode() == AggregateMode::Partial => {
                    rewrite(aggregate, partial, between)
                }
                _ => Ok(None),
            }
        }
        AggregateMode::Partial | AggregateMode::PartialReduce => Ok(None),
    }
}

/// The rewrite of `top` (final or single) over `between` (repartitions, top first) over
/// `partial` (the phase reading the scan; `top` itself when single).
fn rewrite(
    top: &AggregateExec,
    partial: &AggregateExec,
    between: Vec<Arc<dyn ExecutionPlan>>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let scan = partial.input();
    let Some((config, source)) = tessera_scan(scan) else {
        return Ok(None);
    };
    let Some(summaries) = scanned_summaries(config) else {
        return Ok(None);
    };
    let text_paths = source.text_paths();
    let schema = scan.schema();
    let mut changed = Vec::new();
    let mut functions: Vec<Arc<AggregateFunctionExpr>> = Vec::new();
    for (n, function) in partial.aggr_expr().iter().enumerate() {
        let name = function.fun().name();
        let args = function.expressions();
        let column = match (name, args.as_slice()) {
            ("min" | "max", [arg]) => arg.downcast_ref::<Column>().filter(|c| {
                text_paths
                    .get(c.index())
                    .and_then(Option::as_deref)
                    .is_some_and(|path| ordered_integers(&summaries, path))
            }),
            _ => None,
        };
        let Some(column) = column else {
            functions.push(Arc::clone(function));
            continue;
        };
        let integers: Arc<dyn PhysicalExpr> = Arc::new(CastExpr::new(
            Arc::new(column.clone()),
            DataType::Int64,
            None,
        ));
        let mut builder =
            AggregateExprBuilder::new(Arc::new(function.fun().clone()), vec![integers])
                .schema(Arc::clone(&schema))
                .alias(function.name());
        if let Some(display) = function.human_display() {
            builder = builder.human_display(display);
        }
        functions.push(Arc::new(builder.build()?));
        changed.push(n);
    }
    if changed.is_empty() {
        return Ok(None);
    }
    let phase = |a: &AggregateExec, input: Arc<dyn ExecutionPlan>| {
        AggregateExec::try_new(
            *a.mode(),
            a.group_expr().clone(),
            functions.clone(),
            a.filter_expr().to_vec(),
            input,
            Arc::clone(&schema),
        )
        .map(|r| r.with_limit_options(a.limit_options()))
    };
    let new_top: Arc<dyn ExecutionPlan> = match between.is_empty() {
        true => Arc::new(phase(top, Arc::clone(scan))?),
        false => {
            let mut node: Arc<dyn ExecutionPlan> = Arc::new(phase(partial, Arc::clone(scan))?);
            for above in between.into_iter().rev() {
                node = replace_children_if_necessary(above, vec![node])?;
            }
            Arc::new(phase(top, node)?)
        }
    };
    // Render the integers back as the texts they stand for, under the original names.
    let groups = top.group_expr().expr().len();
    let original = top.schema();
    let rendered = new_top.schema();
    let projection: Vec<ProjectionExpr> = original
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let column: Arc<dyn PhysicalExpr> = Arc::new(Column::new(rendered.field(i).name(), i));
            let expr = match i >= groups && changed.contains(&(i - groups)) {
                true => Arc::new(CastExpr::new(column, field.data_type().clone(), None)),
                false => column,
            };
            ProjectionExpr::new(expr, field.name().clone())
        })
        .collect();
    Ok(Some(Arc::new(ProjectionExec::try_new(
        projection, new_top,
    )?)))
}

/// Whether, in every scanned file (`summaries`), `path` is shredded as integers with no
/// value in the binary, and all of them are non-negative with one number of digits.
fn ordered_integers(summaries: &[&FileSummary], path: &str) -> bool {
    let mut digits: Option<usize> = None;
    for summary in summaries {
        let typed = summary
            .schema
            .get(path)
            .is_some_and(|p| p.ty == LeafType::Int);
        let Some(stats) = summary.stats.iter().find(|s| s.path == path) else {
            return false;
        };
        if !typed || stats.binary_count > 0 {
            return false;
        }
        let bounds = match (&stats.min, &stats.max) {
            (Some(StatValue::Int(min)), Some(StatValue::Int(max))) => [*min, *max],
            (None, None) => continue,
            _ => return false,
        };
        for bound in bounds {
            if bound < 0 || *digits.get_or_insert(decimal_digits(bound)) != decimal_digits(bound) {
                return false;
            }
        }
    }
    digits.is_some()
}

/// Digits of the decimal rendering of a non-negative integer.
fn decimal_digits(n: i64) -> usize {
    assert!(n >= 0, "digits of a non-negative integer");
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}
