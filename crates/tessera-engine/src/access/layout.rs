//! The column layout of a scan's decoded batch.
//!
//! Both scans decode each batch of documents into the same shape before DataFusion's
//! projection and the pushed filters run on it:
//!
//! ```text
//! [document] ++ outputs ++ relational ++ casts ++ elements
//! ```
//!
//! - the document itself, only when something still reads it whole (`SELECT j`);
//! - one column per extracted JSON access (the extraction plan's outputs);
//! - the table's other columns: partition values of NDJSON files, relational columns
//!   of Tessera tables;
//! - one column per cast of an output that a scan can decode typed
//!   (`CAST(j->>'n' AS BIGINT)` read from a typed leaf);
//! - one column per access to the values of `json_each`'s rows over an output, which a
//!   table reads from the columns of a list it shreds (`e.value->>'name'`).
//!
//! The extraction plan rewrites the projection and filters against these positions, and
//! the decoders fill them; [`DecodedLayout`] is the one place that knows the positions,
//! and [`DecodedParts::assemble`] checks that a decoder filled each part exactly.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::SchemaRef;
use datafusion::common::Result;

/// How many columns each part of a decoded batch has, and so where each column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedLayout {
    /// Whether the whole document is column 0.
    document: bool,
    /// Extracted outputs.
    outputs: usize,
    /// The table's columns besides the document column.
    relational: usize,
    /// Typed casts of outputs.
    casts: usize,
    /// Accesses to the values of `json_each`'s rows over outputs.
    elements: usize,
}

impl DecodedLayout {
    /// A layout with `outputs` extracted columns and `relational` table columns, the
    /// document first when `document`, and no casts yet.
    pub fn new(document: bool, outputs: usize, relational: usize) -> Self {
        Self {
            document,
            outputs,
            relational,
            casts: 0,
            elements: 0,
        }
    }

    /// The same layout with `casts` typed cast columns at the end.
    pub fn with_casts(self, casts: usize) -> Self {
        Self { casts, ..self }
    }

    /// Position of the document column.
    pub fn document(&self) -> usize {
        assert!(self.document, "the layout has no document column");
        0
    }

    /// The same layout with `elements` element access columns at the end.
    pub fn with_elements(self, elements: usize) -> Self {
        Self { elements, ..self }
    }

    /// Position of extracted output `k`.
    pub fn output(&self, k: usize) -> usize {
        assert!(k < self.outputs, "output {k} of {}", self.outputs);
        usize::from(self.document) + k
    }

    /// Which extracted output is at `position`, if an output is there.
    pub fn output_at(&self, position: usize) -> Option<usize> {
        let k = position.checked_sub(usize::from(self.document))?;
        (k < self.outputs).then_some(k)
    }

    /// Position of table column `i` (0-based among the columns besides the document).
    pub fn relational(&self, i: usize) -> usize {
        assert!(
            i < self.relational,
            "table column {i} of {}",
            self.relational
        );
        usize::from(self.document) + self.outputs + i
    }

    /// Position of typed cast `c`.
    pub fn cast(&self, c: usize) -> usize {
        assert!(c < self.casts, "cast {c} of {}", self.casts);
        usize::from(self.document) + self.outputs + self.relational + c
    }

    /// Position of element access `e`.
    pub fn element(&self, e: usize) -> usize {
        assert!(e < self.elements, "element access {e} of {}", self.elements);
        usize::from(self.document) + self.outputs + self.relational + self.casts + e
    }

    /// Columns in all.
    pub fn width(&self) -> usize {
        usize::from(self.document) + self.outputs + self.relational + self.casts + self.elements
    }
}

/// The columns of one decoded batch, part by part, as a decoder fills them.
#[derive(Debug, Default)]
pub struct DecodedParts {
    /// The document column, when the layout has one.
    pub document: Option<ArrayRef>,
    /// One column per extracted output, in the plan's order.
    pub outputs: Vec<ArrayRef>,
    /// One column per table column besides the document column.
    pub relational: Vec<ArrayRef>,
    /// One column per typed cast.
    pub casts: Vec<ArrayRef>,
    /// One column per element access.
    pub elements: Vec<ArrayRef>,
}

impl DecodedParts {
    /// Empty parts with room for `layout`'s columns.
    pub fn with_capacity(layout: &DecodedLayout) -> Self {
        Self {
            document: None,
            outputs: Vec::with_capacity(layout.outputs),
            relational: Vec::with_capacity(layout.relational),
            casts: Vec::with_capacity(layout.casts),
            elements: Vec::with_capacity(layout.elements),
        }
    }

    /// The batch of `rows` rows these parts make under `layout`, whose schema is
    /// `schema`. A decoder that filled a part with the wrong number of columns is a bug
    /// of the engine, not of the data, so it panics.
    pub fn assemble(
        self,
        layout: &DecodedLayout,
        schema: &SchemaRef,
        rows: usize,
    ) -> Result<RecordBatch> {
        assert_eq!(self.document.is_some(), layout.document, "document column");
        assert_eq!(self.outputs.len(), layout.outputs, "output columns");
        assert_eq!(self.relational.len(), layout.relational, "table columns");
        assert_eq!(self.casts.len(), layout.casts, "cast columns");
        assert_eq!(self.elements.len(), layout.elements, "element columns");
        assert_eq!(schema.fields().len(), layout.width(), "decoded schema");
        let mut arrays = Vec::with_capacity(layout.width());
        arrays.extend(self.document);
        arrays.extend(self.outputs);
        arrays.extend(self.relational);
        arrays.extend(self.casts);
        arrays.extend(self.elements);
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(schema),
            arrays,
            &options,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_follow_the_parts() {
        let layout = DecodedLayout::new(true, 2, 1)
            .with_casts(2)
            .with_elements(1);
        assert_eq!(layout.document(), 0);
        assert_eq!([layout.output(0), layout.output(1)], [1, 2]);
        assert_eq!(layout.relational(0), 3);
        assert_eq!([layout.cast(0), layout.cast(1)], [4, 5]);
        assert_eq!(layout.element(0), 6);
        assert_eq!(layout.width(), 7);
        assert_eq!(
            (0..7).map(|p| layout.output_at(p)).collect::<Vec<_>>(),
            [None, Some(0), Some(1), None, None, None, None]
        );
        let bare = DecodedLayout::new(false, 1, 0);
        assert_eq!((bare.output(0), bare.width()), (0, 1));
    }

    #[test]
    #[should_panic(expected = "cast 0 of 0")]
    fn a_position_outside_its_part_is_refused() {
        DecodedLayout::new(false, 3, 0).cast(0);
    }
}
