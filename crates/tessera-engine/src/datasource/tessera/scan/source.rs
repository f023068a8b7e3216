//! The scan's [`FileSource`]: what DataFusion pushed into it (projection, filters), the
//! extraction plan derived from them, and how `EXPLAIN` shows it.

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::Field;
use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::physical_plan::{FileOpener, FileScanConfig, FileSource};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_expr::{LexOrdering, PhysicalExpr};
use datafusion::physical_plan::filter_pushdown::{FilterPushdownPropagation, PushedDown};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{DisplayFormatType, apply_expression_roots};
use object_store::ObjectStore;

use super::coded_filters::CodedOutput;
use super::metrics::TesseraScanMetrics;
use super::opener::TesseraOpener;
use super::predicate_cache::ScanPredicateCache;
use super::prune::{Constraint, constraints};
use super::schedule::ScanPace;
use super::side::SideLoads;
use crate::access::extraction::ExtractionPlan;
use crate::json::Output;
use crate::json::path::display_path;

/// Scans the data files of one Tessera table snapshot.
#[derive(Clone)]
pub struct TesseraSource {
    table_schema: TableSchema,
    projection: ProjectionExprs,
    /// Filters over the table schema, applied inside the scan.
    filters: Vec<Arc<dyn PhysicalExpr>>,
    batch_size: Option<usize>,
    metrics: ExecutionPlanMetricsSet,
    /// Read shredded paths from typed columns and skip files by statistics.
    typed_reads: bool,
    /// How far this scan's files fetch ahead (shared by its partitions).
    pace: Arc<ScanPace>,
    /// The side relations loaded (shared by its partitions).
    sides: Arc<SideLoads>,
    /// Whether the files are read through the block cache (`tessera.cache_dir`).
    block_cache: bool,
    /// The predicate cache the scan consults and fills (`tessera.cache_dir`).
    predicate_cache: Option<ScanPredicateCache>,
}

impl TesseraSource {
    /// A source over `table_schema` (the single document column) that outputs it whole;
    /// with `typed_reads` false every access is answered from reconstructed documents
    /// and no file is skipped.
    pub fn new(table_schema: TableSchema, typed_reads: bool) -> Self {
        let all: Vec<usize> = (0..table_schema.table_schema().fields().len()).collect();
        Self {
            projection: ProjectionExprs::from_indices(&all, table_schema.table_schema()),
            table_schema,
            filters: Vec::new(),
            batch_size: None,
            metrics: ExecutionPlanMetricsSet::new(),
            typed_reads,
            pace: Arc::default(),
            sides: Arc::default(),
            block_cache: false,
            predicate_cache: None,
        }
    }

    /// The same source, shown in EXPLAIN as reading through the block cache when
    /// `block_cache` (the snapshot's store does the reading; the scan's metrics count
    /// its hits).
    pub fn with_block_cache(self, block_cache: bool) -> Self {
        Self {
            block_cache,
            ..self
        }
    }

    /// The same source, skipping row groups and rows by `cache`'s entries and recording
    /// the rows that pass its filters there.
    pub(crate) fn with_predicate_cache(self, cache: Option<ScanPredicateCache>) -> Self {
        Self {
            predicate_cache: cache,
            ..self
        }
    }

    /// The filters pushed into the scan, over the table schema.
    pub(crate) fn filters(&self) -> &[Arc<dyn PhysicalExpr>] {
        &self.filters
    }

    /// The same source with `filters` (over the table schema) pushed into it: a scan
    /// decoded in another process, whose filters travelled with it.
    pub(crate) fn with_filters(self, filters: Vec<Arc<dyn PhysicalExpr>>) -> Self {
        Self { filters, ..self }
    }

    /// Whether shredded paths are read from typed columns.
    pub(crate) fn typed_reads(&self) -> bool {
        self.typed_reads
    }

    /// The same scan of the same files computing `projection` (over the table schema)
    /// under only `filters`: the region cache's writing scan, which outputs a region's
    /// columns and rows. Its metrics and fetch-ahead state are its own.
    pub(crate) fn with_scan(
        &self,
        projection: ProjectionExprs,
        filters: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Self {
        Self {
            projection,
            filters,
            metrics: ExecutionPlanMetricsSet::new(),
            pace: Arc::default(),
            sides: Arc::default(),
            ..self.clone()
        }
    }

    fn extraction(&self) -> Result<ExtractionPlan> {
        let schema = self.table_schema.table_schema();
        // Relational columns follow the document column; the plan carries them through
        // like partition values, read per file by `relational_leaves`.
        let relational: Vec<Arc<Field>> = schema.fields().iter().skip(1).cloned().collect();
        ExtractionPlan::new(
            &Arc::new(schema.field(0).clone()),
            &relational,
            &self.projection,
            &[],
            &self.filters,
        )?
        .with_typed_casts()?
        .with_element_accesses()
    }

    /// Per output, its JSON path when it is a text access (`j->>'$.a.b'`) and nothing
    /// else, as manifests spell paths (`$.a.b`).
    pub(crate) fn text_paths(&self) -> Vec<Option<String>> {
        let Ok(plan) = self.extraction() else {
            return Vec::new();
        };
        let text_path = |expr: &Arc<dyn PhysicalExpr>| {
            let column = expr.downcast_ref::<Column>()?.index();
            let &(slot, output) = plan.outputs.get(plan.layout.output_at(column)?)?;
            (output == Output::Text).then(|| display_path(plan.trie.path(slot)))
        };
        plan.projection.iter().map(|p| text_path(&p.expr)).collect()
    }

    /// Whether the scan still outputs the table's columns as they are, so that filters
    /// offered to it are expressions over the table schema.
    fn outputs_table_columns(&self) -> bool {
        self.projection.iter().enumerate().all(|(i, p)| {
            p.expr
                .downcast_ref::<Column>()
                .is_some_and(|c| c.index() == i)
        })
    }
}

impl fmt::Debug for TesseraSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TesseraSource")
            .field("projection", &self.projection.to_string())
            .finish_non_exhaustive()
    }
}

impl FileSource for TesseraSource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        _base_config: &FileScanConfig,
        partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let constraints = match self.typed_reads {
            true => constraints(&self.filters),
            false => Vec::new(),
        };
        let plan = Arc::new(self.extraction()?);
        Ok(Arc::new(TesseraOpener {
            coded: Arc::new(CodedOutput::of(&plan)?),
            plan,
            constraints: Arc::new(constraints),
            typed_reads: self.typed_reads,
            pace: Arc::clone(&self.pace),
            sides: Arc::clone(&self.sides),
            batch_size: self.batch_size.unwrap_or(8192),
            metrics: TesseraScanMetrics::new(&self.metrics, partition),
            predicates: self
                .predicate_cache
                .as_ref()
                .and_then(|cache| cache.for_filters(&self.filters))
                .map(Arc::new),
            store: object_store,
        }))
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(Self {
            batch_size: Some(batch_size),
            ..self.clone()
        })
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        Some(&self.projection)
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        "tessera"
    }

    fn fmt_extra(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let Ok(plan) = self.extraction() else {
            return Ok(());
        };
        write!(f, ", {plan}, typed_reads={}", self.typed_reads)?;
        if self.block_cache {
            write!(f, ", cache=block")?;
        }
        let pruning: Vec<String> = constraints(&self.filters)
            .iter()
            .map(Constraint::to_string)
            .collect();
        if !pruning.is_empty() {
            write!(f, ", pruning=[{}]", pruning.join(" AND "))?;
        }
        Ok(())
    }

    fn repartitioned(
        &self,
        _target_partitions: usize,
        _repartition_file_min_size: usize,
        _output_ordering: Option<LexOrdering>,
        _config: &FileScanConfig,
    ) -> Result<Option<FileScanConfig>> {
        // Files are the unit of work; the table provider already spread them.
        Ok(None)
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn FileSource>>> {
        let merged = self.projection.try_merge(projection)?;
        Ok(Some(Arc::new(Self {
            projection: merged,
            ..self.clone()
        })))
    }

    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        if !self.outputs_table_columns() || filters.is_empty() {
            return Ok(FilterPushdownPropagation::with_parent_pushdown_result(
                vec![PushedDown::No; filters.len()],
            ));
        }
        let mut source = self.clone();
        source.filters.extend(filters.iter().cloned());
        Ok(FilterPushdownPropagation::with_parent_pushdown_result(vec![
            PushedDown::Yes;
            filters.len()
        ])
        .with_updated_node(Arc::new(source) as Arc<dyn FileSource>))
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        apply_expression_roots(
            self.projection.iter().map(|p| &p.expr).chain(&self.filters),
            f,
        )
    }
}
