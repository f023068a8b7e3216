//! The functions that change JSON documents, as DuckDB 2.0.0 names and answers them:
//! `json_merge_patch(j, patch, ...)` (RFC 7396 below the top level, any number of
//! patches),
//! `json_set` / `json_insert` / `json_replace(j, path, value)`, `json_remove(j, path)`
//! and `json_pretty(j)`.
//!
//! Documents and values are JSON text (a value `'2'` is the number 2, `'"x"'` the
//! string); malformed text is an error, as in DuckDB. Paths are read by
//! `tessera-json`'s `parse_path`: JSONPath, where `[#]` and `[#-0]` name the place after
//! an array's last element; JSON Pointer, whose tokens are keys of objects and indexes
//! (or `-`, the place after the last element) of arrays; a path without `$` or `/` is
//! one key, and the empty path is the whole document.

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
use tessera_json::path::{PathElem, PathStep, parse_path};
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
        let mut tape = crate::json::function_tape();
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
    let pointer = text.starts_with('/');
    let text = if text.starts_with('$') {
        zero_from_end_as_append(text)
    } else {
        text.to_string()
    };
    let path =
        parse_path(&text).map_err(|e| DataFusionError::Execution(format!("{function}: {e}")))?;
    path.steps
        .into_iter()
        .map(|step| match step {
            PathStep::KeyOrIndex(token) => Ok(Step::Token(token)),
            PathStep::Elem(PathElem::Key(token)) if pointer => Ok(Step::Token(token)),
            PathStep::Elem(PathElem::Key(key)) => Ok(Step::Key(key)),
            // The path reader's `[#]`, one past the last element.
            PathStep::Elem(PathElem::Index(i64::MIN)) => Ok(Step::Append),
            PathStep::Elem(PathElem::Index(index)) => Ok(Step::Index(index)),
            // Wildcards and other path forms that name many places cannot be changed.
            _ => Err(DataFusionError::Execution(format!(
                "{function}: JSON path wildcards are not supported in JSON modification functions"
            ))),
        })
        .collect()
}

/// The JSONPath `text` with every `[#-0]` (any number of zeros) outside quoted keys
/// written `[#]`: zero from the end is the place after the last element, as in DuckDB,
/// where the path reader would read the first element.
fn zero_from_end_as_append(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let (mut at, mut quoted) = (0, false);
    while at < bytes.len() {
        if !quoted && bytes[at..].starts_with(b"[#-0") {
            let zeros = bytes[at + 3..].iter().take_while(|b| **b == b'0').count();
            if bytes.get(at + 3 + zeros) == Some(&b']') {
                out.extend_from_slice(b"[#]");
                at += 4 + zeros;
                continue;
            }
        }
        // A backslash in a quoted key escapes the byte after it (`\"` is a quote).
        let taken = match bytes[at] {
            b'\\' if quoted => 2,
            b'"' => {
                quoted = !quoted;
                1
            }
            _ => 1,
        };
        let end = (at + taken).min(bytes.len());
        out.extend_from_slice(&bytes[at..end]);
        at = end;
    }
    String::from_utf8(out).expect("only ASCII bytes were replaced")
}
