//! Where one data file holds the values of one extracted output: a typed leaf, typed list
//! elements, a shredded subtree, the document's Variant binary, or the whole document.

use arrow::array::{ArrayRef, StructArray};
use arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result};
use parquet::file::metadata::ParquetMetaData;

use super::leaves::{
    BinaryPath, ListLengths, Served, ShreddedElement, ShreddedLeaf, SubtreePath, read_leaf,
};
use crate::json::Output;
use crate::json::path::PathElem;

/// Where one file holds the values of one extracted output.
#[derive(Debug, Clone)]
pub(super) enum OutputSource {
    /// A shredded path: its typed leaf (and outliers).
    Typed(ShreddedLeaf),
    /// An element of a path shredded as a list: its typed elements (and outliers).
    Element(ShreddedElement),
    /// `json_array_length` of a path shredded as a list: the list's offsets.
    Lengths(ListLengths),
    /// Any other path below a shredded field: that field's columns, rebuilt as Variant.
    Subtree(SubtreePath),
    /// A key the file does not shred below a shredded prefix (or at the root): that
    /// prefix's Variant binary.
    Binary(BinaryPath),
    /// Anything else: the reconstructed document text.
    Document,
}

impl OutputSource {
    /// Where a file whose document column has type `column` holds an access with
    /// `output` at `path`.
    pub(super) fn find(column: &DataType, path: &[PathElem], output: Output) -> Self {
        if let Some(leaf) = ShreddedLeaf::find(column, path) {
            return OutputSource::Typed(leaf);
        }
        if output == Output::ArrayLength
            && let Some(lengths) = ListLengths::find(column, path)
        {
            return OutputSource::Lengths(lengths);
        }
        if let Some(element) = ShreddedElement::find(column, path) {
            return OutputSource::Element(element);
        }
        if let Some(binary) = BinaryPath::find(column, path) {
            return OutputSource::Binary(binary);
        }
        SubtreePath::find(column, path).map_or(OutputSource::Document, OutputSource::Subtree)
    }

    pub(super) fn typed(&self) -> Option<&ShreddedLeaf> {
        match self {
            OutputSource::Typed(leaf) => Some(leaf),
            _ => None,
        }
    }

    pub(super) fn is_document(&self) -> bool {
        matches!(self, OutputSource::Document)
    }

    /// The values of an access with `output`, for every row of a decoded document
    /// column; documents are read by the caller, which reconstructs them once for all
    /// outputs.
    pub(super) fn read(&self, column: &StructArray, output: Output) -> Result<(ArrayRef, Served)> {
        match self {
            OutputSource::Typed(leaf) => read_leaf(column, leaf, output),
            OutputSource::Element(element) => element.read(column, output),
            OutputSource::Lengths(lengths) => lengths.read(column),
            OutputSource::Subtree(subtree) => subtree.read(column, output),
            OutputSource::Binary(path) => path.read(column, output),
            OutputSource::Document => Err(DataFusionError::Internal(
                "documents are read once per batch, not per output".into(),
            )),
        }
    }

    /// The Parquet leaves it reads (none for documents, which read every leaf).
    pub(super) fn parquet_leaves(&self, column: &str, file: &ParquetMetaData) -> Vec<usize> {
        let schema = file.file_metadata().schema_descr();
        match self {
            OutputSource::Typed(leaf) => leaf.parquet_leaves(column, file),
            OutputSource::Element(element) => element.parquet_leaves(column, schema),
            OutputSource::Lengths(lengths) => lengths.parquet_leaves(column, file),
            OutputSource::Subtree(subtree) => subtree.parquet_leaves(column, schema),
            OutputSource::Binary(path) => path.parquet_leaves(column, schema),
            OutputSource::Document => Vec::new(),
        }
    }
}
