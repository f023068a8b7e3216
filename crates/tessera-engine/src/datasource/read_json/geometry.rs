//! `GEOMETRY` columns of `read_json`: columns declared `GEOMETRY`, and, when records are
//! read as GeoJSON, columns whose sampled values are all GeoJSON geometries (a feature's
//! `geometry`, or a geometry nested in ordinary records with `geojson=true`). Such a
//! column is converted as JSON text first, then each value is read as GeoJSON into WKB
//! by `read_geojson::geometry_column`, so a malformed geometry is reported with its row.

use arrow::array::{Array, ArrayRef, StringArray};
use arrow::datatypes::{DataType, Field};
use datafusion::common::{DataFusionError, Result, plan_err};
use tessera_json::tape::Tape;
use tessera_json::tree::Json;

use crate::datasource::read_geojson::{geometry_column, is_geometry_value};
use crate::json::geometry_type::geometry_field;
use crate::rejects::{Reject, RejectLog};

/// The type name that makes a declared column `GEOMETRY`.
const GEOMETRY_TYPE: &str = "GEOMETRY";
/// The type such a column is converted to before it is read as GeoJSON.
const JSON_TYPE: &str = "JSON";

/// Whether a structure (a declared or inferred type) says `GEOMETRY`.
pub fn is_geometry_type(structure: &Json) -> bool {
    matches!(structure, Json::String(t) if t.eq_ignore_ascii_case(GEOMETRY_TYPE))
}

/// The columns of `structure` (an object of column types) that are `GEOMETRY`: declared
/// so, or (with `geojson`) holding only GeoJSON geometries in `sample` (at least one;
/// NULL and missing values aside). Their types in `structure` become `JSON`, for
/// [`to_geometry`] to read after conversion.
pub fn plan_columns(structure: &mut Json, sample: &[Json], geojson: bool) -> Vec<usize> {
    let Json::Object(members) = structure else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (index, (name, column_type)) in members.iter_mut().enumerate() {
        if is_geometry_type(column_type) || (geojson && all_geometries(sample, name)) {
            *column_type = Json::String(JSON_TYPE.into());
            out.push(index);
        }
    }
    out
}

/// Whether the sampled records' values of `name` are all geometries or NULL, one at least.
fn all_geometries(sample: &[Json], name: &str) -> bool {
    let mut values = sample
        .iter()
        .filter_map(|record| record.get(name))
        .filter(|v| **v != Json::Null)
        .peekable();
    values.peek().is_some() && values.all(is_geometry_value)
}

/// Where a row came from, for errors and the reject log.
pub struct RowPlace<'a> {
    /// The row's file name.
    pub file: &'a str,
    /// 1-based line in the file.
    pub line: usize,
    /// Byte offset of the record in the file.
    pub offset: usize,
}

/// What [`to_geometry`] needs besides the column.
pub struct GeometryContext<'a> {
    /// Malformed geometries become NULL (counted in `rejects`) instead of an error.
    pub ignore_errors: bool,
    /// The session's reject log.
    pub rejects: &'a RejectLog,
    /// Where row `i` came from.
    pub place: &'a dyn Fn(usize) -> RowPlace<'a>,
}

/// A column converted as JSON text, read as GeoJSON into a `GEOMETRY` column named
/// `name`: a value that is not a geometry fails naming its file, line and offset, or
/// with `ignore_errors` is NULL and goes to the reject log.
pub fn to_geometry(
    name: &str,
    column: &ArrayRef,
    context: &GeometryContext<'_>,
) -> Result<(Field, ArrayRef)> {
    let text = arrow::compute::cast(column, &DataType::Utf8)?;
    let text = text
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| DataFusionError::Internal("cast to Utf8 gave no strings".into()))?;
    let mut tape = Tape::default();
    let values: Vec<Option<Json>> = text
        .iter()
        .map(|value| value.and_then(|t| Json::parse(t.as_bytes(), &mut tape).ok()))
        .collect();
    let reason = |e: &dyn std::fmt::Display| format!("\"{name}\" is not GeoJSON: {e}");
    let column = match geometry_column(values.iter().map(Option::as_ref), context.ignore_errors) {
        Ok(column) => column,
        Err((row, e)) => {
            let place = (context.place)(row);
            return plan_err!(
                "{} line {} (byte offset {}): {}; ignore_errors=true reads NULL",
                place.file,
                place.line,
                place.offset,
                reason(&e)
            );
        }
    };
    for (row, e) in &column.rejected {
        let place = (context.place)(*row);
        let value = text.value(*row);
        let reject = Reject {
            file: place.file.to_string(),
            line: place.line as u64,
            offset: place.offset as u64,
            reason: reason(e),
        };
        context.rejects.record(reject, value.as_bytes());
    }
    Ok((geometry_field(name), column.array))
}
