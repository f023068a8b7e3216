//! Path parsing never panics, and a parsed path displays as text that parses back to
//! the same path: the single-step JSONPath scans locate (`parse_json_path`) and every
//! form DuckDB's functions read (`parse_path`: wildcards, `..`, JSON Pointer, bare
//! keys). A parsed path is also applied to a fixed document, which must not panic.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use tessera_json::path::{display_path, parse_path};
use tessera_json::select::select;
use tessera_json::{PathTrie, Scanner, parse_json_path};

const DOC: &str = r#"{"a":{"b":[1,{"c":[2,3]}],"a":{"a":[]}},"d":[[0],{"":1,"/":2,"~":3}]}"#;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(path) = parse_json_path(text) {
        let shown = display_path(&path);
        let again = parse_json_path(&shown)
            .unwrap_or_else(|e| panic!("{text:?} displays as {shown:?}, which fails: {e}"));
        assert_eq!(again, path, "{text:?} displays as {shown:?}");
    }
    let Ok(path) = parse_path(text) else {
        return;
    };
    let shown = path.to_string();
    let again =
        parse_path(&shown).unwrap_or_else(|e| panic!("{text:?} shows as {shown:?}: {e}"));
    assert_eq!(again, path, "{text:?} shows as {shown:?}");
    let mut scanner = Scanner::new(Arc::new(PathTrie::single(&[])));
    scanner.scan(DOC.as_bytes()).expect("a valid document");
    let root = scanner.get(0).expect("the root");
    let mut out = Vec::new();
    let _ = select(DOC.as_bytes(), root, &path.steps, &mut out);
});
