//! Writing one data file: documents parsed once onto a tape -> key-path items ->
//! documents reordered within partitions of tiles (FP-growth clusters) -> the paths
//! frequent in a partition chosen for extraction -> shredded by the union of those paths straight into Arrow
//! arrays (majority type typed, outliers as Variant) -> rows clustered by the
//! low-cardinality paths -> Parquet (zstd, dictionaries,
//! delta-encoded integers, page statistics and indexes), with the file's summary for
//! the table manifest.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StructArray};
use arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema};
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::cluster::{cluster_keys, cluster_order, reorder_rows};
use crate::datetime::{SAMPLES, TimeFormat};
use crate::keypaths::{Choice, Items, KeyPath, mine};
use crate::layout::{self, TYPED_VALUE, VALUE};
use crate::reorder::{Partitioning, reorder};
use crate::shred::Shredder;
use crate::side::{SideElements, elements_at, side_options};
use crate::summary::{
    ColumnStats, DistinctSketch, FileSummary, LeafType, PathBloom, PathStats, STAT_STRING_LIMIT,
    ShreddedPath, ShreddingSchema, StatValue,
};
use crate::{TilesError, TilesOptions};
use tessera_json::tape::{Kind, Tape};

/// The document column's name, kept here for the crates that name it by the writer.
pub use crate::layout::COLUMN;

/// A written data file and what it says about itself.
#[derive(Debug, Clone)]
pub struct WrittenFile {
    /// The Parquet bytes.
    pub parquet: Bytes,
    /// Schema, statistics and key-path filter for the manifest.
    pub summary: FileSummary,
    /// The side relations of its high-cardinality arrays ([`crate::side`]), by path.
    pub sides: Vec<WrittenSide>,
}

/// The written side relation of one array path of a data file.
#[derive(Debug, Clone)]
pub struct WrittenSide {
    /// The array path's keys from the document root.
    pub path: KeyPath,
    /// The side file: documents `{"value": element}` with the relational columns
    /// [`crate::side::ROW`] and [`crate::side::POS`].
    pub file: WrittenFile,
}

/// Most JSON text one file takes: typed string columns use 32-bit offsets.
pub const MAX_FILE_BYTES: usize = 1 << 30;

/// Shreds `docs` (JSON texts, one per row) into one Parquet file. Documents move
/// between the tiles of a partition so that tiles share structure, then rows are
/// ordered by the file's low-cardinality shredded paths ([`crate::cluster`]).
pub fn write_file(docs: &[&[u8]], options: &TilesOptions) -> Result<WrittenFile, TilesError> {
    write_file_with_columns(docs, None, options)
}

/// Like [`write_file`], with the row's relational (non-JSON) columns next to each
/// document: `columns` has one row per document and is stored as ordinary Parquet
/// columns after the document column, reordered with the documents so every row stays
/// whole, with per-column statistics in the summary.
pub fn write_file_with_columns(
    docs: &[&[u8]],
    columns: Option<&RecordBatch>,
    options: &TilesOptions,
) -> Result<WrittenFile, TilesError> {
    if let Some(columns) = columns {
        check_columns(columns, docs.len())?;
    }
    if options.tile_docs == 0
        || options.partition_tiles == 0
        || options.itemset_budget == 0
        || options.page_rows == 0
    {
        return Err(TilesError::Options(
            "tiles, partitions, pages and the itemset budget must not be empty",
        ));
    }
    if !(0.0..=1.0).contains(&options.threshold) || options.threshold == 0.0 {
        return Err(TilesError::Options("the threshold is a share in (0, 1]"));
    }
    let bytes: usize = docs.iter().map(|d| d.len()).sum();
    if bytes > MAX_FILE_BYTES {
        return Err(TilesError::TooLarge {
            bytes,
            limit: MAX_FILE_BYTES,
        });
    }
    let mut tape = Tape::with_capacity(docs.len(), bytes);
    let mut texts = Vec::with_capacity(docs.len());
    for (index, doc) in docs.iter().enumerate() {
        let text = tape.push(doc).map_err(|e| {
            let (line, column) = e.line_column(doc);
            TilesError::Json {
                index,
                line,
                column,
                reason: e.reason.to_string(),
            }
        })?;
        texts.push(text);
    }
    let items = Items::collect(&tape, &texts);
    let transactions: Vec<&[u32]> = (0..docs.len()).map(|i| items.of(i)).collect();
    let partitioning = Partitioning {
        tile_docs: options.tile_docs,
        partition_tiles: options.partition_tiles,
        threshold: options.threshold,
        budget: options.itemset_budget,
    };
    let order = reorder(&transactions, &partitioning);
    let mined = mine(&items, &order, &partitioning);
    drop(transactions);
    drop(items);
    let mut mined = mined;
    // A side path's arrays stay whole in the binary: its elements are typed in the side.
    let sides = match options.side_arrays {
        true => side_elements(docs, &mined.sides)?,
        false => Vec::new(),
    };
    type_dates_and_times(&tape, &texts, &mut mined.shredded);
    let mut shredder = Shredder::new(&tape, &mined.shredded, docs.len());
    for &i in &order {
        let doc = tape.doc(i, texts[i]);
        shredder.append(doc.root(), doc.keys());
    }
    let column = shredder.finish();
    drop(tape);
    let columns = columns.map(|c| reorder_columns(c, &order)).transpose()?;
    let stats = mined
        .shredded
        .iter()
        .map(|choice| path_stats(&column, choice))
        .collect::<Result<Vec<_>, _>>()?;
    let keys: Vec<&Choice> = cluster_keys(
        &mined.shredded,
        &stats,
        column.len() as u64,
        options.cluster_keys,
    )
    .into_iter()
    .map(|i| &mined.shredded[i])
    .collect();
    // Relational columns and side relations move with their documents.
    let (column, columns, rows) = match cluster_order(&column, &keys)? {
        Some(clustered) => (
            reorder_rows(&column, &clustered)?,
            columns
                .map(|c| arrow::compute::take_record_batch(&c, &clustered))
                .transpose()
                .map_err(|e| TilesError::Columns(e.to_string()))?,
            clustered
                .values()
                .iter()
                .map(|&r| order[r as usize])
                .collect(),
        ),
        None => (column, columns, order),
    };
    let sides = sides
        .iter()
        .map(|side| write_side(side, docs, &rows, options))
        .collect::<Result<Vec<_>, _>>()?;
    let unshredded = mined
        .unshredded
        .as_deref()
        .map_or_else(PathBloom::everything, PathBloom::of);
    let summary = FileSummary {
        rows: column.len() as u64,
        schema: ShreddingSchema {
            paths: mined
                .shredded
                .iter()
                .zip(&stats)
                .map(|(c, stats)| ShreddedPath {
                    path: c.json_path(),
                    ty: c.ty,
                    // Mining counted strings; only those in the format are typed.
                    frequency: match c.format {
                        Some(_) => stats.typed_count as f64 / column.len().max(1) as f64,
                        None => c.frequency,
                    },
                    format: c.format.map(|f| f.to_string()),
                })
                .collect(),
        },
        stats,
        unshredded_paths: unshredded,
        columns: columns.as_ref().map(all_column_stats).unwrap_or_default(),
    };
    let parquet = encode(
        &column,
        columns.as_ref(),
        &mined.shredded,
        &summary.stats,
        options,
    )?;
    Ok(WrittenFile {
        parquet,
        summary,
        sides,
    })
}

/// The side file of `side`'s elements, the data file's rows being the documents `rows`.
fn write_side(
    side: &SideElements,
    docs: &[&[u8]],
    rows: &[usize],
    options: &TilesOptions,
) -> Result<WrittenSide, TilesError> {
    let (texts, columns) = side.documents(docs, rows)?;
    let texts = texts.documents();
    Ok(WrittenSide {
        path: side.path.clone(),
        file: write_file_with_columns(&texts, Some(&columns), &side_options(options))?,
    })
}

/// The elements of each candidate side path that holds nothing but arrays in every
/// document (mining cannot see an empty object there).
fn side_elements(docs: &[&[u8]], paths: &[KeyPath]) -> Result<Vec<SideElements>, TilesError> {
    let mut sides = Vec::with_capacity(paths.len());
    for path in paths {
        sides.extend(elements_at(docs, path)?);
    }
    Ok(sides)
}

/// Types the string paths whose sampled values are dates or times in one rendering
/// ([`TimeFormat::detect`]); samples are spread over the whole file.
fn type_dates_and_times(tape: &Tape, texts: &[&str], choices: &mut [Choice]) {
    let stride = (texts.len() / (4 * SAMPLES)).max(1);
    for choice in choices
        .iter_mut()
        .filter(|c| c.ty == LeafType::String && !c.list)
    {
        let Some(keys) = choice
            .path
            .iter()
            .map(|k| tape.key_id(k.as_bytes()))
            .collect::<Option<Vec<u32>>>()
        else {
            continue;
        };
        let samples = (0..texts.len()).step_by(stride).filter_map(|i| {
            let value = keys
                .iter()
                .try_fold(tape.doc(i, texts[i]).root(), |v, &k| {
                    (v.node().kind() == Kind::Object)
                        .then(|| v.members().find(|(key, _)| key.key_id() == k))
                        .flatten()
                        .map(|(_, member)| member)
                })?;
            (value.node().kind() == Kind::String).then(|| value.str_bytes())
        });
        if let Some(format) = TimeFormat::detect(samples) {
            choice.ty = LeafType::DateTime;
            choice.format = Some(format);
        }
    }
}

/// The typed values of a shredded path (for a list, of its elements) and how many of
/// its values sit in the Variant binary (for a list, the elements and the non-array
/// values held as Variant).
fn typed_values<'a>(
    column: &'a StructArray,
    choice: &Choice,
) -> Result<(&'a ArrayRef, u64), TilesError> {
    let missing = || {
        TilesError::Internal(format!(
            "shredded column for {} is missing",
            choice.json_path()
        ))
    };
    let (value, typed) = layout::shredded_pair(column, &choice.path).ok_or_else(missing)?;
    let present = |v: Option<&ArrayRef>| v.map_or(0, |v| (v.len() - v.null_count()) as u64);
    Ok(match choice.list {
        true => {
            let element = typed
                .as_list_opt::<i32>()
                .and_then(|list| list.values().as_struct_opt())
                .ok_or_else(missing)?;
            if !choice.element.is_empty() {
                let (value, typed) =
                    layout::shredded_pair(element, &choice.element).ok_or_else(missing)?;
                return Ok((typed, present(value)));
            }
            let element_value = element.column_by_name(VALUE);
            let element_typed = element.column_by_name(TYPED_VALUE).ok_or_else(missing)?;
            (element_typed, present(element_value) + present(value))
        }
        false => (typed, present(value)),
    })
}

/// Statistics of a shredded path; for a list, of its typed elements, its binary count
/// being the elements and the non-array values held as Variant.
fn path_stats(column: &StructArray, choice: &Choice) -> Result<PathStats, TilesError> {
    let path = choice.json_path();
    let (typed, binary_count) = typed_values(column, choice)?;
    let mut distinct = DistinctSketch::default();
    // Dates and times are summarized by their stored integers.
    let stored;
    let typed = match typed.data_type() {
        DataType::Date32 | DataType::Timestamp(_, _) => {
            stored = arrow::compute::cast(typed, &DataType::Int64).map_err(TilesError::variant)?;
            &stored
        }
        _ => typed,
    };
    let (min, max, max_truncated) = match typed.data_type() {
        DataType::Int64 => {
            let a = typed.as_primitive::<Int64Type>();
            a.iter()
                .flatten()
                .for_each(|v| distinct.insert(&v.to_le_bytes()));
            let bound = |v: Option<i64>| v.map(StatValue::Int);
            (
                bound(arrow::compute::min(a)),
                bound(arrow::compute::max(a)),
                false,
            )
        }
        DataType::Float64 => {
            let a = typed.as_primitive::<Float64Type>();
            a.iter()
                .flatten()
                .for_each(|v| distinct.insert(&v.to_bits().to_le_bytes()));
            let bound = |v: Option<f64>| v.map(StatValue::Float);
            (
                bound(arrow::compute::min(a)),
                bound(arrow::compute::max(a)),
                false,
            )
        }
        DataType::Boolean => {
            let a = typed.as_boolean();
            a.iter()
                .flatten()
                .for_each(|v| distinct.insert(&[u8::from(v)]));
            let bound = |v: Option<bool>| v.map(StatValue::Bool);
            (
                bound(arrow::compute::min_boolean(a)),
                bound(arrow::compute::max_boolean(a)),
                false,
            )
        }
        DataType::Utf8 => {
            let a = typed.as_string::<i32>();
            a.iter()
                .flatten()
                .for_each(|v| distinct.insert(v.as_bytes()));
            let max = arrow::compute::max_string(a);
            (
                arrow::compute::min_string(a).map(|s| StatValue::String(truncate(s).to_string())),
                max.map(|s| StatValue::String(truncate(s).to_string())),
                max.is_some_and(|s| truncate(s).len() < s.len()),
            )
        }
        other => {
            return Err(TilesError::Internal(format!(
                "unexpected typed column {other} for {path}"
            )));
        }
    };
    let typed_count = (typed.len() - typed.null_count()) as u64;
    Ok(PathStats {
        path,
        min,
        max,
        max_truncated,
        null_count: typed.null_count() as u64,
        typed_count,
        binary_count,
        distinct,
    })
}

fn truncate(s: &str) -> &str {
    if s.len() <= STAT_STRING_LIMIT {
        return s;
    }
    let mut end = STAT_STRING_LIMIT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The Parquet column path of a shredded leaf's typed column (for a list, of its
/// elements' typed column).
fn typed_column_path(choice: &Choice) -> ColumnPath {
    ColumnPath::new(layout::typed_leaf_path(
        &choice.path,
        choice.list,
        &choice.element,
    ))
}

/// The Parquet column of the Variant binary holding `choice`'s values of other types.
fn outlier_column_path(choice: &Choice) -> ColumnPath {
    ColumnPath::new(layout::outlier_leaf_path(&choice.path, &choice.element))
}

fn encode(
    column: &StructArray,
    relational: Option<&RecordBatch>,
    shredded: &[Choice],
    stats: &[PathStats],
    options: &TilesOptions,
) -> Result<Bytes, TilesError> {
    let mut fields = vec![Arc::new(Field::new(
        COLUMN,
        column.data_type().clone(),
        true,
    ))];
    let mut arrays: Vec<ArrayRef> = vec![Arc::new(column.clone())];
    if let Some(relational) = relational {
        fields.extend(relational.schema().fields().iter().cloned());
        arrays.extend(relational.columns().iter().cloned());
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).map_err(TilesError::variant)?;
    let mut properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(options.zstd_level).map_err(TilesError::Parquet)?,
        ))
        .set_dictionary_enabled(true)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(options.row_group_docs))
        .set_data_page_row_count_limit(options.page_rows);
    // Integers (ids, timestamps, counters), dates and times are mostly distinct: a
    // dictionary would overflow. Deltas pack them well when neighbours are close.
    for choice in shredded
        .iter()
        .filter(|c| matches!(c.ty, LeafType::Int | LeafType::DateTime))
    {
        let (typed, _) = typed_values(column, choice)?;
        let stored = arrow::compute::cast(typed, &DataType::Int64).map_err(TilesError::variant)?;
        let path = typed_column_path(choice);
        // Deltas are bit-packed already: zstd does not shrink them (1M Bluesky events:
        // `time_us` 2.90 MB either way) but costs every query that reads them.
        properties = match delta_width(stored.as_primitive::<Int64Type>()) {
            Some(bits) if bits <= MAX_DELTA_BITS => properties
                .set_column_encoding(path.clone(), Encoding::DELTA_BINARY_PACKED)
                .set_column_compression(path.clone(), Compression::UNCOMPRESSED),
            _ => properties.set_column_encoding(path.clone(), Encoding::PLAIN),
        };
        properties = properties.set_column_dictionary_enabled(path, false);
    }
    for (choice, stats) in shredded.iter().zip(stats) {
        let (typed, _) = typed_values(column, choice)?;
        if let Some(compression) = text_compression(choice, stats, typed.as_ref()) {
            properties = properties.set_column_compression(typed_column_path(choice), compression);
        }
        if choice.ty == LeafType::String && !choice.list && stats.values_repeat() {
            properties = properties.set_column_dictionary_page_size_limit(
                typed_column_path(choice),
                MAX_DICTIONARY_BYTES,
            );
        }
        // Every typed read also reads the path's binary for outliers; when there are
        // none its pages hold only definition levels.
        if stats.binary_count == 0 && !choice.list {
            properties = properties
                .set_column_compression(outlier_column_path(choice), Compression::UNCOMPRESSED);
        }
    }
    let properties = properties.build();
    let mut out = Vec::new();
    let mut writer =
        ArrowWriter::try_new(&mut out, schema, Some(properties)).map_err(TilesError::Parquet)?;
    writer.write(&batch).map_err(TilesError::Parquet)?;
    writer.close().map_err(TilesError::Parquet)?;
    crate::checksum::add_page_checksums(Bytes::from(out)).map_err(TilesError::Parquet)
}

/// How the pages of a string leaf are compressed, when not as the rest of the file.
/// Queries read these leaves: a low-cardinality path's dictionary codes take a few
/// kilobytes per file, which a codec cannot shrink further but costs a context per
/// column chunk to read, so they are stored uncompressed; other text by what reading it
/// costs ([`crate::compression`]).
fn text_compression(choice: &Choice, stats: &PathStats, typed: &dyn Array) -> Option<Compression> {
    if choice.ty != LeafType::String {
        return None;
    }
    let low_cardinality = stats.distinct.estimate() <= crate::cluster::MAX_KEY_DISTINCT;
    if low_cardinality && !choice.list {
        return Some(Compression::UNCOMPRESSED);
    }
    let values = typed.as_string_opt::<i32>()?;
    Some(crate::compression::string_leaf_codec(
        values,
        stats.values_repeat(),
    ))
}

/// Largest dictionary page of a string leaf whose values repeat. Parquet's default
/// (1 MiB) turns a leaf of identifiers that recur (`did`: about 60K distinct 32-byte
/// values per file of 262K Bluesky events) into plain pages after the first few;
/// whole, the dictionary is smaller on disk (1.9 against 2.5 MB per file with LZ4) and
/// lets readers deduplicate on codes.
const MAX_DICTIONARY_BYTES: usize = 16 << 20;

/// Mean bits per value above which integers are stored plain rather than as deltas:
/// zstd packs plain 8-byte values of a narrow range to about 3 bytes. Measured on 1M
/// Bluesky events: `time_us` (21.4 bits) takes 0.74 MB per file as deltas and 0.84 MB
/// plain; `createdAt` (29.8 bits: 1% of records are days older than their neighbours,
/// which widens their whole miniblock) takes 1.25 MB as deltas and 0.81 MB plain.
const MAX_DELTA_BITS: f64 = 24.0;

/// Values per miniblock of Parquet's DELTA_BINARY_PACKED encoding, which packs each
/// miniblock at the width of its widest delta.
const DELTA_MINIBLOCK: usize = 32;

/// The mean bit width DELTA_BINARY_PACKED would pack the non-null `values` at; `None`
/// when there are fewer than two.
fn delta_width(values: &arrow::array::Int64Array) -> Option<f64> {
    let values: Vec<i64> = values.iter().flatten().collect();
    let deltas: Vec<i128> = values
        .windows(2)
        .map(|w| i128::from(w[1]) - i128::from(w[0]))
        .collect();
    if deltas.is_empty() {
        return None;
    }
    let bits: u64 = deltas
        .chunks(DELTA_MINIBLOCK)
        .map(|block| {
            let (min, max) = block.iter().fold((i128::MAX, i128::MIN), |(lo, hi), &d| {
                (lo.min(d), hi.max(d))
            });
            u64::from(128 - (max - min).leading_zeros())
        })
        .sum();
    Some(bits as f64 / deltas.len().div_ceil(DELTA_MINIBLOCK) as f64)
}

/// Checks that relational columns can be stored next to `docs` documents.
fn check_columns(columns: &RecordBatch, docs: usize) -> Result<(), TilesError> {
    if columns.num_rows() != docs {
        return Err(TilesError::Columns(format!(
            "{} rows for {docs} documents",
            columns.num_rows()
        )));
    }
    let mut names = std::collections::HashSet::new();
    for field in columns.schema().fields() {
        if field.name() == COLUMN {
            return Err(TilesError::Columns(format!(
                "'{COLUMN}' names the document column of data files"
            )));
        }
        if !names.insert(field.name()) {
            return Err(TilesError::Columns(format!(
                "'{}' appears twice",
                field.name()
            )));
        }
    }
    Ok(())
}

/// `columns` with their rows in the order the documents are written.
fn reorder_columns(columns: &RecordBatch, order: &[usize]) -> Result<RecordBatch, TilesError> {
    let indices = arrow::array::UInt64Array::from_iter_values(order.iter().map(|&i| i as u64));
    arrow::compute::take_record_batch(columns, &indices)
        .map_err(|e| TilesError::Columns(e.to_string()))
}

fn all_column_stats(columns: &RecordBatch) -> Vec<ColumnStats> {
    columns
        .schema()
        .fields()
        .iter()
        .zip(columns.columns())
        .map(|(field, array)| column_stats(field.name(), array.as_ref()))
        .collect()
}

/// Min, max and null count of one relational column; types without an order that
/// filters can use (and unsigned integers above `i64::MAX`) keep only the null count.
fn column_stats(name: &str, array: &dyn Array) -> ColumnStats {
    use arrow::datatypes::{
        Float32Type, Int8Type, Int16Type, Int32Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
    };
    macro_rules! ints {
        ($t:ty) => {{
            let a = array.as_primitive::<$t>();
            let bound = |v: Option<_>| v.and_then(|v| i64::try_from(v).ok()).map(StatValue::Int);
            let (min, max) = (bound(arrow::compute::min(a)), bound(arrow::compute::max(a)));
            // An unsigned maximum beyond i64 is no bound at all: keep neither.
            match (min, max) {
                (Some(min), Some(max)) => (Some(min), Some(max), false),
                _ => (None, None, false),
            }
        }};
    }
    macro_rules! floats {
        ($t:ty) => {{
            let a = array.as_primitive::<$t>();
            // NaN sorts above everything in Arrow's order but compares false in SQL:
            // a column holding one keeps no bounds.
            if a.iter().flatten().any(|v| v.is_nan()) {
                (None, None, false)
            } else {
                let bound = |v: Option<_>| v.map(|v| StatValue::Float(f64::from(v)));
                (
                    bound(arrow::compute::min(a)),
                    bound(arrow::compute::max(a)),
                    false,
                )
            }
        }};
    }
    let strings = |min: Option<&str>, max: Option<&str>| {
        (
            min.map(|s| StatValue::String(truncate(s).to_string())),
            max.map(|s| StatValue::String(truncate(s).to_string())),
            max.is_some_and(|s| truncate(s).len() < s.len()),
        )
    };
    let (min, max, max_truncated) = match array.data_type() {
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        DataType::UInt8 => ints!(UInt8Type),
        DataType::UInt16 => ints!(UInt16Type),
        DataType::UInt32 => ints!(UInt32Type),
        DataType::UInt64 => ints!(UInt64Type),
        DataType::Float32 => floats!(Float32Type),
        DataType::Float64 => floats!(Float64Type),
        DataType::Boolean => {
            let a = array.as_boolean();
            (
                arrow::compute::min_boolean(a).map(StatValue::Bool),
                arrow::compute::max_boolean(a).map(StatValue::Bool),
                false,
            )
        }
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            strings(arrow::compute::min_string(a), arrow::compute::max_string(a))
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            strings(arrow::compute::min_string(a), arrow::compute::max_string(a))
        }
        DataType::Utf8View => {
            let a = array.as_string_view();
            strings(
                arrow::compute::min_string_view(a),
                arrow::compute::max_string_view(a),
            )
        }
        _ => (None, None, false),
    };
    ColumnStats {
        name: name.to_string(),
        min,
        max,
        max_truncated,
        null_count: array.null_count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::Int64Array;

    use super::*;

    #[test]
    fn delta_width_is_the_mean_miniblock_width() {
        let steady = Int64Array::from_iter_values((0..65).map(|i| 1_000 + 3 * i));
        assert_eq!(delta_width(&steady), Some(0.0));
        // Deltas 8, -8, 8, ...: range 16 needs 5 bits; nulls are skipped.
        let zigzag = Int64Array::from_iter((0..33).map(|i| Some(8 * (i % 2))).chain([None]));
        assert_eq!(delta_width(&zigzag), Some(5.0));
        // Two miniblocks: one with a jump of 2^40 (41 bits), one steady.
        let mut jump: Vec<i64> = (0..65).collect();
        jump[10] += 1 << 40;
        let width = delta_width(&Int64Array::from(jump)).unwrap();
        assert_eq!(width, (42.0 + 0.0) / 2.0);
        assert_eq!(delta_width(&Int64Array::from(vec![7])), None);
    }
}
