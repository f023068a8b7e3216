//! `DELETE FROM t WHERE ...`: the rows of the current snapshot that match, recorded per
//! file as deletion vectors in one new table version; no data file is rewritten.

use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch, UInt64Array};
use arrow::compute::and;
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DFSchema, DataFusionError, Result, TableReference};
use datafusion::logical_expr::Expr;
use futures::TryStreamExt;

use crate::datasource::tessera::TesseraTable;
use crate::datasource::tessera::provider::{external, json_batch};

/// Finds and deletes the rows for which every filter is true (all rows without
/// filters); returns one row with the count.
pub async fn delete(
    state: &dyn Session,
    managed: &TesseraTable,
    name: &TableReference,
    filters: Vec<Expr>,
) -> Result<RecordBatch> {
    let table = managed.table();
    let schema = &managed.schema();
    let df_schema = DFSchema::try_from_qualified_schema(name.clone(), schema)?;
    let predicates = filters
        .iter()
        .map(|f| state.create_physical_expr(f.clone(), &df_schema))
        .collect::<Result<Vec<_>>>()?;
    let snapshot = table.snapshot().await.map_err(external)?;
    let mut deletes = Vec::new();
    let mut deleted = 0u64;
    for file in snapshot.files() {
        let mut rows = Vec::new();
        let mut position = 0u64;
        let mut batches = snapshot.read_file(file, false).await.map_err(external)?;
        while let Some(stored) = batches.try_next().await.map_err(external)? {
            let batch = json_batch(schema, stored)?;
            let mask = matching(&predicates, &batch)?;
            for (i, hit) in mask.iter().enumerate() {
                let row = position + i as u64;
                // SQL three-valued logic: only rows whose predicate is true go.
                if hit == Some(true) && !file.is_deleted(row) {
                    rows.push(row);
                }
            }
            position += batch.num_rows() as u64;
        }
        if !rows.is_empty() {
            deleted += rows.len() as u64;
            deletes.push((file.path.clone(), rows));
        }
    }
    if !deletes.is_empty() {
        table.commit_delete(deletes).await.map_err(external)?;
    }
    let count_schema = Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]));
    Ok(RecordBatch::try_new(
        count_schema,
        vec![Arc::new(UInt64Array::from(vec![deleted]))],
    )?)
}

/// Rows for which every predicate is true (none given: every row).
fn matching(
    predicates: &[Arc<dyn datafusion::physical_plan::PhysicalExpr>],
    batch: &RecordBatch,
) -> Result<BooleanArray> {
    let mut mask = BooleanArray::from(vec![true; batch.num_rows()]);
    for predicate in predicates {
        let value = predicate.evaluate(batch)?.into_array(batch.num_rows())?;
        let value = value
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| DataFusionError::Plan("a DELETE condition must be boolean".into()))?;
        mask = and(&mask, value)?;
    }
    Ok(mask)
}
