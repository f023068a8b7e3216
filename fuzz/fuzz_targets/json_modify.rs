//! `json_merge_patch`, `json_set`/`insert`/`replace` and `json_remove` on arbitrary
//! bytes: never a panic, and whatever they write (minified or pretty) is valid JSON that
//! reads back as the value written.
//!
//! Input: one byte choosing the path, then the document, a newline, and the patch or
//! value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_json::modify::{Mode, Step, merge_patch, remove_path, set_path};
use tessera_json::tape::Tape;
use tessera_json::tree::Json;

/// Up to four steps chosen by the bits of `selector`, over keys and indexes the
/// generated documents are likely to have.
fn path(selector: u8) -> Vec<Step> {
    let len = usize::from(selector & 3);
    (0..len)
        .map(|i| match (selector >> (2 + i)) & 3 {
            0 => Step::Key(["a", "b", ""][i % 3].to_string()),
            1 => Step::Index(i as i64),
            2 => Step::Index(-1 - i as i64),
            _ => Step::Append,
        })
        .collect()
}

/// The text reads back as `value`, minified and pretty.
fn check(value: &Json, tape: &mut Tape) {
    let text = value.to_text();
    let mut parser = serde_json::Deserializer::from_str(&text);
    parser.disable_recursion_limit();
    let parsed: serde_json::Value =
        serde::Deserialize::deserialize(&mut parser).expect("written text is JSON");
    drop(parsed);
    if let Ok(back) = Json::parse(text.as_bytes(), tape) {
        assert_eq!(&back, value, "{text}");
        let mut pretty = String::new();
        value.write_pretty(&mut pretty, 0);
        assert_eq!(
            Json::parse(pretty.as_bytes(), tape).expect("pretty text is JSON"),
            back
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let split = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    let (doc, other) = (&rest[..split], rest.get(split + 1..).unwrap_or_default());
    let mut tape = Tape::default();
    let Ok(doc) = Json::parse(doc, &mut tape) else {
        return;
    };
    let Ok(other) = Json::parse(other, &mut tape) else {
        return;
    };
    let path = path(selector);
    check(&merge_patch(doc.clone(), other.clone()), &mut tape);
    for mode in [Mode::Set, Mode::Insert, Mode::Replace] {
        let mut changed = doc.clone();
        set_path(&mut changed, &path, &other, mode);
        check(&changed, &mut tape);
    }
    let mut removed = doc;
    remove_path(&mut removed, &path);
    check(&removed, &mut tape);
});
