//! DuckDB's `parse_filename(path[, trim_extension][, separator])`: the last component
//! of a path, as queries over `read_json(..., filename=true)` name their files.
//!
//! The separator is `'both_slash'` (the default: `/` and `\`), `'forward_slash'`,
//! `'backslash'` or `'system'` (`/` here); DuckDB 2.0.0 reads any other word as the
//! default. `trim_extension` drops everything from the last `.` of the name on.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, StringArray, StringBuilder};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// `parse_filename`, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    vec![Arc::new(ScalarUDF::from(ParseFilename {
        signature: Signature::user_defined(Volatility::Immutable),
    }))]
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ParseFilename {
    signature: Signature,
}

/// What separates a path's components.
#[derive(Debug, Clone, Copy)]
enum Separator {
    Both,
    Forward,
    Backward,
}

impl Separator {
    fn named(word: &str) -> Separator {
        match word.to_ascii_lowercase().as_str() {
            "forward_slash" | "system" => Separator::Forward,
            "backslash" => Separator::Backward,
            _ => Separator::Both,
        }
    }

    fn is(self, c: char) -> bool {
        match self {
            Separator::Both => c == '/' || c == '\\',
            Separator::Forward => c == '/',
            Separator::Backward => c == '\\',
        }
    }
}

/// The last component of `path`, without its extension when `trim`.
fn file_name(path: &str, trim: bool, separator: Separator) -> &str {
    let name = path
        .rfind(|c| separator.is(c))
        .map_or(path, |at| &path[at + 1..]);
    match (trim, name.rfind('.')) {
        (true, Some(dot)) => &name[..dot],
        _ => name,
    }
}

fn is_text(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    )
}

impl ScalarUDFImpl for ParseFilename {
    fn name(&self) -> &str {
        "parse_filename"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let usage = "parse_filename(path VARCHAR[, trim_extension BOOLEAN][, separator VARCHAR])";
        let fits = match arg_types {
            [path] => is_text(path),
            [path, second] => {
                is_text(path) && (is_text(second) || matches!(second, DataType::Boolean))
            }
            [path, trim, separator] => {
                is_text(path)
                    && matches!(trim, DataType::Boolean | DataType::Null)
                    && is_text(separator)
            }
            _ => false,
        };
        if !fits {
            return plan_err!("No function matches {usage} for arguments {arg_types:?}");
        }
        Ok(arg_types
            .iter()
            .map(|t| match t {
                DataType::Boolean => DataType::Boolean,
                _ => DataType::Utf8,
            })
            .collect())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let columns: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<Result<_>>()?;
        let paths = cast(&columns[0], &DataType::Utf8)?;
        let paths = paths.as_any().downcast_ref::<StringArray>();
        let Some(paths) = paths else {
            return exec_err!("parse_filename: the path is not text");
        };
        let (trims, separators) = options(&columns[1..])?;
        let mut out = StringBuilder::with_capacity(rows, rows * 16);
        for row in 0..rows {
            if paths.is_null(row) {
                out.append_null();
                continue;
            }
            let trim = trims
                .as_ref()
                .is_some_and(|t| t.is_valid(row) && t.value(row));
            let separator = separators
                .as_ref()
                .filter(|s| s.is_valid(row))
                .map_or(Separator::Both, |s| Separator::named(s.value(row)));
            out.append_value(file_name(paths.value(row), trim, separator));
        }
        let out: ArrayRef = Arc::new(out.finish());
        match scalar {
            true => Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)),
            false => Ok(ColumnarValue::Array(out)),
        }
    }
}

type Options = (Option<BooleanArray>, Option<StringArray>);

/// The `trim_extension` and `separator` columns among the arguments after the path.
fn options(rest: &[ArrayRef]) -> Result<Options> {
    let (mut trims, mut separators) = (None, None);
    for column in rest {
        match column.data_type() {
            DataType::Boolean => {
                trims = column.as_any().downcast_ref::<BooleanArray>().cloned();
            }
            _ => {
                let text = cast(column, &DataType::Utf8)?;
                separators = text.as_any().downcast_ref::<StringArray>().cloned();
            }
        }
    }
    Ok((trims, separators))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Generated paths of components joined by either slash: the name is the last
    /// component (by the separators asked for), the extension what follows its last dot.
    #[test]
    fn names_are_the_last_component() {
        let parts = ["a", "b.c", "d.e.f", ".g", "h.", ""];
        for (i, first) in parts.iter().enumerate() {
            for (j, second) in parts.iter().enumerate() {
                for slash in ['/', '\\'] {
                    let path = format!("{first}{slash}{second}");
                    let last = |sep: Separator| match sep.is(slash) {
                        true => second.to_string(),
                        false => path.clone(),
                    };
                    for sep in [Separator::Both, Separator::Forward, Separator::Backward] {
                        let name = last(sep);
                        assert_eq!(file_name(&path, false, sep), name, "{i} {j} {path}");
                        let stem = name.rfind('.').map_or(name.as_str(), |d| &name[..d]);
                        assert_eq!(file_name(&path, true, sep), stem, "{path}");
                    }
                }
            }
        }
    }
}
