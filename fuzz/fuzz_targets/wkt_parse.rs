//! tessera-geometry's WKT parser (and WKB reader) on arbitrary bytes: neither panics,
//! and a geometry that parses prints to text that parses to the same text and WKB that
//! reads back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_geometry::{wkb, wkt};

fuzz_target!(|data: &[u8]| {
    let _ = wkb::decode(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(shape) = wkt::parse(text) else {
        return;
    };
    let printed = wkt::format(&shape);
    let again = wkt::parse(&printed).unwrap_or_else(|e| panic!("{printed}: {e}"));
    assert_eq!(wkt::format(&again), printed);
    let bytes = wkb::encode(&shape);
    let back = wkb::decode(&bytes).unwrap_or_else(|e| panic!("{printed}: {e}"));
    assert_eq!(wkb::encode(&back).len(), bytes.len(), "{printed}");
});
