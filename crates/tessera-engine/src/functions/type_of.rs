//! `typeof(x)`: the name DuckDB gives the type of `x` (`JSON`, `VARCHAR`, `BIGINT`,
//! `STRUCT(a INTEGER)`, `INTEGER[]`, ...), so that DuckDB's queries and tests that
//! check a type by its name answer as in DuckDB.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::json::geometry_type::is_geometry;
use crate::json::sql_types::duckdb_type_name;

/// DuckDB's name of the SQL type `field` holds, `GEOMETRY` included (which
/// `json::sql_types` cannot tell: it knows Arrow and the parser only).
pub fn sql_type_name(field: &Field) -> String {
    match is_geometry(field) {
        true => "GEOMETRY".to_string(),
        false => duckdb_type_name(field),
    }
}

/// `typeof`, ready to register.
pub fn type_of() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(TypeOf {
        signature: Signature::any(1, Volatility::Immutable),
    }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct TypeOf {
    signature: Signature,
}

impl ScalarUDFImpl for TypeOf {
    fn name(&self) -> &str {
        "typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [field] = args.arg_fields.as_slice() else {
            return exec_err!("typeof() takes one argument");
        };
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(
            sql_type_name(field),
        ))))
    }
}
