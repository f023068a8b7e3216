//! The SQL type `JSON`: text that is one valid JSON document.
//!
//! A JSON value is UTF-8 text in a field marked as Arrow's canonical extension type
//! `arrow.json` (field metadata `ARROW:extension:name = arrow.json`), so it travels
//! through DataFusion, Arrow IPC and Parquet as ordinary text and every Arrow reader
//! knows what it holds. `CAST(x AS JSON)`, `x::JSON`, `JSON '...'` and columns declared
//! `JSON` are planned onto such fields by the session's type planner; the casts to and
//! from it are an analyzer rewrite of the functions that compute them.
//!
//! Functions that return JSON declare it with [`json_return_field`] from their
//! `ScalarUDFImpl::return_field_from_args`; [`is_json`] tells whether an argument is.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::logical_expr::ReturnFieldArgs;

/// The name of Arrow's canonical JSON extension type.
pub const JSON_EXTENSION_NAME: &str = "arrow.json";
/// The field metadata key naming an Arrow extension type.
const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
/// The field metadata key of an extension type's parameters (none for JSON).
const EXTENSION_METADATA_KEY: &str = "ARROW:extension:metadata";

/// A nullable field `name` of SQL type `JSON`: UTF-8 text marked `arrow.json`.
pub fn json_field(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true).with_metadata(HashMap::from([
        (
            EXTENSION_NAME_KEY.to_string(),
            JSON_EXTENSION_NAME.to_string(),
        ),
        (EXTENSION_METADATA_KEY.to_string(), String::new()),
    ]))
}

/// Whether `field` holds SQL `JSON` (the `arrow.json` extension type over text).
pub fn is_json(field: &Field) -> bool {
    field
        .metadata()
        .get(EXTENSION_NAME_KEY)
        .is_some_and(|name| name == JSON_EXTENSION_NAME)
        && matches!(
            field.data_type(),
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
        )
}

/// The return field of a function whose result is `JSON`, for its
/// `ScalarUDFImpl::return_field_from_args`: named after the function, nullable when
/// any argument is (or always, with `nullable`), marked `arrow.json`.
///
/// ```ignore
/// fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
///     Ok(json_return_field(self.name(), &args, false))
/// }
/// ```
pub fn json_return_field(name: &str, args: &ReturnFieldArgs, nullable: bool) -> FieldRef {
    let nullable = nullable || args.arg_fields.iter().any(|f| f.is_nullable());
    Arc::new(json_field(name).with_nullable(nullable))
}
