//! Filters as store conditions: each translated part holds for every document the
//! filter keeps ([`Fit::Superset`]), or for exactly those, the request failing where the
//! store could not tell ([`Fit::Exact`]).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{
    BinaryExpr, Column, InListExpr, IsNotNullExpr, Literal,
};
use datafusion::physical_expr::projection::ProjectionExprs;
use tessera_pushdown::select_sql::{
    Condition, NUMBER_MAGNITUDE_MAX, Ordering, is_iso_date, is_pushable_path, only_strings_equal,
};

use crate::access::pushable::{cast_parts, pushable_access, string_literal};
use crate::json::Output;
use crate::json::path::PathElem;

/// How a filter's operand reads the document: a JSON access, or a cast of one.
pub(super) enum Read {
    /// An access with its output.
    Access(Vec<PathElem>, Output),
    /// A cast of an access's value to `DataType` (`(j->>'n')::DOUBLE`).
    Cast(Vec<PathElem>, Output, DataType),
}

impl Read {
    fn path(&self) -> &[PathElem] {
        match self {
            Read::Access(path, _) | Read::Cast(path, _, _) => path,
        }
    }

    /// Whether the read is a number: a numeric access, or a numeric cast of a text or
    /// numeric access (a text that is no number fails the cast, so it passes no filter).
    fn is_number(&self) -> bool {
        let numeric = |t: &DataType| {
            matches!(
                t,
                DataType::Int64 | DataType::Int32 | DataType::Float64 | DataType::Float32
            )
        };
        match self {
            Read::Access(_, output) => matches!(output, Output::Int | Output::Float),
            Read::Cast(_, output, to) => {
                numeric(to) && matches!(output, Output::Text | Output::Int | Output::Float)
            }
        }
    }
}

/// How closely a store condition follows its filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    /// It holds for at least the documents the filter keeps: a filter above the scan
    /// tests the returned records again, so a part that cannot be translated is left
    /// out.
    Superset,
    /// It holds for exactly those, or the request fails: what the store aggregates is
    /// not tested again ([`tessera_pushdown::select_aggregate`]).
    Exact,
}

/// What `expr` (over the scan's output, whose columns are `projection`) reads.
pub(super) fn read_of(expr: &Arc<dyn PhysicalExpr>, projection: &ProjectionExprs) -> Option<Read> {
    let resolve = |e: &Arc<dyn PhysicalExpr>| match e.downcast_ref::<Column>() {
        Some(column) => projection
            .iter()
            .nth(column.index())
            .map(|p| Arc::clone(&p.expr)),
        None => Some(Arc::clone(e)),
    };
    let expr = resolve(expr)?;
    // A TRY_CAST is NULL where a CAST fails, and NULL passes no comparison: both read
    // the same numbers.
    if let Some((operand, to, _)) = cast_parts(&expr) {
        let (path, output) = pushable_access(&resolve(operand)?)?;
        return is_pushable_path(&path).then(|| Read::Cast(path, output, to.clone()));
    }
    let (path, output) = pushable_access(&expr)?;
    is_pushable_path(&path).then_some(Read::Access(path, output))
}

/// The store condition of `expr`, holding for every document `expr` keeps as `fit`
/// says.
pub(crate) fn condition(
    expr: &Arc<dyn PhysicalExpr>,
    projection: &ProjectionExprs,
    fit: Fit,
) -> Option<Condition> {
    if let Some(binary) = expr.downcast_ref::<BinaryExpr>() {
        return binary_condition(binary, projection, fit);
    }
    if let Some(not_null) = expr.downcast_ref::<IsNotNullExpr>() {
        let read = read_of(not_null.arg(), projection)?;
        // Not `json_array_length`, which is 0 for a `null`, nor `->`, which gives a
        // `null` as the JSON text `null`: only NULL for a store's null. Exactly so for
        // `->>`, and for reads of numbers with a guard that fails the request on a value
        // of another type (which the read has as NULL).
        let path = read.path().to_vec();
        let guard = match &read {
            Read::Access(_, Output::Int) => Some(Condition::IntegerGuard(path.clone())),
            Read::Access(_, Output::Float) => Some(Condition::NumberGuard(path.clone())),
            _ => None,
        };
        if let (Fit::Exact, Some(guard)) = (fit, guard) {
            return Some(Condition::And(vec![Condition::NotNull(path), guard]));
        }
        let null_is_null = match (&read, fit) {
            (Read::Access(_, Output::Text), _) => true,
            (_, Fit::Exact) => false,
            (Read::Access(_, output) | Read::Cast(_, output, _), Fit::Superset) => matches!(
                output,
                Output::Str | Output::Int | Output::Float | Output::Bool
            ),
        };
        return null_is_null.then_some(Condition::NotNull(path));
    }
    let in_list = expr.downcast_ref::<InListExpr>()?;
    strings_condition(read_of(in_list.expr(), projection)?, in_strings(in_list)?)
}

fn binary_condition(
    binary: &BinaryExpr,
    projection: &ProjectionExprs,
    fit: Fit,
) -> Option<Condition> {
    let (left, right) = (binary.left(), binary.right());
    match binary.op() {
        Operator::And => {
            let sides = [left, right].into_iter();
            let parts: Vec<Condition> = match fit {
                Fit::Superset => sides
                    .filter_map(|s| condition(s, projection, fit))
                    .collect(),
                Fit::Exact => sides
                    .map(|s| condition(s, projection, fit))
                    .collect::<Option<_>>()?,
            };
            return match parts.len() {
                0 => None,
                1 => parts.into_iter().next(),
                _ => Some(Condition::And(parts)),
            };
        }
        Operator::Or => {
            let l = condition(left, projection, fit)?;
            let r = condition(right, projection, fit)?;
            return Some(Condition::Or(vec![l, r]));
        }
        _ => {}
    }
    // The read on the left, the constant on the right.
    let (read, literal, op) = match (read_of(left, projection), literal_of(right)) {
        (Some(read), Some(literal)) => (read, literal, *binary.op()),
        _ => (
            read_of(right, projection)?,
            literal_of(left)?,
            binary.op().swap()?,
        ),
    };
    if op == Operator::Eq
        && let ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) = literal
    {
        return strings_condition(read, vec![s.clone()]);
    }
    let mut parts = orderings(op)?
        .iter()
        .map(|ordering| compare(&read, *ordering, literal, fit))
        .collect::<Option<Vec<Condition>>>()?;
    match parts.len() {
        1 => parts.pop(),
        _ => Some(Condition::And(parts)),
    }
}

/// The orderings a comparison `op` holds by: one, or both bounds of an equality.
pub(super) fn orderings(op: Operator) -> Option<&'static [Ordering]> {
    Some(match op {
        Operator::Lt => &[Ordering::Less],
        Operator::LtEq => &[Ordering::LessOrEqual],
        Operator::Gt => &[Ordering::Greater],
        Operator::GtEq => &[Ordering::GreaterOrEqual],
        Operator::Eq => &[Ordering::GreaterOrEqual, Ordering::LessOrEqual],
        _ => return None,
    })
}

/// `read ordering literal` as a store condition: numbers, and dates cast from text.
fn compare(read: &Read, ordering: Ordering, literal: &ScalarValue, fit: Fit) -> Option<Condition> {
    let path = read.path().to_vec();
    if let (Read::Cast(_, Output::Text, DataType::Date32), ScalarValue::Date32(Some(days))) =
        (read, literal)
    {
        let date = iso_date(*days)?;
        return Some(match fit {
            Fit::Superset => Condition::Date {
                path,
                ordering,
                date,
            },
            Fit::Exact => Condition::DateExact {
                path,
                ordering,
                date,
            },
        });
    }
    let value = number_literal(literal)?;
    if !(read.is_number() && value.is_finite() && value.abs() <= NUMBER_MAGNITUDE_MAX) {
        return None;
    }
    match fit {
        Fit::Superset => Some(Condition::Number {
            path,
            ordering,
            value,
        }),
        Fit::Exact => exact_number(read, path, ordering, value),
    }
}

/// `read ordering value`, exactly: reads of doubles as the store compares numbers, reads
/// of integers guarded to be integers (a store compares `3.5` where the read has NULL,
/// or a cast fails). A cast of a double to an integer rounds first; it is not sent.
fn exact_number(
    read: &Read,
    path: Vec<PathElem>,
    ordering: Ordering,
    value: f64,
) -> Option<Condition> {
    let integers = match read {
        Read::Access(_, Output::Int)
        | Read::Cast(_, Output::Text | Output::Int, DataType::Int64) => true,
        Read::Access(_, Output::Float)
        | Read::Cast(_, Output::Text | Output::Int, DataType::Float64) => false,
        _ => return None,
    };
    let compare = Condition::NumberExact {
        path: path.clone(),
        ordering,
        value,
    };
    Some(match integers {
        true => Condition::And(vec![Condition::IntegerGuard(path), compare]),
        false => compare,
    })
}

/// `read ∈ values` as a store condition: a string-only access, or a text access whose
/// constants only strings can equal.
fn strings_condition(read: Read, values: Vec<String>) -> Option<Condition> {
    let Read::Access(path, output) = read else {
        return None;
    };
    let fits = match output {
        Output::Str => true,
        Output::Text => values.iter().all(|v| only_strings_equal(v)),
        _ => false,
    };
    (fits && !values.is_empty()).then_some(Condition::StringIn { path, values })
}

/// The date `days` after 1970-01-01 written `YYYY-MM-DD`, when it has four digits.
pub(super) fn iso_date(days: i32) -> Option<String> {
    let date = chrono::NaiveDate::from_num_days_from_ce_opt(days.checked_add(719_163)?)?
        .format("%Y-%m-%d")
        .to_string();
    is_iso_date(&date).then_some(date)
}

/// The strings `x IN (...)` accepts, when it is not negated and lists only strings.
pub(super) fn in_strings(in_list: &InListExpr) -> Option<Vec<String>> {
    if in_list.negated() {
        return None;
    }
    in_list
        .list()
        .iter()
        .map(|e| string_literal(e).map(str::to_string))
        .collect()
}

pub(super) fn literal_of(expr: &Arc<dyn PhysicalExpr>) -> Option<&ScalarValue> {
    expr.downcast_ref::<Literal>().map(Literal::value)
}

pub(super) fn number_literal(value: &ScalarValue) -> Option<f64> {
    Some(match value {
        ScalarValue::Int64(Some(v)) => *v as f64,
        ScalarValue::Int32(Some(v)) => f64::from(*v),
        ScalarValue::Float64(Some(v)) => *v,
        ScalarValue::Float32(Some(v)) => f64::from(*v),
        _ => return None,
    })
}
