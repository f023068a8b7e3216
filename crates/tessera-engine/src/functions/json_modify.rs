//! The functions that change JSON documents, as DuckDB 2.0.0 names and answers them:
//! `json_merge_patch(j, patch, ...)` (RFC 7396 below the top level, any number of
//! patches),
//! `json_set` / `json_insert` / `json_replace(j, path, value)`, `json_remove(j, path)`
//! and `json_pretty(j)`.
//!
//! Documents and values are JSON text (a value `'2'` is the number 2, `'"x"'` the
//! string); malformed text is an error, as in DuckDB. Paths are read by
//! `tessera-json`'s `parse_json_path`; on top of it, a path ending in `[#]` (or `/-`)
//! names the place after an array's last element, a path without `$` or `/` is one key,
//! and the empty path is the whole document.

use std::sync::{Arc, LazyLock};

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{DataFusionError, Result, plan_err};
use datafusion::logical_expr::scalar_doc_sections::DOC_SECTION_OTHER;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use tessera_json::modify::{Mode, Step, merge_patch_document, remove_path, set_path};
use tessera_json::path::{PathElem, parse_json_path};
use tessera_json::tape::Tape;
use tessera_json::tree::Json;

use super::json_build::{TextColumn, map_rows, parse_json};
use crate::json::json_type::json_field;

/// The modifiers, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    [
        ("json_merge_patch", Change::MergePatch),
        ("json_set", Change::Set(Mode::Set)),
        ("json_insert", Change::Set(Mode::Insert)),
        ("json_replace", Change::Set(Mode::Replace)),
        ("json_remove", Change::Remove),
        ("json_pretty", Change::Pretty),
    ]
    .into_iter()
    .map(|(name, change)| {
        Arc::new(ScalarUDF::from(JsonModify {
            name,
            change,
            signature: Signature::user_defined(Volatility::Immutable),
        }))
    })
    .collect()
}

/// What a modifier does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Change {
    MergePatch,
    Set(Mode),
    Remove,
    Pretty,
}

impl Change {
    /// The argument count, or the least count for the variadic merge patch.
    fn arity(self) -> (usize, bool) {
        match self {
            Change::MergePatch => (2, true),
            Change::Set(_) => (3, false),
            Change::Remove => (2, false),
            Change::Pretty => (1, false),
        }
    }
}

/// One modifier; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct JsonModify {
    name: &'static str,
    change: Change,
    signature: Signature,
}

static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION_OTHER,
        "Changes JSON documents as DuckDB does: json_merge_patch(j, patch, ...) (RFC 7396), \
         json_set / json_insert / json_replace(j, path, value), json_remove(j, path), \
         json_pretty(j).",
        "json_set('{\"a\":1}', '$.b', '[2]')",
    )
    .build()
});

impl ScalarUDFImpl for JsonModify {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let (count, variadic) = self.change.arity();
        let counted = match variadic {
            true => arg_types.len() >= count,
            false => arg_types.len() == count,
        };
        if !counted {
            let least = if variadic { "at least " } else { "" };
            return plan_err!("{}() takes {least}{count} arguments", self.name);
        }
        arg_types
            .iter()
            .map(|t| match t {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Ok(t.clone()),
                DataType::Null => Ok(DataType::Utf8),
                other => plan_err!("{}() takes JSON text and paths, not {other}", self.name),
            })
            .collect()
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(json_field(self.name)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let mut tape = Tape::default();
        map_rows(&args, |arrays, row, out| {
            let Some(result) = self.apply(arrays, row, &mut tape)? else {
                return Ok(false);
            };
            match self.change {
                Change::Pretty => result.write_pretty(out, 0),
                _ => result.write(out),
            }
            Ok(true)
        })
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}

impl JsonModify {
    /// Row `row`'s result; `None` is SQL NULL.
    fn apply(&self, arrays: &[ArrayRef], row: usize, tape: &mut Tape) -> Result<Option<Json>> {
        let texts = arrays
            .iter()
            .map(|a| Ok(TextColumn::new(self.name, a)?.get(row)))
            .collect::<Result<Vec<_>>>()?;
        if self.change == Change::MergePatch {
            return self.merge(&texts, row, tape);
        }
        let [Some(doc), rest @ ..] = texts.as_slice() else {
            return Ok(None);
        };
        let Some(rest) = rest.iter().copied().collect::<Option<Vec<&str>>>() else {
            return Ok(None);
        };
        let mut doc = parse_json(self.name, row, doc, tape)?;
        match self.change {
            Change::Set(mode) => {
                let path = modify_path(self.name, rest[0])?;
                let value = parse_json(self.name, row, rest[1], tape)?;
                set_path(&mut doc, &path, &value, mode);
            }
            Change::Remove => {
                if !remove_path(&mut doc, &modify_path(self.name, rest[0])?) {
                    return Ok(None);
                }
            }
            Change::MergePatch | Change::Pretty => {}
        }
        Ok(Some(doc))
    }

    /// A SQL NULL argument is the JSON `null` (which a later patch replaces); the
    /// result is SQL NULL when the last patch is.
    fn merge(&self, texts: &[Option<&str>], row: usize, tape: &mut Tape) -> Result<Option<Json>> {
        let mut merged = Json::Null;
        for (i, text) in texts.iter().enumerate() {
            let value = match text {
                Some(text) => parse_json(self.name, row, text, tape)?,
                None => Json::Null,
            };
            merged = match i {
                0 => value,
                _ => merge_patch_document(merged, value),
            };
        }
        Ok(texts.last().copied().flatten().map(|_| merged))
    }
}

/// Reads a modification path (see the module documentation).
fn modify_path(function: &str, text: &str) -> Result<Vec<Step>> {
    if text.is_empty() || text == "$" {
        return Ok(Vec::new());
    }
    if !text.starts_with('$') && !text.starts_with('/') {
        return Ok(vec![Step::Key(text.to_string())]);
    }
    let (prefix, append) = match text.strip_suffix("[#]").or_else(|| text.strip_suffix("/-")) {
        Some(prefix) => (prefix, true),
        None => (text, false),
    };
    let elements = match prefix {
        "" | "$" => Vec::new(),
        prefix => parse_json_path(prefix)
            .map_err(|e| DataFusionError::Execution(format!("{function}: {e}")))?,
    };
    let mut steps = Vec::with_capacity(elements.len() + 1);
    for element in elements {
        // Wildcards and other path forms that name many places cannot be changed.
        if let PathElem::Key(key) = element {
            steps.push(Step::Key(key));
        } else if let PathElem::Index(index) = element {
            steps.push(Step::Index(index));
        } else {
            return Err(DataFusionError::Execution(format!(
                "{function}: JSON path wildcards are not supported in JSON modification functions"
            )));
        }
    }
    if append {
        steps.push(Step::Append);
    }
    Ok(steps)
}
