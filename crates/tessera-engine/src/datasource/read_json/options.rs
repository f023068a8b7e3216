//! The arguments of `read_json` and friends, read from the SQL text (DataFusion's
//! planner accepts no named arguments in table functions, so they are read here).

use datafusion::common::{DataFusionError, Result, plan_err};
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, UnaryOperator, Value, ValueWithSpan,
};

use super::infer::{Inference, StringTypes};
use super::records::Format;

/// Default number of records the schema is inferred from, as DuckDB's `sample_size`.
const SAMPLE_SIZE_DEFAULT: usize = 20_480;
/// Default number of files sampled, as DuckDB's `maximum_sample_files`.
const SAMPLE_FILES_DEFAULT: usize = 32;
/// Default least number of keys of an object inferred as a map, as DuckDB's
/// `map_inference_threshold`.
const MAP_KEYS_MIN_DEFAULT: usize = 200;
/// Default least average appearance of an object's keys, as DuckDB's
/// `field_appearance_threshold`.
const APPEARANCE_MIN_DEFAULT: f64 = 0.1;
/// Default largest record, as DuckDB's `maximum_object_size`.
const OBJECT_SIZE_DEFAULT_BYTES: usize = 16 * 1024 * 1024;

/// Whether each record's keys become columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Records {
    /// Columns when every sampled record is an object, else one `json` column.
    Auto,
    /// Records must be objects; their keys are the columns.
    Yes,
    /// One column `json` holding each whole record.
    No,
}

/// What one call asks for.
#[derive(Debug, Clone)]
pub struct ReadJsonOptions {
    /// The locations (paths, globs, `s3://` URLs).
    pub paths: Vec<String>,
    /// How records are laid out.
    pub format: Format,
    /// Whether records are split into columns.
    pub records: Records,
    /// Column names and DuckDB type names given by the caller (no inference then).
    pub columns: Option<Vec<(String, String)>>,
    /// Types inferred only this many levels deep; below, values stay JSON.
    pub maximum_depth: Option<usize>,
    /// Records the schema is inferred from (`usize::MAX`: all).
    pub sample_size: usize,
    /// Files whose records are sampled (`usize::MAX`: all).
    pub sample_files_max: usize,
    /// Malformed records become rows of NULLs (counted in the session's reject log)
    /// instead of failing the statement.
    pub ignore_errors: bool,
    /// Name of a column holding each row's file name, if asked for.
    pub filename: Option<String>,
    /// Whether that column is DuckDB's virtual `filename` (not asked for, but named by
    /// the statement): left out of wildcards, and not added over a record key of that
    /// name.
    pub filename_virtual: bool,
    /// `key=value` folders become columns.
    pub hive_partitioning: bool,
    /// Types of partition columns, by name.
    pub hive_types: Vec<(String, String)>,
    /// Whether types are inferred (false needs `columns`).
    pub auto_detect: bool,
    /// Largest record; a larger one is an error.
    pub object_size_max_bytes: usize,
    /// `read_json_objects`: one `json` column of each record's JSON text.
    pub objects: bool,
    /// How strings are typed by inference.
    pub strings: StringTypes,
    /// Objects with at least this many keys of alike types are inferred as maps
    /// (`None`: never).
    pub map_keys_min: Option<usize>,
    /// Objects whose keys appear on average in a smaller share of them are inferred as
    /// maps.
    pub appearance_min: f64,
    /// Records read as GeoJSON (`None`: for files named `.geojson`/`.geojsonl`, as
    /// DuckDB's `geojson` default says).
    pub geojson: Option<bool>,
}

impl ReadJsonOptions {
    /// The options of a call to `function` (one of [`super::FUNCTIONS`]).
    pub fn parse(function: &str, args: &[FunctionArg]) -> Result<Self> {
        let nd = function.starts_with("read_ndjson");
        let mut out = Self {
            paths: Vec::new(),
            format: if nd {
                Format::NewlineDelimited
            } else {
                Format::Auto
            },
            records: Records::Auto,
            columns: None,
            maximum_depth: None,
            sample_size: SAMPLE_SIZE_DEFAULT,
            sample_files_max: SAMPLE_FILES_DEFAULT,
            ignore_errors: false,
            filename: None,
            filename_virtual: false,
            hive_partitioning: false,
            hive_types: Vec::new(),
            auto_detect: true,
            object_size_max_bytes: OBJECT_SIZE_DEFAULT_BYTES,
            objects: function.contains("objects"),
            strings: StringTypes {
                dates: true,
                integers: false,
            },
            map_keys_min: Some(MAP_KEYS_MIN_DEFAULT),
            appearance_min: APPEARANCE_MIN_DEFAULT,
            geojson: None,
        };
        for arg in args {
            match named(arg) {
                Some((name, value)) => out.set(function, &name.to_ascii_lowercase(), value)?,
                None if out.paths.is_empty() => out.paths = paths(function, unnamed(arg)?)?,
                None => return plan_err!("{function}: only the first argument may be unnamed"),
            }
        }
        if out.paths.is_empty() {
            return plan_err!("{function} needs the file(s) to read as its first argument");
        }
        if !out.auto_detect && out.columns.is_none() && !out.objects {
            return plan_err!(
                "{function}: auto_detect=false needs the columns given (columns={{name: 'TYPE', ...}})"
            );
        }
        Ok(out)
    }

    /// What inference is asked for.
    pub fn inference(&self) -> Inference {
        Inference {
            depth: self.maximum_depth,
            strings: self.strings,
            map_keys_min: self.map_keys_min,
            appearance_min: self.appearance_min,
        }
    }

    fn set(&mut self, function: &str, name: &str, value: &Expr) -> Result<()> {
        if self.objects && !OBJECTS_PARAMETERS.contains(&name) {
            return plan_err!(
                "{function}: unknown parameter '{name}' (known: {})",
                OBJECTS_PARAMETERS.join(", ")
            );
        }
        match name {
            "format" => self.format = format(function, &text(function, name, value)?)?,
            "records" => self.records = records(function, value)?,
            "columns" => self.columns = Some(columns(function, value)?),
            "maximum_depth" => {
                let depth = integer(function, name, value)?;
                self.maximum_depth = usize::try_from(depth).ok();
            }
            "sample_size" => {
                let size = integer(function, name, value)?;
                self.sample_size = usize::try_from(size).unwrap_or(usize::MAX).max(1);
            }
            "ignore_errors" => self.ignore_errors = boolean(function, name, value)?,
            "geojson" => self.geojson = Some(boolean(function, name, value)?),
            "auto_detect" => self.auto_detect = boolean(function, name, value)?,
            "filename" => self.filename = filename(function, value)?,
            "maximum_object_size" => {
                let size = integer(function, name, value)?;
                self.object_size_max_bytes = usize::try_from(size).unwrap_or(usize::MAX);
            }
            "dateformat" | "date_format" | "timestampformat" | "timestamp_format" => {
                let format = text(function, name, value)?;
                check_strftime(function, &format)?;
                self.strings.dates = !format.is_empty();
            }
            "field_appearance_threshold" => {
                let share = number(function, name, value)?;
                if !(0.0..=1.0).contains(&share) {
                    return plan_err!(
                        "{function}: field_appearance_threshold must be between 0 and 1"
                    );
                }
                self.appearance_min = share;
            }
            "map_inference_threshold" | "maximum_sample_files" => {
                let least = if name == "maximum_sample_files" {
                    1
                } else {
                    -1
                };
                let count = integer(function, name, value)?;
                if count < least && count != -1 {
                    return plan_err!("{function}: {name} must be -1 or at least {}", least.max(0));
                }
                match name {
                    "maximum_sample_files" => {
                        self.sample_files_max = usize::try_from(count).unwrap_or(usize::MAX);
                    }
                    _ => self.map_keys_min = usize::try_from(count).ok(),
                }
            }
            "convert_strings_to_integers" => {
                self.strings.integers = boolean(function, name, value)?;
            }
            "hive_partitioning" => self.hive_partitioning = boolean(function, name, value)?,
            "hive_types" => self.hive_types = columns(function, value)?,
            // Accepted where Tessera's reading already behaves so: compression comes from
            // file names, schemas are always unified by name, partitions always autocast.
            "compression" | "union_by_name" | "hive_types_autocast" => {}
            other => return plan_err!("{function}: unknown parameter '{other}'"),
        }
        Ok(())
    }
}

/// The parameters the `_objects` functions take (records are never split there).
const OBJECTS_PARAMETERS: &[&str] = &[
    "format",
    "compression",
    "filename",
    "hive_partitioning",
    "hive_types",
    "hive_types_autocast",
    "ignore_errors",
    "maximum_object_size",
    "union_by_name",
];

/// strftime specifiers DuckDB's `dateformat`/`timestampformat` know (after an optional `-`).
const STRFTIME_SPECIFIERS: &str = "aAwudbBhmyYHIpMSfgnzZjUWcxXGVT%";

/// An unknown `%` specifier is an error, as in DuckDB.
fn check_strftime(function: &str, format: &str) -> Result<()> {
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        let mut spec = chars.next();
        if spec == Some('-') {
            spec = chars.next();
        }
        match spec {
            Some(s) if STRFTIME_SPECIFIERS.contains(s) => {}
            _ => return plan_err!("{function}: unknown format specifier in '{format}'"),
        }
    }
    Ok(())
}

fn number(function: &str, name: &str, value: &Expr) -> Result<f64> {
    let parsed = match value {
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => number(function, name, expr).map(|v| -v).ok(),
        other => match literal(other) {
            Some(Value::Number(n, _)) => n.parse().ok(),
            _ => None,
        },
    };
    parsed.ok_or_else(|| {
        DataFusionError::Plan(format!("{function}: {name} must be a number, not {value}"))
    })
}

/// The name and value of a named argument (`name = value`, `name := value`).
/// A `name=value` (or `name => value`) argument's name and value.
pub(crate) fn named(arg: &FunctionArg) -> Option<(String, &Expr)> {
    match arg {
        FunctionArg::Named {
            name,
            arg: FunctionArgExpr::Expr(value),
            ..
        } => Some((name.value.clone(), value)),
        FunctionArg::ExprNamed {
            name: Expr::Identifier(name),
            arg: FunctionArgExpr::Expr(value),
            ..
        } => Some((name.value.clone(), value)),
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::BinaryOp { left, op, right }))
            if op.to_string() == "=" =>
        {
            match left.as_ref() {
                Expr::Identifier(name) => Some((name.value.clone(), right.as_ref())),
                _ => None,
            }
        }
        _ => None,
    }
}

fn unnamed(arg: &FunctionArg) -> Result<&Expr> {
    match arg {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(value)) => Ok(value),
        other => plan_err!("unsupported argument {other}"),
    }
}

fn literal(value: &Expr) -> Option<&Value> {
    match value {
        Expr::Value(ValueWithSpan { value, .. }) => Some(value),
        Expr::Nested(inner) => literal(inner),
        _ => None,
    }
}

fn text(function: &str, name: &str, value: &Expr) -> Result<String> {
    if let Expr::Identifier(word) = value {
        // DuckDB reads `format=auto` and `{"ts": "DATE"}` as text too.
        return Ok(word.value.clone());
    }
    match literal(value) {
        Some(Value::SingleQuotedString(s) | Value::DoubleQuotedString(s)) => Ok(s.clone()),
        _ => plan_err!("{function}: {name} must be a string, not {value}"),
    }
}

fn integer(function: &str, name: &str, value: &Expr) -> Result<i64> {
    let parsed = match value {
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => integer(function, name, expr).map(|v| -v).ok(),
        other => match literal(other) {
            Some(Value::Number(n, _)) => n.parse().ok(),
            _ => None,
        },
    };
    parsed.ok_or_else(|| {
        DataFusionError::Plan(format!(
            "{function}: {name} must be an integer, not {value}"
        ))
    })
}

fn boolean(function: &str, name: &str, value: &Expr) -> Result<bool> {
    match literal(value) {
        Some(Value::Boolean(b)) => Ok(*b),
        Some(Value::SingleQuotedString(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::SingleQuotedString(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => plan_err!("{function}: {name} must be true or false, not {value}"),
    }
}

fn format(function: &str, name: &str) -> Result<Format> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "auto" => Format::Auto,
        "newline_delimited" | "nd" | "ndjson" => Format::NewlineDelimited,
        "array" => Format::Array,
        "unstructured" => Format::Unstructured,
        other => {
            return plan_err!(
                "{function}: format must be 'auto', 'newline_delimited', 'array' or \
                 'unstructured', not '{other}'"
            );
        }
    })
}

fn records(function: &str, value: &Expr) -> Result<Records> {
    let word = match literal(value) {
        Some(Value::Boolean(b)) => b.to_string(),
        _ => text(function, "records", value)?,
    };
    Ok(match word.to_ascii_lowercase().as_str() {
        "auto" => Records::Auto,
        "true" => Records::Yes,
        "false" => Records::No,
        other => {
            return plan_err!(
                "{function}: records must be 'auto', 'true' or 'false', not '{other}'"
            );
        }
    })
}

fn filename(function: &str, value: &Expr) -> Result<Option<String>> {
    match literal(value) {
        Some(Value::Boolean(true)) => Ok(Some("filename".to_string())),
        Some(Value::Boolean(false)) => Ok(None),
        _ => text(function, "filename", value).map(Some),
    }
}

/// `columns={name: 'TYPE', ...}`.
fn columns(function: &str, value: &Expr) -> Result<Vec<(String, String)>> {
    let Expr::Dictionary(fields) = value else {
        return plan_err!("{function}: columns must be {{name: 'TYPE', ...}}, not {value}");
    };
    let mut out: Vec<(String, String)> = Vec::with_capacity(fields.len());
    for field in fields {
        let name = field.key.value.clone();
        if out.iter().any(|(n, _)| *n == name) {
            return plan_err!("{function}: column '{name}' given twice");
        }
        out.push((name, text(function, "a column type", &field.value)?));
    }
    if out.is_empty() {
        return plan_err!("{function}: columns needs at least one column");
    }
    Ok(out)
}

/// The first argument: one location or a list of them.
fn paths(function: &str, value: &Expr) -> Result<Vec<String>> {
    let items: Vec<&Expr> = match value {
        Expr::Array(array) => array.elem.iter().collect(),
        other => vec![other],
    };
    items
        .into_iter()
        .map(|item| text(function, "the file argument", item))
        .collect()
}
