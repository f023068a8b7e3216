//! DuckDB's SUMMARIZE: one row per column of a relation with its `min`, `max`,
//! `approx_unique`, `avg`, `std`, quartiles `q25`/`q50`/`q75`, `count` (of rows) and
//! `null_percentage`, all computed by one aggregation over the relation.
//!
//! As in DuckDB, `min`/`max` are text, `avg`, `std` and the quartiles only for numbers
//! (the quartiles approximate, by t-digest, as DuckDB's `approx_quantile`), and a
//! statistic a type has none of is NULL.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Decimal128Array, Int64Array, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::common::{Column, Result};
use datafusion::dataframe::DataFrame;
use datafusion::functions_aggregate::count::count_all;
use datafusion::functions_aggregate::expr_fn::{
    approx_distinct, approx_percentile_cont, avg, count, count_distinct, max, min, stddev,
};
use datafusion::logical_expr::{Expr, lit};

use crate::functions::type_of::sql_type_name;
use crate::json::geometry_type::is_geometry;

/// The quartiles, in column order.
const QUARTILES: [f64; 3] = [0.25, 0.5, 0.75];
/// `null_percentage`'s type, as DuckDB's: `DECIMAL(9,2)`.
const PERCENTAGE_PRECISION: u8 = 9;
const PERCENTAGE_SCALE: i8 = 2;

/// Where one column's statistics are among the aggregation's outputs (`None`: the type
/// has no such statistic).
#[derive(Default)]
struct Slots {
    min: Option<usize>,
    max: Option<usize>,
    unique: Option<usize>,
    avg: Option<usize>,
    std: Option<usize>,
    quartiles: [Option<usize>; 3],
    count: usize,
}

/// The aggregations of one summary, built column by column.
struct Aggregates(Vec<Expr>);

impl Aggregates {
    fn push(&mut self, expr: Expr) -> usize {
        self.0.push(expr.alias(format!("s{}", self.0.len())));
        self.0.len() - 1
    }

    fn push_if(&mut self, wanted: bool, expr: impl FnOnce() -> Expr) -> Option<usize> {
        wanted.then(|| self.push(expr()))
    }
}

/// SUMMARIZE of `frame`'s answer (see the module documentation).
pub(super) async fn batch(frame: DataFrame) -> Result<RecordBatch> {
    let fields: Vec<(Column, Field)> = frame
        .schema()
        .iter()
        .map(|(q, f)| (Column::from((q, f)), f.as_ref().clone()))
        .collect();
    let mut aggregates = Aggregates(Vec::new());
    let total = aggregates.push(count_all());
    let slots: Vec<Slots> = fields
        .iter()
        .map(|(column, field)| plan_column(&mut aggregates, Expr::Column(column.clone()), field))
        .collect();
    let answer = frame.aggregate(vec![], aggregates.0)?.collect().await?;
    let row = arrow::compute::concat_batches(&answer[0].schema(), &answer)?;
    let columns: Vec<&Field> = fields.iter().map(|(_, f)| f).collect();
    rows(&columns, &slots, &row, total)
}

/// The statistics of one column the aggregation computes.
fn plan_column(aggregates: &mut Aggregates, value: Expr, field: &Field) -> Slots {
    let data_type = field.data_type();
    let number = data_type.is_numeric();
    let approximate = data_type.is_integer() || data_type.is_floating();
    let ordered = !is_geometry(field) && (number || is_scalar(data_type));
    let hashed = approximate || is_text(data_type) || is_binary(data_type);
    let mut quartiles = [None; 3];
    for (slot, q) in quartiles.iter_mut().zip(QUARTILES) {
        *slot = aggregates.push_if(approximate, || {
            approx_percentile_cont(value.clone().sort(true, false), lit(q), None)
        });
    }
    Slots {
        min: aggregates.push_if(ordered, || min(value.clone())),
        max: aggregates.push_if(ordered, || max(value.clone())),
        unique: match hashed {
            true => Some(aggregates.push(approx_distinct(value.clone()))),
            false => aggregates.push_if(is_scalar(data_type), || count_distinct(value.clone())),
        },
        avg: aggregates.push_if(number, || avg(value.clone())),
        std: aggregates.push_if(number, || stddev(value.clone())),
        quartiles,
        count: aggregates.push(count(value)),
    }
}

fn is_text(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

fn is_binary(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    )
}

/// Types with an order and a text form: no nested types.
fn is_scalar(data_type: &DataType) -> bool {
    data_type.is_primitive() || is_text(data_type) || matches!(data_type, DataType::Boolean)
}

/// The summary's rows from the aggregation's one-row answer.
fn rows(
    fields: &[&Field],
    slots: &[Slots],
    row: &RecordBatch,
    total: usize,
) -> Result<RecordBatch> {
    let text = |slot: Option<usize>| -> Result<ArrayRef> {
        match slot {
            Some(i) => Ok(cast(row.column(i), &DataType::Utf8)?),
            None => Ok(Arc::new(StringArray::new_null(1))),
        }
    };
    let integer = |slot: Option<usize>| -> Result<Option<i64>> {
        let Some(i) = slot else {
            return Ok(None);
        };
        let values = cast(row.column(i), &DataType::Int64)?;
        let values = values.as_any().downcast_ref::<Int64Array>();
        Ok(values.filter(|v| v.is_valid(0)).map(|v| v.value(0)))
    };
    let rows_total = integer(Some(total))?.unwrap_or(0);
    let mut columns: Vec<Vec<ArrayRef>> = vec![Vec::new(); 5];
    let (mut unique, mut counts, mut percentages) = (vec![], vec![], vec![]);
    for slot in slots {
        let texts = [slot.min, slot.max, slot.avg, slot.std];
        for (out, s) in columns.iter_mut().zip(texts) {
            out.push(text(s)?);
        }
        let quartiles: Vec<ArrayRef> = slot
            .quartiles
            .iter()
            .map(|q| text(*q))
            .collect::<Result<_>>()?;
        columns[4].extend(quartiles);
        unique.push(integer(slot.unique)?);
        // DuckDB's `count` is the relation's rows; the column's own count gives the
        // share of NULLs.
        counts.push(rows_total);
        let non_null = integer(Some(slot.count))?.unwrap_or(0);
        percentages.push(null_percentage(rows_total, non_null));
    }
    let concat = |arrays: &[ArrayRef]| -> Result<ArrayRef> {
        let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
        Ok(arrow::compute::concat(&refs)?)
    };
    let quartile = |k: usize| -> Result<ArrayRef> {
        let picked: Vec<ArrayRef> = columns[4].iter().skip(k).step_by(3).cloned().collect();
        concat(&picked)
    };
    let names: Vec<String> = fields.iter().map(|f| f.name().clone()).collect();
    let types: Vec<String> = fields.iter().map(|f| sql_type_name(f)).collect();
    let percentage = Decimal128Array::from(percentages)
        .with_precision_and_scale(PERCENTAGE_PRECISION, PERCENTAGE_SCALE)?;
    let out: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(names)),
        Arc::new(StringArray::from(types)),
        concat(&columns[0])?,
        concat(&columns[1])?,
        Arc::new(Int64Array::from(unique)),
        concat(&columns[2])?,
        concat(&columns[3])?,
        quartile(0)?,
        quartile(1)?,
        quartile(2)?,
        Arc::new(Int64Array::from(counts)),
        Arc::new(percentage),
    ];
    Ok(RecordBatch::try_new(schema(), out)?)
}

/// The share of `rows` that are NULL, in hundredths of a percent rounded half up;
/// NULL for no rows, as DuckDB's.
fn null_percentage(rows: i64, non_null: i64) -> Option<i128> {
    let rows = i128::from(rows);
    let nulls = rows - i128::from(non_null);
    (rows > 0).then(|| (nulls * 10_000 * 2 + rows) / (2 * rows))
}

fn schema() -> Arc<Schema> {
    let text = |n: &str| Field::new(n, DataType::Utf8, true);
    let integer = |n: &str| Field::new(n, DataType::Int64, true);
    let percentage = DataType::Decimal128(PERCENTAGE_PRECISION, PERCENTAGE_SCALE);
    Arc::new(Schema::new(vec![
        text("column_name"),
        text("column_type"),
        text("min"),
        text("max"),
        integer("approx_unique"),
        text("avg"),
        text("std"),
        text("q25"),
        text("q50"),
        text("q75"),
        integer("count"),
        Field::new("null_percentage", percentage, true),
    ]))
}

#[cfg(test)]
mod tests {
    use super::null_percentage;

    #[test]
    fn null_percentages_round_half_up_to_hundredths() {
        assert_eq!(null_percentage(0, 0), None);
        assert_eq!(null_percentage(3, 2), Some(3333));
        assert_eq!(null_percentage(3, 1), Some(6667));
        assert_eq!(null_percentage(8, 7), Some(1250));
        assert_eq!(null_percentage(10, 10), Some(0));
    }
}
