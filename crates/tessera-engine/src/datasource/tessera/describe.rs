//! `DESCRIBE` of a Tessera table: its columns in order (the document column as `json`,
//! relational columns with their Arrow types), then every shredded path with its type,
//! the share of documents served from that typed column, and how many files shred it.
//! Dates and times show their rendering: `date_time '%Y-%m-%dT%H:%M:%S%.3fZ'`.
//! A path shredded as a list is named `$.a.b[*]`, typed by its elements, its share
//! being the documents holding an array there.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Float64Array, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::Result;

use super::TesseraTable;
use super::provider::external;

/// The description of `table` at its current version.
pub async fn describe(table: &TesseraTable) -> Result<RecordBatch> {
    let snapshot = table.table().snapshot().await.map_err(external)?;
    let files = snapshot.files();
    let rows: u64 = files.iter().map(|f| f.summary.rows).sum();
    // (path, type) -> (documents served typed, files shredding it)
    let mut paths: BTreeMap<(String, String), (f64, u64)> = BTreeMap::new();
    for file in files {
        for path in &file.summary.schema.paths {
            let mut ty = serde_json::to_value(path.ty)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            if let Some(format) = &path.format {
                ty = format!("{ty} '{format}'");
            }
            let entry = paths.entry((path.path.clone(), ty)).or_default();
            entry.0 += path.frequency * file.summary.rows as f64;
            entry.1 += 1;
        }
    }
    let mut names = Vec::new();
    let mut types = Vec::new();
    let mut shares = Vec::new();
    let mut counts = Vec::new();
    for column in table.table().columns() {
        names.push(column.name.clone());
        types.push(column.ty.clone());
        shares.push(None);
        counts.push(files.len() as u64);
    }
    for ((path, ty), (typed, count)) in paths {
        names.push(path);
        types.push(ty);
        shares.push(Some(if rows == 0 { 0.0 } else { typed / rows as f64 }));
        counts.push(count);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("type", DataType::Utf8, false),
        Field::new("typed_share", DataType::Float64, true),
        Field::new("files", DataType::UInt64, false),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(names)),
            Arc::new(StringArray::from(types)),
            Arc::new(Float64Array::from(shares)),
            Arc::new(UInt64Array::from(counts)),
        ],
    )?)
}
