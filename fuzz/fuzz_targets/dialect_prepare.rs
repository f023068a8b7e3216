//! DuckDB's text rewritten before parsing (`IN [...]` lists, `(FROM t)` subqueries) over
//! any UTF-8 text: never panics, changes only brackets after IN into parentheses and
//! puts `SELECT * ` before a FROM, and is idempotent (its output needs no more changes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sqlparser::dialect::DuckDbDialect;

#[path = "../../crates/tessera-engine/src/dialect/prepare.rs"]
mod prepare;

const INSERTED: &str = "SELECT * ";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let out = prepare::duckdb_text(text, &DuckDbDialect {});
    let (mut i, mut j) = (0, 0);
    let (a, b) = (text.as_bytes(), out.as_bytes());
    while i < a.len() {
        let from_next = a.len() - i >= 4 && a[i..i + 4].eq_ignore_ascii_case(b"FROM");
        if from_next && b[j..].starts_with(INSERTED.as_bytes()) {
            j += INSERTED.len();
            continue;
        }
        assert!(j < b.len(), "{text:?} became the shorter {out:?}");
        let same = a[i] == b[j] || matches!((a[i], b[j]), (b'[', b'(') | (b']', b')'));
        assert!(same, "{text:?} became {out:?} (at byte {i})");
        i += 1;
        j += 1;
    }
    assert_eq!(j, b.len(), "{text:?} became {out:?}");
    let again = prepare::duckdb_text(&out, &DuckDbDialect {});
    assert_eq!(again, out, "{text:?}");
});
