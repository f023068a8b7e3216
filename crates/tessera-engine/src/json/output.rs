//! Arrow builders for JSON access results, shared by the SQL functions and the NDJSON
//! scan so that both produce identical values and types.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, StringViewBuilder, UInt64Builder,
};

use tessera_json::Span;
use tessera_json::value::{Output, array_length_of, bool_of, float_of, int_of, text_of};

/// Accumulates one output column of JSON access results.
#[derive(Debug)]
pub enum OutputBuilder {
    /// `Json`, `Text` and `Str` outputs.
    Text(Output, StringViewBuilder),
    /// `Int` output.
    Int(Int64Builder),
    /// `Float` output.
    Float(Float64Builder),
    /// `Bool` output.
    Bool(BooleanBuilder),
    /// `ArrayLength` output.
    ArrayLength(UInt64Builder),
}

impl OutputBuilder {
    /// A builder for `output` sized for `capacity` rows.
    pub fn new(output: Output, capacity: usize) -> Self {
        match output {
            Output::Json | Output::Text | Output::Str => {
                OutputBuilder::Text(output, StringViewBuilder::with_capacity(capacity))
            }
            Output::Int => OutputBuilder::Int(Int64Builder::with_capacity(capacity)),
            Output::Float => OutputBuilder::Float(Float64Builder::with_capacity(capacity)),
            Output::Bool => OutputBuilder::Bool(BooleanBuilder::with_capacity(capacity)),
            Output::ArrayLength => {
                OutputBuilder::ArrayLength(UInt64Builder::with_capacity(capacity))
            }
        }
    }

    /// Appends the value at `span` of `doc` (or NULL when the path was absent).
    #[inline]
    pub fn append(&mut self, doc: &str, span: Option<Span>) {
        match self {
            OutputBuilder::Text(output, b) => {
                b.append_option(span.and_then(|s| text_of(doc, s, *output)))
            }
            OutputBuilder::Int(b) => b.append_option(span.and_then(|s| int_of(doc.as_bytes(), s))),
            OutputBuilder::Float(b) => {
                b.append_option(span.and_then(|s| float_of(doc.as_bytes(), s)))
            }
            OutputBuilder::Bool(b) => b.append_option(span.and_then(bool_of)),
            OutputBuilder::ArrayLength(b) => {
                b.append_option(span.map(|s| array_length_of(doc.as_bytes(), s)))
            }
        }
    }

    /// Appends SQL NULL.
    #[inline]
    pub fn append_null(&mut self) {
        match self {
            OutputBuilder::Text(_, b) => b.append_null(),
            OutputBuilder::Int(b) => b.append_null(),
            OutputBuilder::Float(b) => b.append_null(),
            OutputBuilder::Bool(b) => b.append_null(),
            OutputBuilder::ArrayLength(b) => b.append_null(),
        }
    }

    /// The finished column; the builder is left empty for reuse.
    pub fn finish(&mut self) -> ArrayRef {
        match self {
            OutputBuilder::Text(_, b) => Arc::new(b.finish()),
            OutputBuilder::Int(b) => Arc::new(b.finish()),
            OutputBuilder::Float(b) => Arc::new(b.finish()),
            OutputBuilder::Bool(b) => Arc::new(b.finish()),
            OutputBuilder::ArrayLength(b) => Arc::new(b.finish()),
        }
    }
}
