//! Documents nested as deep as `tessera_json::MAX_NESTING` allows, with a path as deep
//! as `keypaths::MAX_SHREDDED_DEPTH` allows shredded, go through ingest (mining,
//! shredding, Variant encoding, Parquet) and come back on a default thread's 2 MiB
//! stack, in a debug build: every recursion per nesting level stays in bounds.

use tessera_json::MAX_NESTING;
use tessera_tiles::keypaths::MAX_SHREDDED_DEPTH;
use tessera_tiles::{TilesOptions, write_file};

mod common;
use common::read_back;

/// `depth` nested objects `{"a":{"a":...1}}`.
fn chain(depth: usize) -> String {
    "{\"a\":".repeat(depth) + "1" + &"}".repeat(depth)
}

/// Documents at the nesting limit: a shredded path as deep as allowed next to a chain
/// of objects down to the limit, nested arrays, and alternating arrays and objects.
fn deepest_documents() -> Vec<String> {
    // Keys in sorted order, the order a Variant object is read back in.
    let objects = format!(
        "{{\"d\":{},\"s\":{}}}",
        chain(MAX_NESTING - 1),
        chain(MAX_SHREDDED_DEPTH - 1)
    );
    let arrays = "[".repeat(MAX_NESTING) + &"]".repeat(MAX_NESTING);
    let mixed = "[{\"a\":".repeat(MAX_NESTING / 2) + "1" + &"}]".repeat(MAX_NESTING / 2);
    let mut docs = vec![objects; 6];
    docs.extend([arrays, mixed]);
    docs
}

fn round_trip(docs: &[String]) -> (Vec<String>, usize) {
    let raw: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    let written = write_file(&raw, &TilesOptions::default()).unwrap();
    let back = read_back(written.parquet.clone())
        .into_iter()
        .map(|text| text.replace(' ', ""))
        .collect();
    (back, written.summary.schema.paths.len())
}

#[test]
fn documents_at_the_nesting_limit_round_trip_on_a_default_stack() {
    let docs = deepest_documents();
    let (mut back, shredded) = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || round_trip(&docs))
        .unwrap()
        .join()
        .unwrap();
    back.sort();
    let mut expected = deepest_documents();
    expected.sort();
    assert_eq!(back, expected);
    assert_eq!(shredded, 1, "the deepest shreddable path is shredded");
}
