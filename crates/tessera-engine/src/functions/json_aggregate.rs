//! The JSON aggregates of DuckDB 2.0.0: `json_group_array(x)` (the group's values as a
//! JSON array, NULLs as `null`), `json_group_object(k, v)` (an object of the group's
//! pairs, repeated keys kept, a NULL key an error) and `json_group_structure(j)` (the
//! merged [`Structure`] of the group's JSON documents). An empty group gives NULL.
//!
//! The text an array or object accumulates is bounded by [`GROUP_TEXT_BYTES_MAX`], a
//! structure by [`GROUP_STRUCTURE_NODES_MAX`]; a group beyond either is an error naming
//! the limit, not an allocation without end.

use std::sync::{Arc, LazyLock};

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::aggregate_doc_sections::DOC_SECTION_GENERAL;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, Signature, Volatility,
};
use tessera_json::tape::Tape;
use tessera_json::tree::push_string;

use super::json_build::{TextColumn, display, parse_json, write_arrow};
use super::json_structure::Structure;
use crate::json::json_type::{is_json, json_field};

/// Most bytes of JSON text one group of `json_group_array` or `json_group_object`
/// accumulates.
pub const GROUP_TEXT_BYTES_MAX: usize = 64 << 20;

/// Most type names, arrays and keys one group's `json_group_structure` holds.
pub const GROUP_STRUCTURE_NODES_MAX: usize = 1 << 20;

/// The aggregates, ready to register.
pub fn all_functions() -> Vec<Arc<AggregateUDF>> {
    [
        ("json_group_array", Group::Array),
        ("json_group_object", Group::Object),
        ("json_group_structure", Group::Structure),
    ]
    .into_iter()
    .map(|(name, group)| {
        Arc::new(AggregateUDF::from(JsonGroup {
            name,
            group,
            signature: Signature::any(group.arity(), Volatility::Immutable),
        }))
    })
    .collect()
}

/// What an aggregate gathers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Group {
    Array,
    Object,
    Structure,
}

impl Group {
    fn arity(self) -> usize {
        match self {
            Group::Object => 2,
            Group::Array | Group::Structure => 1,
        }
    }
}

/// One JSON aggregate; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct JsonGroup {
    name: &'static str,
    group: Group,
    signature: Signature,
}

static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION_GENERAL,
        "JSON aggregates as DuckDB has them: json_group_array(x), json_group_object(k, v), \
         json_group_structure(j).",
        "json_group_object(name, json_group_array(value))",
    )
    .build()
});

impl AggregateUDFImpl for JsonGroup {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        if self.group == Group::Structure
            && !matches!(
                arg_fields[0].data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
            )
        {
            return plan_err!("json_group_structure() takes JSON text");
        }
        Ok(Arc::new(json_field(self.name)))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if args.is_distinct || !args.order_bys.is_empty() {
            return plan_err!("{}() takes neither DISTINCT nor ORDER BY", self.name);
        }
        let value_is_json = args.expr_fields.last().is_some_and(|f| is_json(f));
        Ok(match self.group {
            Group::Structure => Box::new(StructureAccumulator::default()),
            group => Box::new(TextAccumulator {
                name: self.name,
                object: group == Group::Object,
                value_is_json,
                text: String::new(),
                tape: crate::json::function_tape(),
            }),
        })
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}_state", args.name),
            DataType::Utf8,
            true,
        ))])
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}

/// `json_group_array` and `json_group_object`: the members written so far, comma
/// separated, without the brackets (so that partial states concatenate).
#[derive(Debug)]
struct TextAccumulator {
    name: &'static str,
    object: bool,
    value_is_json: bool,
    text: String,
    tape: Tape,
}

impl TextAccumulator {
    fn check_size(&self) -> Result<()> {
        if self.text.len() > GROUP_TEXT_BYTES_MAX {
            return exec_err!(
                "{}: a group's JSON text exceeds {GROUP_TEXT_BYTES_MAX} bytes",
                self.name
            );
        }
        Ok(())
    }

    fn append_key(&mut self, keys: &dyn Array, row: usize) -> Result<()> {
        if keys.is_null(row) {
            return exec_err!("{}: a JSON key cannot be NULL", self.name);
        }
        let key = match TextColumn::new(self.name, keys) {
            Ok(texts) => texts.get(row).unwrap_or_default().to_string(),
            Err(_) => display(keys, row)?,
        };
        push_string(&mut self.text, &key);
        self.text.push(':');
        Ok(())
    }
}

impl Accumulator for TextAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(value) = values.last() else {
            return Ok(());
        };
        for row in 0..value.len() {
            if !self.text.is_empty() {
                self.text.push(',');
            }
            if self.object {
                self.append_key(values[0].as_ref(), row)?;
            }
            write_arrow(
                value.as_ref(),
                self.value_is_json,
                row,
                &mut self.text,
                &mut self.tape,
            )?;
            self.check_size()?;
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let texts = TextColumn::new(self.name, states[0].as_ref())?;
        for row in 0..states[0].len() {
            if let Some(part) = texts.get(row).filter(|p| !p.is_empty()) {
                if !self.text.is_empty() {
                    self.text.push(',');
                }
                self.text.push_str(part);
                self.check_size()?;
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Utf8(Some(self.text.clone()))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.text.is_empty() {
            return Ok(ScalarValue::Utf8(None));
        }
        let (open, close) = if self.object { ('{', '}') } else { ('[', ']') };
        Ok(ScalarValue::Utf8(Some(format!(
            "{open}{}{close}",
            self.text
        ))))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.text.capacity()
    }
}

/// `json_group_structure`: the merged structure of the rows so far.
#[derive(Debug, Default)]
struct StructureAccumulator {
    structure: Option<Structure>,
    tape: Tape,
}

impl StructureAccumulator {
    fn add(&mut self, structure: Structure) {
        self.structure = Some(match self.structure.take() {
            Some(mine) => mine.merge(structure),
            None => structure,
        });
    }

    /// Checked once a batch: counting walks the whole structure.
    fn check_size(&self) -> Result<()> {
        let nodes = self.structure.as_ref().map_or(0, Structure::node_count);
        if nodes > GROUP_STRUCTURE_NODES_MAX {
            return exec_err!(
                "json_group_structure: a group's structure exceeds {GROUP_STRUCTURE_NODES_MAX} \
                 type names and keys"
            );
        }
        Ok(())
    }
}

impl Accumulator for StructureAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let texts = TextColumn::new("json_group_structure", values[0].as_ref())?;
        for row in 0..values[0].len() {
            if let Some(text) = texts.get(row) {
                let json = parse_json("json_group_structure", row, text, &mut self.tape)?;
                self.add(Structure::of(&json));
            }
        }
        self.check_size()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let texts = TextColumn::new("json_group_structure", states[0].as_ref())?;
        for row in 0..states[0].len() {
            if let Some(text) = texts.get(row) {
                let json = parse_json("json_group_structure", row, text, &mut self.tape)?;
                let Some(structure) = Structure::parse(&json) else {
                    return exec_err!("json_group_structure: a partial state is not a structure");
                };
                self.add(structure);
            }
        }
        self.check_size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let text = self.structure.as_ref().map(|s| {
            let mut out = String::new();
            s.write(&mut out, true);
            out
        });
        Ok(vec![ScalarValue::Utf8(text)])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Utf8(
            self.structure.as_ref().map(Structure::to_text),
        ))
    }

    fn size(&self) -> usize {
        let nodes = self.structure.as_ref().map_or(0, Structure::node_count);
        std::mem::size_of_val(self) + nodes * std::mem::size_of::<(String, Structure)>()
    }
}
