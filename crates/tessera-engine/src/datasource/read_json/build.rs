//! The table of one `read_json` call: files listed and read through the session's object
//! stores (the NDJSON source's reader, decompression included), cut into records,
//! parsed, typed by inference or by the caller's columns, and converted by
//! `json_transform`'s kernel.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StringArray, StructArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::{MemTable, Session, TableProvider};
use datafusion::common::config::ConfigOptions;
use datafusion::common::{DataFusionError, Result, ScalarValue, plan_err};
use datafusion::logical_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF};
use futures::TryStreamExt;
use object_store::ObjectMeta;
use tessera_blob::Location;
use tessera_json::tape::Tape;
use tessera_json::tree::Json;

use super::geometry::{self, GeometryContext, RowPlace};
use super::hive;
use super::infer::{has_map, structure_field, transform_type};
use super::is_geojson_name;
use super::options::{ReadJsonOptions, Records};
use super::records::{Format, line_of, split};
use crate::datasource::location::listing_url;
use crate::datasource::ndjson::read::{Codec, Gets, ReadPlan};
use crate::datasource::read_geojson::{self, GeoJsonRecord};
use crate::functions::json_transform::convert_json;
use crate::json::json_type::json_field;
use crate::rejects::{Reject, RejectLog};

/// Most (decompressed) bytes one call reads: the table is held in memory.
const READ_BYTES_MAX: usize = 4 << 30;
/// Most records one call reads.
const RECORDS_MAX: usize = 100_000_000;
/// Bytes per ranged read.
const BLOCK_SIZE_BYTES: u64 = 8 << 20;
/// Ranged reads in flight per file.
const PREFETCH: usize = 4;

/// The records of all files: each one's JSON text (`None`: rejected) and file index.
struct Collected {
    texts: Vec<Option<String>>,
    files: Vec<usize>,
    /// Each record's 1-based line in its file and byte offset.
    places: Vec<(usize, usize)>,
    /// Parsed values of the first records, for inference.
    sample: Vec<Json>,
    /// Whether any file was read as GeoJSON.
    geojson: bool,
}

/// Where one record of a file is read from, and how.
struct RecordSource<'a> {
    text: &'a [u8],
    file: usize,
    place: (usize, usize),
    /// Whether it is sampled for inference.
    sampled: bool,
    /// Whether it is read as GeoJSON.
    geojson: bool,
}

impl Collected {
    /// Appends one parsed record: as the rows GeoJSON makes of it (a feature
    /// collection's features, a feature, a bare geometry), or as it is.
    fn push(&mut self, value: Json, source: RecordSource<'_>, sample_size: usize) {
        let rows = match source.geojson {
            true => match read_geojson::records(value) {
                GeoJsonRecord::Rows(rows) => rows,
                GeoJsonRecord::Other(value) => {
                    return self.push_one(value, None, &source, sample_size);
                }
            },
            false => return self.push_one(value, None, &source, sample_size),
        };
        for row in rows {
            let text = row.to_text();
            self.push_one(row, Some(text), &source, sample_size);
        }
    }

    /// Appends one row: its text (the record's own unless given), place and sample.
    fn push_one(
        &mut self,
        value: Json,
        text: Option<String>,
        source: &RecordSource<'_>,
        sample_size: usize,
    ) {
        if source.sampled && self.sample.len() < sample_size {
            self.sample.push(value);
        }
        let text = text.unwrap_or_else(|| String::from_utf8_lossy(source.text).into_owned());
        self.texts.push(Some(text));
        self.files.push(source.file);
        self.places.push(source.place);
    }
}

/// The table `options` describe.
pub async fn table(
    state: &dyn Session,
    options: &ReadJsonOptions,
) -> Result<Arc<dyn TableProvider>> {
    let files = list(state, &options.paths).await?;
    let rejects = state
        .config()
        .get_extension::<RejectLog>()
        .unwrap_or_default();
    let mut records = Collected {
        texts: Vec::new(),
        files: Vec::new(),
        places: Vec::new(),
        sample: Vec::new(),
        geojson: false,
    };
    let mut read_bytes = 0usize;
    for (index, (store, meta, name)) in files.iter().enumerate() {
        let bytes = read(store, meta, name, &mut read_bytes).await?;
        collect(&bytes, name, index, options, &rejects, &mut records)?;
    }
    let names: Vec<&str> = files.iter().map(|(_, _, n)| n.as_str()).collect();
    let batch = to_batch(state, options, &records, &names, &rejects)?;
    Ok(Arc::new(MemTable::try_new(
        batch.schema(),
        vec![vec![batch]],
    )?))
}

type ListedFile = (Arc<dyn object_store::ObjectStore>, ObjectMeta, String);

/// Every file of every location, each location's in name order; a location without
/// files is an error.
async fn list(state: &dyn Session, paths: &[String]) -> Result<Vec<ListedFile>> {
    let mut out = Vec::new();
    for text in paths {
        let location = Location::parse(text).map_err(|e| DataFusionError::Plan(e.to_string()))?;
        let url = listing_url(&location)?;
        let store = state.runtime_env().object_store(&url)?;
        let mut metas = list_files(state, &url, &store).await?;
        if metas.is_empty() {
            return plan_err!("No files found that match the pattern \"{text}\"");
        }
        metas.sort_by(|a, b| a.location.cmp(&b.location));
        for meta in metas {
            let name = match &location {
                Location::S3 { bucket, .. } => format!("s3://{bucket}/{}", meta.location),
                Location::Local(_) if metas_is_single_file(text) => text.clone(),
                Location::Local(_) => local_name(text, &meta.location),
            };
            out.push((Arc::clone(&store), meta, name));
        }
    }
    Ok(out)
}

/// The files of one listing URL. DataFusion matches a glob after dropping `key=value`
/// folders (hive partitions) from the path, so a glob naming such folders
/// (`month=*/*.json`) is matched here against the whole path below the prefix.
async fn list_files(
    state: &dyn Session,
    url: &datafusion::datasource::listing::ListingTableUrl,
    store: &Arc<dyn object_store::ObjectStore>,
) -> Result<Vec<ObjectMeta>> {
    let glob = match url.get_glob() {
        Some(glob) if glob.as_str().contains('=') => glob,
        _ => {
            let files = url.list_all_files(state, store.as_ref(), "").await?;
            return files.try_collect().await;
        }
    };
    let prefix = url.prefix();
    let listed: Vec<ObjectMeta> = store.list(Some(prefix)).try_collect().await?;
    Ok(listed
        .into_iter()
        .filter(|meta| {
            url.strip_prefix(&meta.location)
                .is_some_and(|segments| glob.matches(&segments.collect::<Vec<_>>().join("/")))
        })
        .collect())
}

/// A file a local glob matched, named relative to the working directory when the glob
/// was, as DuckDB names it.
fn local_name(glob: &str, location: &object_store::path::Path) -> String {
    let absolute = format!("/{location}");
    let relative = std::env::current_dir().ok().and_then(|dir| {
        let dir = format!("{}/", dir.display());
        absolute.strip_prefix(&dir).map(str::to_string)
    });
    match relative {
        Some(relative) if !glob.starts_with('/') => relative,
        _ => absolute,
    }
}

/// A location naming one file (no glob) keeps its text as the file's name.
fn metas_is_single_file(text: &str) -> bool {
    !text.contains(['*', '?', '['])
}

/// The whole (decompressed) content of one file.
async fn read(
    store: &Arc<dyn object_store::ObjectStore>,
    meta: &ObjectMeta,
    name: &str,
    read_bytes: &mut usize,
) -> Result<Vec<u8>> {
    let plan = ReadPlan {
        store: Arc::clone(store),
        location: meta.location.clone(),
        name: name.to_string(),
        size: meta.size,
        block_size: BLOCK_SIZE_BYTES,
        prefetch: PREFETCH,
        gets: Gets::default(),
    };
    let mut chunks = plan.chunks(0..meta.size, Codec::from_name(name));
    let mut out = Vec::new();
    while let Some(chunk) = chunks.try_next().await? {
        *read_bytes += chunk.bytes.len();
        if *read_bytes > READ_BYTES_MAX {
            return plan_err!(
                "{name}: read_json holds what it reads in memory and stops at {READ_BYTES_MAX} bytes"
            );
        }
        out.extend_from_slice(&chunk.bytes);
    }
    Ok(out)
}

/// Cuts one file into records, parses each, and appends them to `records`.
fn collect(
    bytes: &[u8],
    name: &str,
    file: usize,
    options: &ReadJsonOptions,
    rejects: &RejectLog,
    records: &mut Collected,
) -> Result<()> {
    let (ranges, format) = split(bytes, options.format, RECORDS_MAX).map_err(|e| {
        DataFusionError::Plan(format!(
            "{name} line {} (byte offset {}): {} (format '{}')",
            line_of(bytes, e.offset),
            e.offset,
            e.reason,
            format_name(options.format)
        ))
    })?;
    let mut tape = Tape::default();
    let (mut line, mut counted) = (1, 0);
    // Only the first files' records are sampled, as DuckDB's maximum_sample_files says.
    let sampled = file < options.sample_files_max;
    // records=false reads each record whole (a bare geometry is the value itself).
    let geojson =
        options.records != Records::No && options.geojson.unwrap_or_else(|| is_geojson_name(name));
    records.geojson |= geojson;
    for range in ranges {
        line += bytes[counted..range.start]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        counted = range.start;
        let text = &bytes[range.clone()];
        match parse_record(text, options, &mut tape) {
            Ok(value) => {
                let source = RecordSource {
                    text,
                    file,
                    place: (line, range.start),
                    sampled,
                    geojson,
                };
                records.push(value, source, options.sample_size);
            }
            Err(reason) => {
                let reject = Reject {
                    file: name.to_string(),
                    line: line as u64,
                    offset: range.start as u64,
                    reason,
                };
                if !options.ignore_errors || format != Format::NewlineDelimited {
                    return plan_err!(
                        "{reject} (format '{}'; ignore_errors=true skips malformed records of \
                         format 'newline_delimited' only)",
                        format_name(format)
                    );
                }
                rejects.record(reject, text);
                records.texts.push(None);
                records.files.push(file);
                records.places.push((line, range.start));
            }
        }
    }
    Ok(())
}

/// One record parsed, or why it is rejected: too large, malformed, or (when its keys
/// become columns) an object holding a key twice.
fn parse_record(text: &[u8], options: &ReadJsonOptions, tape: &mut Tape) -> Result<Json, String> {
    if text.len() > options.object_size_max_bytes {
        return Err(format!(
            "a record of {} bytes is larger than maximum_object_size ({} bytes)",
            text.len(),
            options.object_size_max_bytes
        ));
    }
    let value = Json::parse(text, tape).map_err(|e| format!("malformed JSON: {e}"))?;
    match duplicate_key(&value) {
        Some(key) if !options.objects => Err(format!("object has duplicate key \"{key}\"")),
        _ => Ok(value),
    }
}

/// A key that a record object holds twice.
fn duplicate_key(value: &Json) -> Option<&str> {
    let Json::Object(members) = value else {
        return None;
    };
    let mut keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    keys.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

/// A struct of the structure whose names differ only in case (DuckDB's names are
/// case-insensitive, so such a struct cannot be made).
fn case_duplicate(structure: &Json) -> Option<String> {
    match structure {
        Json::Array(items) => items.iter().find_map(case_duplicate),
        Json::Object(members) => {
            let mut names: Vec<String> = members.iter().map(|(k, _)| k.to_lowercase()).collect();
            names.sort_unstable();
            let twice = names
                .windows(2)
                .find(|w| w[0] == w[1])
                .map(|w| w[0].clone());
            twice.or_else(|| members.iter().find_map(|(_, v)| case_duplicate(v)))
        }
        _ => None,
    }
}

fn format_name(format: Format) -> &'static str {
    match format {
        Format::Auto => "auto",
        Format::NewlineDelimited => "newline_delimited",
        Format::Array => "array",
        Format::Unstructured => "unstructured",
    }
}

/// The batch of all records: the columns the options ask for, then the file name, then
/// the hive partitions.
fn to_batch(
    state: &dyn Session,
    options: &ReadJsonOptions,
    records: &Collected,
    names: &[&str],
    rejects: &RejectLog,
) -> Result<RecordBatch> {
    let texts: ArrayRef = Arc::new(StringArray::from(records.texts.clone()));
    let (mut fields, mut columns): (Vec<Field>, Vec<ArrayRef>) = match options.objects {
        true => (vec![json_field("json")], vec![texts]),
        false => {
            let place = |row: usize| RowPlace {
                file: names[records.files[row]],
                line: records.places[row].0,
                offset: records.places[row].1,
            };
            let context = GeometryContext {
                ignore_errors: options.ignore_errors,
                rejects,
                place: &place,
            };
            typed_columns(state, options, records, texts, names, &context)?
        }
    };
    let shadowed =
        |column: &String| options.filename_virtual && fields.iter().any(|f| f.name() == column);
    if let Some(column) = options.filename.as_ref().filter(|c| !shadowed(c)) {
        let values: StringArray = records.files.iter().map(|&f| Some(names[f])).collect();
        let field = Field::new(column, DataType::Utf8, true);
        fields.push(match options.filename_virtual {
            true => field.with_metadata(super::virtual_marker()),
            false => field,
        });
        columns.push(Arc::new(values));
    }
    if options.hive_partitioning {
        let (hive_fields, hive_columns) =
            hive::columns(names, &records.files, &options.hive_types)?;
        fields.extend(hive_fields);
        columns.extend(hive_columns);
    }
    let schema = Arc::new(Schema::new(fields));
    Ok(RecordBatch::try_new_with_options(
        schema,
        columns,
        &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(records.texts.len())),
    )?)
}

/// The typed columns: one per key of the records, or one holding each whole record.
fn typed_columns(
    state: &dyn Session,
    options: &ReadJsonOptions,
    records: &Collected,
    texts: ArrayRef,
    names: &[&str],
    context: &GeometryContext<'_>,
) -> Result<(Vec<Field>, Vec<ArrayRef>)> {
    let (name, structure) = structure(options, &records.sample)?;
    let mut structure = match (&name, structure) {
        (None, Json::Object(members)) if !members.is_empty() => Json::Object(members),
        // Records read as a map (their keys are data): one column of maps, as in DuckDB.
        (None, map) if has_map(&map) => {
            return typed_single(state, "json", map, texts, context);
        }
        // Records that are all empty objects or all NULL: one JSON column.
        (None, _) => {
            let json = Json::String("JSON".into());
            return typed_single(state, "json", json, texts, context);
        }
        (_, other) => other,
    };
    if let Some(name) = name {
        return typed_single(state, &name, structure, texts, context);
    }
    let geometries = geometry::plan_columns(&mut structure, &records.sample, records.geojson);
    let array = transform(state, &structure, texts)?;
    let array = array
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| {
            DataFusionError::Internal("json_transform of an object gave no struct".into())
        })?;
    if !options.ignore_errors {
        check_converted(array, records, names)?;
    }
    let unique = unique_names(array.fields().iter().map(|f| f.name().as_str()));
    let mut fields: Vec<Field> = array
        .fields()
        .iter()
        .zip(unique)
        .map(|(f, name)| f.as_ref().clone().with_name(name))
        .collect();
    let mut columns = array.columns().to_vec();
    for index in geometries {
        let (field, column) =
            geometry::to_geometry(fields[index].name(), &columns[index], context)?;
        (fields[index], columns[index]) = (field, column);
    }
    Ok((fields, columns))
}

/// The structure records are converted to, and the one column's name when they are not
/// split into columns (`None`: the structure's keys are the columns).
fn structure(options: &ReadJsonOptions, sample: &[Json]) -> Result<(Option<String>, Json)> {
    let sample: Vec<&Json> = sample.iter().collect();
    let objects = !sample.is_empty()
        && sample
            .iter()
            .all(|v| matches!(v, Json::Object(_) | Json::Null));
    if options.records == Records::Yes && !objects {
        return plan_err!(
            "read_json: records=true needs every record to be a JSON object; use records=false for other values"
        );
    }
    // One declared column takes whole records that are not objects, as in DuckDB.
    let single_value = options.columns.as_ref().is_some_and(|c| c.len() == 1) && !objects;
    let must_be_objects = options.columns.is_some() && options.records == Records::Auto;
    if must_be_objects && !objects && !single_value && !sample.is_empty() && !options.ignore_errors
    {
        return plan_err!(
            "read_json: columns={{...}} needs every record to be a JSON object; use records=false for other values"
        );
    }
    let as_records = match options.records {
        Records::Auto => options.columns.as_ref().map_or(objects, |_| !single_value),
        Records::Yes => true,
        Records::No => false,
    };
    let inferred = || transform_type(&sample, &options.inference());
    let (name, structure) = match (&options.columns, as_records) {
        (Some(columns), true) => (None, declared(columns)),
        (Some(columns), false) => (Some(columns[0].0.clone()), declared_type(&columns[0].1)),
        (None, true) => (None, inferred()),
        // Nothing sampled (or only nulls): the records' JSON as it is.
        (None, false) => match inferred() {
            Json::String(t) if t == "NULL" => {
                (Some("json".to_string()), Json::String("JSON".into()))
            }
            other => (Some("json".to_string()), other),
        },
    };
    // Top-level names that differ only in case are renamed, as DuckDB does; nested
    // ones cannot be.
    let nested_duplicate = match (&name, &structure) {
        (None, Json::Object(members)) => members.iter().find_map(|(_, v)| case_duplicate(v)),
        _ => case_duplicate(&structure),
    };
    match nested_duplicate.filter(|_| !options.ignore_errors) {
        Some(twice) => plan_err!(
            "duplicate name \"{twice}\" (names differ only in case) in a struct inferred from JSON; give columns={{...}} instead"
        ),
        None => Ok((name, structure)),
    }
}

/// One column `name` of each whole record converted to `structure`.
fn typed_single(
    state: &dyn Session,
    name: &str,
    structure: Json,
    texts: ArrayRef,
    context: &GeometryContext<'_>,
) -> Result<(Vec<Field>, Vec<ArrayRef>)> {
    if geometry::is_geometry_type(&structure) {
        let column = transform(state, &Json::String("JSON".into()), texts)?;
        let (field, column) = geometry::to_geometry(name, &column, context)?;
        return Ok((vec![field], vec![column]));
    }
    let column = transform(state, &structure, texts)?;
    let field = match &structure {
        Json::String(t) if t.eq_ignore_ascii_case("JSON") => json_field(name),
        _ => Field::new(name, column.data_type().clone(), true),
    };
    Ok((vec![field], vec![column]))
}

/// Fails on a record whose value of a column is not NULL in JSON but did not convert to
/// the column's type (inferred from too few records, or declared): DuckDB's error, where
/// `json_transform` alone would give NULL silently.
fn check_converted(array: &StructArray, records: &Collected, names: &[&str]) -> Result<()> {
    let mut tape = Tape::default();
    for row in 0..array.len() {
        let Some(text) = &records.texts[row] else {
            continue;
        };
        let missing: Vec<usize> = (0..array.num_columns())
            .filter(|&c| {
                // A column inferred as NULL reads every value as NULL, as DuckDB's does;
                // a union (no validity of its own) is NULL where its member's value is.
                let column = array.column(c);
                column.data_type() != &DataType::Null
                    && column.logical_nulls().is_some_and(|n| n.is_null(row))
            })
            .collect();
        if missing.is_empty() {
            continue;
        }
        let Ok(value) = Json::parse(text.as_bytes(), &mut tape) else {
            continue;
        };
        if !matches!(value, Json::Object(_) | Json::Null) {
            let (line, offset) = records.places[row];
            return plan_err!(
                "{} line {line} (byte offset {offset}): expected a JSON object as the record \
                 (columns come from objects' keys); records=false reads any value",
                names[records.files[row]]
            );
        }
        for c in missing {
            let field = &array.fields()[c];
            if value.get(field.name()).is_some_and(|v| *v != Json::Null) {
                let (line, offset) = records.places[row];
                return plan_err!(
                    "{} line {line} (byte offset {offset}): the value of \"{}\" does not convert to {}; \
                     read more records for inference (sample_size=-1), give columns={{...}}, or \
                     ignore_errors=true to read NULL",
                    names[records.files[row]],
                    field.name(),
                    field.data_type()
                );
            }
        }
    }
    Ok(())
}

/// Column names made unique as DuckDB makes them (names are case-insensitive): a name
/// taken gets `_N` appended, N counting how often that name was taken, until free.
fn unique_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut taken: std::collections::HashMap<String, usize> = Default::default();
    names
        .map(|name| {
            let mut candidate = name.to_string();
            while let Some(count) = taken.get_mut(&candidate.to_lowercase()) {
                let n = *count;
                *count += 1;
                candidate = format!("{candidate}_{n}");
            }
            taken.insert(candidate.to_lowercase(), 1);
            candidate
        })
        .collect()
}

/// `columns={...}` as a structure.
fn declared(columns: &[(String, String)]) -> Json {
    Json::Object(
        columns
            .iter()
            .map(|(name, type_name)| (name.clone(), declared_type(type_name)))
            .collect(),
    )
}

/// A DuckDB type name as a structure: `T[]` is a list of `T`.
fn declared_type(type_name: &str) -> Json {
    match type_name.trim().strip_suffix("[]") {
        Some(item) => Json::Array(vec![declared_type(item)]),
        None => Json::String(type_name.trim().to_string()),
    }
}

/// `json_transform(texts, structure)`, by the session's registered function; an
/// inferred structure holding maps by `json_transform`'s conversion to its Arrow type.
fn transform(state: &dyn Session, structure: &Json, texts: ArrayRef) -> Result<ArrayRef> {
    if has_map(structure) {
        let field = structure_field("json", structure)?;
        return convert_json(&texts, &field, false)?.ok_or_else(|| {
            DataFusionError::Internal(format!("no conversion of JSON to {}", field.data_type()))
        });
    }
    let udf: &Arc<ScalarUDF> = state
        .scalar_functions()
        .get("json_transform")
        .ok_or_else(|| DataFusionError::Internal("json_transform is not registered".into()))?;
    let structure = ScalarValue::Utf8(Some(structure.to_text()));
    let arg_fields = vec![
        Arc::new(Field::new("json", DataType::Utf8, true)),
        Arc::new(Field::new("structure", DataType::Utf8, false)),
    ];
    let return_field = udf.return_field_from_args(ReturnFieldArgs {
        arg_fields: &arg_fields,
        scalar_arguments: &[None, Some(&structure)],
    })?;
    let rows = texts.len();
    let result = udf.invoke_with_args(ScalarFunctionArgs {
        args: vec![
            ColumnarValue::Array(texts),
            ColumnarValue::Scalar(structure),
        ],
        arg_fields,
        number_rows: rows,
        return_field,
        config_options: Arc::new(ConfigOptions::default()),
    })?;
    result.into_array(rows)
}
