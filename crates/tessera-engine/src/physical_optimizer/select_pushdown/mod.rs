//! S3 Select pushdown of raw NDJSON scans (`SET tessera.pushdown = 's3select'`): the
//! parts of a filter above an NDJSON scan that S3 Select can evaluate become the
//! scan's store condition, and the files of a scan that asks S3 Select are kept whole
//! (one request per object).
//!
//! CSV scans that ask S3 Select for their objects ([`CsvScanSource`] with a client) get
//! a store condition the same way ([`csv_condition`]).
//!
//! The filter stays above the scan: a store condition only has to hold for every
//! document the filter keeps ([`tessera_pushdown::select_sql`]), so a conjunct that
//! cannot be translated is left out of it, and a disjunction only goes when all of it
//! does.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    FileGroup, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{Column, IsNotNullExpr, IsNullExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, Partitioning, replace_children_if_necessary};

use crate::datasource::csv::source::CsvScanSource;
use crate::datasource::ndjson::source::NdjsonSource;
use condition::{Fit, condition};
use csv_condition::{CsvColumns, csv_condition};

pub(crate) mod condition;
mod csv_condition;
mod text_casts;

/// The rule; registered after DataFusion's own, which push filters and projections
/// into scans first.
#[derive(Debug, Default)]
pub struct SelectPushdown;

impl PhysicalOptimizerRule for SelectPushdown {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if let Some(projection) = node.downcast_ref::<ProjectionExec>()
                && let Some(typed) = text_casts::moved_into_scan(projection)?
            {
                return Ok(Transformed::yes(typed));
            }
            if let Some(filter) = node.downcast_ref::<FilterExec>()
                && let Some((config, source)) = ndjson_scan(filter.input())
                && let Some(projection) = source.projection()
                && let condition = condition(filter.predicate(), projection, Fit::Superset)
                && let null_tested = null_tested(filter)
                && (condition.is_some() || !null_tested.is_empty())
                && let Some(pushed) = source.with_select_filter(condition, null_tested)
            {
                let scan = whole_files(config, pushed);
                return Ok(Transformed::yes(replace_children_if_necessary(
                    node,
                    vec![scan],
                )?));
            }
            if let Some(filter) = node.downcast_ref::<FilterExec>()
                && let Some(pushed) = csv_pushed(filter)
            {
                return Ok(Transformed::yes(replace_children_if_necessary(
                    node,
                    vec![pushed],
                )?));
            }
            match ndjson_scan(&node) {
                Some((config, source)) if source.select_plan().is_some() => {
                    Ok(Transformed::yes(whole_files(config, source.clone())))
                }
                _ => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tessera_select_pushdown"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The scan columns `filter` reads only for whether they are NULL: those its own
/// projection drops, under `IS [NOT] NULL` wherever its predicate reads them.
fn null_tested(filter: &FilterExec) -> Vec<usize> {
    let Some(kept) = filter.projection() else {
        return Vec::new();
    };
    let is_column = |e: &Arc<dyn PhysicalExpr>, i: usize| {
        e.downcast_ref::<Column>().is_some_and(|c| c.index() == i)
    };
    let width = filter.input().schema().fields().len();
    (0..width)
        .filter(|i| !kept.contains(i))
        .filter(|&i| {
            let (mut tested, mut read) = (false, false);
            let _ = filter.predicate().apply(|node| {
                let arg = match (
                    node.downcast_ref::<IsNotNullExpr>(),
                    node.downcast_ref::<IsNullExpr>(),
                ) {
                    (Some(e), _) => Some(e.arg()),
                    (None, Some(e)) => Some(e.arg()),
                    (None, None) => None,
                };
                if arg.is_some_and(|a| is_column(a, i)) {
                    tested = true;
                    return Ok(TreeNodeRecursion::Jump);
                }
                read |= is_column(node, i);
                Ok(TreeNodeRecursion::Continue)
            });
            tested && !read
        })
        .collect()
}

/// The scan under `filter` asking S3 Select for the rows of CSV files that may pass
/// it, when it asks S3 Select for CSV files and part of the filter translates.
/// A round-robin repartition between them passes every row through, so the scan may
/// be under it.
fn csv_pushed(filter: &FilterExec) -> Option<Arc<dyn ExecutionPlan>> {
    let input = filter.input();
    if let Some(repartition) = input.downcast_ref::<RepartitionExec>()
        && matches!(repartition.partitioning(), Partitioning::RoundRobinBatch(_))
    {
        let scan = csv_pushed_into(filter, repartition.input())?;
        return replace_children_if_necessary(Arc::clone(input), vec![scan]).ok();
    }
    csv_pushed_into(filter, input)
}

fn csv_pushed_into(
    filter: &FilterExec,
    scan: &Arc<dyn ExecutionPlan>,
) -> Option<Arc<dyn ExecutionPlan>> {
    let (config, source) = super::file_scan::<CsvScanSource>(scan)?;
    if !source.asks_select() {
        return None;
    }
    let columns = CsvColumns {
        projection: source.projection()?,
        types: source
            .file_schema()
            .fields()
            .iter()
            .map(|f| f.data_type())
            .collect(),
    };
    let condition = csv_condition(filter.predicate(), &columns)?;
    let config = FileScanConfigBuilder::from(config.clone())
        .with_source(Arc::new(source.with_condition(condition)?))
        .build();
    Some(DataSourceExec::from_data_source(config))
}

/// The file scan configuration and source of `plan` when it scans NDJSON files.
pub(super) fn ndjson_scan(
    plan: &Arc<dyn ExecutionPlan>,
) -> Option<(&FileScanConfig, &NdjsonSource)> {
    super::file_scan(plan)
}

/// The scan of `config` with `source`, each file whole in one group (S3 Select reads an
/// object in one request), the groups as even in bytes as the files allow.
fn whole_files(config: &FileScanConfig, source: NdjsonSource) -> Arc<dyn ExecutionPlan> {
    let mut files: Vec<PartitionedFile> = Vec::new();
    for file in config.file_groups.iter().flat_map(|g| g.files()) {
        if !files
            .iter()
            .any(|f| f.object_meta.location == file.object_meta.location)
        {
            let mut whole = file.clone();
            whole.range = None;
            files.push(whole);
        }
    }
    files.sort_by_key(|f| std::cmp::Reverse(f.object_meta.size));
    let count = config.file_groups.len().clamp(1, files.len().max(1));
    let mut groups: Vec<(u64, Vec<PartitionedFile>)> = vec![(0, Vec::new()); count];
    for file in files {
        let lightest = groups
            .iter_mut()
            .min_by_key(|(bytes, _)| *bytes)
            .expect("at least one group");
        lightest.0 += file.object_meta.size;
        lightest.1.push(file);
    }
    let config = FileScanConfigBuilder::from(config.clone())
        .with_file_groups(groups.into_iter().map(|(_, f)| FileGroup::new(f)).collect())
        .with_source(Arc::new(source))
        .build();
    DataSourceExec::from_data_source(config)
}
