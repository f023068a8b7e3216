//! The SQL types the session plans beyond DataFusion's own: `JSON` (a field marked
//! `arrow.json`), `GEOMETRY` (WKB marked `geoarrow.wkb`) and DuckDB's other type names
//! DataFusion lacks (`UBIGINT`, `HUGEINT`, `MAP(K, V)`, ...). One planner, since a
//! session has one; each type's field is made where that type lives.

use std::sync::Arc;

use arrow::datatypes::FieldRef;
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::planner::TypePlanner;
use datafusion::sql::sqlparser::ast;

use crate::functions::geometry;
use crate::json::json_type::json_field;
use crate::json::sql_types;

/// Plans `JSON`, `GEOMETRY` and DuckDB's other type names onto Arrow fields, in casts,
/// typed literals and column definitions; `JSON[]` follows as a list of JSON fields.
#[derive(Debug, Default)]
pub struct SqlTypePlanner;

impl TypePlanner for SqlTypePlanner {
    fn plan_type_field(&self, sql_type: &ast::DataType) -> Result<Option<FieldRef>> {
        if let ast::DataType::JSON = sql_type {
            return Ok(Some(Arc::new(json_field(""))));
        }
        if let Some(field) = geometry::sql_type_field(sql_type) {
            return Ok(Some(field));
        }
        sql_types::duckdb_field(sql_type).map_err(|e| DataFusionError::Plan(e.to_string()))
    }
}
