//! The Arrow types arrow-pg sends as they are, and casts for those it cannot (kept apart
//! from `encode`, which writes a `Connection`'s responses, so that describing a statement
//! does not depend on the connection).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::Result;

/// `schema` with the columns arrow-pg cannot send as they are in the type they are sent
/// as: it writes an `Int8` in one byte where the client reads an `int2`, and has no
/// encoding for `Float16`.
pub(super) fn wire_schema(schema: &SchemaRef) -> SchemaRef {
    if !schema
        .fields()
        .iter()
        .any(|f| wire_type(f.data_type()).is_some())
    {
        return Arc::clone(schema);
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match wire_type(f.data_type()) {
            Some(wire) => f.as_ref().clone().with_data_type(wire),
            None => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` in `schema` (from [`wire_schema`] of the batch's own schema).
pub(super) fn to_wire(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema() == *schema {
        return Ok(batch);
    }
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| cast(column, field.data_type()))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

fn wire_type(data_type: &DataType) -> Option<DataType> {
    match data_type {
        DataType::Int8 => Some(DataType::Int16),
        DataType::Float16 => Some(DataType::Float32),
        _ => None,
    }
}
