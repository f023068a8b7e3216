//! Skipping data files and row groups that cannot hold a row a filter accepts.
//!
//! Filters pushed into a Tessera table scan are split into conjuncts; those of the form
//! `access <op> literal`, `access IN (literals)` or `access IS NOT NULL` (an access being
//! a JSON access with a constant key path, possibly cast to a number) are *constraints*.
//! Every constraint is null-rejecting, so a file (or row group) can be skipped when its
//! statistics show that no value of the path can satisfy it: the path is absent or null
//! in every document, or every typed value lies outside the bounds and no value sits in
//! the Variant binary (JSON Tiles, SIGMOD 2021, §4.3 step 9: skip only for null-rejecting uses;
//! `COUNT(*)` and `IS NULL` are never constraints, so they stay exact).

use std::cmp::Ordering;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CastExpr, InListExpr, IsNotNullExpr, Literal,
};
use datafusion::physical_expr::split_conjunction;
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::page_index::offset_index::OffsetIndexMetaData;
use parquet::file::statistics::Statistics;
use tessera_tiles::keypaths::json_path;
use tessera_tiles::summary::{FileSummary, LeafType, ShreddedPath, StatValue};

use super::leaves::LeafKind;
use crate::access::pushable::pushable_access;
use crate::json::Output;
use crate::json::path::{PathElem, display_path};

/// A null-rejecting test of one JSON key path.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Constraint {
    /// The object keys from the document root.
    keys: Vec<String>,
    /// How the access renders the value.
    output: Output,
    /// The access is cast to a number before the test (`(j->>'n')::BIGINT > 5`).
    numeric_cast: bool,
    test: Test,
}

#[derive(Debug, Clone, PartialEq)]
enum Test {
    /// `value <op> literal` with `op` one of `= < <= > >=`.
    Compare(Operator, StatValue),
    /// `value IN (literals)`.
    In(Vec<StatValue>),
    /// `value IS NOT NULL`.
    NotNull,
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path: Vec<PathElem> = self.keys.iter().cloned().map(PathElem::Key).collect();
        write!(f, "{}", display_path(&path))?;
        match &self.test {
            Test::Compare(op, v) => write!(f, " {op} {}", stat_text(v)),
            Test::In(values) => {
                let values: Vec<String> = values.iter().map(stat_text).collect();
                write!(f, " IN ({})", values.join(", "))
            }
            Test::NotNull => write!(f, " IS NOT NULL"),
        }
    }
}

fn stat_text(value: &StatValue) -> String {
    match value {
        StatValue::String(s) => format!("'{s}'"),
        StatValue::Int(v) => v.to_string(),
        StatValue::Float(v) => v.to_string(),
        StatValue::Bool(v) => v.to_string(),
    }
}

/// The constraints among the conjuncts of `filters` (expressions over the table schema,
/// the document column being column 0).
pub(super) fn constraints(filters: &[Arc<dyn PhysicalExpr>]) -> Vec<Constraint> {
    filters
        .iter()
        .flat_map(|f| split_conjunction(f))
        .filter_map(constraint)
        .collect()
}

fn constraint(expr: &Arc<dyn PhysicalExpr>) -> Option<Constraint> {
    if let Some(not_null) = expr.downcast_ref::<IsNotNullExpr>() {
        return access(not_null.arg(), Test::NotNull);
    }
    if let Some(in_list) = expr.downcast_ref::<InListExpr>() {
        if in_list.negated() {
            return None;
        }
        let values = in_list
            .list()
            .iter()
            .map(literal)
            .collect::<Option<Vec<_>>>()?;
        return access(in_list.expr(), Test::In(values));
    }
    let binary = expr.downcast_ref::<BinaryExpr>()?;
    let op = *binary.op();
    if op == Operator::Or {
        return one_of(constraint(binary.left())?, constraint(binary.right())?);
    }
    if !matches!(
        op,
        Operator::Eq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq
    ) {
        return None;
    }
    match literal(binary.right()) {
        Some(value) => access(binary.left(), Test::Compare(op, value)),
        None => access(
            binary.right(),
            Test::Compare(op.swap()?, literal(binary.left())?),
        ),
    }
}

/// `expr` as a key-path access (optionally cast to a number) tested by `test`.
fn access(expr: &Arc<dyn PhysicalExpr>, test: Test) -> Option<Constraint> {
    let (inner, numeric_cast) = match expr.downcast_ref::<CastExpr>() {
        Some(cast) if matches!(cast.cast_type(), DataType::Int64 | DataType::Float64) => {
            (cast.expr(), true)
        }
        Some(_) => return None,
        None => (expr, false),
    };
    let (path, output) = pushable_access(inner)?;
    let keys = path
        .into_iter()
        .map(|elem| match elem {
            PathElem::Key(k) => Some(k),
            PathElem::Index(_) => None,
        })
        .collect::<Option<Vec<_>>>()?;
    // Array lengths have no statistics (every typed scalar's is 0): nothing to prune by.
    if keys.is_empty()
        || output == Output::ArrayLength
        || (numeric_cast && !matches!(output, Output::Text | Output::Json))
    {
        return None;
    }
    Some(Constraint {
        keys,
        output,
        numeric_cast,
        test,
    })
}

fn literal(expr: &Arc<dyn PhysicalExpr>) -> Option<StatValue> {
    match expr.downcast_ref::<Literal>()?.value() {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => Some(StatValue::String(s.clone())),
        ScalarValue::Int64(Some(v)) => Some(StatValue::Int(*v)),
        ScalarValue::Int32(Some(v)) => Some(StatValue::Int(i64::from(*v))),
        ScalarValue::Float64(Some(v)) if v.is_finite() => Some(StatValue::Float(*v)),
        ScalarValue::Boolean(Some(v)) => Some(StatValue::Bool(*v)),
        _ => None,
    }
}

/// `a OR b` as one constraint when both test the same access for equality: DataFusion
/// spells short `IN` lists that way.
fn one_of(a: Constraint, b: Constraint) -> Option<Constraint> {
    let same_access = a.keys == b.keys && a.output == b.output && a.numeric_cast == b.numeric_cast;
    let values = |test: Test| match test {
        Test::Compare(Operator::Eq, v) => Some(vec![v]),
        Test::In(values) => Some(values),
        _ => None,
    };
    if !same_access {
        return None;
    }
    let mut all = values(a.test)?;
    all.extend(values(b.test)?);
    Some(Constraint {
        test: Test::In(all),
        ..b
    })
}

/// What statistics say about one path in one file or row group.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Bounds {
    /// The typed leaf's kind.
    pub kind: LeafKind,
    /// Smallest typed value (`None`: no typed value).
    pub min: Option<StatValue>,
    /// Largest typed value (`None`: no typed value, or not known exactly).
    pub max: Option<StatValue>,
    /// Some value of the path sits in the Variant binary (another type, or JSON null).
    pub outliers: bool,
    /// No document has a typed value at the path.
    pub no_typed: bool,
}

impl Constraint {
    /// The path in the spelling of shredding schemas and manifests.
    pub fn path(&self) -> String {
        json_path(&self.keys)
    }

    /// The object keys of the path.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// Whether a value described by `bounds` may satisfy the constraint.
    pub fn may_match(&self, bounds: &Bounds) -> bool {
        if bounds.outliers {
            return true;
        }
        if bounds.no_typed {
            return false;
        }
        // How the access sees the typed values: as themselves, as NULL, or in a way
        // whose order the statistics don't describe (numbers as text).
        let comparable = match (bounds.kind, self.output, self.numeric_cast) {
            (LeafKind::Int | LeafKind::Float, Output::Text | Output::Json, true) => true,
            (_, _, true) => return true,
            (LeafKind::String, Output::Text | Output::Str, false)
            | (LeafKind::Int, Output::Int | Output::Float, false)
            | (LeafKind::Float, Output::Float, false)
            | (LeafKind::Bool, Output::Bool, false)
            | (LeafKind::DateTime(_), Output::Text | Output::Str, false) => true,
            (LeafKind::String | LeafKind::DateTime(_), Output::Json, false)
            | (
                LeafKind::Int | LeafKind::Float | LeafKind::Bool,
                Output::Text | Output::Json,
                false,
            ) => false,
            // The access is NULL for every typed value: nothing passes.
            _ => return false,
        };
        if !comparable {
            return true;
        }
        let in_bounds = |v: &StatValue| {
            let above_min = bounds
                .min
                .as_ref()
                .is_none_or(|min| compare(v, min).is_none_or(|o| o != Ordering::Less));
            let below_max = bounds
                .max
                .as_ref()
                .is_none_or(|max| compare(v, max).is_none_or(|o| o != Ordering::Greater));
            above_min && below_max
        };
        match &self.test {
            Test::NotNull => true,
            Test::In(values) => values.iter().any(in_bounds),
            Test::Compare(Operator::Eq, v) => in_bounds(v),
            Test::Compare(op, v) => {
                // Lt/LtEq need some value below v: the minimum decides; Gt/GtEq the maximum.
                let (bound, wanted): (&Option<StatValue>, &[Ordering]) = match op {
                    Operator::Lt => (&bounds.min, &[Ordering::Less]),
                    Operator::LtEq => (&bounds.min, &[Ordering::Less, Ordering::Equal]),
                    Operator::Gt => (&bounds.max, &[Ordering::Greater]),
                    _ => (&bounds.max, &[Ordering::Greater, Ordering::Equal]),
                };
                bound
                    .as_ref()
                    .and_then(|b| compare(b, v))
                    .is_none_or(|o| wanted.contains(&o))
            }
        }
    }

    /// Whether any document of the file described by `summary` may satisfy the
    /// constraint, judged from the manifest alone.
    pub fn may_match_file(&self, summary: &FileSummary) -> bool {
        let path = self.path();
        let Some(shredded) = summary.schema.get(&path) else {
            return self.may_be_present(summary, &path);
        };
        let Some(stats) = summary.stats.iter().find(|s| s.path == path) else {
            return true;
        };
        let Some(kind) = leaf_kind(shredded) else {
            return true;
        };
        let bound = |v: &Option<StatValue>| match v {
            Some(StatValue::Int(stored_value)) => stored(kind, Some(*stored_value)),
            other => other.clone(),
        };
        self.may_match(&Bounds {
            kind,
            min: bound(&stats.min),
            max: if stats.max_truncated {
                None
            } else {
                bound(&stats.max)
            },
            outliers: stats.binary_count > 0,
            no_typed: stats.typed_count == 0,
        })
    }

    /// For a path the file does not shred: whether it may hold a value that passes.
    ///
    /// The file's Bloom filter holds every unshredded key path that ends in a scalar,
    /// an array or a null. A path missing from it (and from the shredded paths) is
    /// absent from the file or an object in it; objects pass only a test on their JSON
    /// text that names an object, which the literals of a constraint are checked for.
    fn may_be_present(&self, summary: &FileSummary, path: &str) -> bool {
        if summary.unshredded_paths.may_contain(path) {
            return true;
        }
        let object_text = |v: &StatValue| matches!(v, StatValue::String(s) if s.starts_with('{'));
        match (&self.test, self.output) {
            (_, Output::Json) => true,
            (_, _) if self.numeric_cast => true,
            (Test::NotNull, Output::Text) => true,
            (Test::Compare(_, v), Output::Text) => {
                object_text(v) || !matches!(v, StatValue::String(_))
            }
            (Test::In(values), Output::Text) => values.iter().any(object_text),
            _ => false,
        }
    }
}

/// What the Parquet statistics of one row group say about a shredded path, from its
/// typed leaf column `typed` and outlier column `value`; `None` when they say nothing.
pub(super) fn row_group_bounds(
    kind: LeafKind,
    group: &RowGroupMetaData,
    typed: usize,
    value: Option<usize>,
) -> Option<Bounds> {
    let rows = u64::try_from(group.num_rows()).ok()?;
    let outliers = match value {
        Some(v) => group.column(v).statistics()?.null_count_opt()? < rows,
        None => false,
    };
    let stats = group.column(typed).statistics()?;
    let no_typed = stats.null_count_opt()? == rows;
    let exact = |v: Option<StatValue>, is_exact: bool| v.filter(|_| is_exact);
    let (min, max) = match (kind, stats) {
        (LeafKind::Int | LeafKind::DateTime(_), Statistics::Int64(s)) => (
            stored(kind, s.min_opt().copied()),
            stored(kind, s.max_opt().copied()),
        ),
        (LeafKind::Int | LeafKind::DateTime(_), Statistics::Int32(s)) => (
            stored(kind, s.min_opt().map(|v| i64::from(*v))),
            stored(kind, s.max_opt().map(|v| i64::from(*v))),
        ),
        (LeafKind::Float, Statistics::Double(s)) => (
            s.min_opt().map(|v| StatValue::Float(*v)),
            s.max_opt().map(|v| StatValue::Float(*v)),
        ),
        (LeafKind::String, Statistics::ByteArray(s)) => {
            let text = |v: Option<&parquet::data_type::ByteArray>| {
                v.and_then(|b| b.as_utf8().ok())
                    .map(|t| StatValue::String(t.to_string()))
            };
            (text(s.min_opt()), text(s.max_opt()))
        }
        _ => (None, None),
    };
    Some(Bounds {
        kind,
        // A truncated minimum is still a lower bound; a truncated maximum is not an
        // upper one.
        min,
        max: exact(max, stats.max_is_exact()),
        outliers,
        no_typed,
    })
}

/// What the page index of row group `group` says about a shredded path: for each page
/// of its typed column `typed`, the rows of the group it covers and their bounds (with
/// outliers wherever a page of `value` over those rows holds one); `None` when the file
/// has no page index for the column.
pub(super) fn page_bounds(
    kind: LeafKind,
    metadata: &ParquetMetaData,
    group: usize,
    typed: usize,
    value: Option<usize>,
) -> Option<Vec<(Range<usize>, Bounds)>> {
    let rows = usize::try_from(metadata.row_group(group).num_rows()).ok()?;
    let indexes = metadata.column_index()?.get(group)?;
    let offsets = metadata.offset_index()?.get(group)?;
    // Pages of the outlier column that hold a value; unknown counts count as holding.
    let outlier_pages: Vec<Range<usize>> = match value {
        None => Vec::new(),
        Some(v) => {
            let index = indexes.get(v)?;
            page_rows(offsets.get(v)?, rows)
                .into_iter()
                .enumerate()
                .filter(|(p, r)| index.null_count(*p).is_none_or(|n| n < r.len() as i64))
                .map(|(_, r)| r)
                .collect()
        }
    };
    let index = indexes.get(typed)?;
    let pages = page_rows(offsets.get(typed)?, rows);
    if index.num_pages() as usize != pages.len() {
        return None;
    }
    let bounds = pages.into_iter().enumerate().map(|(p, rows)| {
        let (min, max) = page_min_max(kind, index, p);
        let bounds = Bounds {
            kind,
            min,
            // Parquet writers round a truncated page maximum up, so it stays a bound.
            max,
            outliers: outlier_pages
                .iter()
                .any(|o| o.start < rows.end && rows.start < o.end),
            no_typed: index.is_null_page(p)
                || index.null_count(p).is_some_and(|n| n == rows.len() as i64),
        };
        (rows, bounds)
    });
    Some(bounds.collect())
}

/// The rows of a row group with `rows` rows that each page of a column chunk covers.
fn page_rows(offsets: &OffsetIndexMetaData, rows: usize) -> Vec<Range<usize>> {
    let starts: Vec<usize> = offsets
        .page_locations()
        .iter()
        .map(|l| usize::try_from(l.first_row_index).unwrap_or(rows).min(rows))
        .collect();
    let ends = starts.iter().skip(1).copied().chain(std::iter::once(rows));
    starts.iter().zip(ends).map(|(&s, e)| s..e.max(s)).collect()
}

fn page_min_max(
    kind: LeafKind,
    index: &ColumnIndexMetaData,
    page: usize,
) -> (Option<StatValue>, Option<StatValue>) {
    match (kind, index) {
        (LeafKind::Int | LeafKind::DateTime(_), ColumnIndexMetaData::INT64(i)) => (
            stored(kind, i.min_value(page).copied()),
            stored(kind, i.max_value(page).copied()),
        ),
        (LeafKind::Int | LeafKind::DateTime(_), ColumnIndexMetaData::INT32(i)) => (
            stored(kind, i.min_value(page).map(|v| i64::from(*v))),
            stored(kind, i.max_value(page).map(|v| i64::from(*v))),
        ),
        (LeafKind::Float, ColumnIndexMetaData::DOUBLE(i)) => (
            i.min_value(page).map(|v| StatValue::Float(*v)),
            i.max_value(page).map(|v| StatValue::Float(*v)),
        ),
        (LeafKind::String, ColumnIndexMetaData::BYTE_ARRAY(i)) => {
            let text = |v: Option<&[u8]>| {
                v.and_then(|b| std::str::from_utf8(b).ok())
                    .map(|t| StatValue::String(t.to_string()))
            };
            (text(i.min_value(page)), text(i.max_value(page)))
        }
        _ => (None, None),
    }
}

/// The rows both sorted, disjoint range lists cover.
pub(super) fn intersect_ranges(a: &[Range<usize>], b: &[Range<usize>]) -> Vec<Range<usize>> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        let start = a[i].start.max(b[j].start);
        let end = a[i].end.min(b[j].end);
        if start < end {
            out.push(start..end);
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The kind of leaf a manifest path is stored as, when accesses read it directly.
pub(super) fn leaf_kind(path: &ShreddedPath) -> Option<LeafKind> {
    match path.ty {
        LeafType::Bool => Some(LeafKind::Bool),
        LeafType::Int => Some(LeafKind::Int),
        LeafType::Float => Some(LeafKind::Float),
        LeafType::String => Some(LeafKind::String),
        LeafType::DateTime => path
            .format
            .as_deref()
            .and_then(|f| f.parse().ok())
            .map(LeafKind::DateTime),
    }
}

/// A statistic of an integer-stored leaf as accesses see it: the integer, or for a date
/// or time its text. One format renders a file's typed values at a fixed width with a
/// 4-digit year and one zone, so their texts sort as the values do and the rendered
/// bounds bound the texts.
fn stored(kind: LeafKind, value: Option<i64>) -> Option<StatValue> {
    let value = value?;
    Some(match kind {
        LeafKind::DateTime(format) => {
            let mut text = String::new();
            format.render(value, &mut text);
            StatValue::String(text)
        }
        _ => StatValue::Int(value),
    })
}

/// The order of two statistics values, numbers across int and float; `None` when they
/// are not comparable.
fn compare(a: &StatValue, b: &StatValue) -> Option<Ordering> {
    match (a, b) {
        (StatValue::String(a), StatValue::String(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        (StatValue::Int(a), StatValue::Int(b)) => Some(a.cmp(b)),
        (StatValue::Bool(a), StatValue::Bool(b)) => Some(a.cmp(b)),
        (StatValue::Int(a), StatValue::Float(b)) => (*a as f64).partial_cmp(b),
        (StatValue::Float(a), StatValue::Int(b)) => a.partial_cmp(&(*b as f64)),
        (StatValue::Float(a), StatValue::Float(b)) => a.partial_cmp(b),
        _ => None,
    }
}
