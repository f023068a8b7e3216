//! The NDJSON [`FileSource`]: accepts any projection DataFusion pushes into the scan and
//! extracts the JSON paths it uses while parsing.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::physical_plan::{
    FileGroupPartitioner, FileOpener, FileScanConfig, FileSource,
};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_expr::{LexOrdering, PhysicalExpr};
use datafusion::physical_plan::filter_pushdown::{FilterPushdownPropagation, PushedDown};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder};
use datafusion::physical_plan::{DisplayFormatType, apply_expression_roots};
use object_store::ObjectStore;
use tessera_blob::s3::S3Client;
use tessera_pushdown::select_sql::Condition;

use super::aggregated::AggregatedObjects;
use super::open::{NdjsonOpener, ScanMetrics, ScanSettings};
use super::read::{Codec, Gets};
use super::select::{SelectPlan, SelectRead, SemiJoin, TopKBound, document_condition};
use crate::access::document_filter::{DocPredicate, doc_predicates};
use crate::access::extraction::ExtractionPlan;
use crate::block_cache::ScanCache;
use crate::datasource::select::SelectMetrics;

/// Scans NDJSON files whose schema is one document column (plus partition values).
#[derive(Clone)]
pub struct NdjsonSource {
    table_schema: TableSchema,
    projection: ProjectionExprs,
    batch_size: Option<usize>,
    metrics: ExecutionPlanMetricsSet,
    settings: ScanSettings,
    /// Filters pushed into the scan, decided per document.
    filters: Vec<DocPredicate>,
    /// The block cache the files are read through (`tessera.cache_dir`).
    cache: Option<ScanCache>,
    /// S3 Select for the files (`tessera.pushdown = 's3select'`).
    select: Option<SelectPushdown>,
}

/// S3 Select for a scan: the bucket's client, and conditions from the filters above the
/// scan (the pushdown rule's) besides the scan's own document predicates.
#[derive(Debug, Clone)]
pub struct SelectPushdown {
    /// The client of the scan's bucket.
    pub client: S3Client,
    /// What the filters above the scan let the store leave out.
    pub filter: Option<Condition>,
    /// The scan's output columns that the plan above reads only for whether they are
    /// NULL (`IS NOT NULL` of a `->>` access): the store's rendering of their values
    /// changes nothing read.
    pub null_tested: Vec<usize>,
    /// The Bloom join whose probe side this scan is, if any.
    pub semi_join: Option<SemiJoin>,
    /// The top-K sort whose input this scan is, if any.
    pub top_k: Option<TopKBound>,
    /// The documents each request returns at most: the scan of a top-K threshold's
    /// sample.
    pub sample_rows: Option<u64>,
    /// The objects an aggregation above the scan had the store aggregate, if any.
    pub aggregated: Option<Arc<AggregatedObjects>>,
}

impl NdjsonSource {
    /// A source over `table_schema` that outputs all its columns.
    pub fn new(table_schema: TableSchema, settings: ScanSettings) -> Self {
        let all: Vec<usize> = (0..table_schema.table_schema().fields().len()).collect();
        Self {
            projection: ProjectionExprs::from_indices(&all, table_schema.table_schema()),
            table_schema,
            batch_size: None,
            metrics: ExecutionPlanMetricsSet::new(),
            settings,
            filters: Vec::new(),
            cache: None,
            select: None,
        }
    }

    /// The same source asking S3 Select through `client`, if given.
    pub(crate) fn with_select_client(&self, client: Option<S3Client>) -> Self {
        Self {
            select: client.map(|client| SelectPushdown {
                client,
                filter: None,
                null_tested: Vec::new(),
                semi_join: None,
                top_k: None,
                sample_rows: None,
                aggregated: None,
            }),
            ..self.clone()
        }
    }

    /// The same source with `filter` pushed to S3 Select too, and the outputs that are
    /// only `null_tested` above it; `None` when it does not ask S3 Select.
    pub(crate) fn with_select_filter(
        &self,
        filter: Option<Condition>,
        null_tested: Vec<usize>,
    ) -> Option<Self> {
        let select = self.select.as_ref()?;
        Some(Self {
            select: Some(SelectPushdown {
                filter,
                null_tested,
                ..select.clone()
            }),
            ..self.clone()
        })
    }

    /// The same source as the probe side of the Bloom join `semi` (it asks S3 Select
    /// only for the documents whose key may be one of the build side's).
    pub(crate) fn with_semi_join(&self, semi: SemiJoin) -> Self {
        self.with_select_change(|select| select.semi_join = Some(semi))
    }

    /// The same source as the input of a top-K sort by `bound` (it asks S3 Select only
    /// for the documents at or beyond the sampled threshold).
    pub(crate) fn with_top_k(&self, bound: TopKBound) -> Self {
        self.with_select_change(|select| select.top_k = Some(bound))
    }

    /// The same source asking S3 Select for at most `rows` documents of each object.
    pub(crate) fn with_sample_rows(&self, rows: u64) -> Self {
        self.with_select_change(|select| select.sample_rows = Some(rows))
    }

    /// The same source under an aggregation that has the store aggregate some of its
    /// objects, told which in `objects`.
    pub(crate) fn with_aggregated(&self, objects: Arc<AggregatedObjects>) -> Self {
        self.with_select_change(|select| select.aggregated = Some(objects))
    }

    /// Whether the scan is under an aggregation the store computes.
    pub(crate) fn is_aggregated(&self) -> bool {
        self.select.as_ref().is_some_and(|s| s.aggregated.is_some())
    }

    /// The client of the bucket the scan asks S3 Select of, if it does.
    pub(crate) fn select_client(&self) -> Option<&S3Client> {
        Some(&self.select.as_ref()?.client)
    }

    /// The scan's own filters (decided per document) as a store condition that holds
    /// for exactly the documents they keep: `Some(None)` when it has none, `None` when
    /// one cannot be written so.
    pub(crate) fn exact_document_condition(&self) -> Option<Option<Condition>> {
        let extraction = self.extraction().ok()?;
        let mut parts = extraction
            .predicates
            .iter()
            .map(|(slot, output, accepted)| {
                document_condition(extraction.trie.path(*slot), *output, accepted)
            })
            .collect::<Option<Vec<Condition>>>()?;
        Some(match parts.len() {
            0 => None,
            1 => parts.pop(),
            _ => Some(Condition::And(parts)),
        })
    }

    fn with_select_change(&self, change: impl FnOnce(&mut SelectPushdown)) -> Self {
        let mut select = self.select.clone();
        if let Some(select) = &mut select {
            change(select);
        }
        Self {
            select,
            ..self.clone()
        }
    }

    /// The Bloom join whose probe side this scan is, if any.
    pub(crate) fn semi_join(&self) -> Option<&SemiJoin> {
        self.select.as_ref()?.semi_join.as_ref()
    }

    /// Whether the scan is a top-K sort's input, or a sample of one.
    pub(crate) fn in_top_k(&self) -> bool {
        self.select
            .as_ref()
            .is_some_and(|s| s.top_k.is_some() || s.sample_rows.is_some())
    }

    /// Whether the scan asks S3 Select (`tessera.pushdown`, an S3 location).
    pub(crate) fn asks_select(&self) -> bool {
        self.select.is_some()
    }

    /// The same source computing `projection` instead (over the table's columns).
    pub(crate) fn with_projection(&self, projection: ProjectionExprs) -> Self {
        Self {
            projection,
            ..self.clone()
        }
    }

    /// What the scan asks S3 Select for, if it does and its extraction lets it.
    pub(crate) fn select_plan(&self) -> Option<SelectPlan> {
        self.select_plan_of(&self.extraction().ok()?)
    }

    /// What the scan asks S3 Select for with `extraction`, its own.
    fn select_plan_of(&self, extraction: &ExtractionPlan) -> Option<SelectPlan> {
        let select = self.select.as_ref()?;
        SelectPlan::new(extraction, select.filter.clone(), &select.null_tested)
    }

    /// The same source reading its files through `cache`, if any.
    pub(crate) fn with_cache(&self, cache: Option<ScanCache>) -> Self {
        Self {
            cache,
            ..self.clone()
        }
    }

    /// The same source with other scan settings.
    pub fn with_settings(&self, settings: ScanSettings) -> Self {
        Self {
            settings,
            ..self.clone()
        }
    }

    /// The scan's settings.
    pub(crate) fn settings(&self) -> &ScanSettings {
        &self.settings
    }

    /// The document filters the scan decides while parsing.
    pub(crate) fn filters(&self) -> &[DocPredicate] {
        &self.filters
    }

    /// The same source deciding `filters` while parsing instead.
    pub(crate) fn with_filters(&self, filters: Vec<DocPredicate>) -> Self {
        Self {
            filters,
            ..self.clone()
        }
    }

    fn extraction(&self) -> Result<ExtractionPlan> {
        let schema = self.table_schema.table_schema();
        ExtractionPlan::new(
            &Arc::new(schema.field(0).clone()),
            self.table_schema.table_partition_cols(),
            &self.projection,
            &self.filters,
            &[],
        )
    }
}

impl fmt::Debug for NdjsonSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NdjsonSource")
            .field("projection", &self.projection.to_string())
            .field("settings", &self.settings)
            .finish()
    }
}

impl FileSource for NdjsonSource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        // Messages name files as users wrote them: `/abs/path` or `s3://bucket/key`.
        let store = base_config.object_store_url.as_str();
        let name_prefix = if store.starts_with("file://") {
            "/"
        } else {
            store
        };
        let counter = |name| MetricBuilder::new(&self.metrics).counter(name, partition);
        let cache = self
            .cache
            .as_ref()
            .map(|c| Arc::new(c.wrap(Arc::clone(&object_store), &self.metrics, Some(partition))));
        let metrics = ScanMetrics {
            bytes_scanned: counter("bytes_scanned"),
            lines_rejected: counter("lines_rejected"),
            gets: Gets::new(
                &self.metrics,
                partition,
                &base_config.object_store_url,
                cache.is_some(),
            ),
        };
        let extraction = self.extraction()?;
        let planned = self.select.as_ref().zip(self.select_plan_of(&extraction));
        let select = planned.map(|(pushdown, plan)| SelectRead {
            client: pushdown.client.clone(),
            plan: Arc::new(plan),
            semi_join: pushdown.semi_join.clone(),
            top_k: pushdown.top_k.clone(),
            sample_rows: pushdown.sample_rows,
            aggregated: pushdown.aggregated.clone(),
            metrics: SelectMetrics::new(&self.metrics, partition, metrics.bytes_scanned.clone()),
        });
        Ok(Arc::new(NdjsonOpener {
            plan: Arc::new(extraction),
            select,
            store: match &cache {
                Some(cached) => Arc::clone(cached) as Arc<dyn ObjectStore>,
                None => object_store,
            },
            cache,
            batch_size: self.batch_size.unwrap_or(8192),
            settings: self.settings.clone(),
            metrics,
            name_prefix: name_prefix.to_string(),
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
        "ndjson"
    }

    fn fmt_extra(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let Ok(plan) = self.extraction() else {
            return Ok(());
        };
        write!(f, ", {plan}")?;
        if self.cache.is_some() {
            write!(f, ", cache=block")?;
        }
        if let Some(select) = self.select_plan() {
            write!(f, ", {select}")?;
        }
        if let Some(semi) = self.semi_join() {
            write!(f, ", {semi}")?;
        }
        if let Some(bound) = self.select.as_ref().and_then(|s| s.top_k.as_ref()) {
            write!(f, ", {bound}")?;
        }
        if !self.filters.is_empty() {
            let filters: Vec<String> = self.filters.iter().map(|p| p.to_string()).collect();
            write!(f, ", document_filters=[{}]", filters.join(" AND "))?;
        }
        Ok(())
    }

    fn repartitioned(
        &self,
        target_partitions: usize,
        repartition_file_min_size: usize,
        output_ordering: Option<LexOrdering>,
        config: &FileScanConfig,
    ) -> Result<Option<FileScanConfig>> {
        // S3 Select reads objects whole (MinIO's JSON-lines reader takes no scan range).
        if self.select_plan().is_some() {
            return Ok(None);
        }
        // Compressed files cannot be cut into byte ranges; they stay whole, one per group.
        let compressed = config
            .file_groups
            .iter()
            .flat_map(|g| g.files())
            .any(|f| Codec::from_name(f.object_meta.location.as_ref()).is_compressed());
        if compressed {
            return Ok(None);
        }
        let groups = FileGroupPartitioner::new()
            .with_target_partitions(target_partitions)
            .with_repartition_file_min_size(repartition_file_min_size)
            .with_preserve_order_within_groups(output_ordering.is_some())
            .repartition_file_groups(&config.file_groups);
        Ok(groups.map(|file_groups| {
            let mut config = config.clone();
            config.file_groups = file_groups;
            config
        }))
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
        let mut source = self.clone();
        let pushed: Vec<PushedDown> = filters
            .iter()
            .map(|filter| match doc_predicates(filter) {
                Some(predicates) => {
                    source.filters.extend(predicates);
                    PushedDown::Yes
                }
                None => PushedDown::No,
            })
            .collect();
        let accepted = pushed.iter().any(|p| matches!(p, PushedDown::Yes));
        let result = FilterPushdownPropagation::with_parent_pushdown_result(pushed);
        Ok(if accepted {
            result.with_updated_node(Arc::new(source) as Arc<dyn FileSource>)
        } else {
            result
        })
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        apply_expression_roots(self.projection.iter().map(|p| &p.expr), f)
    }
}

impl NdjsonSource {
    /// Downcasts a generic file source.
    pub fn from_dyn(source: &Arc<dyn FileSource>) -> Option<&Self> {
        (source.as_ref() as &dyn Any).downcast_ref::<Self>()
    }
}
