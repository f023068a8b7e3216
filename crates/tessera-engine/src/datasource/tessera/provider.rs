//! A Tessera table as a DataFusion table: scans read one snapshot's data files (deleted
//! rows removed) through [`TesseraSource`], which answers JSON accesses from the shredded
//! columns and reads relational columns as stored; filters on relational columns skip
//! files by the manifest's statistics; INSERT appends through [`TesseraSink`]; DELETE
//! records deletion vectors.

use std::fmt;
use std::sync::Arc;

use std::cmp::Ordering;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result, ScalarValue, not_impl_err};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::FileSource;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, Operator, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::projection::ProjectionExec;
use tessera_cache::block::CachedStore;
use tessera_table::{DataFile, Snapshot, Table};
use tessera_tiles::summary::StatValue;

use super::scan::{SHARE_ROWS_ALIGN, ScanPredicateCache, SnapshotFile, TesseraSource};
use super::write::sink::{TesseraSink, WriteProgress, WriteReport};
use crate::block_cache::ScanCache;
use crate::options::TesseraOptions;

/// A table of JSON documents stored as JSON tiles under one prefix, with optional
/// relational columns next to the documents.
pub struct TesseraTable {
    table: Arc<Table>,
    url: ObjectStoreUrl,
    /// The SQL schema, in the table's column order.
    schema: SchemaRef,
    /// The schema scans work in: the document column first, then the relational
    /// columns in table order (the layout of the data files).
    scan_schema: SchemaRef,
    /// Position in `scan_schema` of each column of `schema`.
    scan_index: Vec<usize>,
    progress: Arc<WriteProgress>,
    last_write: Arc<parking_lot::Mutex<Option<WriteReport>>>,
}

impl fmt::Debug for TesseraTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TesseraTable").finish_non_exhaustive()
    }
}

impl TesseraTable {
    /// The SQL view of `table`, whose store the session knows as `url`: its columns in
    /// order, the document column as non-null JSON text, relational columns nullable
    /// with their Arrow types.
    pub fn new(table: Arc<Table>, url: ObjectStoreUrl) -> Result<Self> {
        let mut fields = Vec::with_capacity(table.columns().len());
        let mut document = None;
        for (i, column) in table.columns().iter().enumerate() {
            match column
                .data_type()
                .map_err(|e| DataFusionError::Plan(e.to_string()))?
            {
                None => {
                    document = Some(i);
                    fields.push(Field::new(&column.name, DataType::Utf8View, false));
                }
                Some(ty) => fields.push(Field::new(&column.name, ty, true)),
            }
        }
        let document = document.ok_or_else(|| {
            DataFusionError::Internal("a Tessera table without a document column".into())
        })?;
        let mut scan_index: Vec<usize> = (0..fields.len())
            .map(|i| usize::from(i < document) + i)
            .collect();
        scan_index[document] = 0;
        let mut scan_fields = vec![fields[document].clone()];
        scan_fields.extend(
            fields
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != document)
                .map(|(_, f)| f.clone()),
        );
        Ok(Self {
            table,
            url,
            schema: Arc::new(Schema::new(fields)),
            scan_schema: Arc::new(Schema::new(scan_fields)),
            scan_index,
            progress: Arc::default(),
            last_write: Arc::default(),
        })
    }

    /// The name of the document column.
    pub fn schema_column(&self) -> &str {
        self.scan_schema.field(0).name()
    }

    /// The table underneath.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// Live counters of writes into this table (for progress bars).
    pub fn progress(&self) -> &Arc<WriteProgress> {
        &self.progress
    }

    /// What the last completed write committed.
    pub fn last_write(&self) -> Option<WriteReport> {
        self.last_write.lock().clone()
    }

    /// Whether `file` may hold a row passing every filter, judged from the manifest's
    /// statistics of relational columns.
    fn may_match(&self, file: &DataFile, filters: &[ColumnFilter]) -> bool {
        filters.iter().all(|f| f.may_match(file))
    }
}

#[async_trait]
impl TableProvider for TesseraTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        // Filters on relational columns skip files by the manifest's statistics; the
        // rows are still filtered above the scan.
        Ok(filters
            .iter()
            .map(|f| match ColumnFilter::from_expr(f, &self.schema) {
                Some(_) => TableProviderFilterPushDown::Inexact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let snapshot = self.table.snapshot().await.map_err(external)?;
        let typed_reads = state
            .config_options()
            .extensions
            .get::<TesseraOptions>()
            .is_none_or(|o| o.typed_reads);
        let column_filters: Vec<ColumnFilter> = match typed_reads {
            true => filters
                .iter()
                .filter_map(|f| ColumnFilter::from_expr(f, &self.schema))
                .collect(),
            false => Vec::new(),
        };
        let table_schema = TableSchema::from(Arc::clone(&self.scan_schema));
        let cache = ScanCache::for_scan(state, &self.url);
        let source = TesseraSource::new(table_schema, typed_reads)
            .with_block_cache(cache.is_some())
            .with_predicate_cache(ScanPredicateCache::for_scan(state, &self.url));
        let snapshot = Arc::new(match cache {
            Some(cache) => {
                let cached = cache.wrap(Arc::clone(self.table.store()), source.metrics(), None);
                observe_files(&cached, &snapshot);
                snapshot.with_store(Arc::new(cached))
            }
            None => snapshot,
        });
        let files: Vec<&DataFile> = snapshot
            .files()
            .iter()
            .filter(|f| self.may_match(f, &column_filters))
            .collect();
        let partitions = state.config().target_partitions().max(1);
        let groups = spread(files, partitions, |file| {
            let key = self.table.key(&file.path);
            let mut part = PartitionedFile::new(key.to_string(), file.size);
            part.extensions.insert(SnapshotFile {
                snapshot: Arc::clone(&snapshot),
                file: file.clone(),
            });
            part
        });
        let wanted: Vec<usize> = match projection {
            Some(p) => p.iter().map(|&i| self.scan_index[i]).collect(),
            None => self.scan_index.clone(),
        };
        let all: Vec<usize> = (0..self.scan_schema.fields().len()).collect();
        // The scan pushes filters into itself only while it outputs its columns as they
        // are, so a reordering or narrowing of relational tables is a projection on top.
        let (scan_projection, reorder) = match wanted == all || wanted.is_empty() {
            true => (Some(wanted), None),
            false => (None, Some(wanted)),
        };
        let config = FileScanConfigBuilder::new(self.url.clone(), Arc::new(source))
            .with_file_groups(groups)
            .with_projection_indices(scan_projection)?
            .with_limit(limit)
            .build();
        let scan = DataSourceExec::from_data_source(config);
        let Some(reorder) = reorder else {
            return Ok(scan);
        };
        let exprs: Vec<(Arc<dyn PhysicalExpr>, String)> = reorder
            .into_iter()
            .map(|i| {
                let name = self.scan_schema.field(i).name().clone();
                (
                    Arc::new(Column::new(&name, i)) as Arc<dyn PhysicalExpr>,
                    name,
                )
            })
            .collect();
        Ok(Arc::new(ProjectionExec::try_new(exprs, scan)?))
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return not_impl_err!(
                "{insert_op} is not supported on Tessera tables; use INSERT INTO"
            );
        }
        let sink = TesseraSink::new(
            Arc::clone(&self.table),
            self.url.clone(),
            Arc::clone(&self.schema),
            Arc::clone(&self.progress),
            Arc::clone(&self.last_write),
        )?;
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}

/// Tells `cached` that the snapshot's data and side files are immutable, with their
/// sizes from the manifest, so their ranges are cached under path and size.
fn observe_files(cached: &CachedStore, snapshot: &Snapshot) {
    for file in snapshot.files() {
        cached.observe_immutable(&snapshot.key(&file.path), file.size);
        for side in &file.sides {
            cached.observe_immutable(&snapshot.key(&side.path), side.size);
        }
    }
}

/// The stored batch as the table's SQL schema `schema`: the Variant column rendered as
/// JSON text for the document column (the schema's only non-nullable column), and the
/// relational columns as stored.
pub(super) fn json_batch(schema: &SchemaRef, stored: RecordBatch) -> Result<RecordBatch> {
    let columns = schema
        .fields()
        .iter()
        .map(|field| -> Result<ArrayRef> {
            if !field.is_nullable() {
                let document = stored
                    .column_by_name(tessera_tiles::layout::COLUMN)
                    .ok_or_else(|| missing(tessera_tiles::layout::COLUMN))?;
                let text = tessera_tiles::read_json(document.as_ref()).map_err(external)?;
                return Ok(arrow::compute::cast(&text, &DataType::Utf8View)?);
            }
            let stored = stored
                .column_by_name(field.name())
                .ok_or_else(|| missing(field.name()))?;
            Ok(arrow::compute::cast(stored, field.data_type())?)
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(stored.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &options,
    )?)
}

fn missing(column: &str) -> DataFusionError {
    DataFusionError::Execution(format!("a data file of the table has no column '{column}'"))
}

pub(super) fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// A comparison of a relational column with a constant, which can rule out files whose
/// statistics in the manifest exclude it.
#[derive(Debug, Clone)]
pub(super) struct ColumnFilter {
    column: String,
    op: Operator,
    value: StatValue,
}

impl ColumnFilter {
    /// `column <op> constant` (either side) with `=`, `<`, `<=`, `>`, `>=` on a
    /// relational column of `schema` with an integer, float, string or boolean constant.
    fn from_expr(expr: &Expr, schema: &Schema) -> Option<Self> {
        let Expr::BinaryExpr(binary) = expr else {
            return None;
        };
        let (column, op, literal) = match (binary.left.as_ref(), binary.right.as_ref()) {
            (Expr::Column(c), Expr::Literal(v, _)) => (c, binary.op, v),
            (Expr::Literal(v, _), Expr::Column(c)) => (c, binary.op.swap()?, v),
            _ => return None,
        };
        if !matches!(
            op,
            Operator::Eq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
        ) {
            return None;
        }
        let field = schema.field_with_name(&column.name).ok()?;
        // The document column holds JSON text, judged by its paths, not as a string.
        if !field.is_nullable() {
            return None;
        }
        let value = stat_value(literal)?;
        Some(Self {
            column: column.name.clone(),
            op,
            value,
        })
    }

    /// False only when the file's statistics prove no row passes.
    fn may_match(&self, file: &DataFile) -> bool {
        let Some(stats) = file.summary.columns.iter().find(|c| c.name == self.column) else {
            return true;
        };
        // A comparison is never true on NULL.
        if stats.null_count == file.summary.rows {
            return false;
        }
        let (Some(min), Some(max)) = (&stats.min, &stats.max) else {
            return true;
        };
        let cmp = |bound: &StatValue| compare(bound, &self.value);
        let above_min = |strict: bool| match cmp(min) {
            Some(Ordering::Less) => true,
            Some(Ordering::Equal) => !strict,
            Some(Ordering::Greater) => false,
            None => true,
        };
        // A truncated maximum is a prefix of the real one, which may be larger.
        let below_max = |strict: bool| {
            stats.max_truncated
                || match cmp(max) {
                    Some(Ordering::Greater) => true,
                    Some(Ordering::Equal) => !strict,
                    Some(Ordering::Less) => false,
                    None => true,
                }
        };
        match self.op {
            Operator::Eq => above_min(false) && below_max(false),
            Operator::Lt => above_min(true),
            Operator::LtEq => above_min(false),
            Operator::Gt => below_max(true),
            Operator::GtEq => below_max(false),
            _ => true,
        }
    }
}

/// A SQL constant as a statistics value, for the types statistics are kept for.
fn stat_value(value: &ScalarValue) -> Option<StatValue> {
    match value {
        ScalarValue::Int8(Some(v)) => Some(StatValue::Int(i64::from(*v))),
        ScalarValue::Int16(Some(v)) => Some(StatValue::Int(i64::from(*v))),
        ScalarValue::Int32(Some(v)) => Some(StatValue::Int(i64::from(*v))),
        ScalarValue::Int64(Some(v)) => Some(StatValue::Int(*v)),
        ScalarValue::UInt8(Some(v)) => Some(StatValue::Int(i64::from(*v))),
        ScalarValue::UInt16(Some(v)) => Some(StatValue::Int(i64::from(*v))),
        ScalarValue::UInt32(Some(v)) => Some(StatValue::Int(i64::from(*v))),
        ScalarValue::UInt64(Some(v)) => i64::try_from(*v).ok().map(StatValue::Int),
        ScalarValue::Float32(Some(v)) if !v.is_nan() => Some(StatValue::Float(f64::from(*v))),
        ScalarValue::Float64(Some(v)) if !v.is_nan() => Some(StatValue::Float(*v)),
        ScalarValue::Boolean(Some(v)) => Some(StatValue::Bool(*v)),
        ScalarValue::Utf8(Some(v))
        | ScalarValue::Utf8View(Some(v))
        | ScalarValue::LargeUtf8(Some(v)) => Some(StatValue::String(v.clone())),
        _ => None,
    }
}

/// The order of two statistics values of the same kind (`None` across kinds).
fn compare(a: &StatValue, b: &StatValue) -> Option<Ordering> {
    match (a, b) {
        (StatValue::Int(a), StatValue::Int(b)) => Some(a.cmp(b)),
        (StatValue::Float(a), StatValue::Float(b)) => a.partial_cmp(b),
        (StatValue::String(a), StatValue::String(b)) => Some(a.as_str().cmp(b.as_str())),
        (StatValue::Bool(a), StatValue::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// The files to scan in at most `partitions` file groups, round-robin. When there are
/// fewer files than partitions, each file is split into shares (byte ranges, which the
/// scan reads as the same proportion of the file's rows) of at least
/// [`SHARE_ROWS_ALIGN`] rows, so that a table of one large file keeps every core busy.
fn spread(
    files: Vec<&DataFile>,
    partitions: usize,
    part: impl Fn(&DataFile) -> PartitionedFile,
) -> Vec<FileGroup> {
    assert!(partitions > 0, "at least one partition");
    let per_file = match files.len() {
        n if n == 0 || n >= partitions => 1,
        n => partitions.div_ceil(n),
    };
    let mut pieces: Vec<PartitionedFile> = Vec::new();
    for file in files {
        let rows = usize::try_from(file.summary.rows).unwrap_or(usize::MAX);
        let shares = per_file.min(rows / SHARE_ROWS_ALIGN).max(1);
        let whole = part(file);
        if shares == 1 {
            pieces.push(whole);
            continue;
        }
        let size = u128::from(file.size);
        let at = |k: usize| i64::try_from(size * k as u128 / shares as u128).unwrap_or(i64::MAX);
        pieces.extend((0..shares).map(|k| whole.clone().with_range(at(k), at(k + 1))));
    }
    let count = partitions.min(pieces.len()).max(1);
    let mut groups: Vec<Vec<PartitionedFile>> = vec![Vec::new(); count];
    for (i, piece) in pieces.into_iter().enumerate() {
        groups[i % count].push(piece);
    }
    groups.into_iter().map(FileGroup::new).collect()
}
