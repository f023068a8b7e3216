//! The physical optimizer rule: each Tessera-table scan is answered from a region that
//! contains it, or, on its second request, writes one while it runs.
//!
//! It runs last, after DataFusion's filter and projection pushdown and Tessera's own
//! scan rules, so a scan's filters and projection are final. A scan under a
//! `CodeAggregateExec` (dictionary codes per file) or with a pushed LIMIT or ordering is
//! left alone: a region holds decoded values of every matching row, unordered.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::{
    FileGroup, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::projection::{ProjectionExpr, ProjectionExprs};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::{ExecutionPlan, Partitioning};
use tessera_cache::semantic::dnf::Dnf;
use tessera_cache::semantic::normalize::NormalizeLimits;
use tessera_cache::semantic::predicate::Predicate;
use tessera_cache::semantic::region::Request;

use super::filters::physical_filter;
use super::freshness::{SourceFile, source_files};
use super::observe_exec::RegionObserveExec;
use super::oracle::{self, Template};
use super::predicates::{
    Columns, Translated, column_id, is_deterministic, reads_columns, translate_filters,
};
use super::rewrite::RegionColumns;
use super::scan_exec::{RegionScanExec, parquet_scan};
use super::store::{self, Answer, Destination, RegionStore, Sidecar, StoredRegion};
use super::write_exec::{RegionWrite, RegionWriteExec};
use crate::datasource::tessera::scan::{SnapshotFile, TesseraSource};
use crate::options::TesseraOptions;
use crate::physical_plan::code_aggregate::CodeAggregateExec;
use tessera_table::Snapshot;

/// The region cache's physical optimizer rule (registered last by the session).
#[derive(Debug, Default)]
pub struct RegionCacheRule;

impl PhysicalOptimizerRule for RegionCacheRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(options) = region_options(config) else {
            return Ok(plan);
        };
        plan.transform_down(|node| {
            if node.downcast_ref::<CodeAggregateExec>().is_some() {
                return Ok(Transformed::new(node, false, TreeNodeRecursion::Jump));
            }
            Ok(match cached_scan(options, &node)? {
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

/// The session's options when the region cache is on (`tessera.region_cache` on and
/// `tessera.cache_dir` set).
fn region_options(config: &ConfigOptions) -> Option<&TesseraOptions> {
    let options = config.extensions.get::<TesseraOptions>()?;
    // A region lives in this machine's cache directory, which a cluster's executors
    // cannot read.
    let placed_here = options.cluster.trim().is_empty();
    (options.region_cache.0 && !options.cache_dir.is_empty() && placed_here).then_some(options)
}

/// The region store of the session's cache directory, opened on the first scan it serves
/// (a query without one takes no lock); `None` when it cannot be (warned once).
fn open_store(options: &TesseraOptions) -> Option<Arc<RegionStore>> {
    store::shared(
        Path::new(&options.cache_dir),
        options.region_cache_size.0,
        options.region_oracle.0,
    )
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
    /// The scanned version.
    snapshot: Arc<Snapshot>,
    /// The data files of the scanned version.
    source_files: Vec<SourceFile>,
    /// Whether the scan reads every data file of its version, so that its rows under
    /// the translated filters are the region's (a file skipped at planning by a filter
    /// that does not translate could hold rows of the region's predicate).
    writable: bool,
}

/// `node` answered from regions, or writing one, and observed by the oracle when it
/// runs; `None` to leave it as it is.
fn cached_scan(
    options: &TesseraOptions,
    node: &Arc<dyn ExecutionPlan>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(scan) = Scan::of(node) else {
        return Ok(None);
    };
    if !options.caches_table_at(scan.config.object_store_url.as_str()) {
        return Ok(None);
    }
    let Some(store) = open_store(options) else {
        return Ok(None);
    };
    let store = &store;
    let Some(oracle) = oracle::of(store) else {
        return answered(store, &scan, node);
    };
    let observed = scan
        .writable
        .then(|| (scan.request.clone(), Arc::new(scan.template())));
    let plan = answered(store, &scan, node)?.unwrap_or_else(|| Arc::clone(node));
    let observe = RegionObserveExec::new(plan, Arc::clone(store), oracle, observed);
    Ok(Some(Arc::new(observe)))
}

/// `scan` answered from regions, or writing one; `None` to leave it as it is. A whole
/// answer (no remainder) is taken at once; otherwise a scan seen the second time
/// writes its own region (LRU-2), and only then does a partial cover (regions plus a
/// remote scan of the rest) answer it.
fn answered(
    store: &Arc<RegionStore>,
    scan: &Scan,
    node: &Arc<dyn ExecutionPlan>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let answer = store.lookup(&scan.request, &scan.source_files);
    if let Some(whole) = answer.as_ref().filter(|a| a.remainder.is_none())
        && let Some(plan) = scan.answering(whole, node)?
    {
        store.record_hits(whole);
        return Ok(Some(plan));
    }
    if scan.writable
        && let Some((id, ticket)) = store.admit(&scan.request)
    {
        let write = RegionWrite::new(
            Arc::clone(store),
            id,
            Destination::Requested(ticket),
            scan.sidecar(),
            scan.partitions(),
        );
        return scan.writing(Arc::new(write), node);
    }
    let Some(partial) = answer.filter(|a| a.remainder.is_some()) else {
        return Ok(None);
    };
    let plan = scan.answering(&partial, node)?;
    if plan.is_some() {
        store.record_hits(&partial);
    }
    Ok(plan)
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
        let (table, snapshot) = table_version(config)?;
        let version = snapshot.version();
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
        let scanned: HashSet<&str> = files(config).map(|e| e.file.path.as_str()).collect();
        Some(Self {
            config,
            source,
            projection,
            translated,
            columns,
            predicate,
            request,
            source_files: source_files(snapshot.files()),
            writable: scanned.len() == snapshot.files().len(),
            snapshot,
        })
    }

    fn partitions(&self) -> usize {
        self.config.file_groups.len()
    }

    /// The sidecar of the region this scan writes (files, rows and bytes known later).
    fn sidecar(&self) -> Sidecar {
        Sidecar::unwritten(
            self.request.table.clone(),
            self.request.version,
            self.predicate.clone(),
            self.columns.keys().cloned().collect(),
            self.source_files.clone(),
            false,
        )
    }

    /// The scan as the oracle's template of its table.
    fn template(&self) -> Template {
        Template {
            table: self.request.table.clone(),
            config: self.config.clone(),
            columns: self.columns.clone(),
            snapshot: Arc::clone(&self.snapshot),
        }
    }

    /// The scan answered by `answer`: each piece read from its region under the scan's
    /// filters and the piece's residual, the remainder and the appended files scanned
    /// remotely, all in one union; `None` when some part cannot be built.
    fn answering(
        &self,
        answer: &Answer,
        original: &Arc<dyn ExecutionPlan>,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let schema = Arc::clone(self.source.table_schema().table_schema());
        let mut parts = Vec::new();
        for (region, residual) in &answer.pieces {
            let residual = match residual {
                Some(p) => match physical_filter(p, &self.columns, &schema) {
                    Some(expr) => Some(expr),
                    None => return Ok(None),
                },
                None => None,
            };
            let read = self.reading(
                Arc::clone(region),
                residual,
                answer.appended.len(),
                original,
            )?;
            let Some(read) = read else {
                return Ok(None);
            };
            parts.push(read);
        }
        if let Some(remainder) = &answer.remainder {
            let Some(extra) = physical_filter(remainder, &self.columns, &schema) else {
                return Ok(None);
            };
            let old = |path: &str| !answer.appended.contains(path);
            parts.extend(self.remote(&old, Some(extra)));
        }
        let new = |path: &str| answer.appended.contains(path);
        parts.extend(self.remote(&new, None));
        union(parts, self.partitions(), original)
    }

    /// The same scan over only the files `keep` accepts (by key), with `extra` added to
    /// its filters; `None` when no file is left.
    fn remote(
        &self,
        keep: &dyn Fn(&str) -> bool,
        extra: Option<Arc<dyn PhysicalExpr>>,
    ) -> Option<Arc<dyn ExecutionPlan>> {
        let groups: Vec<FileGroup> = self
            .config
            .file_groups
            .iter()
            .map(|group| {
                let kept = group.iter().filter(|f| {
                    f.extensions
                        .get::<SnapshotFile>()
                        .is_some_and(|e| keep(e.file.path.as_str()))
                });
                FileGroup::new(kept.cloned().collect())
            })
            .collect();
        if groups.iter().all(FileGroup::is_empty) {
            return None;
        }
        let mut filters = self.source.filters().to_vec();
        filters.extend(extra);
        let projection = ProjectionExprs::new(self.projection.iter().cloned());
        let config = FileScanConfigBuilder::from(self.config.clone())
            .with_source(Arc::new(self.source.with_scan(projection, filters)))
            .with_file_groups(groups)
            .build();
        Some(DataSourceExec::from_data_source(config))
    }

    /// The scan's rows read from `region`: its files, the scan's filters (and the
    /// piece's `residual`, over the table) and projection over its columns; `None` when
    /// the result would not have the scan's schema.
    fn reading(
        &self,
        region: Arc<StoredRegion>,
        residual: Option<Arc<dyn PhysicalExpr>>,
        appended_files: usize,
        original: &Arc<dyn ExecutionPlan>,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let columns = RegionColumns::new(&region.sidecar.columns);
        let mut filters = self.source.filters().to_vec();
        filters.extend(residual);
        let (Some(filters), Some(projection)) = (
            columns.rewrite_all(&filters),
            self.rewritten_projection(&columns),
        ) else {
            return Ok(None);
        };
        let parquet = parquet_scan(&region, self.partitions())?;
        let scan = RegionScanExec::new(parquet, region, appended_files);
        finish(Arc::new(scan), &filters, projection, original)
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
        let scan = RegionColumns::scan(
            self.config,
            self.source,
            self.columns.values().cloned(),
            self.translated.exact.clone(),
        );
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

/// `parts` (each with the replaced scan's schema) as one plan with the replaced scan's
/// `partitions`, so the plan above keeps its distribution: a lone part as it is,
/// several in a union dealt round-robin into that many partitions.
fn union(
    mut parts: Vec<Arc<dyn ExecutionPlan>>,
    partitions: usize,
    original: &Arc<dyn ExecutionPlan>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if parts.len() <= 1 {
        return Ok(parts.pop());
    }
    let union = UnionExec::try_new(parts)?;
    let dealt = RepartitionExec::try_new(union, Partitioning::RoundRobinBatch(partitions.max(1)))?;
    let dealt: Arc<dyn ExecutionPlan> = Arc::new(dealt);
    Ok((dealt.schema() == original.schema()).then_some(dealt))
}

/// The snapshot entry of every file the scan reads (a file without one is left out).
fn files(config: &FileScanConfig) -> impl Iterator<Item = &SnapshotFile> {
    config
        .file_groups
        .iter()
        .flat_map(|g| g.iter())
        .filter_map(|f| f.extensions.get::<SnapshotFile>())
}

/// The scanned table (store URL and table prefix) and its snapshot, when every file is
/// of one snapshot of a Tessera table.
fn table_version(config: &FileScanConfig) -> Option<(String, Arc<Snapshot>)> {
    let mut found: Option<(String, Arc<Snapshot>)> = None;
    for file in config.file_groups.iter().flat_map(|g| g.iter()) {
        let entry = file.extensions.get::<SnapshotFile>()?;
        let location = file.object_meta.location.as_ref();
        let prefix = location.strip_suffix(entry.file.path.as_str())?;
        let table = format!("{}{prefix}", config.object_store_url.as_str());
        let same = |(t, s): &(String, Arc<Snapshot>)| {
            *t == table && s.version() == entry.snapshot.version()
        };
        if found.as_ref().is_some_and(|f| !same(f)) {
            return None;
        }
        found = Some((table, Arc::clone(&entry.snapshot)));
    }
    found
}
