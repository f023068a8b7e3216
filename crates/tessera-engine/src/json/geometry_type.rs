//! DuckDB's `GEOMETRY`: ISO well-known binary in an Arrow `Binary` field marked with
//! GeoArrow's extension type `geoarrow.wkb` (field metadata, as `arrow.json` marks JSON
//! text), so it travels through DataFusion, IPC and Parquet as bytes every GeoArrow
//! reader knows. Its casts and functions are `functions::geometry`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::sql::sqlparser::ast;

/// GeoArrow's extension type name for geometries stored as WKB.
pub const GEOARROW_WKB: &str = "geoarrow.wkb";
const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
const EXTENSION_METADATA_KEY: &str = "ARROW:extension:metadata";

/// A nullable field `name` of SQL type `GEOMETRY`: WKB bytes marked `geoarrow.wkb`.
pub fn geometry_field(name: &str) -> Field {
    Field::new(name, DataType::Binary, true).with_metadata(HashMap::from([
        (EXTENSION_NAME_KEY.to_string(), GEOARROW_WKB.to_string()),
        (EXTENSION_METADATA_KEY.to_string(), "{}".to_string()),
    ]))
}

/// Whether `field` holds SQL `GEOMETRY` (WKB marked `geoarrow.wkb`).
pub fn is_geometry(field: &Field) -> bool {
    field
        .metadata()
        .get(EXTENSION_NAME_KEY)
        .is_some_and(|name| name == GEOARROW_WKB)
        && matches!(
            field.data_type(),
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        )
}

/// The field of SQL type `sql_type` when it is `GEOMETRY`, for the session's type planner.
pub fn sql_type_field(sql_type: &ast::DataType) -> Option<FieldRef> {
    match sql_type {
        ast::DataType::Custom(name, args)
            if args.is_empty() && name.to_string().eq_ignore_ascii_case("geometry") =>
        {
            Some(Arc::new(geometry_field("")))
        }
        _ => None,
    }
}
