//! The table manifest decoder on arbitrary bytes: it never panics, a manifest it
//! accepts encodes and decodes back equal, and the accessors readers call on an
//! accepted manifest (live rows, deleted rows, row selections) do not panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_table::manifest::{decode, encode};

fuzz_target!(|data: &[u8]| {
    // The version the manifest claims is the one a reader asks for, so that decoding
    // gets past the version check as often as the JSON allows.
    let version = serde_json::from_slice::<serde_json::Value>(data)
        .ok()
        .and_then(|v| v.get("version").and_then(serde_json::Value::as_u64))
        .unwrap_or(0);
    let Ok(manifest) = decode(data, version) else {
        return;
    };
    let encoded = encode(&manifest).expect("an accepted manifest encodes");
    let again = decode(&encoded, version).expect("an encoded manifest decodes");
    assert_eq!(again, manifest, "decode(encode(m)) == m");
    for file in &manifest.files {
        let rows = file.summary.rows;
        assert!(file.live_rows() <= rows);
        let selected: u64 = file.deleted.selection(rows).iter().map(|(_, n)| n).sum();
        assert_eq!(selected, rows);
        let _ = file.is_deleted(rows.saturating_sub(1));
    }
});
