//! DuckDB's `UNION(tag T, ...)`: a value of one of several member types, tagged with
//! the member's name. Planned (`json::sql_types`) as a sparse Arrow union whose type
//! ids number the members in order, so DataFusion carries it through projections,
//! filters and lists as it carries any Arrow array. Its casts and `union_value` are
//! functions (`functions::union_cast`); `json_transform` builds unions from JSON.

use std::sync::Arc;

use arrow::array::{ArrayRef, UnionArray};
use arrow::buffer::ScalarBuffer;
use arrow::datatypes::UnionFields;
use datafusion::common::Result;

/// The sparse union of `fields` whose rows are `type_ids`, member `i`'s values in
/// `children[i]` (each as long as the union).
pub fn sparse_union(
    fields: &UnionFields,
    type_ids: Vec<i8>,
    children: Vec<ArrayRef>,
) -> Result<ArrayRef> {
    let array = UnionArray::try_new(fields.clone(), ScalarBuffer::from(type_ids), None, children)?;
    Ok(Arc::new(array))
}
