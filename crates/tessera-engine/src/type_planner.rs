//! The SQL types the session plans beyond DataFusion's own: `JSON` (a field marked
//! `arrow.json`), `GEOMETRY` (WKB marked `geoarrow.wkb`) and DuckDB's other type names
//! DataFusion lacks (`UBIGINT`, `HUGEINT`, `MAP(K, V)`, ...), and the session's named
//! types (`crate::user_types`). One planner, since a session has one; each type's field
//! is made where that type lives.

use std::sync::Arc;

use arrow::datatypes::FieldRef;
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::planner::TypePlanner;
use datafusion::sql::sqlparser::ast;

use crate::json::geometry_type;
use crate::json::json_type::json_field;
use crate::json::sql_types;
use crate::user_types::UserTypes;

/// Plans `JSON`, `GEOMETRY`, DuckDB's other type names and the session's named types
/// onto Arrow fields, in casts, typed literals and column definitions; `JSON[]` follows
/// as a list of JSON fields.
#[derive(Debug, Default)]
pub struct SqlTypePlanner {
    user_types: Arc<UserTypes>,
}

impl SqlTypePlanner {
    /// A planner that also plans the named types of `user_types`.
    pub fn new(user_types: Arc<UserTypes>) -> Self {
        Self { user_types }
    }
}

impl TypePlanner for SqlTypePlanner {
    fn plan_type_field(&self, sql_type: &ast::DataType) -> Result<Option<FieldRef>> {
        if let Some(field) = self.user_types.field(sql_type)? {
            return Ok(Some(field));
        }
        if let ast::DataType::JSON = sql_type {
            return Ok(Some(Arc::new(json_field(""))));
        }
        if let Some(field) = geometry_type::sql_type_field(sql_type) {
            return Ok(Some(field));
        }
        sql_types::duckdb_field(sql_type).map_err(|e| DataFusionError::Plan(e.to_string()))
    }
}
