//! DuckDB's names for settings Tessera keeps under a namespace, and `current_setting`.
//!
//! DataFusion's settings are namespaced (`datafusion.*`, `tessera.*`, `geometry.*`);
//! DuckDB's are bare (`SET json_geometry_format = 'geojson'`). [`rewrite_statement`]
//! renames a bare DuckDB name in `SET`/`RESET` to its namespaced key before planning,
//! and `current_setting(name)` reads a setting by either name. DataFusion resets only
//! its own settings, so `RESET name` of a mapped setting becomes `SET key = default`.
//! A few DuckDB settings steer only DuckDB's own internals (its plan serializer, its
//! storage file version); [`is_ignored`] names them, so that DuckDB's scripts setting them
//! run under the DuckDB dialect. Any other unknown name is still an error.

use std::sync::Arc;

use arrow::array::{Array, AsArray, StringBuilder};
use arrow::datatypes::DataType;
use datafusion::common::config::ConfigEntry;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::parser::{ResetStatement, Statement};
use datafusion::sql::sqlparser::ast::{self, Ident, ObjectName};

/// A DuckDB setting Tessera keeps under a namespaced key.
struct Mapped {
    duckdb: &'static str,
    key: &'static str,
    default: &'static str,
}

/// DuckDB's bare setting names, the keys Tessera keeps them under, and their defaults.
const DUCKDB_NAMES: [Mapped; 1] = [Mapped {
    duckdb: "json_geometry_format",
    key: "geometry.json_format",
    default: "wkt",
}];

/// DuckDB settings with no meaning for Tessera (no plan serializer to verify, no DuckDB
/// database file whose version to pin): `SET`/`RESET` of them do nothing under the DuckDB
/// dialect. An explicit list, so that a misspelt setting is still an error.
const IGNORED_DUCKDB_NAMES: [&str; 2] =
    ["debug_verify_serializer", "storage_compatibility_version"];

/// Whether `statement` sets or resets one of [`IGNORED_DUCKDB_NAMES`]: the caller, under
/// the DuckDB dialect, answers it with no rows instead of planning it.
pub fn is_ignored(statement: &Statement) -> bool {
    let variable = match statement {
        Statement::Statement(inner) => match inner.as_ref() {
            ast::Statement::Set(ast::Set::SingleAssignment { variable, .. }) => variable,
            _ => return false,
        },
        Statement::Reset(ResetStatement::Variable(variable)) => variable,
        _ => return false,
    };
    let name = variable.to_string();
    IGNORED_DUCKDB_NAMES
        .iter()
        .any(|n| n.eq_ignore_ascii_case(&name))
}

/// The mapping of a DuckDB setting name (any case), if Tessera maps it.
fn mapped(name: &str) -> Option<&'static Mapped> {
    DUCKDB_NAMES
        .iter()
        .find(|m| m.duckdb.eq_ignore_ascii_case(name))
}

fn key_name(key: &str) -> ObjectName {
    ObjectName::from(key.split('.').map(Ident::new).collect::<Vec<_>>())
}

/// Renames DuckDB's bare setting names in `SET name = ...`; `RESET name` of one becomes
/// `SET key = default`.
pub fn rewrite_statement(statement: &mut Statement) {
    match statement {
        Statement::Statement(inner) => {
            if let ast::Statement::Set(ast::Set::SingleAssignment { variable, .. }) = inner.as_mut()
                && let Some(m) = mapped(&variable.to_string())
            {
                *variable = key_name(m.key);
            }
        }
        Statement::Reset(ResetStatement::Variable(variable)) => {
            if let Some(m) = mapped(&variable.to_string()) {
                let set = ast::Set::SingleAssignment {
                    scope: None,
                    hivevar: false,
                    variable: key_name(m.key),
                    values: vec![ast::Expr::value(ast::Value::SingleQuotedString(
                        m.default.to_string(),
                    ))],
                };
                *statement = Statement::Statement(Box::new(ast::Statement::Set(set)));
            }
        }
        _ => {}
    }
}

/// The value of the setting `name` (DuckDB's name or a namespaced key) among `entries`,
/// whose extension settings DataFusion lists without their namespace.
fn lookup(entries: &[ConfigEntry], name: &str) -> Option<Option<String>> {
    let key = mapped(name).map_or(name, |m| m.key).to_ascii_lowercase();
    let bare = match key.split_once('.') {
        Some(("datafusion", _)) | None => None,
        Some((_, field)) => Some(field),
    };
    entries
        .iter()
        .find(|e| e.key == key || Some(e.key.as_str()) == bare)
        .map(|e| e.value.clone())
}

/// `current_setting(name)`: a setting's value as text, by DuckDB's or Tessera's name.
#[derive(Debug, PartialEq, Eq, Hash)]
struct CurrentSetting {
    signature: Signature,
}

/// `current_setting`, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    vec![Arc::new(ScalarUDF::from(CurrentSetting {
        signature: Signature::exact(vec![DataType::Utf8], Volatility::Stable),
    }))]
}

impl ScalarUDFImpl for CurrentSetting {
    fn name(&self) -> &str {
        "current_setting"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let entries = args.config_options.entries();
        let names = args.args[0].to_array(args.number_rows)?;
        let mut out = StringBuilder::with_capacity(names.len(), names.len() * 8);
        for name in names.as_string::<i32>() {
            let Some(name) = name else {
                out.append_null();
                continue;
            };
            match lookup(&entries, name) {
                Some(value) => out.append_option(value),
                None => return exec_err!("current_setting: unknown setting '{name}'"),
            }
        }
        let out = out.finish();
        match args.args[0] {
            ColumnarValue::Scalar(_) => {
                Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
            }
            ColumnarValue::Array(_) => Ok(ColumnarValue::Array(Arc::new(out))),
        }
    }
}
