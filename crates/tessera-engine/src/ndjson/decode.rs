//! Decoding owned lines into Arrow batches: one validating scan per line fills the
//! extracted columns; the raw document and unescaped strings are referenced in place
//! (Arrow string views into the read buffer) instead of copied.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringViewBuilder};
use arrow::buffer::Buffer;
use datafusion::common::{Result, ScalarValue};
use datafusion::physical_expr::projection::Projector;

use super::extract::ExtractionPlan;
use super::lines::Line;
use crate::json::output::OutputBuilder;
use crate::json::scanner::Validation;
use crate::json::value::text_of;
use crate::json::{Output, Scanner};

/// Strings up to this length live inside the view itself, so referencing them saves nothing.
const INLINE_VIEW_LEN: usize = 12;

/// Why one line was rejected: the offset inside the line and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// Byte offset inside the line.
    pub offset: usize,
    /// What the parser expected.
    pub expected: String,
}

/// The chunk lines currently come from, shared as an Arrow buffer.
struct CurrentChunk {
    generation: u64,
    buffer: Buffer,
}

/// A string-view column that references the current chunk where it can.
struct ViewColumn {
    builder: StringViewBuilder,
    block: Option<(u64, u32)>,
}

impl ViewColumn {
    fn new(capacity: usize) -> Self {
        Self {
            builder: StringViewBuilder::with_capacity(capacity),
            block: None,
        }
    }

    /// Appends `text`, which lies at `pos` of the current chunk when `pos` is given.
    #[inline]
    fn append(&mut self, chunk: Option<&CurrentChunk>, pos: Option<usize>, text: &str) {
        match (chunk, pos) {
            (Some(chunk), Some(pos)) if text.len() > INLINE_VIEW_LEN => {
                let block = match self.block {
                    Some((generation, block)) if generation == chunk.generation => block,
                    _ => {
                        let block = self.builder.append_block(chunk.buffer.clone());
                        self.block = Some((chunk.generation, block));
                        block
                    }
                };
                debug_assert_eq!(&chunk.buffer[pos..pos + text.len()], text.as_bytes());
                // SAFETY: `block` holds the chunk, `pos..pos + len` lies inside it (the
                // text was sliced from it) and the text is valid UTF-8.
                unsafe {
                    self.builder
                        .append_view_unchecked(block, pos as u32, text.len() as u32)
                };
            }
            _ => self.builder.append_value(text),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        self.block = None;
        Arc::new(self.builder.finish())
    }
}

enum Column {
    Text(Output, ViewColumn),
    Other(OutputBuilder),
}

/// Turns lines into batches of the scan's output schema.
pub struct BatchDecoder {
    plan: Arc<ExtractionPlan>,
    projector: Projector,
    scanner: Scanner,
    raw: Option<ViewColumn>,
    columns: Vec<Column>,
    partition_values: Vec<ScalarValue>,
    rows: usize,
    batch_size: usize,
    chunk: Option<CurrentChunk>,
    generation: u64,
    ready: VecDeque<RecordBatch>,
}

impl BatchDecoder {
    /// A decoder producing batches of up to `batch_size` rows.
    pub fn new(
        plan: Arc<ExtractionPlan>,
        partition_values: Vec<ScalarValue>,
        batch_size: usize,
        validation: Validation,
    ) -> Result<Self> {
        assert!(batch_size > 0, "batches hold at least one row");
        assert_eq!(
            partition_values.len(),
            plan.partition_fields.len(),
            "one value per partition column"
        );
        let projector = plan.projection.make_projector(&plan.decoded_schema)?;
        let columns = plan
            .outputs
            .iter()
            .map(|&(_, output)| match output {
                Output::Json | Output::Text | Output::Str => {
                    Column::Text(output, ViewColumn::new(batch_size))
                }
                other => Column::Other(OutputBuilder::new(other, batch_size)),
            })
            .collect();
        Ok(Self {
            // A document handed out whole must be valid JSON, however little is read of it.
            scanner: Scanner::new(Arc::clone(&plan.trie)).with_validation(if plan.raw {
                Validation::Full
            } else {
                validation
            }),
            raw: plan.raw.then(|| ViewColumn::new(batch_size)),
            columns,
            partition_values,
            projector,
            plan,
            rows: 0,
            batch_size,
            chunk: None,
            generation: 0,
            ready: VecDeque::new(),
        })
    }

    /// Decodes one line into the current batch; blank lines are not rows.
    pub fn decode(&mut self, line: &Line<'_>) -> Result<std::result::Result<(), LineError>> {
        let mut bytes = line.bytes;
        if let [rest @ .., b'\r'] = bytes {
            bytes = rest;
        }
        if bytes.iter().all(|b| b.is_ascii_whitespace()) {
            return Ok(Ok(()));
        }
        if !line.utf8_checked && simdutf8::basic::from_utf8(bytes).is_err() {
            let valid = simdutf8::compat::from_utf8(bytes)
                .err()
                .map_or(0, |e| e.valid_up_to());
            return Ok(Err(LineError {
                offset: valid,
                expected: "valid UTF-8".to_string(),
            }));
        }
        if let Err(e) = self.scanner.scan(bytes) {
            return Ok(Err(LineError {
                offset: e.offset,
                expected: e.expected.to_string(),
            }));
        }
        // SAFETY: validated as UTF-8 above, per line or with its chunk.
        let doc = unsafe { std::str::from_utf8_unchecked(bytes) };
        let passes = self.plan.predicates.iter().all(|(slot, output, accepted)| {
            self.scanner
                .get(*slot)
                .and_then(|span| text_of(doc, span, *output))
                .is_some_and(|text| accepted.contains(text.as_bytes()))
        });
        if !passes {
            return Ok(Ok(()));
        }
        let base = match line.chunk {
            Some((chunk, pos)) => {
                self.use_chunk(chunk);
                Some(pos)
            }
            None => None,
        };
        let chunk = self.chunk.as_ref().filter(|_| base.is_some());
        if let Some(raw) = &mut self.raw {
            raw.append(chunk, base, doc);
        }
        for (column, &(slot, _)) in self.columns.iter_mut().zip(&self.plan.outputs) {
            let span = self.scanner.get(slot);
            match column {
                Column::Text(output, col) => match span.and_then(|s| text_of(doc, s, *output)) {
                    Some(Cow::Borrowed(text)) => {
                        let pos =
                            base.map(|b| b + (text.as_ptr() as usize - bytes.as_ptr() as usize));
                        col.append(chunk, pos, text);
                    }
                    Some(Cow::Owned(text)) => col.append(None, None, &text),
                    None => col.builder.append_null(),
                },
                Column::Other(builder) => builder.append(doc, span),
            }
        }
        self.rows += 1;
        if self.rows == self.batch_size {
            self.flush()?;
        }
        Ok(Ok(()))
    }

    fn use_chunk(&mut self, bytes: &bytes::Bytes) {
        let same = self
            .chunk
            .as_ref()
            .is_some_and(|c| c.buffer.as_ptr() == bytes.as_ptr() && c.buffer.len() == bytes.len());
        if !same {
            self.generation += 1;
            self.chunk = Some(CurrentChunk {
                generation: self.generation,
                buffer: Buffer::from(bytes.clone()),
            });
        }
    }

    /// Finishes the current batch (if it has rows) and queues it.
    pub fn flush(&mut self) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.plan.decoded_schema.fields().len());
        if let Some(raw) = &mut self.raw {
            arrays.push(raw.finish());
        }
        for column in &mut self.columns {
            arrays.push(match column {
                Column::Text(_, col) => col.finish(),
                Column::Other(builder) => builder.finish(),
            });
        }
        for value in &self.partition_values {
            arrays.push(value.to_array_of_size(self.rows)?);
        }
        let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(self.rows));
        let decoded = RecordBatch::try_new_with_options(
            Arc::clone(&self.plan.decoded_schema),
            arrays,
            &options,
        )?;
        self.ready
            .push_back(self.projector.project_batch(&decoded)?);
        self.rows = 0;
        Ok(())
    }

    /// The next finished batch, if any.
    pub fn next_batch(&mut self) -> Option<RecordBatch> {
        self.ready.pop_front()
    }
}
