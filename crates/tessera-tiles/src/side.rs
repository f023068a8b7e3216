//! Side relations of high-cardinality arrays (Tiles-*: JSON Tiles, SIGMOD 2021, §3.5 and
//! §4.3 step 6). A data file's documents keep their long arrays whole in the Variant
//! binary; the elements of each such array path move to a file of their own, one row per
//! element in the order of their documents' rows (up to the reordering of tiles of
//! elements within a partition), itself mined over tiles of elements and shredded like
//! any documents. Queries over the elements (`json_each`, `UNNEST`, filters
//! on element fields) read the side file's typed columns and join back to their
//! documents by the element's row, instead of walking every array in the binary.
//!
//! A side file's documents are `{"value": element}` (json_each's name for the element),
//! so that scalar elements are shredded too, with two relational columns: [`ROW`], the
//! row of the element's document in the data file, and [`POS`], its position in the
//! array.

use std::sync::Arc;

use arrow::array::{RecordBatch, UInt32Array};
use arrow::datatypes::{DataType, Field, Schema};
use tessera_json::path::{PathElem, PathTrie};
use tessera_json::scanner::{Kind, Scanner, Span, for_each_member};

use crate::keypaths::KeyPath;
use crate::{TilesError, TilesOptions};

/// The side file's column holding the row of the element's document in its data file.
pub const ROW: &str = "row";
/// The side file's column holding the element's position in its array.
pub const POS: &str = "pos";
/// The key of a side document holding the element.
pub const VALUE_KEY: &str = "value";

/// The elements of one array path in every document of a data file, before the file's
/// rows are ordered.
#[derive(Debug)]
pub(crate) struct SideElements {
    pub path: KeyPath,
    /// Per document (input order), the spans of its array's elements in its text.
    spans: Vec<Vec<Span>>,
}

/// The elements at `path` of every document; `None` when some document holds something
/// other than an array there, so the path's values are not exactly rows of elements.
pub(crate) fn elements_at(
    docs: &[&[u8]],
    path: &KeyPath,
) -> Result<Option<SideElements>, TilesError> {
    let mut trie = PathTrie::new();
    let slot = trie.add(
        &path
            .iter()
            .map(|k| PathElem::Key(k.clone()))
            .collect::<Vec<_>>(),
    );
    let mut scanner = Scanner::new(Arc::new(trie));
    let mut spans = Vec::with_capacity(docs.len());
    for (index, doc) in docs.iter().enumerate() {
        // The tape parsed every document already.
        scanner.scan(doc).map_err(|e| {
            TilesError::Internal(format!("document {index} failed its second scan: {e}"))
        })?;
        let mut elements = Vec::new();
        match scanner.get(slot) {
            None => {}
            Some(array) if array.kind == Kind::Array => {
                for_each_member(doc, array, |_, element| elements.push(element));
            }
            Some(_) => return Ok(None),
        }
        spans.push(elements);
    }
    Ok(Some(SideElements {
        path: path.clone(),
        spans,
    }))
}

impl SideElements {
    /// The documents of the side file of these elements (`{"value": element}`, one
    /// text holding them all, and where each ends in it) and their relational columns
    /// [`ROW`] and [`POS`], the data file's rows being the documents `rows` (input
    /// positions, in the file's final order).
    pub(crate) fn documents(
        &self,
        docs: &[&[u8]],
        rows: &[usize],
    ) -> Result<(SideTexts, RecordBatch), TilesError> {
        assert_eq!(rows.len(), self.spans.len(), "every document has its row");
        let count: usize = self.spans.iter().map(Vec::len).sum();
        let mut texts = SideTexts {
            text: Vec::new(),
            ends: Vec::with_capacity(count),
        };
        let mut row_ids: Vec<u32> = Vec::with_capacity(count);
        let mut positions: Vec<u32> = Vec::with_capacity(count);
        for (row, &doc) in rows.iter().enumerate() {
            for (pos, span) in self.spans[doc].iter().enumerate() {
                texts.text.extend_from_slice(b"{\"value\":");
                texts.text.extend_from_slice(span.raw(docs[doc]));
                texts.text.push(b'}');
                texts.ends.push(texts.text.len());
                row_ids.push(index_u32(row)?);
                positions.push(index_u32(pos)?);
            }
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new(ROW, DataType::UInt32, false),
            Field::new(POS, DataType::UInt32, false),
        ]));
        let columns = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(UInt32Array::from(row_ids)),
                Arc::new(UInt32Array::from(positions)),
            ],
        )
        .map_err(|e| TilesError::Columns(e.to_string()))?;
        Ok((texts, columns))
    }
}

/// The texts of a side file's documents, one after the other in one buffer: millions
/// of small elements cost one allocation, not one each.
#[derive(Debug)]
pub(crate) struct SideTexts {
    text: Vec<u8>,
    /// Where each document ends in `text`; each starts where the one before ends.
    ends: Vec<usize>,
}

impl SideTexts {
    /// Each document's text.
    pub fn documents(&self) -> Vec<&[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.text[start..end])
            .collect()
    }
}

/// How a side file is written, given the data file's `options`. Elements move only
/// within a partition of tiles, where the reordering gathers each kind of element into
/// tiles of its own, so that every kind frequent enough to fill a tile is typed; rows
/// are not clustered by value, which made the row column random: it cost more bytes than
/// anything else in the file (measured in docs/BENCHMARKS.md). No side has sides.
pub(crate) fn side_options(options: &TilesOptions) -> TilesOptions {
    TilesOptions {
        side_arrays: false,
        cluster_keys: 0,
        ..options.clone()
    }
}

fn index_u32(index: usize) -> Result<u32, TilesError> {
    u32::try_from(index).map_err(|_| TilesError::Internal(format!("index {index} above u32")))
}
