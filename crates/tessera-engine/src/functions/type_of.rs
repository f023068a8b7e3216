//! `typeof(x)`: the name DuckDB gives the type of `x` (`JSON`, `VARCHAR`, `BIGINT`,
//! `STRUCT(a INTEGER)`, `INTEGER[]`, ...), so that DuckDB's queries and tests that
//! check a type by its name answer as in DuckDB.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, TimeUnit};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::json::json_type::is_json;

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
            duckdb_type_name(field),
        ))))
    }
}

/// DuckDB's name of the SQL type `field` holds.
pub fn duckdb_type_name(field: &Field) -> String {
    if is_json(field) {
        return "JSON".to_string();
    }
    use DataType::*;
    let name = match field.data_type() {
        Null => "\"NULL\"",
        Boolean => "BOOLEAN",
        Int8 => "TINYINT",
        Int16 => "SMALLINT",
        Int32 => "INTEGER",
        Int64 => "BIGINT",
        UInt8 => "UTINYINT",
        UInt16 => "USMALLINT",
        UInt32 => "UINTEGER",
        UInt64 => "UBIGINT",
        Float16 | Float32 => "FLOAT",
        Float64 => "DOUBLE",
        // Tessera's HUGEINT (and the integer SUM's result, DuckDB's HUGEINT).
        Decimal128(38, 0) => "HUGEINT",
        Decimal32(p, s) | Decimal64(p, s) | Decimal128(p, s) | Decimal256(p, s) => {
            return format!("DECIMAL({p},{s})");
        }
        Utf8 | LargeUtf8 | Utf8View => "VARCHAR",
        Binary | LargeBinary | BinaryView | FixedSizeBinary(_) => "BLOB",
        Date32 | Date64 => "DATE",
        Timestamp(_, Some(_)) => "TIMESTAMP WITH TIME ZONE",
        Timestamp(TimeUnit::Second, None) => "TIMESTAMP_S",
        Timestamp(TimeUnit::Millisecond, None) => "TIMESTAMP_MS",
        Timestamp(TimeUnit::Microsecond, None) => "TIMESTAMP",
        Timestamp(TimeUnit::Nanosecond, None) => "TIMESTAMP_NS",
        Time64(TimeUnit::Nanosecond) => "TIME_NS",
        Time32(_) | Time64(_) => "TIME",
        Interval(_) | Duration(_) => "INTERVAL",
        List(item) | LargeList(item) | ListView(item) | LargeListView(item) => {
            return format!("{}[]", duckdb_type_name(item));
        }
        FixedSizeList(item, n) => return format!("{}[{n}]", duckdb_type_name(item)),
        Struct(fields) => {
            let members: Vec<String> = fields
                .iter()
                .map(|f| format!("{} {}", member_name(f.name()), duckdb_type_name(f)))
                .collect();
            return format!("STRUCT({})", members.join(", "));
        }
        Map(entries, _) => match entries.data_type() {
            Struct(pair) if pair.len() == 2 => {
                return format!(
                    "MAP({}, {})",
                    duckdb_type_name(&pair[0]),
                    duckdb_type_name(&pair[1])
                );
            }
            other => return other.to_string(),
        },
        other => return other.to_string(),
    };
    name.to_string()
}

/// A struct member's name as DuckDB writes it in a type: quoted unless it is a plain
/// lower-case identifier.
fn member_name(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match plain {
        true => name.to_string(),
        false => format!("\"{}\"", name.replace('"', "\"\"")),
    }
}
