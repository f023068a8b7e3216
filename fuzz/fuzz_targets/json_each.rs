//! The walk behind `json_each`/`json_tree` over any document the tape accepts: every row's
//! value is JSON that reads back to itself (written once more it is the same text, so
//! numbers and strings round-trip), ids grow in pre-order, a parent comes before its
//! children, every full key extends its path, and `json_each` gives one row per member
//! or element (one for a scalar).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_json::tape::{Kind, Tape};

#[path = "../../crates/tessera-engine/src/functions/json_each/walk.rs"]
mod walk;
use walk::{Walk, Walker, write_json};

/// `text` parsed and written back, if it is JSON.
fn rewritten(text: &str) -> Option<String> {
    let mut tape = Tape::default();
    let parsed = tape.push(text.as_bytes()).ok()?;
    let mut out = String::new();
    write_json(tape.doc(0, parsed).root(), &mut out);
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let mut tape = Tape::default();
    let Ok(text) = tape.push(data) else {
        return;
    };
    let root = tape.doc(0, text).root();
    let expected_each = match root.node().kind() {
        Kind::Object | Kind::Array => root.node().container_len(),
        _ => 1,
    };
    let mut walker = Walker::default();
    let mut last_id = None;
    let tree_rows = walker
        .walk(data, &[], "$", Walk::Tree, &mut |row| {
            assert_eq!(rewritten(row.value).as_deref(), Some(row.value), "{row:?}");
            assert!(last_id.is_none_or(|last| row.id > last), "{row:?}");
            assert!(row.parent.is_none_or(|p| p < row.id), "{row:?}");
            assert!(row.fullkey.starts_with(row.path), "{row:?}");
            assert_eq!(row.atom, !matches!(row.type_name, "OBJECT" | "ARRAY" | "NULL"));
            last_id = Some(row.id);
        })
        .expect("the tape accepted it once");
    assert!(tree_rows >= 1);
    let each_rows = walker
        .walk(data, &[], "$", Walk::Each, &mut |row| {
            assert!(row.parent.is_none());
            assert!(row.fullkey.starts_with("$"));
        })
        .expect("the tape accepted it once");
    assert_eq!(each_rows, expected_each);
});
