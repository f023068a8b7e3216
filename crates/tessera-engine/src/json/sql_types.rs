//! DuckDB's SQL type names that DataFusion does not plan, as Arrow types: the unsigned
//! integers (`UTINYINT` ... `UBIGINT`), `HUGEINT`/`UHUGEINT` (as `DECIMAL(38,0)`, the
//! widest exact integer Arrow's kernels compute with), `BIGNUM` (the same, marked),
//! `UUID` and `BIT` (their text, marked: [`MarkedType`]), `BLOB`, the
//! timestamp and time units (`TIMESTAMP_S`, `TIMESTAMP_MS`, `TIMESTAMP_NS`, `TIME_NS`),
//! `TIMESTAMPTZ` (microseconds in UTC), `ENUM('a', 'b')` (`super::enum_type`), and nested
//! types whose members DataFusion cannot spell: `ROW(a JSON)`, `MAP(k, v)`,
//! `TUPLE(INTEGER, VARCHAR)` (a struct of unnamed members, see [`is_tuple`]), lists of
//! these; `UNION(a T, ...)` (a sparse Arrow union, type ids in member order) and
//! `VARIANT` (Arrow's Parquet Variant extension type, `json::variant_type`). DuckDB's
//! tests use them in casts and column definitions.
//! [`duckdb_type_name`] goes the other way (`typeof`): an Arrow type's DuckDB name,
//! which plans back to the same Arrow type.
//!
//! The module needs only Arrow's schema types and the SQL parser, so that the fuzz
//! target `sql_types` compiles it on its own.

use std::sync::Arc;

use super::sql_deps::ast::{self, ArrayElemTypeDef};
use super::sql_deps::{
    DataType, DuckDbDialect, Field, FieldRef, Fields, Parser, TimeUnit, UnionFields, UnionMode,
};

use super::duckdb_keywords::is_keyword;
use super::enum_type::{enum_field, enum_name, labels_of};
use super::json_type::{is_json, json_field};
use super::variant_type::{is_variant, variant_field};

/// Nesting of a planned type deeper than this is an error, not a deep recursion.
const NESTING_MAX: usize = 64;

/// The time zone of `TIMESTAMPTZ` values, which DuckDB shows in UTC.
const UTC_OFFSET: &str = "+00:00";

/// Where a field names its extension type (Arrow's convention).
const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";

/// DuckDB's types that Tessera holds in another type's values, marked on the field:
/// a cast to `JSON` writes `UUID` and `BIT` as strings (the bare text `1101` would be
/// a JSON number), casts from `JSON` to `BIT` and `BIGNUM` are errors (DuckDB reads
/// neither from JSON), and `typeof` names all three.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkedType {
    /// `UUID`: its canonical text.
    Uuid,
    /// `BIT`: a string of `0` and `1`.
    Bit,
    /// `BIGNUM`, DuckDB's arbitrary-precision integer: `DECIMAL(38,0)`, as far as 38
    /// digits hold it.
    Bignum,
}

impl MarkedType {
    const ALL: [MarkedType; 3] = [MarkedType::Uuid, MarkedType::Bit, MarkedType::Bignum];

    fn extension_name(self) -> &'static str {
        match self {
            MarkedType::Uuid => "tessera.uuid",
            MarkedType::Bit => "tessera.bit",
            MarkedType::Bignum => "tessera.bignum",
        }
    }

    /// DuckDB's name of the type.
    pub fn sql_name(self) -> &'static str {
        match self {
            MarkedType::Uuid => "UUID",
            MarkedType::Bit => "BIT",
            MarkedType::Bignum => "BIGNUM",
        }
    }

    /// Whether its values are text (so their JSON is a string).
    pub fn is_text(self) -> bool {
        self != MarkedType::Bignum
    }

    /// A nullable field `name` of this type.
    pub fn field(self, name: &str) -> Field {
        let data_type = match self {
            MarkedType::Uuid | MarkedType::Bit => DataType::Utf8,
            MarkedType::Bignum => DataType::Decimal128(38, 0),
        };
        let mark = (
            EXTENSION_NAME_KEY.to_string(),
            self.extension_name().to_string(),
        );
        Field::new(name, data_type, true).with_metadata([mark].into_iter().collect())
    }

    /// The marked type `field` holds, if it holds one.
    pub fn of(field: &Field) -> Option<MarkedType> {
        let name = field.metadata().get(EXTENSION_NAME_KEY)?;
        Self::ALL.into_iter().find(|t| t.extension_name() == name)
    }
}

/// A type that names no Arrow type: what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TypeError(String);

type Result<T> = std::result::Result<T, TypeError>;

/// The Arrow field of any SQL type this module knows (DataFusion's common ones too),
/// members planned recursively; for `typeof` round trips and the fuzz target.
pub fn plan_field(sql_type: &ast::DataType) -> Result<Field> {
    field("", sql_type, 0)
}

/// The Arrow field of a DuckDB type DataFusion does not plan itself; `None` leaves the
/// type to DataFusion.
pub fn duckdb_field(sql_type: &ast::DataType) -> Result<Option<FieldRef>> {
    if !needs_planning(sql_type) {
        return Ok(None);
    }
    Ok(Some(Arc::new(plan_field(sql_type)?)))
}

/// The Arrow field of a type written as text (`'TIMESTAMP_MS'`, `'MAP(VARCHAR, JSON)'`),
/// read with DuckDB's grammar; for type names inside strings (`json_transform`).
pub fn plan_type_text(text: &str) -> Result<Field> {
    plan_field(&parse_type(text)?)
}

/// Whether DataFusion lacks `sql_type` (or a member of it).
fn needs_planning(sql_type: &ast::DataType) -> bool {
    match sql_type {
        ast::DataType::Tuple(_)
        | ast::DataType::Map(..)
        | ast::DataType::JSON
        | ast::DataType::Enum(..)
        | ast::DataType::Union(_) => true,
        ast::DataType::Custom(..) if is_variant_name(sql_type) => true,
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
        return Err(TypeError(format!(
            "type nested deeper than {NESTING_MAX} levels"
        )));
    }
    let data_type = match sql_type {
        ast::DataType::JSON => return Ok(json_field(name)),
        ast::DataType::Enum(members, None) => {
            return labels_of(members)
                .map(|labels| enum_field(name, &labels))
                .map_err(TypeError);
        }
        ast::DataType::Uuid => return Ok(MarkedType::Uuid.field(name)),
        ast::DataType::Bit(_) | ast::DataType::BitVarying(_) => {
            return Ok(MarkedType::Bit.field(name));
        }
        ast::DataType::Custom(custom, modifiers) if modifiers.is_empty() && is_bignum(custom) => {
            return Ok(MarkedType::Bignum.field(name));
        }
        ast::DataType::Custom(..) if is_variant_name(sql_type) => return Ok(variant_field(name)),
        ast::DataType::Union(members) => {
            let fields = members
                .iter()
                .map(|m| field(&m.field_name.value, &m.field_type, depth + 1))
                .collect::<Result<Vec<_>>>()?;
            union_type(fields)?
        }
        ast::DataType::Struct(members, _) | ast::DataType::Tuple(members) => {
            let fields = members
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let name = m
                        .field_name
                        .as_ref()
                        .map_or_else(|| tuple_member_name(i), |n| n.value.clone());
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
            None => return Err(TypeError("an array type needs its element type".into())),
        },
        other => match scalar_type(other) {
            Some((data_type, _)) => data_type,
            None => return Err(TypeError(format!("Unsupported SQL type {other}"))),
        },
    };
    Ok(Field::new(name, data_type, true))
}

/// A sparse union of `members`, type ids in member order (as DuckDB numbers its tags);
/// Arrow allows at most 128 members, DuckDB 256.
pub fn union_type(members: Vec<Field>) -> Result<DataType> {
    let ids = 0..i8::try_from(members.len())
        .map_err(|_| TypeError("a UNION has at most 127 members".into()))?;
    if members.is_empty() {
        return Err(TypeError("a UNION needs at least one member".into()));
    }
    let fields = UnionFields::try_new(ids, members).map_err(|e| TypeError(e.to_string()))?;
    Ok(DataType::Union(fields, UnionMode::Sparse))
}

/// Whether `sql_type` is DuckDB's `VARIANT`, which the parser leaves a custom name.
fn is_variant_name(sql_type: &ast::DataType) -> bool {
    matches!(sql_type, ast::DataType::Custom(name, modifiers)
        if modifiers.is_empty() && name.to_string().eq_ignore_ascii_case("VARIANT"))
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
        ("TUPLE", types) if !types.is_empty() => {
            let members = types
                .iter()
                .map(|t| {
                    Ok(ast::StructField {
                        field_name: None,
                        field_type: parse_type(t)?,
                        options: None,
                    })
                })
                .collect::<Result<Vec<_>>>();
            Some(members.map(ast::DataType::Tuple))
        }
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
        .map_err(|e| TypeError(format!("type {text}: {e}")))
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
        // DuckDB's TIMESTAMPTZ: microseconds, shown in UTC (DataFusion would take the
        // session's time zone, none by default, and lose the zone).
        S::Timestamp(_, ast::TimezoneInfo::Tz | ast::TimezoneInfo::WithTimeZone) => {
            let utc = DataType::Timestamp(TimeUnit::Microsecond, Some(UTC_OFFSET.into()));
            return Some((utc, true));
        }
        S::Time(_, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) => {
            DataType::Time64(TimeUnit::Microsecond)
        }
        S::Bytea => DataType::Binary,
        S::Decimal(info) | S::Numeric(info) => decimal_type(info)?,
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
        S::Uuid | S::Bit(_) | S::BitVarying(_) => DataType::Utf8,
        S::Blob(_) => DataType::Binary,
        S::Custom(name, modifiers) if modifiers.is_empty() => {
            match name.to_string().to_ascii_uppercase().as_str() {
                "UINTEGER" | "UINT" => DataType::UInt32,
                "TIMESTAMP_S" => DataType::Timestamp(TimeUnit::Second, None),
                "TIMESTAMP_MS" => DataType::Timestamp(TimeUnit::Millisecond, None),
                "TIMESTAMP_US" => DataType::Timestamp(TimeUnit::Microsecond, None),
                "TIMESTAMP_NS" => DataType::Timestamp(TimeUnit::Nanosecond, None),
                "TIME_NS" => DataType::Time64(TimeUnit::Nanosecond),
                "BIGNUM" | "VARINT" => DataType::Decimal128(38, 0),
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// Whether a custom type name is DuckDB's `BIGNUM` (or its old name `VARINT`).
fn is_bignum(name: &ast::ObjectName) -> bool {
    let name = name.to_string();
    name.eq_ignore_ascii_case("BIGNUM") || name.eq_ignore_ascii_case("VARINT")
}

/// `DECIMAL(p, s)` with Arrow's (and DuckDB's) limits: precision 1 to 38, scale 0 to
/// the precision; DuckDB's default is `DECIMAL(18,3)`.
fn decimal_type(info: &ast::ExactNumberInfo) -> Option<DataType> {
    let (precision, scale) = match *info {
        ast::ExactNumberInfo::PrecisionAndScale(p, s) => (p, s),
        ast::ExactNumberInfo::Precision(p) => (p, 0),
        ast::ExactNumberInfo::None => (18, 3),
    };
    let precision = u8::try_from(precision)
        .ok()
        .filter(|p| (1..=38).contains(p))?;
    let scale = i8::try_from(scale)
        .ok()
        .filter(|s| (0..=precision as i8).contains(s))?;
    Some(DataType::Decimal128(precision, scale))
}

/// DuckDB's name of the SQL type `field` holds.
pub fn duckdb_type_name(field: &Field) -> String {
    if is_json(field) {
        return "JSON".to_string();
    }
    if let Some(name) = enum_name(field) {
        return name.to_string();
    }
    if let Some(marked) = MarkedType::of(field) {
        return marked.sql_name().to_string();
    }
    if is_variant(field) {
        return "VARIANT".to_string();
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
        Struct(fields) if let Some(name) = tuple_type_name(fields) => return name,
        Struct(fields) => {
            let members: Vec<String> = fields
                .iter()
                .map(|f| format!("{} {}", member_name(f.name()), duckdb_type_name(f)))
                .collect();
            return format!("STRUCT({})", members.join(", "));
        }
        Union(fields, _) => {
            let members: Vec<String> = fields
                .iter()
                .map(|(_, f)| format!("{} {}", member_name(f.name()), duckdb_type_name(f)))
                .collect();
            return format!("UNION({})", members.join(", "));
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

/// The name of member `index` (from 0) of a tuple: `v1`, `v2`, ...
pub fn tuple_member_name(index: usize) -> String {
    format!("v{}", index + 1)
}

/// Whether a struct of `fields` is a tuple (DuckDB's unnamed struct: `row(1, 'a')`,
/// `TUPLE(INTEGER, VARCHAR)`, which `to_json` writes as an array): its members are
/// named `v1`, `v2`, ... in order, as Tessera names unnamed members.
pub fn is_tuple(fields: &Fields) -> bool {
    !fields.is_empty()
        && fields
            .iter()
            .enumerate()
            .all(|(i, f)| f.name() == &tuple_member_name(i))
}

/// `TUPLE(INTEGER, VARCHAR)` for a tuple whose member types are single words (the
/// parser reads `TUPLE(..)` as words only); `None` otherwise, which names it a struct.
fn tuple_type_name(fields: &Fields) -> Option<String> {
    if !is_tuple(fields) {
        return None;
    }
    let members: Vec<String> = fields.iter().map(|f| duckdb_type_name(f)).collect();
    let words = members
        .iter()
        .all(|m| m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    words.then(|| format!("TUPLE({})", members.join(", ")))
}

/// A struct member's name as DuckDB writes it in a type: quoted unless it is a plain
/// identifier (letters of either case, digits after the first, `_`) and no keyword.
fn member_name(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !is_keyword(name);
    match plain {
        true => name.to_string(),
        false => format!("\"{}\"", name.replace('"', "\"\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ast::DataType {
        Parser::new(&DuckDbDialect {})
            .try_with_sql(text)
            .and_then(|mut p| p.parse_data_type())
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// Scalars, and every one of them inside lists, maps and structs (member names
    /// that need quoting included), two levels deep, as far as the parser reads them.
    fn generated_types() -> Vec<String> {
        let scalars = [
            "BOOLEAN",
            "TINYINT",
            "UTINYINT",
            "USMALLINT",
            "UINTEGER",
            "UBIGINT",
            "HUGEINT",
            "UHUGEINT",
            "DOUBLE",
            "DECIMAL(10,2)",
            "VARCHAR",
            "UUID",
            "BIT",
            "BIGNUM",
            "BLOB",
            "DATE",
            "TIMESTAMP_S",
            "TIMESTAMP_MS",
            "TIMESTAMP_NS",
            "TIME_NS",
            "JSON",
            "ENUM('a', 'it''s', 'B c')",
            "TUPLE(INTEGER, VARCHAR)",
            "VARIANT",
        ];
        // The parser reads MAP(..) and ROW(..) as words only: one-word members.
        let wrap = |t: &str| {
            let mut out = vec![
                format!("{t}[]"),
                format!("STRUCT(a {t}, \"B c\" {t}[])"),
                format!("UNION(u {t}, \"V w\" {t}[])"),
            ];
            if t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                out.extend([format!("MAP(VARCHAR, {t})"), format!("ROW(x {t})")]);
            }
            out
        };
        let mut out: Vec<String> = scalars.iter().map(|s| s.to_string()).collect();
        for s in scalars {
            for once in wrap(s) {
                out.extend(wrap(&once));
                out.push(once);
            }
        }
        out
    }

    #[test]
    fn duckdb_names_plan_back_to_the_same_type() {
        for text in generated_types() {
            let field = plan_field(&parse(&text)).unwrap_or_else(|e| panic!("{text}: {e}"));
            let name = duckdb_type_name(&field);
            let again = plan_field(&parse(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(again.data_type(), field.data_type(), "{text} named {name}");
        }
    }

    #[test]
    fn decimals_outside_arrows_limits_are_not_planned() {
        for text in [
            "DECIMAL(39,0)",
            "DECIMAL(0,0)",
            "DECIMAL(5,6)",
            "DECIMAL(300,2)",
        ] {
            assert!(plan_field(&parse(text)).is_err(), "{text}");
        }
        assert!(plan_field(&parse("DECIMAL(38,38)")).is_ok());
    }
}
