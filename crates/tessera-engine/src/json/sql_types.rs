//! DuckDB's SQL type names that DataFusion does not plan, as Arrow types: the unsigned
//! integers (`UTINYINT` ... `UBIGINT`), `HUGEINT`/`UHUGEINT` (as `DECIMAL(38,0)`, the
//! widest exact integer Arrow's kernels compute with), `UUID` (its text), `BLOB`, the
//! timestamp and time units (`TIMESTAMP_S`, `TIMESTAMP_MS`, `TIMESTAMP_NS`, `TIME_NS`),
//! and nested types whose members DataFusion cannot spell: `ROW(a JSON)`, `MAP(k, v)`,
//! lists of these. DuckDB's tests use them in casts and column definitions.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef, Fields, TimeUnit};
use datafusion::common::{DataFusionError, Result, plan_err};
use datafusion::sql::sqlparser::ast::{self, ArrayElemTypeDef};
use datafusion::sql::sqlparser::dialect::DuckDbDialect;
use datafusion::sql::sqlparser::parser::Parser;

use super::json_type::json_field;

/// Nesting of a planned type deeper than this is an error, not a deep recursion.
const NESTING_MAX: usize = 64;

/// The Arrow field of a DuckDB type DataFusion does not plan itself; `None` leaves the
/// type to DataFusion.
pub fn duckdb_field(sql_type: &ast::DataType) -> Result<Option<FieldRef>> {
    if !needs_planning(sql_type) {
        return Ok(None);
    }
    Ok(Some(Arc::new(field("", sql_type, 0)?)))
}

/// Whether DataFusion lacks `sql_type` (or a member of it).
fn needs_planning(sql_type: &ast::DataType) -> bool {
    match sql_type {
        ast::DataType::Tuple(_) | ast::DataType::Map(..) | ast::DataType::JSON => true,
        ast::DataType::Custom(..) if custom_nested(sql_type).is_some() => true,
        ast::DataType::Struct(members, _) => members.iter().any(|m| needs_planning(&m.field_type)),
        ast::DataType::Array(element) => element_type(element).is_some_and(needs_planning),
        other => scalar_type(other).is_some_and(|(_, own)| own),
    }
}

fn element_type(element: &ArrayElemTypeDef) -> Option<&ast::DataType> {
    match element {
        ArrayElemTypeDef::None => None,
        ArrayElemTypeDef::AngleBracket(t)
        | ArrayElemTypeDef::SquareBracket(t, _)
        | ArrayElemTypeDef::Parenthesis(t) => Some(t),
    }
}

/// The field named `name` of `sql_type`, members planned recursively.
fn field(name: &str, sql_type: &ast::DataType, depth: usize) -> Result<Field> {
    if depth > NESTING_MAX {
        return plan_err!("type nested deeper than {NESTING_MAX} levels");
    }
    let data_type = match sql_type {
        ast::DataType::JSON => return Ok(json_field(name)),
        ast::DataType::Struct(members, _) | ast::DataType::Tuple(members) => {
            let fields = members
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let name = m
                        .field_name
                        .as_ref()
                        .map_or_else(|| format!("v{}", i + 1), |n| n.value.clone());
                    field(&name, &m.field_type, depth + 1)
                })
                .collect::<Result<Fields>>()?;
            DataType::Struct(fields)
        }
        ast::DataType::Custom(..) if let Some(nested) = custom_nested(sql_type) => {
            return field(name, &nested?, depth + 1);
        }
        ast::DataType::Map(key, value) => {
            let entries = Fields::from(vec![
                field("key", key, depth + 1)?.with_nullable(false),
                field("value", value, depth + 1)?,
            ]);
            let entries = Field::new("entries", DataType::Struct(entries), false);
            DataType::Map(Arc::new(entries), false)
        }
        ast::DataType::Array(element) => match element_type(element) {
            Some(item) => DataType::List(Arc::new(field("item", item, depth + 1)?)),
            None => return plan_err!("an array type needs its element type"),
        },
        other => match scalar_type(other) {
            Some((data_type, _)) => data_type,
            None => return plan_err!("Unsupported SQL type {other}"),
        },
    };
    Ok(Field::new(name, data_type, true))
}

/// DuckDB's `MAP(K, V)` and `ROW(a T, ...)`/`STRUCT(a T, ...)` where the parser leaves
/// them as a custom type whose modifiers are the words inside the parentheses: the key
/// and value types, or member names and one-word types in turn.
fn custom_nested(sql_type: &ast::DataType) -> Option<Result<ast::DataType>> {
    let ast::DataType::Custom(name, modifiers) = sql_type else {
        return None;
    };
    let name = name.to_string().to_ascii_uppercase();
    match (name.as_str(), modifiers.as_slice()) {
        ("MAP", [key, value]) => Some(parse_type(key).and_then(|k| {
            Ok(ast::DataType::Map(
                Box::new(k),
                Box::new(parse_type(value)?),
            ))
        })),
        ("ROW" | "STRUCT", words) if !words.is_empty() && words.len().is_multiple_of(2) => {
            let members = words
                .chunks(2)
                .map(|pair| {
                    Ok(ast::StructField {
                        field_name: Some(ast::Ident::new(&pair[0])),
                        field_type: parse_type(&pair[1])?,
                        options: None,
                    })
                })
                .collect::<Result<Vec<_>>>();
            Some(members.map(|m| ast::DataType::Struct(m, ast::StructBracketKind::Parentheses)))
        }
        _ => None,
    }
}

fn parse_type(text: &str) -> Result<ast::DataType> {
    Parser::new(&DuckDbDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_data_type())
        .map_err(|e| DataFusionError::Plan(format!("type {text}: {e}")))
}

/// The Arrow type of a scalar SQL type, and whether DataFusion lacks it (so Tessera
/// plans it); `None` for types neither knows.
fn scalar_type(sql_type: &ast::DataType) -> Option<(DataType, bool)> {
    use ast::DataType as S;
    let common = match sql_type {
        S::Boolean | S::Bool => DataType::Boolean,
        S::TinyInt(_) => DataType::Int8,
        S::SmallInt(_) => DataType::Int16,
        S::Int(_) | S::Integer(_) | S::Int4(_) => DataType::Int32,
        S::BigInt(_) | S::Int64 => DataType::Int64,
        S::Real | S::Float(_) => DataType::Float32,
        S::Double(_) | S::Float64 => DataType::Float64,
        S::Varchar(_) | S::Char(_) | S::Text | S::String(_) => DataType::Utf8,
        S::Date => DataType::Date32,
        S::Timestamp(_, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) => {
            DataType::Timestamp(TimeUnit::Microsecond, None)
        }
        S::Time(_, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) => {
            DataType::Time64(TimeUnit::Microsecond)
        }
        S::Bytea => DataType::Binary,
        S::Decimal(info) | S::Numeric(info) => match *info {
            ast::ExactNumberInfo::PrecisionAndScale(p, s) => {
                DataType::Decimal128(u8::try_from(p).ok()?, i8::try_from(s).ok()?)
            }
            ast::ExactNumberInfo::Precision(p) => DataType::Decimal128(u8::try_from(p).ok()?, 0),
            ast::ExactNumberInfo::None => DataType::Decimal128(18, 3),
        },
        other => return own_scalar_type(other).map(|t| (t, true)),
    };
    Some((common, false))
}

/// The scalar types only DuckDB has (see the module documentation).
fn own_scalar_type(sql_type: &ast::DataType) -> Option<DataType> {
    use ast::DataType as S;
    Some(match sql_type {
        S::UTinyInt => DataType::UInt8,
        S::USmallInt => DataType::UInt16,
        S::UBigInt => DataType::UInt64,
        S::HugeInt | S::UHugeInt => DataType::Decimal128(38, 0),
        S::Uuid => DataType::Utf8,
        S::Blob(_) => DataType::Binary,
        S::Custom(name, modifiers) if modifiers.is_empty() => {
            match name.to_string().to_ascii_uppercase().as_str() {
                "UINTEGER" | "UINT" => DataType::UInt32,
                "TIMESTAMP_S" => DataType::Timestamp(TimeUnit::Second, None),
                "TIMESTAMP_MS" => DataType::Timestamp(TimeUnit::Millisecond, None),
                "TIMESTAMP_US" => DataType::Timestamp(TimeUnit::Microsecond, None),
                "TIMESTAMP_NS" => DataType::Timestamp(TimeUnit::Nanosecond, None),
                "TIME_NS" => DataType::Time64(TimeUnit::Nanosecond),
                _ => return None,
            }
        }
        _ => return None,
    })
}
