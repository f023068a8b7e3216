//! Filters over a CSV scan as store conditions ([`CsvCondition`]): each holds for at
//! least the rows the filter keeps, which test the returned rows again.
//!
//! Only columns typed as the store can compare their text: 64-bit integers and doubles
//! (through a cast), texts, and dates written `YYYY-MM-DD`.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{BinaryExpr, Column, InListExpr, IsNotNullExpr};
use datafusion::physical_expr::projection::ProjectionExprs;
use tessera_pushdown::select_csv::CsvCondition;
use tessera_pushdown::select_sql::{NUMBER_MAGNITUDE_MAX, Ordering};

use super::condition::{in_strings, iso_date, literal_of, number_literal, orderings};

/// The scan a CSV filter reads: its projection over the table, and the files' columns.
pub(super) struct CsvColumns<'a> {
    /// The scan's output, over the table's columns.
    pub projection: &'a ProjectionExprs,
    /// The types of the files' columns, in order.
    pub types: Vec<&'a DataType>,
}

impl CsvColumns<'_> {
    /// The file column `expr` (over the scan's output) is, with its type, when a
    /// condition may name it.
    fn column(&self, expr: &Arc<dyn PhysicalExpr>) -> Option<(usize, &DataType)> {
        let output = expr.downcast_ref::<Column>()?;
        let read = self.projection.iter().nth(output.index())?;
        let index = read.expr.downcast_ref::<Column>()?.index();
        (index < self.types.len()).then(|| (index, self.types[index]))
    }
}

/// The store condition of `expr`, holding for every row it keeps.
pub(super) fn csv_condition(
    expr: &Arc<dyn PhysicalExpr>,
    columns: &CsvColumns,
) -> Option<CsvCondition> {
    if let Some(binary) = expr.downcast_ref::<BinaryExpr>() {
        return binary_condition(binary, columns);
    }
    if let Some(not_null) = expr.downcast_ref::<IsNotNullExpr>() {
        let (column, _) = columns.column(not_null.arg())?;
        return Some(CsvCondition::NotEmpty(column));
    }
    let in_list = expr.downcast_ref::<InListExpr>()?;
    let (column, data_type) = columns.column(in_list.expr())?;
    let values = in_strings(in_list).filter(|v| is_text(data_type) && !v.is_empty())?;
    Some(CsvCondition::StringIn { column, values })
}

fn binary_condition(binary: &BinaryExpr, columns: &CsvColumns) -> Option<CsvCondition> {
    let (left, right) = (binary.left(), binary.right());
    match binary.op() {
        Operator::And => {
            let mut parts: Vec<CsvCondition> = [left, right]
                .into_iter()
                .filter_map(|side| csv_condition(side, columns))
                .collect();
            return match parts.len() {
                0 => None,
                1 => parts.pop(),
                _ => Some(CsvCondition::And(parts)),
            };
        }
        Operator::Or => {
            let l = csv_condition(left, columns)?;
            let r = csv_condition(right, columns)?;
            return Some(CsvCondition::Or(vec![l, r]));
        }
        _ => {}
    }
    // The column on the left, the constant on the right.
    let ((column, data_type), literal, op) = match (columns.column(left), literal_of(right)) {
        (Some(column), Some(literal)) => (column, literal, *binary.op()),
        _ => (
            columns.column(right)?,
            literal_of(left)?,
            binary.op().swap()?,
        ),
    };
    if op == Operator::Eq && is_text(data_type) {
        let (ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s))) = literal else {
            return None;
        };
        let values = vec![s.clone()];
        return Some(CsvCondition::StringIn { column, values });
    }
    let mut parts = orderings(op)?
        .iter()
        .map(|ordering| compare(column, data_type, *ordering, literal))
        .collect::<Option<Vec<CsvCondition>>>()?;
    match parts.len() {
        1 => parts.pop(),
        _ => Some(CsvCondition::And(parts)),
    }
}

/// `column ordering literal` as a store condition: numbers and dates.
fn compare(
    column: usize,
    data_type: &DataType,
    ordering: Ordering,
    literal: &ScalarValue,
) -> Option<CsvCondition> {
    match (data_type, literal) {
        (DataType::Date32, ScalarValue::Date32(Some(days))) => Some(CsvCondition::Date {
            column,
            ordering,
            date: iso_date(*days)?,
        }),
        (DataType::Int64 | DataType::Float64, literal) => {
            let value = number_literal(literal)?;
            (value.is_finite() && value.abs() <= NUMBER_MAGNITUDE_MAX).then_some(
                CsvCondition::Number {
                    column,
                    ordering,
                    value,
                    nan_passes: *data_type == DataType::Float64,
                },
            )
        }
        _ => None,
    }
}

fn is_text(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    )
}
