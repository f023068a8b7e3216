//! `json_each`'s rows over a path a file holds as an object (a map-like object keeps its
//! frequent members shredded and the rest in the path's Variant binary) or inside a
//! binary (a key the file does not shred), read for what the query reads of their
//! values. Each member the binary holds is visited as a lazy Variant view
//! (`tessera_tiles::variant_view`) and the accesses follow their paths inside it, so only
//! the values they reach are validated; only members of typed columns are written as JSON
//! text. The
//! whole object is never written as text and walked again, which made a table 3-4x
//! slower than its raw file on objects keyed by names (JSON Tiles, SIGMOD 2021, §4.3:
//! what is not extracted must stay cheap to read).

use arrow::array::{Array, ArrayRef, StructArray};
use arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result};
use parquet::schema::types::SchemaDescriptor;
use parquet_variant::VariantMetadata;
use tessera_tiles::TilesError;
use tessera_tiles::layout::{METADATA, TYPED_VALUE, VALUE};
use tessera_tiles::unshred::{Member, ShreddedJson};
use tessera_tiles::variant_view::VariantView;

use super::leaves::{
    BinaryPath, Served, binary_at, descend, missing, pair_leaves, shredded_field, shredded_subtree,
};
use crate::access::extraction::ElementAccess;
use crate::datasource::tessera::provider::external;
use crate::functions::json_each::{Rows, ValueAccess};
use crate::json::path::PathElem;

/// Where one file holds the value `json_each` walks for one [`ElementAccess`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Held {
    /// The path is shredded as an object: `[typed_value, k1, ...]` down to its pair.
    Object(Vec<String>),
    /// The path sits in the binary of its longest shredded prefix.
    Binary(BinaryPath),
}

/// `json_each`'s rows over a path a file holds as an object or in a binary, with what is
/// read of their values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ObjectMembers {
    held: Held,
    access: ElementAccess,
}

impl ObjectMembers {
    /// Where a document column of type `column` holds `access` of `json_each`'s rows at
    /// `path`: when the path is shredded as an object or not shredded at all.
    pub fn find(column: &DataType, path: &[PathElem], access: &ElementAccess) -> Option<Self> {
        if access.rows_of != Rows::Each {
            return None;
        }
        let held = match shredded_field(column, path) {
            Some((names, fields)) => match fields.find(TYPED_VALUE)?.1.data_type() {
                DataType::Struct(_) if fields.find(VALUE).is_some() => Held::Object(names),
                _ => return None,
            },
            None => Held::Binary(BinaryPath::find(column, path)?),
        };
        Some(Self {
            held,
            access: access.clone(),
        })
    }

    /// Parquet leaf column indices to read, ascending: every leaf of the object's pair,
    /// or the prefix's binary, and the Variant metadata.
    pub fn parquet_leaves(&self, column: &str, schema: &SchemaDescriptor) -> Vec<usize> {
        match &self.held {
            Held::Object(names) => pair_leaves(column, names, schema),
            Held::Binary(path) => path.parquet_leaves(column, schema),
        }
    }

    /// The access's list for every row of `column` (a decoded document column holding
    /// at least [`Self::parquet_leaves`]).
    pub fn read(&self, column: &StructArray) -> Result<(ArrayRef, Served)> {
        let mut access = self.access.value_access();
        let served = match &self.held {
            Held::Object(names) => object_members(column, names, &mut access)?,
            Held::Binary(path) => binary_members(column, path, &mut access)?,
        };
        Ok((access.finish()?, served))
    }
}

/// Pushes the rows of each row's value at the shredded pair `names` to `access`.
fn object_members(
    column: &StructArray,
    names: &[String],
    access: &mut ValueAccess,
) -> Result<Served> {
    let writer = ShreddedJson::new(&shredded_subtree(column, names)?).map_err(external)?;
    let mut served = Served::default();
    let mut text = String::new();
    let mut failed = None;
    for row in 0..column.len() {
        let mut visit = |member: Member<'_>| {
            let pushed = match member {
                Member::Binary(value) => {
                    served.binary += 1;
                    access.push_variant(&value)
                }
                Member::Written(value) => {
                    served.typed += 1;
                    access.push_value(value)
                }
            };
            stop_on(pushed, &mut failed)
        };
        let visited = writer.members(row, &mut text, &mut visit);
        visited.map_err(|e| failed.take().unwrap_or_else(|| external(e)))?;
        access.end_document()?;
    }
    Ok(served)
}

/// Pushes the rows of each row's value at `path`, inside its prefix's binary, to
/// `access`; a row whose binary lacks the path has none.
fn binary_members(
    column: &StructArray,
    path: &BinaryPath,
    access: &mut ValueAccess,
) -> Result<Served> {
    let value = descend(column, path.prefix())?
        .column_by_name(VALUE)
        .ok_or_else(|| missing(VALUE))?;
    let metadata = column
        .column_by_name(METADATA)
        .ok_or_else(|| missing(METADATA))?;
    let mut served = Served::default();
    for row in 0..column.len() {
        if value.is_valid(row) {
            let metadata = VariantMetadata::try_new(binary_at(metadata, row)?)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            let document = VariantView::new(metadata, binary_at(value, row)?);
            let before = access.rows();
            if let Some(found) = document.follow(path.below()).map_err(external)? {
                let mut failed = None;
                found
                    .each(&mut |_, member| stop_on(access.push_variant(&member), &mut failed))
                    .map_err(|e| failed.take().unwrap_or_else(|| external(e)))?;
            }
            served.binary += access.rows() - before;
        }
        access.end_document()?;
    }
    Ok(served)
}

/// A visit's result for the walk that calls it: an error is kept in `failed` (the walk's
/// own error type cannot hold it) and stops the walk.
fn stop_on(pushed: Result<()>, failed: &mut Option<DataFusionError>) -> Result<(), TilesError> {
    pushed.map_err(|e| {
        *failed = Some(e);
        TilesError::Internal("json_each's rows stopped by an error".into())
    })
}
