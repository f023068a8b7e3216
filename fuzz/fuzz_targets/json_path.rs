//! JSONPath parsing never panics, and a parsed path displays as text that parses back
//! to the same path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_json::parse_json_path;
use tessera_json::path::display_path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(path) = parse_json_path(text) else {
        return;
    };
    let shown = display_path(&path);
    let again = parse_json_path(&shown)
        .unwrap_or_else(|e| panic!("{text:?} displays as {shown:?}, which fails: {e}"));
    assert_eq!(again, path, "{text:?} displays as {shown:?}");
});
