//! Opening one data file of a scan: skipping it, its row groups and pages by
//! statistics, choosing the Parquet leaves to read (late materialization, dictionaries),
//! and handing the stored batches to a [`FileDecoder`].

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::datatypes::{DataType, Field};
use arrow::error::ArrowError;
use datafusion::common::Result;
use datafusion::common::tree_node::TreeNode;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileOpenFuture, FileOpener};
use datafusion::physical_expr::expressions::Column;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::basic::Encoding;
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::SchemaDescriptor;
use tessera_table::{FilePredicate, FileRead, OpenFile, Pacer, TableError, Traffic};

use super::coded_filters::CodedOutput;
use super::decoder::FileDecoder;
use super::elements::ElementSource;
use super::leaves::{LeafKind, ShreddedLeaf};
use super::metrics::TesseraScanMetrics;
use super::output_source::OutputSource;
use super::pinned::{FileEntry, SnapshotFile};
use super::predicate_cache::{Consulted, PlannedRead, Recorder, ScanPredicates};
use super::prune::{Constraint, intersect_ranges, page_bounds, row_group_bounds};
use super::schedule::ScanPace;
use super::side::SideLoads;
use crate::access::extraction::{ExtractionPlan, dictionary_text};
use crate::datasource::tessera::provider::external;
use crate::json::path::PathElem;

/// Opens the files of one partition of a Tessera table scan.
pub(super) struct TesseraOpener {
    pub(super) plan: Arc<ExtractionPlan>,
    /// The outputs whose filters can be judged on dictionary codes.
    pub(super) coded: Arc<Vec<CodedOutput>>,
    pub(super) constraints: Arc<Vec<Constraint>>,
    pub(super) typed_reads: bool,
    pub(super) pace: Arc<ScanPace>,
    pub(super) sides: Arc<SideLoads>,
    pub(super) batch_size: usize,
    pub(super) metrics: TesseraScanMetrics,
    /// The predicate cache under the scan's filters (`None`: not used).
    pub(super) predicates: Option<Arc<ScanPredicates>>,
    /// The store of the scan's table, which reads a pinned snapshot's manifest.
    pub(super) store: Arc<dyn ObjectStore>,
}

impl FileOpener for TesseraOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let found = FileEntry::of(&file)?;
        let store = Arc::clone(&self.store);
        let plan = Arc::clone(&self.plan);
        let coded = Arc::clone(&self.coded);
        let constraints = Arc::clone(&self.constraints);
        let metrics = self.metrics.clone();
        let batch_size = self.batch_size;
        let typed_reads = self.typed_reads;
        let pace: Arc<dyn Pacer> = Arc::clone(&self.pace) as Arc<dyn Pacer>;
        let sides = Arc::clone(&self.sides);
        let predicates = self.predicates.clone();
        let share = Share::of(&file);
        Ok(Box::pin(async move {
            let entry = found.resolve(&store, &file.object_meta.location).await?;
            let summary = &entry.file.summary;
            // A file split over partitions is counted once, by its first share.
            let counted_once = usize::from(share.is_first());
            if !constraints.iter().all(|c| c.may_match_file(summary)) {
                metrics.files_pruned.add(counted_once);
                return Ok(futures::stream::empty().boxed());
            }
            metrics.files_scanned.add(counted_once);
            let open = entry
                .snapshot
                .open_file(&entry.file)
                .await
                .map_err(external)?;
            let column = open.schema().field(0).clone();
            let sources: Vec<OutputSource> = plan
                .outputs
                .iter()
                .map(|&(slot, output)| match typed_reads {
                    true => OutputSource::find(column.data_type(), plan.trie.path(slot), output),
                    false => OutputSource::Document,
                })
                .collect();
            let elements = match typed_reads {
                true => {
                    element_sources(&plan, &entry, column.data_type(), &sides, &metrics).await?
                }
                false => vec![None; plan.elements.len()],
            };
            let row_numbers = elements.iter().flatten().any(|e| e.needs_row_numbers());
            // Outputs read only by element accesses that typed columns answer are not
            // read themselves.
            let read: Vec<usize> = (0..sources.len())
                .filter(|&k| {
                    plan.reads_output(k)
                        || plan
                            .elements
                            .iter()
                            .zip(&elements)
                            .any(|(access, source)| access.walked == k && source.is_none())
                })
                .collect();
            let whole = plan.raw || read.iter().any(|&k| sources[k].is_document());
            if !whole {
                let skipped = sources
                    .iter()
                    .filter_map(OutputSource::typed)
                    .filter(|leaf| leaf.outliers_absent(column.name(), open.metadata()))
                    .count();
                metrics.outlier_columns_skipped.add(skipped);
            }
            let schema = open.metadata().file_metadata().schema_descr();
            let parquet_leaves = (!whole).then(|| {
                let mut leaves = leaf_columns(&sources, &read, column.name(), open.metadata());
                leaves.extend(
                    elements
                        .iter()
                        .flatten()
                        .flat_map(|e| e.parquet_leaves(column.name(), open.metadata())),
                );
                leaves.extend(relational_leaves(&plan, schema));
                leaves.sort_unstable();
                leaves.dedup();
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
            metrics
                .row_groups_scanned
                .add(row_groups.len() * counted_once);
            metrics
                .row_groups_pruned
                .add((open.metadata().num_row_groups() - row_groups.len()) * counted_once);
            let total: usize = row_groups
                .iter()
                .map(|&g| open.metadata().row_group(g).num_rows() as usize)
                .sum();
            let rows = surviving_pages(&open, &checks, &row_groups);
            if let Some(rows) = &rows {
                metrics
                    .rows_pruned
                    .add((total - rows.row_count()) * counted_once);
            }
            let planned = PlannedRead {
                location: file.object_meta.location.as_ref(),
                size: entry.file.size,
                metadata: open.metadata(),
                deleted: &entry.file.deleted,
                rows: share.select(rows, total),
                share: share.rows(total),
                row_groups,
            };
            let consulted = match &predicates {
                Some(predicates) => predicates.consult(planned, &metrics),
                None => Consulted {
                    row_groups: planned.row_groups,
                    rows: planned.rows,
                    recorder: None,
                },
            };
            let stream = open
                .read(FileRead {
                    leaves: parquet_leaves,
                    row_groups: Some(consulted.row_groups),
                    rows: consulted.rows,
                    skip_deleted: true,
                    batch_rows: Some(batch_size),
                    predicate,
                    pacer: Some(pace),
                    dictionaries,
                    row_numbers: row_numbers || consulted.recorder.is_some(),
                })
                .map_err(external)?;
            let decoder = FileDecoder::new(
                Arc::clone(&plan),
                coded,
                sources,
                elements,
                metrics.clone(),
                filters_applied,
            )?
            .with_recorder(consulted.recorder.clone());
            let traffic = Arc::clone(open.traffic());
            Ok(decoded(
                stream,
                decoder,
                consulted.recorder,
                traffic,
                metrics,
            ))
        }))
    }
}

/// The scan's batches of one file: `stored` decoded; at its end the file's traffic
/// counted and, when the whole read succeeded, the rows that passed recorded.
fn decoded(
    stored: BoxStream<'static, std::result::Result<RecordBatch, TableError>>,
    mut decoder: FileDecoder,
    recorder: Option<Arc<Recorder>>,
    traffic: Arc<Traffic>,
    metrics: TesseraScanMetrics,
) -> BoxStream<'static, Result<RecordBatch>> {
    let failing = recorder.clone();
    stored
        .map(move |batch| {
            let result = batch.map_err(external).and_then(|b| decoder.decode(&b));
            if let (Err(_), Some(recorder)) = (&result, &failing) {
                recorder.fail();
            }
            result
        })
        .chain(futures::stream::once(async move {
            metrics.count_traffic(&traffic);
            if let Some(recorder) = recorder {
                recorder.finish();
            }
            Ok(None)
        }))
        .try_filter_map(|batch| futures::future::ready(Ok(batch)))
        .boxed()
}

/// Where the file holds each element access of the plan: its side relation of the path
/// walked, else its own columns ([`ElementSource::find`]); `None` where only the text
/// of the value walked answers it.
async fn element_sources(
    plan: &ExtractionPlan,
    entry: &SnapshotFile,
    column: &DataType,
    sides: &SideLoads,
    metrics: &TesseraScanMetrics,
) -> Result<Vec<Option<ElementSource>>> {
    let mut sources = Vec::with_capacity(plan.elements.len());
    for access in &plan.elements {
        let path = plan.trie.path(plan.outputs[access.walked].0);
        let file = &entry.file;
        let rows = file.summary.rows;
        let side = sides
            .load(&entry.snapshot, &file.sides, rows, path, access, metrics)
            .await?;
        sources.push(match side {
            Some(side) => Some(ElementSource::Side(side)),
            None => ElementSource::find(column, path, access),
        });
    }
    Ok(sources)
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
    sources: &[OutputSource],
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
    sources: &[OutputSource],
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
        .relational_fields
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
    sources: &[OutputSource],
    column: &str,
    metrics: &TesseraScanMetrics,
    file: &ParquetMetaData,
) -> Result<Option<FilePredicate>> {
    let Some(outputs) = plan.filter_outputs() else {
        return Ok(None);
    };
    if outputs.is_empty() || outputs.iter().any(|&k| sources[k].is_document()) {
        return Ok(None);
    }
    let columns = leaf_columns(sources, &outputs, column, file);
    // The filters read no element access (a filter reading one is no late predicate).
    let mut decoder = FileDecoder::new(
        Arc::clone(plan),
        Arc::clone(coded),
        sources.to_vec(),
        vec![None; plan.elements.len()],
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

/// The part of a file one partition reads when a table has fewer files than partitions:
/// the provider hands each partition a byte range of the file, and the partition reads
/// the rows in the same proportion of the file's selected rows, cut at multiples of
/// [`SHARE_ROWS_ALIGN`] so that neighbouring shares seldom decode the same page. The
/// ranges cover the file without overlap, so the shares do too.
#[derive(Debug, Clone, Copy)]
struct Share {
    /// `(start, end, size)`: bytes `[start, end)` of a file of `size` bytes; `None`: the
    /// whole file.
    range: Option<(u64, u64, u64)>,
}

/// Rows a share boundary is a multiple of (the writer's rows per page).
pub const SHARE_ROWS_ALIGN: usize = 8192;

impl Share {
    fn of(file: &PartitionedFile) -> Self {
        let size = file.object_meta.size;
        let range = file.range.as_ref().and_then(|r| {
            let start = u64::try_from(r.start).ok()?;
            let end = u64::try_from(r.end).ok()?;
            (size > 0 && (start, end) != (0, size)).then_some((start, end, size))
        });
        Self { range }
    }

    fn is_first(&self) -> bool {
        self.range.is_none_or(|(start, _, _)| start == 0)
    }

    /// The row of the `total` selected rows at byte `at` of `size`, aligned; `total`
    /// itself at the file's end.
    fn boundary(at: u64, size: u64, total: usize) -> usize {
        if at >= size {
            return total;
        }
        let row = u128::from(at) * total as u128 / u128::from(size);
        let row = usize::try_from(row).expect("a row below the total fits");
        row / SHARE_ROWS_ALIGN * SHARE_ROWS_ALIGN
    }

    /// The rows of the `total` selected rows this share reads; `None` for the whole file.
    fn rows(&self, total: usize) -> Option<Range<usize>> {
        let (start, end, size) = self.range?;
        Some(Self::boundary(start, size, total)..Self::boundary(end, size, total))
    }

    /// `pages` (a selection over `total` rows, `None` for all) narrowed to this share.
    fn select(&self, pages: Option<RowSelection>, total: usize) -> Option<RowSelection> {
        let Some(rows) = self.rows(total) else {
            return pages;
        };
        let share = RowSelection::from_consecutive_ranges(std::iter::once(rows), total);
        Some(match pages {
            Some(pages) => pages.intersection(&share),
            None => share,
        })
    }
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
