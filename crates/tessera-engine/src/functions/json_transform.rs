//! `json_transform(j, structure)` (alias `from_json`) and `json_transform_strict`
//! (alias `from_json_strict`): JSON documents into typed Arrow values, the structure
//! written as `json_structure` writes it (`'{"a": "BIGINT", "b": ["VARCHAR"]}'`), with
//! DuckDB 2.0.0's conversion rules.
//!
//! Numbers, booleans (1 and 0) and numeric strings convert to integers (doubles round
//! half to even, strings half away from zero, as DuckDB's casts do); anything that does
//! not fit is NULL, or an error under `_strict`. `VARCHAR` takes strings as they are
//! and any other value as its JSON text, `JSON` takes the JSON text. A non-array where
//! a list is asked for is a NULL list, a non-object where a struct is asked for a
//! struct of NULLs (both errors under `_strict`, as are missing and duplicated keys).
//! `DECIMAL(p,s)` takes numbers through double (rounding half away from zero),
//! `DATE` and `TIMESTAMP` take strings Arrow's cast reads. `BLOB` takes a string's
//! bytes and any other value's JSON text. A `UNION` takes an object of one member,
//! `{"tag": value}` (`json::union_type`).

use std::sync::{Arc, LazyLock};

use arrow::array::{
    Array, ArrayRef, BinaryArray, BinaryBuilder, BooleanArray, Decimal128Array, Float64Array,
    ListArray, MapArray, StringArray, StructArray, new_null_array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::{CastOptions, cast, cast_with_options};
use arrow::datatypes::{
    DataType, Field, FieldRef, Fields, TimeUnit, UnionFields, UnionMode::Sparse,
};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::scalar_doc_sections::DOC_SECTION_OTHER;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use tessera_geometry::{geojson, wkb};
use tessera_json::tree::Json;

use super::json_build::{TextColumn, parse_json};
use crate::json::enum_type::{enum_labels, enum_name};
use crate::json::geometry_type::{geometry_field, is_geometry};
use crate::json::json_type::{is_json, json_field};
use crate::json::sql_types::{MarkedType, is_tuple, plan_type_text};
use crate::json::union_type::sparse_union;

/// The transform functions, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    [
        ("json_transform", false, "from_json"),
        ("json_transform_strict", true, "from_json_strict"),
    ]
    .into_iter()
    .map(|(name, strict, alias)| {
        Arc::new(ScalarUDF::from(JsonTransform {
            name,
            strict,
            aliases: vec![alias.to_string()],
            signature: Signature::user_defined(Volatility::Immutable),
        }))
    })
    .collect()
}

/// The Arrow type a structure asks for.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    Null,
    Boolean,
    /// An integer type (`Int8` ... `UInt64`, or `Decimal128(38, 0)` for `HUGEINT`).
    Integer(DataType),
    /// `UHUGEINT`: `Decimal128(38, 0)` without negative values.
    UHugeInt,
    /// `Float32` or `Float64`.
    Float(DataType),
    /// `Decimal128(precision, scale)`, from numbers through double as DuckDB converts.
    Decimal(DataType),
    /// `Date32`, a `Timestamp`, a `Time64` or an `Interval`, from strings by Arrow's cast.
    Temporal(DataType),
    Varchar,
    /// A string holding a UUID (`8-4-4-4-12` hex digits), lower-cased as DuckDB prints it.
    Uuid,
    /// Bytes: a string's own, any other value's JSON text.
    Blob,
    Json,
    /// An ENUM (its field): strings that are one of its labels.
    Enum(FieldRef),
    /// `GEOMETRY`: a GeoJSON object or a WKT string, as WKB (NULL when it is neither,
    /// an error under `_strict`).
    Geometry,
    List(Box<Target>),
    Struct(Vec<(String, Target)>),
    /// A map from an object: its keys converted to the first type (always strictly:
    /// a map key cannot be NULL), its values to the second.
    Map(Box<Target>, Box<Target>),
    /// A union from an object of one member, its value converted to that member's type.
    Union(Vec<(String, Target)>),
}

impl Target {
    /// Reads a structure; errors say what is wrong with it, as DuckDB's do.
    fn parse(structure: &Json) -> Result<Target> {
        match structure {
            Json::String(name) => Target::named(name),
            Json::Array(items) if items.len() == 1 => {
                Ok(Target::List(Box::new(Target::parse(&items[0])?)))
            }
            Json::Array(_) => plan_err!("Too many values in array of JSON structure"),
            Json::Object(members) if members.is_empty() => {
                plan_err!("Empty object in JSON structure")
            }
            Json::Object(members) => {
                let mut fields: Vec<(String, Target)> = Vec::with_capacity(members.len());
                for (key, value) in members {
                    if fields.iter().any(|(k, _)| k == key) {
                        return plan_err!("Duplicate keys in object in JSON structure: \"{key}\"");
                    }
                    fields.push((key.clone(), Target::parse(value)?));
                }
                Ok(Target::Struct(fields))
            }
            _ => plan_err!("invalid JSON structure: {}", structure.to_text()),
        }
    }

    fn named(name: &str) -> Result<Target> {
        use DataType::*;
        Ok(match name.to_ascii_uppercase().as_str() {
            "NULL" => Target::Null,
            "BOOLEAN" | "BOOL" => Target::Boolean,
            "TINYINT" | "INT1" => Target::Integer(Int8),
            "SMALLINT" | "INT2" => Target::Integer(Int16),
            "INTEGER" | "INT" | "INT4" => Target::Integer(Int32),
            "BIGINT" | "INT8" | "INT64" => Target::Integer(Int64),
            "UTINYINT" => Target::Integer(UInt8),
            "USMALLINT" => Target::Integer(UInt16),
            "UINTEGER" => Target::Integer(UInt32),
            "UBIGINT" => Target::Integer(UInt64),
            "HUGEINT" => Target::Integer(Decimal128(38, 0)),
            "UHUGEINT" => Target::UHugeInt,
            "FLOAT" | "REAL" | "FLOAT4" => Target::Float(Float32),
            "DOUBLE" | "FLOAT8" => Target::Float(Float64),
            "VARCHAR" | "TEXT" | "STRING" => Target::Varchar,
            "JSON" => Target::Json,
            "GEOMETRY" => Target::Geometry,
            "DATE" => Target::Temporal(Date32),
            "TIMESTAMP" => Target::Temporal(Timestamp(TimeUnit::Microsecond, None)),
            "UUID" => Target::Uuid,
            "BLOB" | "BYTEA" => Target::Blob,
            upper if upper.starts_with("DECIMAL") => Target::Decimal(decimal_type(upper)?),
            // The other types as the SQL planner names them: TIME, TIMESTAMP_S, ...,
            // ENUM('a', 'b') (whose labels keep their case), UNION(a T, ...) (whose tags, its
            // JSON keys, keep their case), lists of these.
            _ => match plan_type_text(name).ok().and_then(|f| Target::of_field(&f)) {
                Some(target) => target,
                None => {
                    return plan_err!(
                        "JSON structure type {name} can not be converted to a Tessera type \
                         (supported: NULL, BOOLEAN, the integer types, HUGEINT, UHUGEINT, FLOAT, \
                         DOUBLE, DECIMAL(p,s), DATE, TIME, the TIMESTAMP types, UUID, BLOB, VARCHAR, \
                         JSON, GEOMETRY, arrays and objects)"
                    );
                }
            },
        })
    }

    /// The target of a cast to `field`'s type; `None` for a type no JSON value
    /// converts to.
    fn of_field(field: &Field) -> Option<Target> {
        use DataType::*;
        if is_json(field) {
            return Some(Target::Json);
        }
        if enum_name(field).is_some() {
            return Some(Target::Enum(Arc::new(field.clone())));
        }
        if MarkedType::of(field) == Some(MarkedType::Uuid) {
            return Some(Target::Uuid);
        }
        let data_type = field.data_type();
        Some(match data_type {
            Null => Target::Null,
            Boolean => Target::Boolean,
            Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 => {
                Target::Integer(data_type.clone())
            }
            // HUGEINT: integers' rules (rounding half to even, strings as integers).
            Decimal128(38, 0) => Target::Integer(data_type.clone()),
            Decimal128(..) => Target::Decimal(data_type.clone()),
            Float32 | Float64 => Target::Float(data_type.clone()),
            Date32 | Timestamp(..) | Time64(_) | Interval(_) => Target::Temporal(data_type.clone()),
            // Built as Utf8; the caller casts to the view or large layout.
            Utf8 | Utf8View | LargeUtf8 => Target::Varchar,
            Binary if !is_geometry(field) => Target::Blob,
            // A fixed-size list is built as a list; the caller casts it to its size.
            List(item) | FixedSizeList(item, _) => Target::List(Box::new(Target::of_field(item)?)),
            Struct(fields) => Target::Struct(
                fields
                    .iter()
                    .map(|f| Some((f.name().clone(), Target::of_field(f)?)))
                    .collect::<Option<Vec<_>>>()?,
            ),
            Map(entries, _) => match entries.data_type() {
                Struct(pair) if pair.len() == 2 => Target::Map(
                    Box::new(Target::of_field(&pair[0])?),
                    Box::new(Target::of_field(&pair[1])?),
                ),
                _ => return None,
            },
            Union(members, _) => Target::Union(
                members
                    .iter()
                    .map(|(_, f)| Some((f.name().clone(), Target::of_field(f)?)))
                    .collect::<Option<Vec<_>>>()?,
            ),
            _ => return None,
        })
    }

    fn field(&self, name: &str) -> Field {
        match self {
            Target::Json => json_field(name),
            Target::Enum(field) => field.as_ref().clone().with_name(name),
            Target::Geometry => geometry_field(name),
            other => Field::new(name, other.data_type(), true),
        }
    }

    fn data_type(&self) -> DataType {
        match self {
            Target::Null => DataType::Null,
            Target::Boolean => DataType::Boolean,
            Target::Integer(t) | Target::Float(t) | Target::Decimal(t) | Target::Temporal(t) => {
                t.clone()
            }
            Target::UHugeInt => DataType::Decimal128(38, 0),
            Target::Varchar | Target::Uuid | Target::Json | Target::Enum(_) => DataType::Utf8,
            Target::Blob | Target::Geometry => DataType::Binary,
            Target::List(item) => DataType::List(Arc::new(item.field("item"))),
            Target::Struct(fields) => DataType::Struct(Self::fields(fields)),
            Target::Map(key, value) => {
                DataType::Map(Arc::new(Self::map_entries(key, value)), false)
            }
            Target::Union(members) => DataType::Union(Self::union_fields(members), Sparse),
        }
    }

    fn map_entries(key: &Target, value: &Target) -> Field {
        let pair = Fields::from(vec![
            key.field("key").with_nullable(false),
            value.field("value"),
        ]);
        Field::new("entries", DataType::Struct(pair), false)
    }

    /// A union's members, type ids in member order (at most 127, as planned).
    fn union_fields(members: &[(String, Target)]) -> UnionFields {
        UnionFields::from_fields(Self::fields(members).iter().cloned())
    }

    fn fields(fields: &[(String, Target)]) -> Fields {
        fields.iter().map(|(k, t)| t.field(k)).collect()
    }
}

/// One transform function; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct JsonTransform {
    name: &'static str,
    strict: bool,
    aliases: Vec<String>,
    signature: Signature,
}

static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION_OTHER,
        "Converts JSON into typed values as a structure says (as json_structure writes \
         it); json_transform_strict errors where json_transform gives NULL.",
        "json_transform(j, '{\"a\": \"BIGINT\", \"tags\": [\"VARCHAR\"]}')",
    )
    .build()
});

impl JsonTransform {
    /// The structure argument, which must be a constant.
    fn target(&self, structure: Option<&ScalarValue>) -> Result<Target> {
        let text = match structure {
            Some(
                ScalarValue::Utf8(Some(t))
                | ScalarValue::LargeUtf8(Some(t))
                | ScalarValue::Utf8View(Some(t)),
            ) => t,
            _ => {
                return plan_err!(
                    "the structure argument of {} must be a constant JSON text",
                    self.name
                );
            }
        };
        let json =
            Json::parse(text.as_bytes(), &mut crate::json::function_tape()).map_err(|e| {
                DataFusionError::Plan(format!("{}: malformed JSON structure: {e}", self.name))
            })?;
        Target::parse(&json)
    }
}

impl ScalarUDFImpl for JsonTransform {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let text = |t: &DataType| match t {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Some(t.clone()),
            DataType::Null => Some(DataType::Utf8),
            _ => None,
        };
        match arg_types {
            [json, structure] => match (text(json), text(structure)) {
                (Some(j), Some(s)) => Ok(vec![j, s]),
                _ => plan_err!("{}() takes JSON text and a structure", self.name),
            },
            _ => plan_err!("{}() takes two arguments: JSON and a structure", self.name),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        plan_err!("{}: the result type depends on the structure", self.name)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let structure = args.scalar_arguments.get(1).copied().flatten();
        Ok(Arc::new(self.target(structure)?.field(self.name)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let structure = match &args.args[1] {
            ColumnarValue::Scalar(s) => Some(s),
            ColumnarValue::Array(_) => None,
        };
        let target = self.target(structure)?;
        let constant = matches!(args.args[0], ColumnarValue::Scalar(_));
        let rows = if constant { 1 } else { args.number_rows };
        let docs = args.args[0].to_array(rows)?;
        let texts = TextColumn::new(self.name, &docs)?;
        let mut tape = crate::json::function_tape();
        let parsed = (0..rows)
            .map(|row| {
                texts
                    .get(row)
                    .map(|t| parse_json(self.name, row, t, &mut tape))
                    .transpose()
            })
            .collect::<Result<Vec<_>>>()?;
        let values: Vec<Option<&Json>> = parsed.iter().map(Option::as_ref).collect();
        let array = Converter {
            name: self.name,
            strict: self.strict,
        }
        .build(&target, &values)?;
        match constant {
            true => Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &array, 0,
            )?)),
            false => Ok(ColumnarValue::Array(array)),
        }
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}

/// Builds the column of one target from the values at its place in every row.
struct Converter {
    name: &'static str,
    strict: bool,
}

impl Converter {
    /// `None` under the lenient function, the error under `_strict`.
    fn fail<T>(&self, message: String) -> Result<Option<T>> {
        match self.strict {
            true => exec_err!("{}: {message}", self.name),
            false => Ok(None),
        }
    }

    fn build(&self, target: &Target, values: &[Option<&Json>]) -> Result<ArrayRef> {
        fn present<'a>(value: &Option<&'a Json>) -> Option<&'a Json> {
            value.filter(|j| **j != Json::Null)
        }
        Ok(match target {
            Target::Null => new_null_array(&DataType::Null, values.len()),
            Target::Boolean => Arc::new(
                values
                    .iter()
                    .map(|v| present(v).map_or(Ok(None), |j| self.boolean(j)))
                    .collect::<Result<BooleanArray>>()?,
            ),
            Target::Integer(data_type) => {
                self.integers(data_type, integer_range(data_type), values)?
            }
            Target::UHugeInt => self.integers(
                &DataType::Decimal128(38, 0),
                (0, 10i128.pow(38) - 1),
                values,
            )?,
            Target::Float(data_type) => {
                let doubles = values
                    .iter()
                    .map(|v| present(v).map_or(Ok(None), |j| self.double(j)))
                    .collect::<Result<Float64Array>>()?;
                cast(&doubles, data_type)?
            }
            Target::Varchar | Target::Json => Arc::new(
                values
                    .iter()
                    .map(|v| {
                        present(v).map(|j| match (target, j) {
                            (Target::Varchar, Json::String(s)) => s.clone(),
                            (Target::Varchar, Json::Float(_)) => varchar_exponent(j.to_text()),
                            _ => j.to_text(),
                        })
                    })
                    .collect::<StringArray>(),
            ),
            Target::Blob => Arc::new(
                values
                    .iter()
                    .map(|v| {
                        present(v).map(|j| match j {
                            Json::String(s) => s.as_bytes().to_vec(),
                            other => other.to_text().into_bytes(),
                        })
                    })
                    .collect::<BinaryArray>(),
            ),
            Target::Geometry => self.geometries(values)?,
            Target::Uuid => Arc::new(
                values
                    .iter()
                    .map(|v| match present(v) {
                        Some(Json::String(s)) if is_uuid(s) => Ok(Some(s.to_ascii_lowercase())),
                        Some(other) => {
                            self.fail(format!("Unable to cast '{}' to UUID", other.to_text()))
                        }
                        None => Ok(None),
                    })
                    .collect::<Result<StringArray>>()?,
            ),
            Target::Decimal(data_type) => {
                let doubles = values
                    .iter()
                    .map(|v| present(v).map_or(Ok(None), |j| self.double(j)))
                    .collect::<Result<Float64Array>>()?;
                self.cast_checked(&doubles, data_type, "decimal")?
            }
            Target::Temporal(data_type) => {
                let texts = values
                    .iter()
                    .map(|v| match present(v) {
                        Some(Json::String(s)) => Ok(Some(s.as_str())),
                        Some(other) => self.fail(format!(
                            "Unable to cast '{}' to {data_type}",
                            other.to_text()
                        )),
                        None => Ok(None),
                    })
                    .collect::<Result<StringArray>>()?;
                self.cast_checked(&texts, data_type, &data_type.to_string())?
            }
            Target::Enum(field) => self.labels(field, values)?,
            Target::List(item) => self.list(item, values)?,
            Target::Struct(fields) => self.structure(fields, values)?,
            Target::Map(key, value) => self.map(key, value, values)?,
            Target::Union(members) => self.union(members, values)?,
        })
    }

    /// Arrow's cast, NULL where it fails; under `_strict` a failure is an error.
    fn cast_checked(
        &self,
        array: &dyn Array,
        data_type: &DataType,
        what: &str,
    ) -> Result<ArrayRef> {
        let options = CastOptions {
            safe: true,
            ..Default::default()
        };
        let out = cast_with_options(array, data_type, &options)?;
        if self.strict && out.null_count() > array.null_count() {
            let row = (0..array.len())
                .find(|&i| array.is_valid(i) && out.is_null(i))
                .unwrap_or_default();
            let value = arrow::util::display::ArrayFormatter::try_new(array, &Default::default())?
                .value(row)
                .to_string();
            return exec_err!("{}: Failed to cast value to {what}: {value}", self.name);
        }
        Ok(out)
    }

    /// Integers in `min..=max` as `data_type`; others NULL (an error under `_strict`).
    fn integers(
        &self,
        data_type: &DataType,
        (min, max): (i128, i128),
        values: &[Option<&Json>],
    ) -> Result<ArrayRef> {
        let integers = values
            .iter()
            .map(|v| match v.filter(|j| **j != Json::Null) {
                None => Ok(None),
                Some(j) => match self.integer(j)? {
                    Some(i) if (min..=max).contains(&i) => Ok(Some(i)),
                    Some(_) => self.fail(format!(
                        "Failed to cast value to numerical: {}",
                        j.to_text()
                    )),
                    None => Ok(None),
                },
            })
            .collect::<Result<Decimal128Array>>()?
            .with_precision_and_scale(38, 0)?;
        Ok(cast(&integers, data_type)?)
    }

    fn integer(&self, value: &Json) -> Result<Option<i128>> {
        let exact = match value {
            Json::Bool(b) => Some(i128::from(*b)),
            Json::Int(v) => Some(i128::from(*v)),
            Json::UInt(v) => Some(i128::from(*v)),
            Json::BigInt(v) => Some(*v),
            Json::Float(v) => whole(v.round_ties_even()),
            Json::String(s) => {
                let s = s.trim();
                s.parse::<i128>()
                    .ok()
                    .or_else(|| s.parse::<f64>().ok().and_then(|f| whole(f.round())))
            }
            Json::Null | Json::Array(_) | Json::Object(_) => None,
        };
        match exact {
            Some(i) => Ok(Some(i)),
            None => self.fail(format!(
                "Failed to cast value to numerical: {}",
                value.to_text()
            )),
        }
    }

    fn double(&self, value: &Json) -> Result<Option<f64>> {
        let double = match value {
            Json::Bool(b) => Some(f64::from(u8::from(*b))),
            Json::Int(v) => Some(*v as f64),
            Json::UInt(v) => Some(*v as f64),
            Json::BigInt(v) => Some(*v as f64),
            Json::Float(v) => Some(*v),
            Json::String(s) => s.trim().parse::<f64>().ok(),
            Json::Null | Json::Array(_) | Json::Object(_) => None,
        };
        match double {
            Some(d) => Ok(Some(d)),
            None => self.fail(format!(
                "Failed to cast value to numerical: {}",
                value.to_text()
            )),
        }
    }

    fn boolean(&self, value: &Json) -> Result<Option<bool>> {
        let boolean = match value {
            Json::Bool(b) => Some(*b),
            Json::Int(v) => Some(*v != 0),
            Json::UInt(v) => Some(*v != 0),
            Json::BigInt(v) => Some(*v != 0),
            Json::Float(v) => Some(*v != 0.0),
            Json::String(s) => match s.to_ascii_lowercase().as_str() {
                "true" | "t" | "yes" | "y" | "1" => Some(true),
                "false" | "f" | "no" | "n" | "0" => Some(false),
                _ => None,
            },
            Json::Null | Json::Array(_) | Json::Object(_) => None,
        };
        match boolean {
            Some(b) => Ok(Some(b)),
            None => self.fail(format!(
                "Failed to cast value to numerical: {}",
                value.to_text()
            )),
        }
    }

    /// Strings that are labels of the ENUM `field` holds; anything else is NULL (an
    /// error under `_strict`).
    fn labels(&self, field: &Field, values: &[Option<&Json>]) -> Result<ArrayRef> {
        let labels = enum_labels(field).unwrap_or_default();
        let labels: std::collections::HashSet<&str> = labels.iter().map(String::as_str).collect();
        let name = enum_name(field).unwrap_or("ENUM");
        let out = values
            .iter()
            .map(|v| match v {
                None | Some(Json::Null) => Ok(None),
                Some(Json::String(s)) if labels.contains(s.as_str()) => Ok(Some(s.clone())),
                Some(Json::String(s)) => {
                    self.fail(format!("Could not convert string '{s}' to {name}"))
                }
                Some(other) => self.fail(format!("Unable to cast '{}' to ENUM", other.to_text())),
            })
            .collect::<Result<StringArray>>()?;
        Ok(Arc::new(out))
    }

    /// Each value read as a JSON document holding a geometry, as a cast from `JSON`
    /// to `GEOMETRY` reads it, into WKB.
    fn geometries(&self, values: &[Option<&Json>]) -> Result<ArrayRef> {
        let mut out = BinaryBuilder::new();
        for value in values {
            let Some(value) = value.filter(|j| **j != Json::Null) else {
                out.append_null();
                continue;
            };
            let text = value.to_text();
            match geojson::parse_document(&text) {
                Ok(shape) => out.append_value(wkb::encode(&shape)),
                Err(e) => {
                    self.fail::<()>(format!("Unable to cast '{text}' to GEOMETRY: {e}"))?;
                    out.append_null();
                }
            }
        }
        Ok(Arc::new(out.finish()))
    }

    fn list(&self, item: &Target, values: &[Option<&Json>]) -> Result<ArrayRef> {
        let mut offsets = Vec::with_capacity(values.len() + 1);
        offsets.push(0i32);
        let mut items: Vec<Option<&Json>> = Vec::new();
        let mut valid = Vec::with_capacity(values.len());
        for value in values {
            match value {
                Some(Json::Array(elements)) => {
                    items.extend(elements.iter().map(Some));
                    valid.push(true);
                }
                None | Some(Json::Null) => valid.push(false),
                Some(other) => {
                    self.fail::<()>(format!(
                        "Expected ARRAY, but got {}: {}",
                        type_name(other),
                        other.to_text()
                    ))?;
                    valid.push(false);
                }
            }
            let end = i32::try_from(items.len()).map_err(|_| {
                DataFusionError::Execution(format!("{}: more than 2^31 list elements", self.name))
            })?;
            offsets.push(end);
        }
        let child = self.build(item, &items)?;
        Ok(Arc::new(ListArray::try_new(
            Arc::new(item.field("item")),
            OffsetBuffer::new(offsets.into()),
            child,
            Some(NullBuffer::from(valid)),
        )?))
    }

    fn map(&self, key: &Target, value: &Target, values: &[Option<&Json>]) -> Result<ArrayRef> {
        let mut offsets = Vec::with_capacity(values.len() + 1);
        offsets.push(0i32);
        let (mut keys, mut items) = (Vec::new(), Vec::new());
        let mut valid = Vec::with_capacity(values.len());
        for v in values {
            match v {
                Some(Json::Object(members)) => {
                    keys.extend(members.iter().map(|(k, _)| Json::String(k.clone())));
                    items.extend(members.iter().map(|(_, v)| Some(v)));
                    valid.push(true);
                }
                None | Some(Json::Null) => valid.push(false),
                Some(other) => {
                    self.fail::<()>(format!(
                        "Expected OBJECT, but got {}: {}",
                        type_name(other),
                        other.to_text()
                    ))?;
                    valid.push(false);
                }
            }
            let end = i32::try_from(keys.len()).map_err(|_| {
                DataFusionError::Execution(format!("{}: more than 2^31 map entries", self.name))
            })?;
            offsets.push(end);
        }
        let keys: Vec<Option<&Json>> = keys.iter().map(Some).collect();
        let strict = Converter {
            name: self.name,
            strict: true,
        };
        let entries = Target::map_entries(key, value);
        let DataType::Struct(pair) = entries.data_type() else {
            return exec_err!("{}: map entries are a struct", self.name);
        };
        let pairs = StructArray::try_new(
            pair.clone(),
            vec![strict.build(key, &keys)?, self.build(value, &items)?],
            None,
        )?;
        Ok(Arc::new(MapArray::try_new(
            Arc::new(entries),
            OffsetBuffer::new(offsets.into()),
            pairs,
            Some(NullBuffer::from(valid)),
            false,
        )?))
    }

    /// A struct from objects by key, or a tuple (`is_tuple`) from arrays by position,
    /// as DuckDB reads its unnamed structs.
    fn structure(&self, fields: &[(String, Target)], values: &[Option<&Json>]) -> Result<ArrayRef> {
        let tuple = is_tuple(&Target::fields(fields));
        let mut valid = Vec::with_capacity(values.len());
        for value in values {
            match value {
                None | Some(Json::Null) => valid.push(false),
                Some(Json::Array(_)) if tuple => valid.push(true),
                Some(Json::Object(_)) if !tuple => valid.push(true),
                Some(other) => {
                    self.fail::<()>(format!(
                        "Expected {}, but got {}: {}",
                        if tuple { "ARRAY" } else { "OBJECT" },
                        type_name(other),
                        other.to_text()
                    ))?;
                    valid.push(true);
                }
            }
        }
        let mut children = Vec::with_capacity(fields.len());
        for (position, (key, target)) in fields.iter().enumerate() {
            let member = values
                .iter()
                .map(|v| match (tuple, v) {
                    (true, Some(Json::Array(items))) => Ok(items.get(position)),
                    (true, _) => Ok(None),
                    (false, _) => self.member(*v, key),
                })
                .collect::<Result<Vec<_>>>()?;
            children.push(self.build(target, &member)?);
        }
        Ok(Arc::new(StructArray::try_new(
            Target::fields(fields),
            children,
            Some(NullBuffer::from(valid)),
        )?))
    }

    /// Objects of one member (`{"tag": value}`) as unions; a NULL is the first member
    /// holding NULL, anything else too (an error under `_strict`).
    fn union(&self, members: &[(String, Target)], values: &[Option<&Json>]) -> Result<ArrayRef> {
        let mut type_ids = Vec::with_capacity(values.len());
        let mut per_member: Vec<Vec<Option<&Json>>> = vec![vec![None; values.len()]; members.len()];
        for (row, value) in values.iter().enumerate() {
            match self.union_member(members, *value)? {
                Some((i, v)) => {
                    type_ids.push(i as i8);
                    per_member[i][row] = Some(v);
                }
                None => type_ids.push(0),
            }
        }
        let children = members
            .iter()
            .zip(&per_member)
            .map(|((_, target), values)| self.build(target, values))
            .collect::<Result<Vec<_>>>()?;
        sparse_union(&Target::union_fields(members), type_ids, children)
    }

    /// The member (position) and value of a union's object, as DuckDB reads it: its one
    /// key names a member (case matters, as in JSON).
    fn union_member<'a>(
        &self,
        members: &[(String, Target)],
        value: Option<&'a Json>,
    ) -> Result<Option<(usize, &'a Json)>> {
        let pairs = match value {
            None | Some(Json::Null) => return Ok(None),
            Some(Json::Object(pairs)) => pairs,
            Some(other) => {
                let kind = type_name(other);
                return self.fail(format!(
                    "Expected an object representing a union, got {kind}"
                ));
            }
        };
        let (key, member_value) = match pairs.as_slice() {
            [pair] => pair,
            [] => return self.fail("Found empty object, instead of union".into()),
            _ => {
                let message = "Found object containing more than one key, instead of union";
                return self.fail(message.into());
            }
        };
        match members.iter().position(|(name, _)| name == key) {
            Some(i) => Ok(Some((i, member_value))),
            None => self.fail(format!(
                "Found object containing unknown key, instead of union: {key}"
            )),
        }
    }

    /// The first value of `key` in `value` if it is an object; under `_strict` a
    /// missing or duplicated key is an error.
    fn member<'a>(&self, value: Option<&'a Json>, key: &str) -> Result<Option<&'a Json>> {
        let Some(Json::Object(members)) = value else {
            return Ok(None);
        };
        let mut found = members.iter().filter(|(k, _)| k == key).map(|(_, v)| v);
        let first = found.next();
        if self.strict {
            let text = || value.map(Json::to_text).unwrap_or_default();
            if first.is_none() {
                return exec_err!(
                    "{}: Object {} does not have key \"{key}\"",
                    self.name,
                    text()
                );
            }
            if found.next().is_some() {
                return exec_err!(
                    "{}: Object {} has duplicate key \"{key}\"",
                    self.name,
                    text()
                );
            }
        }
        Ok(first)
    }
}

/// JSON documents (`docs`, text) converted to `field`'s type (exactly) as `CAST(j AS type)`
/// (`strict`) or `TRY_CAST` converts them, with the rules of `json_transform`(`_strict`);
/// `None` when `field`'s type is not one a JSON value converts to.
pub fn convert_json(docs: &ArrayRef, field: &Field, strict: bool) -> Result<Option<ArrayRef>> {
    let Some(target) = Target::of_field(field) else {
        return Ok(None);
    };
    let name = match strict {
        true => "CAST",
        false => "TRY_CAST",
    };
    let texts = TextColumn::new(name, docs)?;
    let mut tape = crate::json::function_tape();
    let parsed = (0..docs.len())
        .map(|row| {
            texts
                .get(row)
                .map(|t| parse_json(name, row, t, &mut tape))
                .transpose()
        })
        .collect::<Result<Vec<_>>>()?;
    let values: Vec<Option<&Json>> = parsed.iter().map(Option::as_ref).collect();
    let out = Converter { name, strict }.build(&target, &values)?;
    match out.data_type() == field.data_type() {
        true => Ok(Some(out)),
        false => Ok(Some(cast(&out, field.data_type())?)),
    }
}

/// Whether [`convert_json`] converts to `field`'s type.
pub fn converts_to(field: &Field) -> bool {
    Target::of_field(field).is_some()
}

/// A double's JSON text as DuckDB's cast of a double to `VARCHAR` writes it: the
/// exponent signed and of at least two digits (`1e+300`, `2.5e-08`).
fn varchar_exponent(text: String) -> String {
    let Some((mantissa, exponent)) = text.split_once(['e', 'E']) else {
        return text;
    };
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(digits) => ('-', digits),
        None => ('+', exponent.trim_start_matches('+')),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

/// Whether `text` is a UUID in its standard form: 32 hex digits, dashes after the
/// 8th, 12th, 16th and 20th.
fn is_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// The integral value of a double, if it has one an `i128` holds.
fn whole(value: f64) -> Option<i128> {
    // 2^127 is exactly representable; every double below it in magnitude fits i128.
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    (value.is_finite() && value.abs() < LIMIT).then_some(value as i128)
}

/// `DECIMAL`, `DECIMAL(p)` or `DECIMAL(p,s)`; DuckDB's default is `DECIMAL(18,3)`.
fn decimal_type(name: &str) -> Result<DataType> {
    let arguments = name
        .strip_prefix("DECIMAL")
        .map(str::trim)
        .and_then(|rest| match rest {
            "" => Some(vec![18, 3]),
            rest => rest
                .strip_prefix('(')?
                .strip_suffix(')')?
                .split(',')
                .map(|n| n.trim().parse::<u8>().ok())
                .collect::<Option<Vec<_>>>(),
        });
    let (precision, scale) = match arguments.as_deref() {
        Some([p]) => (*p, 0),
        Some([p, s]) => (*p, *s),
        _ => return plan_err!("JSON structure type {name} is not a decimal type"),
    };
    if !(1..=38).contains(&precision) || scale > precision {
        return plan_err!("JSON structure type {name}: precision 1 to 38, scale at most precision");
    }
    Ok(DataType::Decimal128(precision, scale as i8))
}

/// The least and greatest value of an integer target type.
fn integer_range(data_type: &DataType) -> (i128, i128) {
    use DataType::*;
    match data_type {
        Int8 => (i8::MIN.into(), i8::MAX.into()),
        Int16 => (i16::MIN.into(), i16::MAX.into()),
        Int32 => (i32::MIN.into(), i32::MAX.into()),
        Int64 => (i64::MIN.into(), i64::MAX.into()),
        UInt8 => (0, u8::MAX.into()),
        UInt16 => (0, u16::MAX.into()),
        UInt32 => (0, u32::MAX.into()),
        UInt64 => (0, u64::MAX.into()),
        // HUGEINT as DECIMAL(38, 0): 38 digits.
        _ => (-(10i128.pow(38) - 1), 10i128.pow(38) - 1),
    }
}

/// The type DuckDB names a value by in transform errors.
fn type_name(value: &Json) -> &'static str {
    match value {
        Json::Null => "NULL",
        Json::Bool(_) => "BOOLEAN",
        Json::Int(v) if *v < 0 => "BIGINT",
        Json::Int(_) | Json::UInt(_) => "UBIGINT",
        Json::BigInt(_) | Json::Float(_) => "DOUBLE",
        Json::String(_) => "VARCHAR",
        Json::Array(_) => "ARRAY",
        Json::Object(_) => "OBJECT",
    }
}
