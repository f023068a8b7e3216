//! `GEOMETRY` in `from_json`/`json_transform` structures, against `ST_GeomFromGeoJSON`
//! and `ST_GeomFromText` over generated geometries.

use arrow::array::{Array, AsArray};

use crate::TesseraSession;
use crate::test_support::duckdb_session;

async fn texts(session: &TesseraSession, sql: &str) -> Result<Vec<Option<String>>, String> {
    let frame = session.sql(sql).await.map_err(|e| e.to_string())?;
    let batches = frame.collect().await.map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for batch in batches {
        for column in batch.columns() {
            let column = arrow::compute::cast(column, &arrow::datatypes::DataType::Utf8)
                .map_err(|e| e.to_string())?;
            let column = column.as_string::<i32>();
            out.extend(
                (0..column.len()).map(|i| column.is_valid(i).then(|| column.value(i).into())),
            );
        }
    }
    Ok(out)
}

/// GeoJSON points, lines and polygons with coordinates from a fixed sequence.
fn generated_geojson() -> Vec<String> {
    let mut n = 7_u64;
    let mut next = || {
        n = n
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (n >> 40) as i64 % 200 - 100
    };
    let mut out = Vec::new();
    for _ in 0..12 {
        let (x, y) = (next(), next());
        out.push(format!(r#"{{"type":"Point","coordinates":[{x},{y}]}}"#));
        let (a, b) = (next(), next());
        out.push(format!(
            r#"{{"type":"LineString","coordinates":[[{x},{y}],[{a},{b}]]}}"#
        ));
        out.push(format!(
            r#"{{"type":"Polygon","coordinates":[[[{x},{y}],[{a},{y}],[{a},{b}],[{x},{y}]]]}}"#
        ));
    }
    out
}

#[tokio::test]
async fn structures_read_geometries_as_st_geomfromgeojson_does() {
    let session = duckdb_session();
    for geometry in generated_geojson() {
        let expected = texts(
            &session,
            &format!("SELECT ST_AsText(ST_GeomFromGeoJSON('{geometry}'))"),
        )
        .await
        .unwrap();
        let document = format!(r#"{{"g":{geometry},"l":[{geometry},null]}}"#);
        let structure = r#"{"g":"GEOMETRY","l":["GEOMETRY"]}"#;
        let seen = texts(
            &session,
            &format!(
                "SELECT ST_AsText(s.g), ST_AsText(s.l[1]), s.l[2] IS NULL FROM \
                 (SELECT from_json('{document}', '{structure}') AS s)"
            ),
        )
        .await
        .unwrap();
        let wkt = expected[0].clone();
        assert_eq!(seen, [wkt.clone(), wkt, Some("true".into())], "{geometry}");
    }
}

#[tokio::test]
async fn wkt_strings_read_and_other_values_are_null_or_strict_errors() {
    let session = duckdb_session();
    let wkt = texts(
        &session,
        r#"SELECT ST_AsText(from_json('{"g":"POINT(1 2)"}', '{"g":"GEOMETRY"}').g)"#,
    )
    .await
    .unwrap();
    assert_eq!(wkt, [Some("POINT (1 2)".to_string())]);
    for bad in [
        "5",
        r#"{"type":"Point","coordinates":["a","b"]}"#,
        r#""no shape""#,
    ] {
        let document = format!(r#"{{"g":{bad}}}"#);
        let lenient = texts(
            &session,
            &format!(r#"SELECT from_json('{document}', '{{"g":"GEOMETRY"}}').g IS NULL"#),
        )
        .await
        .unwrap();
        assert_eq!(lenient, [Some("true".to_string())], "{bad}");
        let strict = texts(
            &session,
            &format!(r#"SELECT from_json_strict('{document}', '{{"g":"GEOMETRY"}}')"#),
        )
        .await
        .unwrap_err();
        assert!(strict.contains("GEOMETRY"), "{bad}: {strict}");
    }
}
