//! tessera-geometry's GeoJSON reader on arbitrary bytes: it never panics, and a geometry
//! it reads prints to GeoJSON that reads back to the same GeoJSON (finite coordinates).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_geometry::geojson;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = geojson::parse_document(text);
    let Ok(shape) = geojson::parse(text) else {
        return;
    };
    let printed = geojson::format(&shape);
    // DuckDB writes infinite and NaN coordinates as `Infinity` and `NaN`, which no
    // JSON reader (DuckDB's included) reads back.
    if printed.contains("Infinity") || printed.contains("NaN") {
        return;
    }
    let again = geojson::parse(&printed).unwrap_or_else(|e| panic!("{printed}: {e}"));
    assert_eq!(geojson::format(&again), printed);
});
