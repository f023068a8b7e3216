//! Filters on dictionary-encoded paths, judged once per distinct value.
//!
//! Writers store low-cardinality string paths with a Parquet dictionary (a few distinct
//! values, a code per row). A pushed filter that reads one access to such a path and
//! nothing else (`j->>'$.kind' = 'commit'`, `IN (...)`, `LIKE`, `IS NULL`) is a function
//! of the path's value alone, so the scan evaluates it on the dictionary's values (plus
//! one null, for rows without the path), once per dictionary, and looks each row's
//! verdict up by its code, instead of building and comparing a string per row. Files or batches where the path
//! is not stored that way (outliers in the binary, no dictionary) fall back to the
//! row-by-row evaluation.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int32Array, RecordBatch};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr_common::physical_expr::is_volatile;

use crate::access::extraction::ExtractionPlan;

/// The filters of one extracted output that can be judged on its dictionary.
#[derive(Debug)]
pub(super) struct CodedOutput {
    /// The extracted output (index into the plan's outputs).
    pub output: usize,
    /// The filters (indices into the plan's row filters) that read it alone.
    pub filters: Vec<usize>,
    /// Those filters rewritten over a one-column batch of the output's values.
    on_values: Vec<Arc<dyn PhysicalExpr>>,
    /// That batch's schema: the output's decoded field.
    values_schema: SchemaRef,
}

impl CodedOutput {
    /// The outputs of `plan` whose every filter reads them alone (and deterministically),
    /// with those filters; empty when the filters read anything but extracted outputs
    /// and their casts.
    pub fn of(plan: &ExtractionPlan) -> Result<Vec<Self>> {
        let Some((singles, others)) = plan.single_output_filters() else {
            return Ok(Vec::new());
        };
        let mut by_output: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (filter, single) in singles.iter().enumerate() {
            if let Some(k) = single.filter(|k| !others.contains(k)) {
                by_output.entry(k).or_default().push(filter);
            }
        }
        let mut coded = Vec::with_capacity(by_output.len());
        for (output, filters) in by_output {
            if filters.iter().any(|&f| is_volatile(&plan.row_filters[f])) {
                continue;
            }
            let field = plan.decoded_schema.field(plan.layout.output(output));
            let on_values = filters
                .iter()
                .map(|&f| on_first_column(&plan.row_filters[f], field.name()))
                .collect::<Result<Vec<_>>>()?;
            coded.push(Self {
                output,
                filters,
                on_values,
                values_schema: Arc::new(Schema::new(vec![Field::clone(field)])),
            });
        }
        Ok(coded)
    }

    /// Whether a row with each of `values` passes every filter of this output, and, last,
    /// whether a row without a value does.
    pub fn verdicts(&self, values: &ArrayRef) -> Result<Vec<bool>> {
        let entries = values.len() + 1;
        let with_null = arrow::compute::concat(&[
            values.as_ref(),
            arrow::array::new_null_array(values.data_type(), 1).as_ref(),
        ])?;
        let batch = RecordBatch::try_new(Arc::clone(&self.values_schema), vec![with_null])?;
        let mut verdicts = vec![true; entries];
        for filter in &self.on_values {
            let passed = filter.evaluate(&batch)?.into_array(entries)?;
            let passed = passed.as_boolean();
            for (verdict, i) in verdicts.iter_mut().zip(0..) {
                *verdict &= passed.is_valid(i) && passed.value(i);
            }
        }
        Ok(verdicts)
    }
}

/// Which rows pass, given each row's code (a null code: the row has no value) and the
/// [`CodedOutput::verdicts`] of the values the codes index.
pub(super) fn coded_mask(codes: &Int32Array, verdicts: &[bool]) -> BooleanArray {
    let null = verdicts.len() - 1;
    let keys = codes.values();
    let passes = match codes.nulls() {
        None => BooleanBuffer::collect_bool(codes.len(), |row| {
            verdicts[usize::try_from(keys[row]).unwrap_or(null)]
        }),
        Some(nulls) => BooleanBuffer::collect_bool(codes.len(), |row| {
            let code = match nulls.is_valid(row) {
                true => usize::try_from(keys[row]).unwrap_or(null),
                false => null,
            };
            verdicts[code]
        }),
    };
    BooleanArray::new(passes, None)
}

/// `filter` with its one column (named `name`) read from column 0 of a batch.
fn on_first_column(filter: &Arc<dyn PhysicalExpr>, name: &str) -> Result<Arc<dyn PhysicalExpr>> {
    Arc::clone(filter)
        .transform(|e| {
            Ok(match e.downcast_ref::<Column>() {
                Some(c) => {
                    assert_eq!(c.name(), name, "a coded filter reads its output alone");
                    Transformed::yes(Arc::new(Column::new(name, 0)) as Arc<dyn PhysicalExpr>)
                }
                None => Transformed::no(e),
            })
        })
        .map(|t| t.data)
}
