//! read_json's record splitting (tessera-engine `datasource/read_json/records.rs`, included
//! as it is: it depends on std only) on arbitrary bytes: it never panics, its records are
//! in bounds, in order and apart, and where serde_json reads the bytes as a stream of
//! values, the unstructured split finds the same values.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/tessera-engine/src/datasource/read_json/records.rs"]
#[allow(dead_code)]
mod records;

use records::{Format, split};

/// Containers the oracle may nest (serde_json recurses once per level).
const NESTING_MAX: usize = 128;

fuzz_target!(|data: &[u8]| {
    let [choice, bytes @ ..] = data else {
        return;
    };
    let format = [
        Format::Auto,
        Format::NewlineDelimited,
        Format::Array,
        Format::Unstructured,
    ][usize::from(*choice % 4)];
    let records_max = usize::from(*choice / 4) + 1;
    let Ok((ranges, found)) = split(bytes, format, records_max) else {
        return;
    };
    assert_ne!(found, Format::Auto);
    assert!(ranges.len() <= records_max);
    let mut end = 0;
    for range in &ranges {
        assert!(range.start >= end && range.start < range.end && range.end <= bytes.len());
        end = range.end;
    }
    if found != Format::Unstructured || ranges.len() == records_max {
        return;
    }
    let nesting = bytes.iter().filter(|&&b| b == b'[' || b == b'{').count();
    if nesting > NESTING_MAX {
        return;
    }
    let stream = serde_json::Deserializer::from_slice(bytes).into_iter::<serde_json::Value>();
    let Ok(expected) = stream.collect::<Result<Vec<_>, _>>() else {
        return;
    };
    let got: Vec<serde_json::Value> = ranges
        .iter()
        .filter_map(|r| serde_json::from_slice(&bytes[r.clone()]).ok())
        .collect();
    assert_eq!(got, expected, "records {ranges:?}");
});
