//! Low-cardinality string paths are grouped on their dictionary codes.
//!
//! A physical optimizer rule: a `Partial` aggregate over a Tessera scan whose GROUP BY
//! keys are text accesses to low-cardinality paths (at most [`LOW_CARDINALITY`]
//! distinct values by the manifest's sketches) and small integers becomes a
//! [`CodeAggregateExec`]; the scan reads those paths as `Dictionary(Int32, Utf8)`, the
//! codes and dictionary each file stores. Anything else (distinct aggregates other than
//! `COUNT(DISTINCT <string>)`, ordered aggregates, grouping sets, string keys of high
//! cardinality) is left to DataFusion.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{CastExpr, Column};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::InputOrderMode;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use tessera_tiles::summary::{DistinctSketch, FileSummary, PathStats};

use super::aggregate_rewrite::{
    AggregateParts, rewrite_aggregates, scanned_summaries, tessera_scan,
};
use crate::access::extraction::dictionary_text;
use crate::options::TesseraOptions;
use crate::physical_plan::code_aggregate::{
    CodeAggregateExec, MAX_GROUPS, MAX_KEYS, is_distinct_string_count,
};

/// Most distinct values (estimated over the scanned files) of a path grouped on codes:
/// beyond, mapping each file's dictionary costs about what hashing its rows does.
pub const LOW_CARDINALITY: u64 = 4096;

/// Name prefix of the dictionary columns this rule adds to a scan.
const CODES_PREFIX: &str = "__tessera_codes_";

/// The physical optimizer rule; it runs after [`super::CastPushdown`].
#[derive(Debug, Default)]
pub struct GroupOnCodes;

impl PhysicalOptimizerRule for GroupOnCodes {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let enabled = config
            .extensions
            .get::<TesseraOptions>()
            .is_none_or(|o| o.group_on_codes);
        if !enabled {
            return Ok(plan);
        }
        rewrite_aggregates(plan, on_codes)
    }

    fn name(&self) -> &str {
        "tessera_group_on_codes"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `aggregate` as a [`CodeAggregateExec`] over a scan that outputs codes, when it
/// qualifies.
fn on_codes(aggregate: &AggregateExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let input = aggregate.input();
    let (Some((config, source)), Some(parts)) =
        (tessera_scan(input), AggregateParts::of(aggregate))
    else {
        return Ok(None);
    };
    let schema = input.schema();
    let plain = *aggregate.mode() == AggregateMode::Partial
        && (1..=MAX_KEYS).contains(&parts.groups.len())
        && *aggregate.input_order_mode() == InputOrderMode::Linear
        && aggregate.limit_options().is_none()
        && aggregate.aggr_expr().iter().all(|a| {
            a.groups_accumulator_supported() && !a.is_distinct() && a.order_bys().is_empty()
                || is_distinct_string_count(a, &schema)
        });
    let Some(summaries) = scanned_summaries(config).filter(|_| plain) else {
        return Ok(None);
    };
    let text_paths = source.text_paths();
    // The text access `expr` reads, when it is a column of the scan whose path `holds`.
    let text_access = |expr: &Arc<dyn PhysicalExpr>, holds: &dyn Fn(&str) -> bool| {
        expr.downcast_ref::<Column>().cloned().filter(|c| {
            text_paths
                .get(c.index())
                .and_then(Option::as_deref)
                .is_some_and(holds)
        })
    };
    let width = schema.fields().len();
    let mut codes: Vec<(Arc<dyn PhysicalExpr>, String)> = Vec::new();
    let mut groups = Vec::with_capacity(parts.groups.len());
    for (expr, name) in &parts.groups {
        let key = match text_access(expr, &|path| low_cardinality(&summaries, path)) {
            Some(column) => add_codes(&mut codes, width, column),
            None if is_integer_like(&expr.data_type(&schema)?) => Arc::clone(expr),
            None => return Ok(None),
        };
        groups.push((key, name.clone()));
    }
    if codes.is_empty() {
        return Ok(None);
    }
    // `COUNT(DISTINCT <text>)` of a path whose values repeat in every file reads codes
    // too: the operator then meets each value once per file and group, not per row.
    let mut arguments = parts.arguments;
    for (function, args) in aggregate.aggr_expr().iter().zip(&mut arguments) {
        let coded = match args.as_slice() {
            [arg] if is_distinct_string_count(function, &schema) => {
                text_access(arg, &|path| values_repeat(&summaries, path))
            }
            _ => None,
        };
        if let Some(column) = coded {
            args[0] = add_codes(&mut codes, width, column);
        }
    }
    let parts = AggregateParts {
        groups,
        arguments,
        ..parts
    };
    let Some((scan, parts)) = parts.over_scan_with(input, codes)? else {
        return Ok(None);
    };
    let Some(functions) = parts.functions(aggregate) else {
        return Ok(None);
    };
    let rewritten = CodeAggregateExec::try_new(
        scan,
        parts.groups,
        functions,
        parts.filters,
        aggregate.schema(),
        MAX_GROUPS,
    )?;
    Ok(Some(Arc::new(rewritten)))
}

/// Adds the codes of `column` (a text access of a scan with `width` columns) to the
/// outputs the scan is to compute, `codes`; the column that will hold them.
fn add_codes(
    codes: &mut Vec<(Arc<dyn PhysicalExpr>, String)>,
    width: usize,
    column: Column,
) -> Arc<dyn PhysicalExpr> {
    let cast = CastExpr::new(Arc::new(column), dictionary_text(), None);
    let output = format!("{CODES_PREFIX}{}", codes.len());
    let key = Column::new(&output, width + codes.len());
    codes.push((Arc::new(cast), output));
    Arc::new(key)
}

/// Whether the scanned files (`summaries`) hold at most [`LOW_CARDINALITY`] distinct
/// typed values at `path`, by the union of their sketches (files that do not shred the
/// path hold it in the binary, which stays rare).
fn low_cardinality(summaries: &[&FileSummary], path: &str) -> bool {
    let mut union: Option<DistinctSketch> = None;
    for stats in path_stats(summaries, path) {
        union
            .get_or_insert_with(DistinctSketch::default)
            .merge(&stats.distinct);
    }
    union.is_some_and(|sketch| sketch.estimate() <= LOW_CARDINALITY)
}

/// Whether the values at `path` repeat in every scanned file that shreds it
/// ([`tessera_tiles::summary::PathStats::values_repeat`]), so that its writer kept the
/// path's dictionary.
fn values_repeat(summaries: &[&FileSummary], path: &str) -> bool {
    let mut stats = path_stats(summaries, path).peekable();
    stats.peek().is_some() && stats.all(PathStats::values_repeat)
}

/// The statistics of `path` in each scanned file that shreds it.
fn path_stats<'a>(
    summaries: &'a [&FileSummary],
    path: &'a str,
) -> impl Iterator<Item = &'a PathStats> {
    summaries
        .iter()
        .filter_map(move |summary| summary.stats.iter().find(|s| s.path == path))
}

/// Whether values of `data_type` are grouped exactly by their value as a 64-bit integer.
fn is_integer_like(data_type: &DataType) -> bool {
    data_type.is_integer() && *data_type != DataType::UInt64
        || matches!(
            data_type,
            DataType::Boolean | DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)
        )
}
