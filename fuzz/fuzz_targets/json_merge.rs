//! `json_deep_merge`, `json_merge_patch_diff`, `json_normalize` and `json_strip_nulls`
//! kernels on arbitrary bytes: never a panic, whatever they write reads back as the
//! value written, and the round trips hold: merging the diff from `old` into `old` gives
//! `new` (where RFC 7396 can say it: no duplicate keys, no `null` members in `new`), a
//! value equals itself and (without duplicate keys) has an empty diff to itself, and
//! sorting keys or stripping nulls twice changes nothing the second time. JSON Pointer
//! tokens (`json_set(j, '/a/0', v)`) set and remove without a panic, too.
//!
//! Input: the first document, a newline, the second.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_json::merge::{deep_merge, equal, merge_patch_diff};
use tessera_json::modify::{Mode, Step, merge_patch, remove_path, set_path};
use tessera_json::normalize::{sort_keys, strip_nulls};
use tessera_json::tape::Tape;
use tessera_json::tree::Json;

/// The text reads back as `value`.
fn check(value: &Json, tape: &mut Tape) {
    let text = value.to_text();
    if let Ok(back) = Json::parse(text.as_bytes(), tape) {
        assert_eq!(&back, value, "{text}");
    }
}

/// Whether any object of `value` has a key twice.
fn has_duplicates(value: &Json) -> bool {
    match value {
        Json::Object(members) => {
            let mut keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
            keys.sort_unstable();
            keys.windows(2).any(|w| w[0] == w[1]) || members.iter().any(|(_, v)| has_duplicates(v))
        }
        Json::Array(items) => items.iter().any(has_duplicates),
        _ => false,
    }
}

/// Up to three JSON Pointer tokens chosen by the bits of `selector`: indexes, the
/// append token, keys and a non-canonical index.
fn tokens(selector: usize) -> Vec<Step> {
    const TOKENS: [&str; 6] = ["0", "1", "-", "a", "01", ""];
    (0..selector % 4)
        .map(|i| Step::Token(TOKENS[(selector >> (2 + 3 * i)) % TOKENS.len()].to_string()))
        .collect()
}

fn sorted(mut value: Json) -> Json {
    sort_keys(&mut value);
    value
}

fn stripped(mut value: Json) -> Json {
    strip_nulls(&mut value);
    value
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let (first, second) = (&data[..split], data.get(split + 1..).unwrap_or_default());
    let mut tape = Tape::default();
    let (Ok(old), Ok(new)) = (
        Json::parse(first, &mut tape),
        Json::parse(second, &mut tape),
    ) else {
        return;
    };
    check(&deep_merge(old.clone(), new.clone()), &mut tape);
    assert_eq!(deep_merge(old.clone(), Json::Null), old);
    let diff = merge_patch_diff(&old, &new);
    check(&diff, &mut tape);
    assert!(equal(&old, &old) && equal(&new, &new));
    // With duplicate keys a member is compared with the first of its name, which may
    // differ from itself (DuckDB's answer), so the diff to itself is empty only without.
    if matches!(old, Json::Object(_)) && !has_duplicates(&old) {
        assert_eq!(merge_patch_diff(&old, &old), Json::Object(Vec::new()));
    }
    let expressible =
        !has_duplicates(&old) && !has_duplicates(&new) && stripped(new.clone()) == new;
    if expressible && matches!((&old, &new), (Json::Object(_), Json::Object(_))) {
        let patched = sorted(merge_patch(old.clone(), diff));
        assert!(
            equal(&patched, &sorted(new.clone())),
            "{}",
            patched.to_text()
        );
    }
    let path = tokens(data.len());
    for mode in [Mode::Set, Mode::Insert, Mode::Replace] {
        let mut changed = old.clone();
        set_path(&mut changed, &path, &new, mode);
        check(&changed, &mut tape);
    }
    let mut removed = old.clone();
    remove_path(&mut removed, &path);
    check(&removed, &mut tape);
    for value in [old, new] {
        let once = sorted(value.clone());
        check(&once, &mut tape);
        assert_eq!(sorted(once.clone()), once);
        let once = stripped(value);
        check(&once, &mut tape);
        assert_eq!(stripped(once.clone()), once);
    }
});
