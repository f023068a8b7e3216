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

use super::lines::Line;
use crate::access::extraction::ExtractionPlan;
use crate::access::layout::DecodedParts;
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

impl CurrentChunk {
    /// Whether `text` is this chunk's memory at `pos`, within the buffer, at offsets a
    /// string view can address (32 bits).
    fn holds(&self, pos: usize, text: &str) -> bool {
        let end = pos.checked_add(text.len());
        end.is_some_and(|end| end <= self.buffer.len() && u32::try_from(end).is_ok())
            && self.buffer.as_ptr().wrapping_add(pos) == text.as_ptr()
    }
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

    /// Appends `text`, which lies at `pos` of the current chunk when `pos` is given: the
    /// view then points into the chunk instead of copying. Where `text` is not that
    /// memory (a caller's mistake), it is copied: the check costs two comparisons, and
    /// an unchecked view of other bytes would be an invalid string.
    #[inline]
    fn append(&mut self, chunk: Option<&CurrentChunk>, pos: Option<usize>, text: &str) {
        match (chunk, pos) {
            (Some(chunk), Some(pos)) if text.len() > INLINE_VIEW_LEN && chunk.holds(pos, text) => {
                let block = match self.block {
                    Some((generation, block)) if generation == chunk.generation => block,
                    _ => {
                        let block = self.builder.append_block(chunk.buffer.clone());
                        self.block = Some((chunk.generation, block));
                        block
                    }
                };
                // SAFETY: `block` holds the chunk's buffer, and `holds` checked that
                // `text` is that buffer's memory at `pos..pos + len`, within the buffer
                // and below 4 GiB, so the view's bytes are `text`'s: valid UTF-8.
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
            plan.relational_fields.len(),
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
            // Both levels accept the same documents, so a whole document handed out (`j`)
            // is valid JSON at either.
            scanner: Scanner::new(Arc::clone(&plan.trie)).with_validation(validation),
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

    /// With `check`, a line is also malformed when a Tessera table could not store it
    /// exactly (a number beyond a Variant's), so that what the table writer would refuse
    /// is rejected here, where the line's file and place are known.
    pub fn with_storable_check(mut self, check: bool) -> Self {
        self.scanner.set_storable_numbers(check);
        self
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
        let mut parts = DecodedParts::with_capacity(&self.plan.layout);
        parts.document = self.raw.as_mut().map(ViewColumn::finish);
        for column in &mut self.columns {
            parts.outputs.push(match column {
                Column::Text(_, col) => col.finish(),
                Column::Other(builder) => builder.finish(),
            });
        }
        for value in &self.partition_values {
            parts.relational.push(value.to_array_of_size(self.rows)?);
        }
        let decoded = parts.assemble(&self.plan.layout, &self.plan.decoded_schema, self.rows)?;
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

#[cfg(test)]
mod tests {
    use arrow::array::AsArray;

    use super::*;

    fn chunk(text: &str) -> CurrentChunk {
        CurrentChunk {
            generation: 1,
            buffer: Buffer::from(text.as_bytes().to_vec()),
        }
    }

    fn appended(chunk: &CurrentChunk, pos: usize, text: &str) -> String {
        let mut column = ViewColumn::new(1);
        column.append(Some(chunk), Some(pos), text);
        let array = column.finish();
        array.as_string_view().value(0).to_string()
    }

    #[test]
    fn texts_of_the_chunk_are_viewed_in_place() {
        let chunk = chunk(r#"{"name":"a name longer than twelve bytes"}"#);
        let whole = std::str::from_utf8(&chunk.buffer).unwrap();
        let text = &whole[9..whole.len() - 2];
        assert!(chunk.holds(9, text));
        assert_eq!(appended(&chunk, 9, text), text);
    }

    #[test]
    fn texts_outside_the_chunk_are_copied_not_viewed() {
        let chunk = chunk(r#"{"k":"short"}"#);
        let elsewhere = "a text that is not in the chunk at all";
        // Beyond the buffer's end, and inside it but not its memory.
        for pos in [0, 3, chunk.buffer.len(), usize::MAX - 4] {
            assert!(!chunk.holds(pos, elsewhere));
            assert_eq!(appended(&chunk, pos, elsewhere), elsewhere);
        }
    }
}
