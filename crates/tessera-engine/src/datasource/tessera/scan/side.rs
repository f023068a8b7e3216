//! `json_each`'s rows over a path whose arrays a data file keeps in a side relation
//! (Tiles-*: JSON Tiles, SIGMOD 2021, §3.5; `tessera_tiles::side`): the side file's rows
//! are the elements, `{"value": element}` shredded over tiles of elements, with the row of
//! their document and their position. The accesses to the elements are read from the side
//! file's columns once per data file (whichever partitions read its shares), ordered by
//! (row, position), and each batch of the data file takes its rows' elements by the
//! rows' positions in the file, which the reader appends ([`tessera_table::ROW_NUMBER`])
//! whatever pruning, deletions and filters left of the file. No array is walked in the
//! documents' binary.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, ListArray, NullArray, RecordBatch, StructArray,
    UInt32Array, new_empty_array,
};
use arrow::buffer::OffsetBuffer;
use arrow::compute::{concat, take};
use arrow::datatypes::{DataType, Field, UInt32Type};
use datafusion::common::{DataFusionError, Result};
use futures::TryStreamExt;
use parking_lot::Mutex;
use parquet::file::metadata::ParquetMetaData;
use tessera_table::{FileRead, SideFile, Snapshot};
use tessera_tiles::layout::COLUMN;
use tessera_tiles::side::{POS, ROW, VALUE_KEY};
use tokio::sync::OnceCell;

use super::leaves::Served;
use super::metrics::TesseraScanMetrics;
use super::output_source::OutputSource;
use crate::access::extraction::ElementAccess;
use crate::datasource::tessera::provider::external;
use crate::functions::json_each::field_names;
use crate::json::path::PathElem;

/// The elements of one data file's side relation, read for one [`ElementAccess`].
#[derive(Debug)]
pub(super) struct SideElements {
    /// Per row of the data file, where its elements start in `order` (one more entry
    /// than rows).
    starts: Vec<u32>,
    /// Side rows in (row, position) order.
    order: UInt32Array,
    /// Per side row (in the side file's order), the accesses' values: one access's
    /// values, the fields of a struct, or nulls when the rows are only counted.
    values: ArrayRef,
}

/// Most side relations one scan keeps loaded ([`SideLoads`]).
const SIDE_LOADS_MAX: usize = 8;

/// One load of a side file for one access, shared by whoever asks for it first and
/// those who ask while it loads.
type SideLoad = Arc<OnceCell<Option<Arc<SideElements>>>>;

/// The side relations one scan has loaded, shared by its partitions: the shares of one
/// data file (read by different partitions) and an access repeated in one query load a
/// side file once. The last [`SIDE_LOADS_MAX`] loads are kept; the partitions of a scan
/// open the shares of one file close together.
#[derive(Debug, Default)]
pub(super) struct SideLoads {
    loads: Mutex<VecDeque<(String, ElementAccess, SideLoad)>>,
}

impl SideLoads {
    /// The side relation of a data file with `rows` rows and side files `sides` for the
    /// rows of `json_each` at `path` read by `access`, when `path` is a chain of keys the
    /// file keeps in a side file; `Ok(None)` when it does not, or when the side file
    /// holds some access nowhere but in whole documents.
    pub async fn load(
        &self,
        snapshot: &Snapshot,
        sides: &[SideFile],
        rows: u64,
        path: &[PathElem],
        access: &ElementAccess,
        metrics: &TesseraScanMetrics,
    ) -> Result<Option<Arc<SideElements>>> {
        let Some(side) = side_of(sides, path) else {
            return Ok(None);
        };
        let load = {
            let mut loads = self.loads.lock();
            match loads
                .iter()
                .find(|(p, a, _)| *p == side.path && a == access)
            {
                Some((_, _, load)) => Arc::clone(load),
                None => {
                    if loads.len() == SIDE_LOADS_MAX {
                        loads.pop_front();
                    }
                    let load = SideLoad::default();
                    loads.push_back((side.path.clone(), access.clone(), Arc::clone(&load)));
                    load
                }
            }
        };
        let loaded = load
            .get_or_try_init(|| async {
                let elements = SideElements::load(snapshot, side, rows, access, metrics).await?;
                Ok::<_, DataFusionError>(elements.map(Arc::new))
            })
            .await?;
        Ok(loaded.clone())
    }
}

/// The side file of the arrays at `path`, when it is a chain of keys.
fn side_of<'a>(sides: &'a [SideFile], path: &[PathElem]) -> Option<&'a SideFile> {
    let keys = path
        .iter()
        .map(|p| match p {
            PathElem::Key(k) => Some(k.clone()),
            PathElem::Index(_) => None,
        })
        .collect::<Option<Vec<String>>>()?;
    sides.iter().find(|s| s.array == keys)
}

impl SideElements {
    /// The elements of `side` (of a data file with `rows` rows) read by `access`;
    /// `Ok(None)` when the side file holds some access nowhere but in whole documents.
    async fn load(
        snapshot: &Snapshot,
        side: &SideFile,
        rows: u64,
        access: &ElementAccess,
        metrics: &TesseraScanMetrics,
    ) -> Result<Option<Self>> {
        let open = snapshot
            .open_file(&side.as_data_file())
            .await
            .map_err(external)?;
        metrics.side_files_read.add(1);
        let column = open.schema().field(0).clone();
        let sources = access
            .accesses
            .iter()
            .map(|(output, path)| {
                let mut below = vec![PathElem::Key(VALUE_KEY.to_string())];
                below.extend(path.iter().cloned());
                OutputSource::find(column.data_type(), &below, *output)
            })
            .collect::<Vec<_>>();
        if sources.iter().any(OutputSource::is_document) || column.name() != COLUMN {
            return Ok(None);
        }
        let batches: Vec<_> = open
            .read(FileRead {
                leaves: Some(side_leaves(open.metadata(), &sources)),
                ..FileRead::default()
            })
            .map_err(external)?
            .try_collect()
            .await
            .map_err(external)?;
        let (values, row_ids, positions) = side_columns(&batches, &sources, access)?;
        let (starts, order) = by_row(&row_ids, &positions, rows)?;
        metrics.count_traffic(open.traffic());
        Ok(Some(Self {
            starts,
            order,
            values,
        }))
    }

    /// The access's list for every row of a batch of the data file, named by the rows'
    /// positions in the file.
    pub fn read(&self, rows: &Int64Array) -> Result<(ArrayRef, Served)> {
        let mut indices: Vec<u32> = Vec::new();
        let mut offsets: Vec<i32> = Vec::with_capacity(rows.len() + 1);
        offsets.push(0);
        for row in rows.values() {
            let row = usize::try_from(*row)
                .ok()
                .filter(|&r| r + 1 < self.starts.len())
                .ok_or_else(|| corrupt("a row beyond the data file"))?;
            let (start, end) = (self.starts[row] as usize, self.starts[row + 1] as usize);
            indices.extend_from_slice(&self.order.values()[start..end]);
            offsets.push(i32::try_from(indices.len()).map_err(|_| too_many())?);
        }
        let values = take(&self.values, &UInt32Array::from(indices), None)?;
        let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
        let list = ListArray::try_new(field, OffsetBuffer::new(offsets.into()), values, None)?;
        let served = Served {
            typed: list.values().len(),
            binary: 0,
        };
        Ok((Arc::new(list), served))
    }
}

/// The Parquet leaves of a side file (`file`) to read: those of `sources` and the
/// relational columns [`ROW`] and [`POS`], ascending.
fn side_leaves(file: &ParquetMetaData, sources: &[OutputSource]) -> Vec<usize> {
    let schema = file.file_metadata().schema_descr();
    let mut leaves: Vec<usize> = sources
        .iter()
        .flat_map(|s| s.parquet_leaves(COLUMN, file))
        .chain((0..schema.num_columns()).filter(|&i| {
            let column = schema.column(i);
            let root = column.path().parts()[0].as_str();
            root == ROW || root == POS
        }))
        .collect();
    leaves.sort_unstable();
    leaves.dedup();
    leaves
}

/// The accesses' values of all side rows (`batches` of the side file, in its order)
/// and each row's [`ROW`] and [`POS`] columns, per batch.
fn side_columns<'a>(
    batches: &'a [RecordBatch],
    sources: &[OutputSource],
    access: &ElementAccess,
) -> Result<(ArrayRef, Vec<&'a UInt32Array>, Vec<&'a UInt32Array>)> {
    let mut values: Vec<ArrayRef> = Vec::with_capacity(batches.len());
    let (mut row_ids, mut positions) = (Vec::new(), Vec::new());
    for batch in batches {
        values.push(match sources.is_empty() {
            true => Arc::new(NullArray::new(batch.num_rows())),
            false => {
                let elements = batch
                    .column_by_name(COLUMN)
                    .and_then(|c| c.as_struct_opt())
                    .ok_or_else(|| corrupt("its element column"))?;
                element_values(elements, sources, access)?
            }
        });
        row_ids.push(u32_column(batch, ROW)?);
        positions.push(u32_column(batch, POS)?);
    }
    let values = match values.as_slice() {
        [] => match access.values_type() {
            DataType::List(item) => new_empty_array(item.data_type()),
            other => return Err(corrupt(&format!("an access of type {other}"))),
        },
        parts => concat(&parts.iter().map(AsRef::as_ref).collect::<Vec<_>>())?,
    };
    Ok((values, row_ids, positions))
}

/// The accesses' values of one batch of side rows (`elements`: its decoded document
/// column), as [`ElementAccess::values_type`]'s items; `sources` are not empty.
fn element_values(
    elements: &StructArray,
    sources: &[OutputSource],
    access: &ElementAccess,
) -> Result<ArrayRef> {
    let mut arrays = Vec::with_capacity(sources.len());
    for (source, (output, _)) in sources.iter().zip(&access.accesses) {
        arrays.push(source.read(elements, *output)?.0);
    }
    Ok(match (arrays.len(), access.fields) {
        (1, false) => arrays.remove(0),
        _ => {
            let types = arrays.iter().map(|a| a.data_type().clone());
            Arc::new(StructArray::try_new(field_names(types), arrays, None)?)
        }
    })
}

/// The side rows grouped by the row of their document, each group in array order:
/// `starts` per data file row (one more entry than `rows`) into the returned order.
fn by_row(
    row_ids: &[&UInt32Array],
    positions: &[&UInt32Array],
    rows: u64,
) -> Result<(Vec<u32>, UInt32Array)> {
    let rows = usize::try_from(rows).map_err(|_| too_many())?;
    let row_of: Vec<u32> = row_ids
        .iter()
        .flat_map(|a| a.values().iter().copied())
        .collect();
    let pos_of: Vec<u32> = positions
        .iter()
        .flat_map(|a| a.values().iter().copied())
        .collect();
    let mut starts = vec![0u32; rows + 1];
    for &row in &row_of {
        let row = row as usize;
        if row >= rows {
            return Err(corrupt("a row beyond the data file"));
        }
        starts[row + 1] += 1;
    }
    for r in 0..rows {
        starts[r + 1] += starts[r];
    }
    // A counting sort by row keeps the side file's order within a row; tiles may have
    // moved a document's elements apart, so each row's group is then put in array order.
    let mut next = starts.clone();
    let mut order = vec![0u32; row_of.len()];
    for (side_row, &row) in row_of.iter().enumerate() {
        order[next[row as usize] as usize] = u32::try_from(side_row).map_err(|_| too_many())?;
        next[row as usize] += 1;
    }
    for r in 0..rows {
        let group = &mut order[starts[r] as usize..starts[r + 1] as usize];
        if !group.is_sorted_by_key(|&i| pos_of[i as usize]) {
            group.sort_unstable_by_key(|&i| pos_of[i as usize]);
        }
    }
    Ok((starts, UInt32Array::from(order)))
}

fn u32_column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a UInt32Array> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<UInt32Type>())
        .filter(|c| c.null_count() == 0)
        .ok_or_else(|| corrupt(&format!("its column {name}")))
}

fn corrupt(what: &str) -> DataFusionError {
    DataFusionError::Execution(format!("a side file of the table is damaged: {what}"))
}

fn too_many() -> DataFusionError {
    DataFusionError::Execution("more elements in one batch than a list holds".into())
}
