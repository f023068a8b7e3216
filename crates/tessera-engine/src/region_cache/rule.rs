//! The physical optimizer rule: each Tessera-table scan is answered from a region that
//! contains it, or, on its second request, writes one while it runs.
//!
//! It runs last, after DataFusion's filter and projection pushdown and Tessera's own
//! scan rules, so a scan's filters and projection are final. A scan under a
//! `CodeAggregateExec` (dictionary codes per file) or with a pushed LIMIT or ordering is
//! left alone: a region holds decoded values of every matching row, unordered.

use std::path::Path;
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder, FileSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::projection::{ProjectionExpr, ProjectionExprs};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use tessera_cache::semantic::dnf::Dnf;
use tessera_cache::semantic::normalize::NormalizeLimits;
use tessera_cache::semantic::predicate::Predicate;
use tessera_cache::semantic::region::Request;

use super::predicates::{
    Columns, Translated, column_id, is_deterministic, reads_columns, translate_filters,
};
use super::rewrite::RegionColumns;
use super::scan_exec::{RegionScanExec, parquet_scan};
use super::store::{self, RegionStore, Sidecar, StoredRegion};
use super::write_exec::{RegionWrite, RegionWriteExec};
use crate::datasource::tessera::scan::{SnapshotFile, TesseraSource};
use crate::options::TesseraOptions;
use crate::physical_plan::code_aggregate::CodeAggregateExec;

/// The region cache's physical optimizer rule (registered last by the session).
#[derive(Debug, Default)]
pub struct RegionCacheRule;

impl PhysicalOptimizerRule for RegionCacheRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(store) = configured_store(config) else {
            return Ok(plan);
        };
        plan.transform_down(|node| {
            if node.downcast_ref::<CodeAggregateExec>().is_some() {
                return Ok(Transformed::new(node, false, TreeNodeRecursion::Jump));
            }
            Ok(match cached_scan(&store, &node)? {
                Some(replaced) => Transformed::new(replaced, true, TreeNodeRecursion::Jump),
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tessera_region_cache"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The session's region store: `tessera.region_cache` on and `tessera.cache_dir` set.
fn configured_store(config: &ConfigOptions) -> Option<Arc<RegionStore>> {
    let options = config.extensions.get::<TesseraOptions>()?;
    if !options.region_cache.0 || options.cache_dir.is_empty() {
        return None;
    }
    store::shared(Path::new(&options.cache_dir), options.region_cache_size.0)
}

/// What a Tessera scan asks of the cache.
struct Scan<'a> {
    config: &'a FileScanConfig,
    source: &'a TesseraSource,
    projection: Vec<ProjectionExpr>,
    translated: Translated,
    /// Every column the scan's projection and filters read.
    columns: Columns,
    /// The translated filters' AND.
    predicate: Predicate,
    request: Request,
}

/// `node` answered from a region, or writing one; `None` to leave it as it is.
fn cached_scan(
    store: &Arc<RegionStore>,
    node: &Arc<dyn ExecutionPlan>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(scan) = Scan::of(node) else {
        return Ok(None);
    };
    if let Some(region) = store.lookup(&scan.request) {
        return scan.reading(region, node);
    }
    let Some((id, ticket)) = store.admit(&scan.request) else {
        return Ok(None);
    };
    let sidecar = Sidecar {
        format: store::SIDECAR_FORMAT,
        table: scan.request.table.clone(),
        version: scan.request.version,
        predicate: scan.predicate.clone(),
        columns: scan.columns.keys().cloned().collect(),
        files: Vec::new(),
        rows: 0,
        bytes: 0,
        remote_bytes: 0,
        remote_requests: 0,
    };
    let partitions = scan.config.file_groups.len();
    let write = RegionWrite::new(Arc::clone(store), id, ticket, sidecar, partitions);
    scan.writing(Arc::new(write), node)
}

impl<'a> Scan<'a> {
    fn of(node: &'a Arc<dyn ExecutionPlan>) -> Option<Self> {
        let config = node
            .downcast_ref::<DataSourceExec>()?
            .data_source()
            .downcast_ref::<FileScanConfig>()?;
        let source = config.file_source().downcast_ref::<TesseraSource>()?;
        if config.limit.is_some() || !config.output_ordering.is_empty() {
            return None;
        }
        let (table, version) = table_version(config)?;
        let projection: Vec<ProjectionExpr> = source.projection()?.iter().cloned().collect();
        let exprs = || projection.iter().map(|p| &p.expr).chain(source.filters());
        if !exprs().all(is_deterministic) {
            return None;
        }
        let translated = translate_filters(source.filters());
        let mut columns = translated.columns.clone();
        for p in projection.iter().filter(|p| reads_columns(&p.expr)) {
            columns.insert(column_id(&p.expr), Arc::clone(&p.expr));
        }
        let predicate = Predicate::And(translated.predicates.clone());
        let request = Request {
            table,
            version,
            predicate: Dnf::from_predicate(&predicate, &NormalizeLimits::default())?,
            columns: columns.keys().cloned().collect(),
        };
        Some(Self {
            config,
            source,
            projection,
            translated,
            columns,
            predicate,
            request,
        })
    }

    /// The scan answered from `region`: its files, the scan's filters and projection
    /// over its columns; `None` when the result would not have the scan's schema.
    fn reading(
        &self,
        region: Arc<StoredRegion>,
        original: &Arc<dyn ExecutionPlan>,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let columns = RegionColumns::new(&region.sidecar.columns);
        let (Some(filters), Some(projection)) = (
            columns.rewrite_all(self.source.filters()),
            self.rewritten_projection(&columns),
        ) else {
            return Ok(None);
        };
        let parquet = parquet_scan(&region, self.config.file_groups.len())?;
        let scan: Arc<dyn ExecutionPlan> = Arc::new(RegionScanExec::new(parquet, region));
        finish(scan, &filters, projection, original)
    }

    /// The scan computing the region's columns under only the translated filters,
    /// writing what it reads, with the residual filters and the projection above.
    fn writing(
        &self,
        write: Arc<RegionWrite>,
        original: &Arc<dyn ExecutionPlan>,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let ids = self.columns.keys();
        let columns = RegionColumns::new(ids);
        let outputs = self
            .columns
            .values()
            .enumerate()
            .map(|(i, expr)| ProjectionExpr::new(Arc::clone(expr), RegionColumns::name(i)));
        let source = self
            .source
            .with_scan(ProjectionExprs::new(outputs), self.translated.exact.clone());
        let config = FileScanConfigBuilder::from(self.config.clone())
            .with_source(Arc::new(source))
            .build();
        let scan: Arc<dyn ExecutionPlan> = DataSourceExec::from_data_source(config);
        let (Some(residual), Some(projection)) = (
            columns.rewrite_all(&self.translated.residual),
            self.rewritten_projection(&columns),
        ) else {
            return Ok(None);
        };
        let written: Arc<dyn ExecutionPlan> = Arc::new(RegionWriteExec::new(scan, write));
        finish(written, &residual, projection, original)
    }

    fn rewritten_projection(&self, columns: &RegionColumns) -> Option<Vec<ProjectionExpr>> {
        self.projection
            .iter()
            .map(|p| Some(ProjectionExpr::new(columns.rewrite(&p.expr)?, &p.alias)))
            .collect()
    }
}

/// `input` filtered by `filters` and projected by `projection`, when that has exactly
/// the schema of the scan it replaces (field types, names, nullability and metadata);
/// `None` otherwise, or when the region's columns do not fit the expressions (the scan
/// then runs as it was: the cache never fails a query).
fn finish(
    input: Arc<dyn ExecutionPlan>,
    filters: &[Arc<dyn PhysicalExpr>],
    projection: Vec<ProjectionExpr>,
    original: &Arc<dyn ExecutionPlan>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let filtered: Arc<dyn ExecutionPlan> = match filters {
        [] => input,
        _ => {
            let predicate = datafusion::physical_expr::conjunction(filters.iter().cloned());
            match FilterExec::try_new(predicate, input) {
                Ok(filter) => Arc::new(filter),
                Err(_) => return Ok(None),
            }
        }
    };
    let Ok(projected) = ProjectionExec::try_new(projection, filtered) else {
        return Ok(None);
    };
    let projected: Arc<dyn ExecutionPlan> = Arc::new(projected);
    Ok((projected.schema() == original.schema()).then_some(projected))
}

/// The scanned table (store URL and table prefix) and snapshot version, when every
/// file is of one snapshot of a Tessera table.
fn table_version(config: &FileScanConfig) -> Option<(String, u64)> {
    let mut found: Option<(String, u64)> = None;
    for file in config.file_groups.iter().flat_map(|g| g.iter()) {
        let entry = file.extensions.get::<SnapshotFile>()?;
        let location = file.object_meta.location.as_ref();
        let prefix = location.strip_suffix(entry.file.path.as_str())?;
        let this = (
            format!("{}{prefix}", config.object_store_url.as_str()),
            entry.snapshot.version(),
        );
        if found.as_ref().is_some_and(|f| *f != this) {
            return None;
        }
        found = Some(this);
    }
    found
}
