//! GeoJSON records as DuckDB 2.0.0's `read_json` reads them (with `geojson`, on by
//! default for GeoJSON input): the pieces a JSON reader calls, independent of how it
//! finds records and infers types.
//!
//! - [`records`]: a record that is a GeoJSON `FeatureCollection` becomes its features'
//!   rows, a `Feature` one row, a bare geometry one row; a feature's row is
//!   `geometry` first, then its pseudo-columns `id` and `bbox` (when present), then its
//!   properties, a property whose name is taken renamed with `_1` until it is free
//!   (`id` → `id_1`, and `id_1` then → `id_1_1`), as DuckDB names them.
//! - [`is_geometry_value`]: whether a nested value is a GeoJSON geometry (for
//!   `geojson=true` over ordinary records: a column whose every value is one is typed
//!   `GEOMETRY`; near misses such as `{"type":"Point"}` stay structs).
//! - [`geometry_column`]: a column's GeoJSON values as a `GEOMETRY` array; a value that
//!   is not a geometry is an error naming its row, or NULL with `ignore_errors` (counted
//!   in what it returns, for the reader's reject report).

use std::sync::Arc;

use arrow::array::{ArrayRef, BinaryBuilder};
use tessera_geometry::model::KINDS;
use tessera_geometry::{GeometryError, geojson, wkb};
use tessera_json::tree::Json;

/// The column a feature's geometry lands in.
pub const GEOMETRY_COLUMN: &str = "geometry";

/// Most renames one property may take before the reader gives up (a record cannot
/// hold more colliding names than members).
const RENAMES_MAX: usize = 1 << 16;

/// What one JSON record is when read as GeoJSON.
#[derive(Debug, PartialEq)]
pub enum GeoJsonRecord {
    /// GeoJSON: the rows it stands for, each an object with a `geometry` member.
    Rows(Vec<Json>),
    /// Not GeoJSON: the record as it was.
    Other(Json),
}

fn type_of(value: &Json) -> Option<&str> {
    match value.get("type") {
        Some(Json::String(name)) => Some(name),
        _ => None,
    }
}

/// Whether `value` is a GeoJSON geometry object: a geometry `type` with its
/// `coordinates` (or `geometries`) array.
pub fn is_geometry_value(value: &Json) -> bool {
    let Some(name) = type_of(value) else {
        return false;
    };
    let Some(kind) = KINDS.iter().find(|k| k.geojson_name() == name) else {
        return false;
    };
    let member = match kind.geojson_name() {
        "GeometryCollection" => "geometries",
        _ => "coordinates",
    };
    matches!(value.get(member), Some(Json::Array(_)))
}

/// The rows of one record read as GeoJSON (see the module documentation).
pub fn records(record: Json) -> GeoJsonRecord {
    match type_of(&record) {
        Some("FeatureCollection") => match record {
            Json::Object(members) => {
                let features = members.into_iter().find(|(k, _)| k == "features");
                let rows = match features {
                    Some((_, Json::Array(features))) => features.into_iter().map(feature_row),
                    _ => return GeoJsonRecord::Rows(Vec::new()),
                };
                GeoJsonRecord::Rows(rows.collect())
            }
            other => GeoJsonRecord::Other(other),
        },
        Some("Feature") => GeoJsonRecord::Rows(vec![feature_row(record)]),
        Some(_) if is_geometry_value(&record) => GeoJsonRecord::Rows(vec![Json::Object(vec![(
            GEOMETRY_COLUMN.to_string(),
            record,
        )])]),
        _ => GeoJsonRecord::Other(record),
    }
}

/// A feature's row: geometry, pseudo-columns, then properties renamed where taken.
fn feature_row(feature: Json) -> Json {
    let Json::Object(members) = feature else {
        return Json::Object(vec![(GEOMETRY_COLUMN.to_string(), Json::Null)]);
    };
    let mut geometry = Json::Null;
    let mut pseudo = Vec::new();
    let mut properties = Vec::new();
    for (key, value) in members {
        match key.as_str() {
            "geometry" => geometry = value,
            "id" | "bbox" => pseudo.push((key, value)),
            "properties" => {
                if let Json::Object(p) = value {
                    properties = p;
                }
            }
            _ => {}
        }
    }
    let mut row = vec![(GEOMETRY_COLUMN.to_string(), geometry)];
    row.extend(pseudo);
    for (mut key, value) in properties {
        for _ in 0..RENAMES_MAX {
            if !row.iter().any(|(k, _)| *k == key) {
                break;
            }
            key.push_str("_1");
        }
        row.push((key, value));
    }
    Json::Object(row)
}

/// A value that is not a geometry: its row and why.
pub type RowError = (usize, GeometryError);

/// A `GEOMETRY` column read from GeoJSON values, and the rows rejected into NULL.
#[derive(Debug)]
pub struct GeometryColumn {
    /// WKB values.
    pub array: ArrayRef,
    /// The rows `ignore_errors` made NULL, with their errors.
    pub rejected: Vec<RowError>,
}

/// A column of GeoJSON values (`None` and JSON `null` are NULL) as a `GEOMETRY` array
/// (WKB; the field marker is the caller's, `json::geometry_type::geometry_field`).
/// A value that is not a geometry is an error with its row, or, with `ignore_errors`,
/// NULL, its row and error returned for the reader's reject report.
pub fn geometry_column<'a>(
    values: impl IntoIterator<Item = Option<&'a Json>>,
    ignore_errors: bool,
) -> Result<GeometryColumn, RowError> {
    let mut out = BinaryBuilder::new();
    let mut rejected = Vec::new();
    for (row, value) in values.into_iter().enumerate() {
        let value = match value {
            None | Some(Json::Null) => {
                out.append_null();
                continue;
            }
            Some(value) => value,
        };
        match geojson::parse(&value.to_text()) {
            Ok(shape) => out.append_value(wkb::encode(&shape)),
            Err(e) if ignore_errors => {
                rejected.push((row, e));
                out.append_null();
            }
            Err(e) => return Err((row, e)),
        }
    }
    Ok(GeometryColumn {
        array: Arc::new(out.finish()),
        rejected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_json::tape::Tape;

    fn json(text: &str) -> Json {
        Json::parse(text.as_bytes(), &mut Tape::default()).expect("test JSON")
    }

    fn keys(row: &Json) -> Vec<&str> {
        match row {
            Json::Object(members) => members.iter().map(|(k, _)| k.as_str()).collect(),
            _ => Vec::new(),
        }
    }

    /// DuckDB 2.0.0's columns for test/data/duckdb_json/json/geojson/pseudo_columns_nasty.geojsonl.
    #[test]
    fn colliding_properties_are_renamed_as_duckdb_names_them() {
        let feature = json(
            r#"{"type":"Feature","id":"FEATURE","bbox":[0.0,0.0,1.0,1.0],"geometry":{"type":"Point","coordinates":[1.0,2.0]},"properties":{"id":"P-collides","id_1":"P-collides-again","name":"P-plain","geometry":"P-geom"}}"#,
        );
        let GeoJsonRecord::Rows(rows) = records(feature) else {
            panic!("a feature is GeoJSON");
        };
        assert_eq!(
            keys(&rows[0]),
            [
                "geometry",
                "id",
                "bbox",
                "id_1",
                "id_1_1",
                "name",
                "geometry_1"
            ]
        );
    }

    #[test]
    fn collections_bare_geometries_and_other_records() {
        let collection = json(
            r#"{"type":"FeatureCollection","features":[{"type":"Feature","geometry":null,"properties":{"a":1}},{"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"a":2}}]}"#,
        );
        let GeoJsonRecord::Rows(rows) = records(collection) else {
            panic!("a feature collection is GeoJSON");
        };
        assert_eq!(rows.len(), 2);
        assert_eq!(keys(&rows[1]), ["geometry", "a"]);
        let bare = json(r#"{"type":"Point","coordinates":[1,2]}"#);
        assert!(matches!(records(bare), GeoJsonRecord::Rows(r) if keys(&r[0]) == ["geometry"]));
        let near_miss = json(r#"{"type":"Point"}"#);
        assert!(matches!(records(near_miss), GeoJsonRecord::Other(_)));
    }

    /// read_geojson_errors: the malformed geometry is an error naming its row, or NULL.
    #[test]
    fn malformed_geometries_fail_or_are_counted() {
        let values = [
            json(r#"{"type":"Point","coordinates":[1.0,2.0]}"#),
            json(r#"{"type":"Point","coordinates":["x","y"]}"#),
            Json::Null,
        ];
        let (row, error) = geometry_column(values.iter().map(Some), false).expect_err("row 1");
        assert_eq!(row, 1);
        assert!(
            error.to_string().contains("must contain only numbers"),
            "{error}"
        );
        let column = geometry_column(values.iter().map(Some), true).expect("skips");
        let array = &column.array;
        assert_eq!(
            (array.len(), array.null_count(), column.rejected.len()),
            (3, 2, 1)
        );
    }
}
