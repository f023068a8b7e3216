//! Bloom join over S3 Select ("PushdownDB: Accelerating a DBMS using S3 Computation",
//! ICDE 2020, §V-A): a hash join that collects its build side whole hands the build
//! side's keys, as a Bloom filter, to the scan of its probe side, whose S3 Select
//! requests then return only the documents that may join. Where the build side is
//! selective, most of the probe side never crosses the link.
//!
//! A join qualifies when it drops the probe rows that match nothing (inner, right semi) and has an integer key whose probe side comes from an NDJSON
//! scan that asks S3 Select through a chain of projections, filters and repartitions,
//! the key being an integer JSON access of that scan (`json_get_int`, or a
//! cast of `->>` to `BIGINT`). The join itself is unchanged: the filter only leaves
//! out documents it would drop anyway.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{JoinType, NullEquality};
use datafusion::datasource::physical_plan::{FileScanConfigBuilder, FileSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{
    ExecutionPlan, ExecutionPlanProperties, replace_children_if_necessary,
};

use super::select_pushdown::ndjson_scan;
use crate::access::pushable::{cast_parts, pushable_access};
use crate::datasource::ndjson::select::SemiJoin;
use crate::json::Output;
use crate::json::path::PathElem;
use crate::options::TesseraOptions;
use crate::physical_plan::build_keys::{BuildKeys, BuildKeysExec};

/// The rule; registered after [`super::SelectPushdown`], over the scans' final
/// projections.
#[derive(Debug, Default)]
pub struct BloomJoin;

impl PhysicalOptimizerRule for BloomJoin {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // A cluster's plan crosses processes; the keys are shared within one.
        let wanted = config
            .extensions
            .get::<TesseraOptions>()
            .is_some_and(|o| o.bloom_join.0 && o.cluster.trim().is_empty());
        if !wanted {
            return Ok(plan);
        }
        plan.transform_up(|node| {
            let Some(join) = node.downcast_ref::<HashJoinExec>() else {
                return Ok(Transformed::no(node));
            };
            match bloom_joined(join)? {
                Some(children) => Ok(Transformed::yes(replace_children_if_necessary(
                    node, children,
                )?)),
                None => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tessera_bloom_join"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The new children of `join` when it becomes a Bloom join: its build side keeping its
/// keys, its probe side's scan filtering by them.
fn bloom_joined(join: &HashJoinExec) -> Result<Option<Vec<Arc<dyn ExecutionPlan>>>> {
    let drops_unmatched_probe_rows =
        matches!(join.join_type(), JoinType::Inner | JoinType::RightSemi);
    // Null keys join nothing here; where they join each other, a filter would drop them.
    if !drops_unmatched_probe_rows || join.null_equality() == NullEquality::NullEqualsNull {
        return Ok(None);
    }
    let left_schema = join.left().schema();
    for (build_key, probe_key) in join.on() {
        if build_key.data_type(&left_schema)? != DataType::Int64 {
            continue;
        }
        let Some(path) = probe_path(join.right(), probe_key) else {
            continue;
        };
        let partitions = join.left().output_partitioning().partition_count();
        let keys = Arc::new(BuildKeys::new(partitions));
        let semi = SemiJoin {
            path,
            keys: Arc::clone(&keys),
        };
        let Some(probe) = with_semi_join(join.right(), semi)? else {
            continue;
        };
        let build = BuildKeysExec::try_new(Arc::clone(join.left()), Arc::clone(build_key), keys)?;
        return Ok(Some(vec![Arc::new(build), probe]));
    }
    Ok(None)
}

/// The JSON path of the integer `key` (over `plan`'s output) when `plan` is a chain of
/// projections, filters and repartitions over an NDJSON scan asking S3 Select with no
/// Bloom join yet, and `key` an integer access of that scan's documents.
fn probe_path(plan: &Arc<dyn ExecutionPlan>, key: &Arc<dyn PhysicalExpr>) -> Option<Vec<PathElem>> {
    if let Some((_, source)) = ndjson_scan(plan) {
        if !source.asks_select() || source.semi_join().is_some() {
            return None;
        }
        let projection = FileSource::projection(source)?;
        let access = match key.downcast_ref::<Column>() {
            Some(column) => &projection.iter().nth(column.index())?.expr,
            None => key,
        };
        return integer_access(access);
    }
    let (input, key) = below(plan, key)?;
    probe_path(input, &key)
}

/// A plan's input, and an expression over that input's rows.
type Below<'a> = (&'a Arc<dyn ExecutionPlan>, Arc<dyn PhysicalExpr>);

/// The input of the projection, filter or repartition `plan` and what `key` (over `plan`'s
/// output) is over that input.
fn below<'a>(plan: &'a Arc<dyn ExecutionPlan>, key: &Arc<dyn PhysicalExpr>) -> Option<Below<'a>> {
    if let Some(projection) = plan.downcast_ref::<ProjectionExec>() {
        let column = key.downcast_ref::<Column>()?;
        let expr = &projection.expr().get(column.index())?.expr;
        return Some((projection.input(), Arc::clone(expr)));
    }
    if let Some(filter) = plan.downcast_ref::<FilterExec>() {
        let key = match (filter.projection(), key.downcast_ref::<Column>()) {
            (Some(kept), Some(column)) => {
                let index = *kept.get(column.index())?;
                let name = filter.input().schema().field(index).name().clone();
                Arc::new(Column::new(&name, index)) as Arc<dyn PhysicalExpr>
            }
            (Some(_), None) => return None,
            (None, _) => Arc::clone(key),
        };
        return Some((filter.input(), key));
    }
    // Rows a repartition sends elsewhere are dropped by the join wherever they go.
    let repartition = plan.downcast_ref::<RepartitionExec>()?;
    Some((repartition.input(), Arc::clone(key)))
}

/// The path of `expr` when it reads an integer of the document: `json_get_int`, or a
/// cast of a text access to `BIGINT`.
fn integer_access(expr: &Arc<dyn PhysicalExpr>) -> Option<Vec<PathElem>> {
    if let Some((path, Output::Int)) = pushable_access(expr) {
        return Some(path);
    }
    let (operand, to, _) = cast_parts(expr)?;
    match pushable_access(operand)? {
        (path, Output::Text | Output::Str) if *to == DataType::Int64 => Some(path),
        _ => None,
    }
}

/// `plan` (the chain [`probe_path`] walked) with its scan filtering by `semi`.
fn with_semi_join(
    plan: &Arc<dyn ExecutionPlan>,
    semi: SemiJoin,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if let Some((config, source)) = ndjson_scan(plan) {
        let config = FileScanConfigBuilder::from(config.clone())
            .with_source(Arc::new(source.with_semi_join(semi)))
            .build();
        return Ok(Some(DataSourceExec::from_data_source(config)));
    }
    let Some(input) = plan.children().first().copied() else {
        return Ok(None);
    };
    match with_semi_join(input, semi)? {
        Some(input) => Ok(Some(replace_children_if_necessary(
            Arc::clone(plan),
            vec![input],
        )?)),
        None => Ok(None),
    }
}
