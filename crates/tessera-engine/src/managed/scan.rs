//! Scanning a Tessera table: a DataFusion [`FileSource`] over one snapshot's data files.
//!
//! DataFusion pushes the query's projection and filters into the scan. Every JSON access
//! with a constant path (`j->>'$.a.b'`, `json_get_int(j, 'n')`, ...) becomes a column of
//! the scan (the same [`ExtractionPlan`] as the NDJSON scan uses), and each file answers
//! it from its own shredding schema: a path the file shreds is read as its typed Parquet
//! leaf plus the Variant binary of its outliers ([`super::leaves`]), an element of a
//! path it shreds as a list from the list's typed elements (other paths through the
//! list from the list's columns alone); a path whose first
//! key the file does not shred is found in each document's own Variant binary; any other
//! access is answered from documents reconstructed from the Variant column, for that
//! file only.
//! Filters are evaluated inside the scan on the extracted columns, after files whose
//! statistics exclude them were skipped ([`super::prune`]).

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, RecordBatch, RecordBatchOptions, StringViewArray,
    StructArray, new_null_array,
};
use arrow::compute::{and, cast_with_options, filter_record_batch};
use arrow::datatypes::{DataType, Field};
use arrow::error::ArrowError;
use datafusion::common::config::ConfigOptions;
use datafusion::common::format::DEFAULT_CAST_OPTIONS;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    FileOpenFuture, FileOpener, FileScanConfig, FileSource,
};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::projection::{ProjectionExprs, Projector};
use datafusion::physical_expr::{LexOrdering, PhysicalExpr};
use datafusion::physical_plan::filter_pushdown::{FilterPushdownPropagation, PushedDown};
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder};
use datafusion::physical_plan::{DisplayFormatType, apply_expression_roots};
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::basic::Encoding;
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::SchemaDescriptor;
use tessera_table::{DataFile, FilePredicate, FileRead, OpenFile, Pacer, Snapshot, Traffic};

use super::coded_filters::{CodedOutput, coded_mask};
use super::leaves::{
    BinaryPath, LeafKind, Served, ShreddedElement, ShreddedLeaf, SubtreePath, dictionary_values,
    read_leaf, same_dictionary, stored_codes, typed_cast,
};
use super::provider::external;
use super::prune::{Constraint, constraints, intersect_ranges, page_bounds, row_group_bounds};
use super::schedule::ScanPace;
use crate::json::output::OutputBuilder;
use crate::json::path::{PathElem, display_path};
use crate::json::{Output, Scanner};
use crate::ndjson::extract::{ExtractionPlan, dictionary_text};

/// Scans the data files of one Tessera table snapshot.
#[derive(Clone)]
pub struct TilesSource {
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
}

impl TilesSource {
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
        .with_typed_casts()
    }

    /// Per output, its JSON path when it is a text access (`j->>'$.a.b'`) and nothing
    /// else, as manifests spell paths (`$.a.b`).
    pub(super) fn text_paths(&self) -> Vec<Option<String>> {
        let Ok(plan) = self.extraction() else {
            return Vec::new();
        };
        let text_path = |expr: &Arc<dyn PhysicalExpr>| {
            let column = expr.downcast_ref::<Column>()?.index();
            let &(slot, output) = plan
                .outputs
                .get(column.checked_sub(usize::from(plan.raw))?)?;
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

impl fmt::Debug for TilesSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TilesSource")
            .field("projection", &self.projection.to_string())
            .finish_non_exhaustive()
    }
}

/// Counters of one scan partition, shown by `EXPLAIN ANALYZE`.
#[derive(Debug, Clone)]
struct TilesMetrics {
    files_scanned: Count,
    files_pruned: Count,
    row_groups_scanned: Count,
    row_groups_pruned: Count,
    /// Rows of the scanned row groups on pages the page index excluded.
    rows_pruned: Count,
    bytes_scanned: Count,
    requests: Count,
    /// Attempts the store repeated after a failure (io_uring S3 client).
    retries: Count,
    /// Duplicate requests the store sent for late ones (io_uring S3 client).
    hedges: Count,
    /// What the requests cost at S3 Standard's GET price, in billionths of a dollar.
    request_cost_nanodollars: Count,
    values_typed: Count,
    values_binary: Count,
    values_reconstructed: Count,
    /// Typed values handed on as the codes of a stored dictionary (grouping on codes,
    /// filters judged per distinct value).
    values_coded: Count,
    /// Outlier columns of read paths left unread: the file's statistics show none.
    outlier_columns_skipped: Count,
}

impl TilesMetrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        let counter = |name: &'static str| MetricBuilder::new(set).counter(name, partition);
        Self {
            files_scanned: counter("files_scanned"),
            files_pruned: counter("files_pruned"),
            row_groups_scanned: counter("row_groups_scanned"),
            row_groups_pruned: counter("row_groups_pruned"),
            rows_pruned: counter("rows_pruned"),
            bytes_scanned: counter("bytes_scanned"),
            requests: counter("requests"),
            retries: counter("retries"),
            hedges: counter("hedges"),
            request_cost_nanodollars: counter("request_cost_nanodollars"),
            values_typed: counter("values_typed"),
            values_binary: counter("values_binary"),
            values_reconstructed: counter("values_reconstructed"),
            values_coded: counter("values_coded"),
            outlier_columns_skipped: counter("outlier_columns_skipped"),
        }
    }
}

impl TilesMetrics {
    /// Adds what reading one file cost. The bill counts what the store really sent
    /// when it tells (each split part, retry and hedge is a GET of its own), else one
    /// GET per ranged read.
    fn count_traffic(&self, traffic: &Traffic) {
        let requests = traffic.requests.load(Ordering::Relaxed) as usize;
        let store = traffic.store.snapshot();
        self.requests.add(requests);
        self.retries.add(store.retries as usize);
        self.hedges.add(store.hedges as usize);
        let billed = match store.get_requests {
            0 => requests,
            sent => sent as usize,
        };
        self.request_cost_nanodollars.add(billed * GET_NANODOLLARS);
        self.bytes_scanned
            .add(traffic.bytes.load(Ordering::Relaxed) as usize);
    }
}

/// Price of one GET request on S3 Standard ($0.0004 per 1,000; seed 002, Table 1), in
/// billionths of a dollar.
const GET_NANODOLLARS: usize = 400;

impl FileSource for TilesSource {
    fn create_file_opener(
        &self,
        _object_store: Arc<dyn ObjectStore>,
        _base_config: &FileScanConfig,
        partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let constraints = match self.typed_reads {
            true => constraints(&self.filters),
            false => Vec::new(),
        };
        let plan = Arc::new(self.extraction()?);
        Ok(Arc::new(TilesOpener {
            coded: Arc::new(CodedOutput::of(&plan)?),
            plan,
            constraints: Arc::new(constraints),
            typed_reads: self.typed_reads,
            pace: Arc::clone(&self.pace),
            batch_size: self.batch_size.unwrap_or(8192),
            metrics: TilesMetrics::new(&self.metrics, partition),
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

/// The snapshot a data file belongs to, attached to its [`PartitionedFile`].
#[derive(Debug, Clone)]
pub struct SnapshotFile {
    /// The table version being read.
    pub snapshot: Arc<Snapshot>,
    /// The file, with its deletion vector and summary.
    pub file: DataFile,
}

/// Opens the files of one partition of a Tessera table scan.
struct TilesOpener {
    plan: Arc<ExtractionPlan>,
    /// The outputs whose filters can be judged on dictionary codes.
    coded: Arc<Vec<CodedOutput>>,
    constraints: Arc<Vec<Constraint>>,
    typed_reads: bool,
    pace: Arc<ScanPace>,
    batch_size: usize,
    metrics: TilesMetrics,
}

impl FileOpener for TilesOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let Some(entry) = file.extensions.get_arc::<SnapshotFile>() else {
            return Err(DataFusionError::Internal(format!(
                "{} is not a file of a Tessera table snapshot",
                file.object_meta.location
            )));
        };
        let plan = Arc::clone(&self.plan);
        let coded = Arc::clone(&self.coded);
        let constraints = Arc::clone(&self.constraints);
        let metrics = self.metrics.clone();
        let batch_size = self.batch_size;
        let typed_reads = self.typed_reads;
        let pace: Arc<dyn Pacer> = Arc::clone(&self.pace) as Arc<dyn Pacer>;
        Ok(Box::pin(async move {
            let summary = &entry.file.summary;
            if !constraints.iter().all(|c| c.may_match_file(summary)) {
                metrics.files_pruned.add(1);
                return Ok(futures::stream::empty().boxed());
            }
            metrics.files_scanned.add(1);
            let open = entry
                .snapshot
                .open_file(&entry.file)
                .await
                .map_err(external)?;
            let column = open.schema().field(0).clone();
            let sources: Vec<Source> = plan
                .outputs
                .iter()
                .map(|&(slot, _)| match typed_reads {
                    true => Source::find(column.data_type(), plan.trie.path(slot)),
                    false => Source::Document,
                })
                .collect();
            let whole = plan.raw || sources.iter().any(Source::is_document);
            if !whole {
                let skipped = sources
                    .iter()
                    .filter_map(Source::typed)
                    .filter(|leaf| leaf.outliers_absent(column.name(), open.metadata()))
                    .count();
                metrics.outlier_columns_skipped.add(skipped);
            }
            let schema = open.metadata().file_metadata().schema_descr();
            let parquet_leaves = (!whole).then(|| {
                let all: Vec<usize> = (0..sources.len()).collect();
                let mut leaves = leaf_columns(&sources, &all, column.name(), open.metadata());
                leaves.extend(relational_leaves(&plan, schema));
                leaves.sort_unstable();
                leaves
            });
            let dictionaries = match whole {
                true => Vec::new(),
                false => dictionary_leaves(&plan, &coded, &sources, column.name(), open.metadata()),
            };
            let predicate = late_predicate(
                &plan,
                &coded,
                &sources,
                column.name(),
                &metrics,
                open.metadata(),
            )?;
            let filters_applied = predicate.is_some();
            let checks = leaf_checks(&open, &column, &constraints);
            let row_groups = surviving_row_groups(&open, &checks);
            metrics.row_groups_scanned.add(row_groups.len());
            metrics
                .row_groups_pruned
                .add(open.metadata().num_row_groups() - row_groups.len());
            let rows = surviving_pages(&open, &checks, &row_groups);
            if let Some(rows) = &rows {
                let total: i64 = row_groups
                    .iter()
                    .map(|&g| open.metadata().row_group(g).num_rows())
                    .sum();
                metrics.rows_pruned.add(total as usize - rows.row_count());
            }
            let stream = open
                .read(FileRead {
                    leaves: parquet_leaves,
                    row_groups: Some(row_groups),
                    rows,
                    skip_deleted: true,
                    batch_rows: Some(batch_size),
                    predicate,
                    pacer: Some(pace),
                    dictionaries,
                })
                .map_err(external)?;
            let mut decoder = FileDecoder::new(
                Arc::clone(&plan),
                coded,
                sources,
                metrics.clone(),
                filters_applied,
            )?;
            let traffic = Arc::clone(open.traffic());
            let counted = metrics.clone();
            let batches = stream
                .map(move |batch| decoder.decode(&batch.map_err(external)?))
                .chain(futures::stream::once(async move {
                    counted.count_traffic(&traffic);
                    Ok(None)
                }))
                .try_filter_map(|batch| futures::future::ready(Ok(batch)));
            Ok(batches.boxed())
        }))
    }
}

/// Where one file holds the values of one extracted output.
#[derive(Debug, Clone)]
enum Source {
    /// A shredded path: its typed leaf (and outliers).
    Typed(ShreddedLeaf),
    /// An element of a path shredded as a list: its typed elements (and outliers).
    Element(ShreddedElement),
    /// Any other path below a shredded field: that field's columns, rebuilt as Variant.
    Subtree(SubtreePath),
    /// A path the file does not shred: the document's own Variant binary.
    Binary(BinaryPath),
    /// Anything else: the reconstructed document text.
    Document,
}

impl Source {
    /// Where `path` is in a file whose document column has type `column`.
    fn find(column: &DataType, path: &[PathElem]) -> Self {
        if let Some(leaf) = ShreddedLeaf::find(column, path) {
            return Source::Typed(leaf);
        }
        if let Some(element) = ShreddedElement::find(column, path) {
            return Source::Element(element);
        }
        if let Some(subtree) = SubtreePath::find(column, path) {
            return Source::Subtree(subtree);
        }
        BinaryPath::find(column, path).map_or(Source::Document, Source::Binary)
    }

    fn typed(&self) -> Option<&ShreddedLeaf> {
        match self {
            Source::Typed(leaf) => Some(leaf),
            _ => None,
        }
    }

    fn is_document(&self) -> bool {
        matches!(self, Source::Document)
    }

    /// The values of an access with `output`, for every row of a decoded document
    /// column; documents are read by the caller, which reconstructs them once for all
    /// outputs.
    fn read(&self, column: &StructArray, output: Output) -> Result<(ArrayRef, Served)> {
        match self {
            Source::Typed(leaf) => read_leaf(column, leaf, output),
            Source::Element(element) => element.read(column, output),
            Source::Subtree(subtree) => subtree.read(column, output),
            Source::Binary(path) => path.read(column, output),
            Source::Document => Err(DataFusionError::Internal(
                "documents are read once per batch, not per output".into(),
            )),
        }
    }

    /// The Parquet leaves it reads (none for documents, which read every leaf).
    fn parquet_leaves(&self, column: &str, file: &ParquetMetaData) -> Vec<usize> {
        let schema = file.file_metadata().schema_descr();
        match self {
            Source::Typed(leaf) => leaf.parquet_leaves(column, file),
            Source::Element(element) => element.parquet_leaves(column, schema),
            Source::Subtree(subtree) => subtree.parquet_leaves(column, schema),
            Source::Binary(path) => path.parquet_leaves(column, schema),
            Source::Document => Vec::new(),
        }
    }
}

/// The string leaves to decode as dictionaries, when the file shreds them as strings and
/// nothing reads them but typed reads (which turn codes into strings where they need
/// strings): those of the text accesses the plan casts to [`dictionary_text`] (a
/// grouping on codes), and those of the filters judged on codes where every page of the
/// leaf is dictionary-encoded (elsewhere the reader would build a dictionary by
/// hashing every value).
fn dictionary_leaves(
    plan: &ExtractionPlan,
    coded: &[CodedOutput],
    sources: &[Source],
    column: &str,
    metadata: &ParquetMetaData,
) -> Vec<usize> {
    let schema = metadata.file_metadata().schema_descr();
    let others: BTreeSet<usize> = sources
        .iter()
        .filter(|s| s.typed().is_none())
        .flat_map(|s| s.parquet_leaves(column, metadata))
        .collect();
    let string_leaf = |k: usize| {
        let leaf = sources[k].typed().filter(|l| l.kind == LeafKind::String)?;
        leaf.parquet_columns(column, schema).0
    };
    let grouped = plan
        .casts
        .iter()
        .filter(|(_, target)| *target == dictionary_text())
        .filter_map(|&(k, _)| string_leaf(k));
    let filtered = coded
        .iter()
        .filter_map(|c| string_leaf(c.output))
        .filter(|&leaf| dictionary_encoded(metadata, leaf));
    let mut leaves: Vec<usize> = grouped
        .chain(filtered)
        .filter(|leaf| !others.contains(leaf))
        .collect();
    leaves.sort_unstable();
    leaves.dedup();
    leaves
}

/// Whether every data page of Parquet leaf `leaf` in every row group is
/// dictionary-encoded.
fn dictionary_encoded(metadata: &ParquetMetaData, leaf: usize) -> bool {
    metadata.row_groups().iter().all(|group| {
        let chunk = group.column(leaf);
        chunk.dictionary_page_offset().is_some()
            && chunk.page_encoding_stats_mask().is_some_and(|mask| {
                mask.is_only(Encoding::RLE_DICTIONARY) || mask.is_only(Encoding::PLAIN_DICTIONARY)
            })
    })
}

/// The Parquet leaf columns that hold `outputs` (indices into `sources`), ascending.
fn leaf_columns(
    sources: &[Source],
    outputs: &[usize],
    column: &str,
    file: &ParquetMetaData,
) -> Vec<usize> {
    let mut indices: Vec<usize> = outputs
        .iter()
        .flat_map(|&k| sources[k].parquet_leaves(column, file))
        .collect();
    indices.sort_unstable();
    indices.dedup();
    indices
}

/// The Parquet leaves of the relational columns the projection or the filters read.
fn relational_leaves(plan: &ExtractionPlan, schema: &SchemaDescriptor) -> Vec<usize> {
    let wanted: Vec<&str> = plan
        .partition_fields
        .iter()
        .map(|f| f.name().as_str())
        .filter(|name| {
            plan.projection
                .iter()
                .map(|p| &p.expr)
                .chain(&plan.row_filters)
                .any(|e| {
                    e.exists(|n| {
                        Ok(n.downcast_ref::<Column>()
                            .is_some_and(|c| c.name() == *name))
                    })
                    .unwrap_or(true)
                })
        })
        .collect();
    (0..schema.num_columns())
        .filter(|&i| {
            let column = schema.column(i);
            column
                .path()
                .parts()
                .first()
                .is_some_and(|root| wanted.contains(&root.as_str()))
        })
        .collect()
}

/// Late materialization: when every filter reads only shredded paths of this file, the
/// Parquet reader evaluates the filters on those columns first and decodes the others
/// only for the rows that pass.
fn late_predicate(
    plan: &Arc<ExtractionPlan>,
    coded: &Arc<Vec<CodedOutput>>,
    sources: &[Source],
    column: &str,
    metrics: &TilesMetrics,
    file: &ParquetMetaData,
) -> Result<Option<FilePredicate>> {
    let Some(outputs) = plan.filter_outputs() else {
        return Ok(None);
    };
    if outputs.is_empty() || outputs.iter().any(|&k| sources[k].is_document()) {
        return Ok(None);
    }
    let columns = leaf_columns(sources, &outputs, column, file);
    let mut decoder = FileDecoder::new(
        Arc::clone(plan),
        Arc::clone(coded),
        sources.to_vec(),
        metrics.clone(),
        false,
    )?;
    let keep = move |batch: RecordBatch| -> std::result::Result<BooleanArray, ArrowError> {
        Ok(decoder.filter_mask(&batch, &outputs)?)
    };
    Ok(Some(FilePredicate {
        leaves: columns,
        keep: Box::new(keep),
    }))
}

/// A constraint statistics can judge in one file: its leaf's kind and the Parquet
/// columns of its typed values and outliers.
type LeafCheck<'a> = (&'a Constraint, LeafKind, usize, Option<usize>);

/// The constraints on paths `open` shreds, with their leaves.
fn leaf_checks<'a>(
    open: &OpenFile,
    column: &Field,
    constraints: &'a [Constraint],
) -> Vec<LeafCheck<'a>> {
    let schema = open.metadata().file_metadata().schema_descr();
    constraints
        .iter()
        .filter_map(|c| {
            let path: Vec<PathElem> = c.keys().iter().cloned().map(PathElem::Key).collect();
            let leaf = ShreddedLeaf::find(column.data_type(), &path)?;
            let (typed, value) = leaf.parquet_columns(column.name(), schema);
            Some((c, leaf.kind, typed?, value))
        })
        .collect()
}

/// The row groups of `open` whose Parquet statistics admit every constraint.
fn surviving_row_groups(open: &OpenFile, checks: &[LeafCheck<'_>]) -> Vec<usize> {
    let metadata = open.metadata();
    (0..metadata.num_row_groups())
        .filter(|&g| {
            let group = metadata.row_group(g);
            checks.iter().all(|&(c, kind, typed, value)| {
                row_group_bounds(kind, group, typed, value).is_none_or(|b| c.may_match(&b))
            })
        })
        .collect()
}

/// The rows of `row_groups` on pages whose statistics (the page index) admit every
/// constraint, as a selection over those row groups; `None` when no page is excluded.
/// Writers cluster rows by low-cardinality paths, so a test of one such path keeps a
/// few runs of pages and the reader fetches and decodes nothing else.
fn surviving_pages(
    open: &OpenFile,
    checks: &[LeafCheck<'_>],
    row_groups: &[usize],
) -> Option<RowSelection> {
    let metadata = open.metadata();
    if checks.is_empty() || metadata.offset_index().is_none() {
        return None;
    }
    let mut kept: Vec<Range<usize>> = Vec::new();
    let mut at = 0;
    for &g in row_groups {
        let rows = usize::try_from(metadata.row_group(g).num_rows()).ok()?;
        let mut group: Vec<Range<usize>> = std::iter::once(0..rows).collect();
        for &(c, kind, typed, value) in checks {
            let Some(pages) = page_bounds(kind, metadata, g, typed, value) else {
                continue;
            };
            let admitted: Vec<Range<usize>> = pages
                .into_iter()
                .filter(|(_, bounds)| c.may_match(bounds))
                .map(|(rows, _)| rows)
                .collect();
            group = intersect_ranges(&group, &admitted);
        }
        kept.extend(group.into_iter().map(|r| r.start + at..r.end + at));
        at += rows;
    }
    let selected: usize = kept.iter().map(|r| r.len()).sum();
    (selected < at).then(|| RowSelection::from_consecutive_ranges(kept.into_iter(), at))
}

/// The relational column `field` of a stored batch, as the table declares it; nulls when
/// the batch does not hold it (nothing reads it).
fn relational_column(stored: &RecordBatch, field: &Field) -> Result<ArrayRef> {
    match stored.column_by_name(field.name()) {
        Some(array) if array.data_type() == field.data_type() => Ok(Arc::clone(array)),
        Some(array) => Ok(arrow::compute::cast(array, field.data_type())?),
        None => Ok(new_null_array(field.data_type(), stored.num_rows())),
    }
}

/// What one pass of [`FileDecoder::decoded`] computes.
#[derive(Debug, Clone, Copy)]
enum Pass<'a> {
    /// Every output and cast the projection or the filters read.
    All,
    /// What the filters read: these outputs (every output when `None`) and the casts
    /// the filters read, nothing else.
    Filters(Option<&'a [usize]>),
}

/// Turns the stored batches of one file into batches of the scan's output.
struct FileDecoder {
    plan: Arc<ExtractionPlan>,
    /// Per extracted output, where this file holds its values.
    sources: Vec<Source>,
    scanner: Option<Scanner>,
    projector: Projector,
    /// Per extracted output, whether the projection or the filters still to apply read
    /// it directly (filters the reader applied already need not see it again).
    referenced: Vec<bool>,
    /// Where values are counted (every value decoded, by either pass of late
    /// materialization).
    metrics: TilesMetrics,
    /// The file's reader already applied the filters (late materialization).
    filters_applied: bool,
    /// The outputs the filters read (`None`: they read more than outputs), computed
    /// once instead of per batch.
    filter_outputs: Option<Arc<[usize]>>,
    /// The casts (indices into the plan's casts) the filters read.
    filter_casts: Arc<BTreeSet<usize>>,
    /// All-null columns handed out for outputs nothing reads, most recent last.
    placeholders: Vec<ArrayRef>,
    /// The outputs whose filters can be judged on dictionary codes.
    coded: Arc<Vec<CodedOutput>>,
    /// Per coded output, the last dictionary met and its entries' verdicts (the Parquet
    /// reader hands a column chunk's dictionary out with every batch).
    verdicts: Vec<Option<(ArrayRef, Vec<bool>)>>,
}

/// An all-null column of `rows` rows for what nothing reads: one array per type and
/// length, kept in `kept` and shared by the batches (most have the same length), not
/// zeroed afresh.
fn placeholder(kept: &mut Vec<ArrayRef>, data_type: &DataType, rows: usize) -> ArrayRef {
    let fits = |a: &ArrayRef| a.data_type() == data_type && a.len() == rows;
    if let Some(array) = kept.iter().find(|a| fits(a)) {
        return Arc::clone(array);
    }
    let array = new_null_array(data_type, rows);
    if kept.len() == MAX_PLACEHOLDERS {
        kept.remove(0);
    }
    kept.push(Arc::clone(&array));
    array
}

/// Placeholder columns a file decoder keeps (types times batch lengths in use at once).
const MAX_PLACEHOLDERS: usize = 8;

impl FileDecoder {
    fn new(
        plan: Arc<ExtractionPlan>,
        coded: Arc<Vec<CodedOutput>>,
        sources: Vec<Source>,
        metrics: TilesMetrics,
        filters_applied: bool,
    ) -> Result<Self> {
        assert_eq!(sources.len(), plan.outputs.len(), "one source per output");
        let projector = plan.projection.make_projector(&plan.decoded_schema)?;
        let scanner = sources
            .iter()
            .any(Source::is_document)
            .then(|| Scanner::new(Arc::clone(&plan.trie)));
        Ok(Self {
            filter_outputs: plan.filter_outputs().map(Arc::from),
            filter_casts: Arc::new(plan.filter_casts()),
            referenced: (0..plan.outputs.len())
                .map(|k| plan.is_referenced(k, !filters_applied))
                .collect(),
            plan,
            sources,
            scanner,
            projector,
            metrics,
            filters_applied,
            placeholders: Vec::new(),
            verdicts: vec![None; coded.len()],
            coded,
        })
    }

    /// The output rows of one stored batch (`None` when the filters removed them all).
    fn decode(&mut self, stored: &RecordBatch) -> Result<Option<RecordBatch>> {
        let filtered = if self.filters_applied || self.plan.row_filters.is_empty() {
            self.decoded(stored, Pass::All)?
        } else {
            // Filters the reader did not apply run first, on what they read, so that the
            // projection's casts (which fail on bad text) see only passing rows, as in
            // SQL.
            let (mask, probe) = match self.filter_outputs.clone() {
                Some(outputs) => (self.filter_mask(stored, &outputs)?, None),
                None => {
                    let probe = self.decoded(stored, Pass::Filters(None))?;
                    (self.mask(&probe, &[])?, Some(probe))
                }
            };
            // A probe of every output and cast is the decoded batch already.
            match probe {
                Some(probe) if self.filter_casts.len() == self.plan.casts.len() => {
                    filter_record_batch(&probe, &mask)?
                }
                _ => {
                    let passing = filter_record_batch(stored, &mask)?;
                    if passing.num_rows() == 0 {
                        return Ok(None);
                    }
                    self.decoded(&passing, Pass::All)?
                }
            }
        };
        if filtered.num_rows() == 0 {
            return Ok(None);
        }
        Ok(Some(self.projector.project_batch(&filtered)?))
    }

    /// `stored` as a batch of the decoded schema, with what `pass` asks for computed
    /// (the rest are placeholders nothing reads).
    fn decoded(&mut self, stored: &RecordBatch, pass: Pass<'_>) -> Result<RecordBatch> {
        let only = match pass {
            Pass::Filters(Some(outputs)) => Some(outputs),
            Pass::All | Pass::Filters(None) => None,
        };
        let rows = stored.num_rows();
        let column = stored
            .column_by_name(tessera_tiles::layout::COLUMN)
            .map(|c| c.as_struct());
        let wanted = |k: usize| only.is_none_or(|o| o.contains(&k));
        // The filters' pass computes just the casts the filters read: another cast of
        // the same output must not fail on a row the filters remove.
        let filter_casts = Arc::clone(&self.filter_casts);
        let wanted_cast = |c: usize| matches!(pass, Pass::All) || filter_casts.contains(&c);
        let mut typed_casts: Vec<Option<ArrayRef>> = Vec::with_capacity(self.plan.casts.len());
        for (c, (k, target)) in self.plan.casts.iter().enumerate() {
            typed_casts.push(match (self.sources[*k].typed(), column) {
                (Some(leaf), Some(column)) if wanted(*k) && wanted_cast(c) => {
                    typed_cast(column, leaf, target)?.map(|(array, served)| {
                        self.count(served);
                        if *target == dictionary_text() {
                            self.metrics.values_coded.add(served.typed);
                        }
                        array
                    })
                }
                _ => None,
            });
        }
        // An output's own column is built when something reads it, or a cast of it
        // that the typed leaf could not answer.
        let needed = |k: usize| {
            wanted(k)
                && (self.referenced[k]
                    || self
                        .plan
                        .casts
                        .iter()
                        .zip(&typed_casts)
                        .any(|((source, _), typed)| *source == k && typed.is_none()))
        };
        let needs_documents = self.plan.raw && only.is_none()
            || self
                .sources
                .iter()
                .enumerate()
                .any(|(k, l)| l.is_document() && needed(k));
        let documents = match column {
            Some(column) if needs_documents => {
                Some(tessera_tiles::read_json(column).map_err(external)?)
            }
            _ => None,
        };
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.plan.decoded_schema.fields().len());
        if self.plan.raw {
            arrays.push(match &documents {
                Some(documents) if only.is_none() => {
                    arrow::compute::cast(documents, &DataType::Utf8View)?
                }
                _ => Arc::new(StringViewArray::from_iter_values(std::iter::repeat_n(
                    "", rows,
                ))),
            });
        }
        let base = arrays.len();
        let mut fallback: Vec<(usize, OutputBuilder)> = Vec::new();
        for (k, (source, &(_, output))) in self.sources.iter().zip(&self.plan.outputs).enumerate() {
            match (source, column) {
                _ if !needed(k) => arrays.push(placeholder(
                    &mut self.placeholders,
                    &output.data_type(),
                    rows,
                )),
                (source, Some(column)) if !source.is_document() => {
                    let (array, served) = source.read(column, output)?;
                    self.count(served);
                    arrays.push(array);
                }
                _ => {
                    fallback.push((k, OutputBuilder::new(output, rows)));
                    arrays.push(new_null_array(&output.data_type(), 0));
                }
            }
        }
        if !fallback.is_empty() {
            self.extract_from_documents(documents.as_deref(), rows, &mut fallback)?;
            for (k, mut builder) in fallback {
                arrays[base + k] = builder.finish();
            }
        }
        for field in &self.plan.partition_fields {
            arrays.push(relational_column(stored, field)?);
        }
        for (c, ((k, target), typed)) in self.plan.casts.iter().zip(typed_casts).enumerate() {
            arrays.push(match typed {
                Some(array) => array,
                None if !wanted(*k) || !wanted_cast(c) => {
                    placeholder(&mut self.placeholders, target, rows)
                }
                // As SQL's CAST would: an unparsable text is an error, not NULL.
                None => cast_with_options(&arrays[base + k], target, &DEFAULT_CAST_OPTIONS)?,
            });
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.plan.decoded_schema),
            arrays,
            &options,
        )?)
    }

    fn count(&self, served: Served) {
        self.metrics.values_typed.add(served.typed);
        self.metrics.values_binary.add(served.binary);
    }

    /// Fills the builders of outputs a file does not shred from its documents.
    fn extract_from_documents(
        &mut self,
        documents: Option<&dyn Array>,
        rows: usize,
        builders: &mut [(usize, OutputBuilder)],
    ) -> Result<()> {
        let scanner = self
            .scanner
            .as_mut()
            .expect("a scanner exists for fallbacks");
        let Some(documents) = documents else {
            builders
                .iter_mut()
                .for_each(|(_, b)| (0..rows).for_each(|_| b.append_null()));
            return Ok(());
        };
        let documents = documents.as_string::<i32>();
        for row in 0..rows {
            if documents.is_null(row) {
                builders.iter_mut().for_each(|(_, b)| b.append_null());
                continue;
            }
            let doc = documents.value(row);
            scanner.scan(doc.as_bytes()).map_err(|e| {
                DataFusionError::Internal(format!("a stored document does not parse: {e:?}"))
            })?;
            for (k, builder) in builders.iter_mut() {
                let (slot, _) = self.plan.outputs[*k];
                builder.append(doc, scanner.get(slot));
            }
        }
        self.metrics.values_reconstructed.add(rows * builders.len());
        Ok(())
    }

    /// Which rows of a stored batch pass every pushed filter, when the filters read the
    /// extracted `outputs` and their casts: filters on dictionary-encoded paths are
    /// judged on the codes ([`CodedOutput`]), the others on the outputs they read.
    fn filter_mask(&mut self, stored: &RecordBatch, outputs: &[usize]) -> Result<BooleanArray> {
        let column = stored
            .column_by_name(tessera_tiles::layout::COLUMN)
            .map(|c| c.as_struct());
        let mut judged = vec![false; self.plan.row_filters.len()];
        let mut coded_outputs = Vec::new();
        let mut mask: Option<BooleanArray> = None;
        for (coded, known) in self.coded.iter().zip(&mut self.verdicts) {
            let leaf = self.sources[coded.output].typed();
            let Some((codes, dictionary, served)) = column
                .zip(leaf)
                .map(|(column, leaf)| stored_codes(column, leaf))
                .transpose()?
                .flatten()
            else {
                continue;
            };
            if !known
                .as_ref()
                .is_some_and(|(last, _)| same_dictionary(last, &dictionary))
            {
                let (_, output) = self.plan.outputs[coded.output];
                let leaf = leaf.expect("codes come from a typed leaf");
                let values = dictionary_values(&dictionary, leaf, output)?;
                *known = Some((dictionary, coded.verdicts(&values)?));
            }
            let (_, verdicts) = known.as_ref().expect("verdicts were just recorded");
            self.metrics.values_typed.add(served.typed);
            self.metrics.values_coded.add(served.typed);
            mask = Some(conjoin(mask, coded_mask(&codes, verdicts))?);
            coded.filters.iter().for_each(|&f| judged[f] = true);
            coded_outputs.push(coded.output);
        }
        if judged.iter().all(|&j| j) {
            return Ok(mask.expect("there are filters"));
        }
        let rest: Vec<usize> = outputs
            .iter()
            .copied()
            .filter(|k| !coded_outputs.contains(k))
            .collect();
        let decoded = self.decoded(stored, Pass::Filters(Some(&rest)))?;
        let others = self.mask(&decoded, &judged)?;
        conjoin(mask, others)
    }

    /// Which rows of a decoded batch pass every pushed filter not already `judged`
    /// (indices into the row filters; all rows when every filter is).
    fn mask(&self, batch: &RecordBatch, judged: &[bool]) -> Result<BooleanArray> {
        let mut mask: Option<BooleanArray> = None;
        for (f, filter) in self.plan.row_filters.iter().enumerate() {
            if judged.get(f).copied().unwrap_or(false) {
                continue;
            }
            let passed = filter.evaluate(batch)?.into_array(batch.num_rows())?;
            mask = Some(conjoin(mask, passed.as_boolean().clone())?);
        }
        Ok(mask.unwrap_or_else(|| BooleanArray::from(vec![true; batch.num_rows()])))
    }
}

/// `mask AND passed` (`passed` alone when there is no mask yet).
fn conjoin(mask: Option<BooleanArray>, passed: BooleanArray) -> Result<BooleanArray> {
    Ok(match mask {
        None => passed,
        Some(mask) => and(&mask, &passed)?,
    })
}
