//! The SQL type `GEOMETRY` and DuckDB 2.0.0's core geometry functions.
//!
//! A geometry is stored as ISO well-known binary in an Arrow `Binary` field marked with
//! GeoArrow's extension type `geoarrow.wkb` (field metadata, as `arrow.json` marks JSON
//! text), so it travels through DataFusion, IPC and Parquet as bytes every GeoArrow
//! reader knows. The codecs live in `tessera-geometry`; this module is the SQL side:
//!
//! - the type: `json::geometry_type`, planned in casts and column definitions;
//! - casts ([`GeometryCasts`], an analyzer rewrite): text to `GEOMETRY` parses WKT, `JSON`
//!   to `GEOMETRY` reads a GeoJSON object or a WKT string, `BLOB` to `GEOMETRY` checks
//!   WKB; `GEOMETRY` to text is WKT, to `JSON` follows `json_geometry_format`;
//! - `to_json`, `json_object` and `json_array` write a geometry as a cast to `JSON` does:
//!   the same rewrite replaces geometry arguments (also inside struct and list
//!   constructors, which become `json_object`/`json_array`) by that cast, so the JSON
//!   writer never sees WKB;
//! - inserts ([`GeometryInserts`], an analyzer rule): text inserted into a `GEOMETRY`
//!   column is parsed as WKT, where DataFusion would cast its bytes;
//! - functions: `ST_GeomFromText`, `ST_GeomFromGeoJSON`, `ST_GeomFromWKB`, `ST_AsText`,
//!   `ST_AsGeoJSON` (returns `JSON`), `ST_AsWKB`; a text argument where a geometry is
//!   expected is read as WKT, as DuckDB's implicit cast reads it.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, LazyLock};

use arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, StringBuilder};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::config::{ConfigExtension, ConfigField, ConfigOptions, Visit};
use datafusion::common::extensions_options;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue, exec_err};
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::logical_expr::{DmlStatement, LogicalPlan, Projection, WriteOp};
use datafusion::optimizer::AnalyzerRule;
use tessera_geometry::{GeometryError, Shape, geojson, wkb, wkt};

use crate::json::geometry_type::{geometry_field, is_geometry};
use crate::json::json_type::{is_json, json_field};

/// Longest input quoted in an error.
const QUOTED_CHARS_MAX: usize = 80;

/// How a geometry becomes JSON (`to_json`, `json_object`, casts to `JSON`): the setting
/// `json_geometry_format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum JsonFormat {
    /// A JSON string of the WKT (DuckDB's default).
    #[default]
    Wkt,
    /// A GeoJSON geometry object.
    GeoJson,
}

impl FromStr for JsonFormat {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "wkt" => Ok(JsonFormat::Wkt),
            "geojson" => Ok(JsonFormat::GeoJson),
            other => Err(DataFusionError::Configuration(format!(
                "json_geometry_format must be 'wkt' or 'geojson', not '{other}'"
            ))),
        }
    }
}

/// `json_geometry_format` as set, its spelling kept: DuckDB shows a setting back as it
/// was written (`GeoJSON`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonFormatSetting {
    /// The format.
    pub format: JsonFormat,
    spelling: String,
}

impl Default for JsonFormatSetting {
    fn default() -> Self {
        Self {
            format: JsonFormat::Wkt,
            spelling: "wkt".to_string(),
        }
    }
}

impl FromStr for JsonFormatSetting {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        Ok(Self {
            format: s.parse()?,
            spelling: s.trim().to_string(),
        })
    }
}

impl fmt::Display for JsonFormatSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spelling)
    }
}

impl ConfigField for JsonFormatSetting {
    fn visit<V: Visit>(&self, v: &mut V, key: &str, description: &'static str) {
        v.some(key, self, description)
    }

    fn set(&mut self, _key: &str, value: &str) -> Result<()> {
        *self = value.parse()?;
        Ok(())
    }
}

extensions_options! {
    /// Geometry settings (prefix `geometry.`; DuckDB's names map onto them, see
    /// `functions::settings`).
    pub struct GeometryOptions {
        /// How a GEOMETRY becomes JSON: 'wkt' (default, a string) or 'geojson' (an object).
        pub json_format: JsonFormatSetting, default = JsonFormatSetting::default()
    }
}

impl ConfigExtension for GeometryOptions {
    const PREFIX: &'static str = "geometry";
}

/// What a geometry function computes: how it reads its argument and writes its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    /// WKT text to a geometry.
    FromText,
    /// GeoJSON text to a geometry.
    FromGeoJson,
    /// A JSON document (GeoJSON object or WKT string) to a geometry.
    FromJson,
    /// WKB bytes to a geometry (checked).
    FromWkb,
    /// A geometry to WKT text.
    AsText,
    /// A geometry to GeoJSON (`JSON`).
    AsGeoJson,
    /// A geometry to WKB bytes.
    AsWkb,
    /// A geometry to `JSON` in a format.
    ToJson(JsonFormat),
}

impl Op {
    fn returns_geometry(self) -> bool {
        matches!(
            self,
            Op::FromText | Op::FromGeoJson | Op::FromJson | Op::FromWkb
        )
    }
}

/// One geometry function; `strict` fails on bad input, otherwise (TRY_CAST) NULL.
#[derive(Debug, PartialEq, Eq, Hash)]
struct GeometryFn {
    name: &'static str,
    op: Op,
    strict: bool,
    signature: Signature,
}

impl GeometryFn {
    fn udf(name: &'static str, op: Op, strict: bool) -> Arc<ScalarUDF> {
        Arc::new(ScalarUDF::from(GeometryFn {
            name,
            op,
            strict,
            signature: Signature::any(1, Volatility::Immutable),
        }))
    }
}

/// The geometry functions, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    [
        ("st_geomfromtext", Op::FromText),
        ("st_geomfromgeojson", Op::FromGeoJson),
        ("st_geomfromwkb", Op::FromWkb),
        ("st_astext", Op::AsText),
        ("st_asgeojson", Op::AsGeoJson),
        ("st_aswkb", Op::AsWkb),
    ]
    .into_iter()
    .map(|(name, op)| GeometryFn::udf(name, op, true))
    .collect()
}

impl ScalarUDFImpl for GeometryFn {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.op {
            Op::AsText => DataType::Utf8,
            Op::AsGeoJson | Op::ToJson(_) => DataType::Utf8,
            _ => DataType::Binary,
        })
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        let field = match self.op {
            op if op.returns_geometry() => geometry_field(self.name),
            Op::AsGeoJson | Op::ToJson(_) => json_field(self.name),
            Op::AsText => Field::new(self.name, DataType::Utf8, true),
            _ => Field::new(self.name, DataType::Binary, true),
        };
        Ok(Arc::new(field))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return exec_err!("{} takes one argument", self.name);
        };
        let scalar = matches!(arg, ColumnarValue::Scalar(_));
        let input = arg.to_array(if scalar { 1 } else { args.number_rows })?;
        let out = self.convert(&input)?;
        match scalar {
            true => Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)),
            false => Ok(ColumnarValue::Array(out)),
        }
    }
}

/// One row's argument: text or bytes.
#[derive(Clone, Copy)]
enum Input<'a> {
    Text(&'a str),
    Bytes(&'a [u8]),
}

impl Input<'_> {
    fn quoted(self) -> String {
        let text = match self {
            Input::Text(t) => t.to_string(),
            Input::Bytes(b) => b.iter().map(|b| format!("{b:02X}")).collect(),
        };
        match text.char_indices().nth(QUOTED_CHARS_MAX) {
            Some((cut, _)) => format!("'{}...'", &text[..cut]),
            None => format!("'{text}'"),
        }
    }
}

/// The column's rows as [`Input`]s (text of any layout, bytes of any layout, or NULLs).
fn inputs(array: &ArrayRef) -> Result<Vec<Option<Input<'_>>>> {
    Ok(match array.data_type() {
        DataType::Null => vec![None; array.len()],
        DataType::Utf8 => array
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(Input::Text))
            .collect(),
        DataType::LargeUtf8 => array
            .as_string::<i64>()
            .iter()
            .map(|v| v.map(Input::Text))
            .collect(),
        DataType::Utf8View => array
            .as_string_view()
            .iter()
            .map(|v| v.map(Input::Text))
            .collect(),
        DataType::Binary => array
            .as_binary::<i32>()
            .iter()
            .map(|v| v.map(Input::Bytes))
            .collect(),
        DataType::LargeBinary => array
            .as_binary::<i64>()
            .iter()
            .map(|v| v.map(Input::Bytes))
            .collect(),
        DataType::BinaryView => array
            .as_binary_view()
            .iter()
            .map(|v| v.map(Input::Bytes))
            .collect(),
        other => return exec_err!("expected GEOMETRY, text or BLOB, not {other}"),
    })
}

/// The result column being built.
enum Output {
    Bytes(BinaryBuilder),
    Text(StringBuilder),
}

impl GeometryFn {
    /// Reads one row's argument as the function's input kind.
    fn read(&self, input: Input) -> std::result::Result<Shape, GeometryError> {
        match (self.op, input) {
            (Op::FromGeoJson, Input::Text(t)) => geojson::parse(t),
            (Op::FromJson, Input::Text(t)) => geojson::parse_document(t),
            (_, Input::Text(t)) => wkt::parse(t),
            (_, Input::Bytes(b)) => wkb::decode(b),
        }
    }

    fn write(&self, shape: &Shape, out: &mut Output) {
        match (self.op, out) {
            (Op::AsText, Output::Text(b)) | (Op::ToJson(JsonFormat::Wkt), Output::Text(b)) => {
                let text = wkt::format(shape);
                match self.op {
                    // WKT holds no quote or backslash: quoting makes a JSON string.
                    Op::ToJson(_) => b.append_value(format!("\"{text}\"")),
                    _ => b.append_value(text),
                }
            }
            (_, Output::Text(b)) => b.append_value(geojson::format(shape)),
            (_, Output::Bytes(b)) => b.append_value(wkb::encode(shape)),
        }
    }

    fn convert(&self, input: &ArrayRef) -> Result<ArrayRef> {
        let rows = inputs(input)?;
        let mut out = match self.op {
            op if op.returns_geometry() || op == Op::AsWkb => {
                Output::Bytes(BinaryBuilder::with_capacity(rows.len(), rows.len() * 21))
            }
            _ => Output::Text(StringBuilder::with_capacity(rows.len(), rows.len() * 16)),
        };
        for row in rows {
            let shape = match row.map(|r| (r, self.read(r))) {
                None => None,
                Some((_, Ok(shape))) => Some(shape),
                Some((_, Err(_))) if !self.strict => None,
                Some((r, Err(e))) => return exec_err!("{}: {e}. Input: {}", self.name, r.quoted()),
            };
            match (shape, &mut out) {
                (Some(shape), out) => self.write(&shape, out),
                (None, Output::Bytes(b)) => b.append_null(),
                (None, Output::Text(b)) => b.append_null(),
            }
        }
        Ok(match out {
            Output::Bytes(mut b) => Arc::new(b.finish()),
            Output::Text(mut b) => Arc::new(b.finish()),
        })
    }
}

/// Casts to and from `GEOMETRY`, and geometries written as JSON, as DuckDB does them:
/// an analyzer rewrite onto the geometry functions (see the module documentation).
#[derive(Debug, Default)]
pub struct GeometryCasts;

/// The functions that write their arguments as JSON.
const JSON_WRITERS: [&str; 3] = ["to_json", "json_object", "json_array"];

impl FunctionRewrite for GeometryCasts {
    fn name(&self) -> &str {
        "geometry_casts"
    }

    fn rewrite(
        &self,
        expr: Expr,
        schema: &DFSchema,
        config: &ConfigOptions,
    ) -> Result<Transformed<Expr>> {
        let format = config
            .extensions
            .get::<GeometryOptions>()
            .map(|o| o.json_format.format)
            .unwrap_or_default();
        match expr {
            Expr::Cast(Cast { expr, field }) => cast_call(*expr, &field, schema, format, true),
            Expr::TryCast(TryCast { expr, field }) => {
                cast_call(*expr, &field, schema, format, false)
            }
            Expr::ScalarFunction(f) if JSON_WRITERS.contains(&f.name()) => {
                let mut changed = false;
                let args = f.args.into_iter().map(|a| {
                    let (a, c) = jsonified(a, schema, format)?;
                    changed |= c;
                    Ok(a)
                });
                let args = args.collect::<Result<Vec<_>>>()?;
                let call = Expr::ScalarFunction(ScalarFunction::new_udf(f.func, args));
                Ok(Transformed::new_transformed(call, changed))
            }
            other => Ok(Transformed::no(other)),
        }
    }
}

/// The function a cast between `GEOMETRY` and another type is, if it is one.
fn cast_call(
    inner: Expr,
    target: &FieldRef,
    schema: &DFSchema,
    format: JsonFormat,
    strict: bool,
) -> Result<Transformed<Expr>> {
    let (_, source) = inner.to_field(schema)?;
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8);
    let binary = |t: &DataType| {
        matches!(
            t,
            DataType::Binary | DataType::BinaryView | DataType::LargeBinary
        )
    };
    let op = match (is_geometry(&source), is_geometry(target)) {
        (false, true) if is_json(&source) => Some(Op::FromJson),
        (false, true) if text(source.data_type()) || source.data_type().is_null() => {
            Some(Op::FromText)
        }
        (false, true) if binary(source.data_type()) => Some(Op::FromWkb),
        (true, false) if is_json(target) => Some(Op::ToJson(format)),
        (true, false) if text(target.data_type()) => Some(Op::AsText),
        _ => None,
    };
    let Some(op) = op else {
        let expr = match strict {
            true => Expr::Cast(Cast::new_from_field(Box::new(inner), Arc::clone(target))),
            false => Expr::TryCast(TryCast::new_from_field(Box::new(inner), Arc::clone(target))),
        };
        return Ok(Transformed::no(expr));
    };
    let name = match op {
        op if op.returns_geometry() => "cast_to_geometry",
        _ => "cast_from_geometry",
    };
    let call = ScalarFunction::new_udf(GeometryFn::udf(name, op, strict), vec![inner]);
    Ok(Transformed::yes(Expr::ScalarFunction(call)))
}

/// `json_object` and `json_array`, for struct and list constructors holding geometries.
static JSON_BUILDERS: LazyLock<Vec<Arc<ScalarUDF>>> =
    LazyLock::new(super::json_build::all_functions);

fn json_builder(name: &str) -> Result<Arc<ScalarUDF>> {
    JSON_BUILDERS
        .iter()
        .find(|f| f.name() == name)
        .cloned()
        .ok_or_else(|| DataFusionError::Internal(format!("{name} is not a JSON builder")))
}

/// `expr` with every geometry in it written as JSON (and whether anything changed): a
/// geometry becomes its cast to `JSON`; a struct or list constructor holding one becomes
/// `json_object`/`json_array`, since Arrow's struct and list fields drop the `arrow.json`
/// marker that tells the JSON writer to embed rather than quote.
fn jsonified(expr: Expr, schema: &DFSchema, format: JsonFormat) -> Result<(Expr, bool)> {
    let (_, field) = expr.to_field(schema)?;
    if is_geometry(&field) {
        let udf = GeometryFn::udf("cast_from_geometry", Op::ToJson(format), true);
        return Ok((
            Expr::ScalarFunction(ScalarFunction::new_udf(udf, vec![expr])),
            true,
        ));
    }
    let builder = match &expr {
        Expr::ScalarFunction(f) if f.name() == "named_struct" => "json_object",
        Expr::ScalarFunction(f) if f.name() == "make_array" => "json_array",
        _ => return Ok((expr, false)),
    };
    let Expr::ScalarFunction(f) = expr else {
        return Ok((expr, false));
    };
    let mut changed = false;
    let mut args = Vec::with_capacity(f.args.len());
    for arg in &f.args {
        let (arg, c) = jsonified(arg.clone(), schema, format)?;
        changed |= c;
        args.push(arg);
    }
    match changed {
        true => {
            let call = ScalarFunction::new_udf(json_builder(builder)?, args);
            Ok((Expr::ScalarFunction(call), true))
        }
        false => Ok((Expr::ScalarFunction(f), false)),
    }
}

/// Text inserted into a `GEOMETRY` column read as WKT: DataFusion casts an insert's
/// values to the column's Arrow type (bytes) without its extension marker, so this
/// rule, run after type coercion, replaces those casts by the WKT parser.
#[derive(Debug, Default)]
pub struct GeometryInserts;

impl AnalyzerRule for GeometryInserts {
    fn name(&self) -> &str {
        "geometry_inserts"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up(|plan| match plan {
            LogicalPlan::Dml(dml) if matches!(dml.op, WriteOp::Insert(_)) => {
                let columns: Vec<bool> = dml
                    .target
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| is_geometry(f))
                    .collect();
                if !columns.contains(&true) {
                    return Ok(Transformed::no(LogicalPlan::Dml(dml)));
                }
                let input = Arc::unwrap_or_clone(Arc::clone(&dml.input));
                let input = parse_inserted(input, &columns)?;
                Ok(Transformed::yes(LogicalPlan::Dml(DmlStatement {
                    input: Arc::new(input),
                    ..dml
                })))
            }
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }
}

/// The insert's input with the casts into geometry columns (`columns[i]`) replaced:
/// in its projection, or in its VALUES rows when it is one or projects one.
fn parse_inserted(input: LogicalPlan, columns: &[bool]) -> Result<LogicalPlan> {
    match input {
        LogicalPlan::Projection(p) if p.expr.len() == columns.len() => {
            let schema = Arc::clone(p.input.schema());
            let exprs = p.expr.into_iter().zip(columns);
            let exprs = exprs.map(|(e, geo)| if *geo { parsed(e, &schema) } else { Ok(e) });
            let exprs = exprs.collect::<Result<Vec<_>>>()?;
            let inner = parse_inserted(Arc::unwrap_or_clone(p.input), columns)?;
            Ok(LogicalPlan::Projection(Projection::try_new(
                exprs,
                Arc::new(inner),
            )?))
        }
        LogicalPlan::Values(mut v) if v.schema.fields().len() == columns.len() => {
            let schema = DFSchema::empty();
            for row in &mut v.values {
                for (e, geo) in row.iter_mut().zip(columns) {
                    if *geo {
                        *e = parsed(
                            std::mem::replace(e, Expr::Literal(ScalarValue::Null, None)),
                            &schema,
                        )?;
                    }
                }
            }
            Ok(LogicalPlan::Values(v))
        }
        other => Ok(other),
    }
}

/// `expr` (a value for a geometry column) with a cast of text to bytes replaced by the
/// WKT parser; the alias kept.
fn parsed(expr: Expr, schema: &DFSchema) -> Result<Expr> {
    match expr {
        Expr::Alias(alias) => {
            let inner = parsed(*alias.expr, schema)?;
            Ok(inner.alias_qualified(alias.relation, alias.name))
        }
        Expr::Cast(Cast { expr, field })
            if !is_geometry(&field) && {
                let source = expr.get_type(schema)?;
                source.is_null()
                    || matches!(
                        source,
                        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
                    )
            } =>
        {
            let udf = GeometryFn::udf("cast_to_geometry", Op::FromText, true);
            Ok(Expr::ScalarFunction(ScalarFunction::new_udf(
                udf,
                vec![*expr],
            )))
        }
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests;
