//! Checks that the generated data is deterministic, parallel-safe, valid JSON, shaped like
//! Jetstream events, and distributed like the JSONBench Bluesky data set.

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use serde_json::{Map, Value};
use tessera_gen::{BlueskyConfig, KeyOrder, write_doc, write_ndjson};

const SAMPLE: BlueskyConfig = BlueskyConfig::new(50_000, 42);

fn generate(cfg: &BlueskyConfig, threads: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let written = write_ndjson(cfg, threads, &mut out).unwrap();
    assert_eq!(written, out.len() as u64);
    out
}

/// The shared 50k-document sample, generated and parsed once for all tests.
fn sample() -> &'static (Vec<u8>, Vec<Value>) {
    static SAMPLE_DOCS: OnceLock<(Vec<u8>, Vec<Value>)> = OnceLock::new();
    SAMPLE_DOCS.get_or_init(|| {
        let bytes = generate(&SAMPLE, 2);
        let docs = bytes
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| {
                serde_json::from_slice(line).unwrap_or_else(|e| {
                    panic!("invalid JSON ({e}): {}", String::from_utf8_lossy(line))
                })
            })
            .collect();
        (bytes, docs)
    })
}

fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .strip_suffix(b"\n")
        .unwrap_or(bytes)
        .split(|&b| b == b'\n')
}

#[test]
fn same_seed_same_bytes_different_seed_different_bytes() {
    let cfg = BlueskyConfig::new(5_000, 7);
    let a = generate(&cfg, 1);
    assert_eq!(a, generate(&cfg, 1));
    let b = generate(&BlueskyConfig { seed: 8, ..cfg }, 1);
    assert_ne!(a, b);
    let same_lines = lines(&a).zip(lines(&b)).filter(|(x, y)| x == y).count();
    assert_eq!(
        same_lines, 0,
        "a different seed should change every document"
    );
}

#[test]
fn output_is_identical_for_any_thread_count() {
    // Not a multiple of the batch size, so the last batch is partial.
    let cfg = BlueskyConfig::new(40_000, 3);
    let one = generate(&cfg, 1);
    assert_eq!(one, generate(&cfg, 3));
    assert_eq!(one, generate(&cfg, 2));
    assert_eq!(lines(&one).count(), 40_000);
    assert!(one.ends_with(b"\n"));
}

#[test]
fn any_document_can_be_generated_alone() {
    let (bytes, _) = sample();
    let all: Vec<&[u8]> = lines(bytes).collect();
    for index in [0, 1, 16_383, 16_384, 31_337, 49_999] {
        let mut doc = Vec::new();
        write_doc(&SAMPLE, index, &mut doc);
        assert_eq!(doc, all[index as usize], "document {index}");
    }
}

#[test]
fn empty_data_set_writes_nothing() {
    assert!(generate(&BlueskyConfig::new(0, 1), 4).is_empty());
}

#[test]
fn time_is_strictly_increasing() {
    let (_, docs) = sample();
    let times: Vec<u64> = docs
        .iter()
        .map(|d| d["time_us"].as_u64().unwrap())
        .collect();
    assert_eq!(times[0] / 1_000_000, 1_732_204_800);
    assert!(times.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn a_million_documents_span_a_day() {
    let cfg = BlueskyConfig::new(1_000_000, 1);
    let time = |index| {
        let mut doc = Vec::new();
        write_doc(&cfg, index, &mut doc);
        serde_json::from_slice::<Value>(&doc).unwrap()["time_us"]
            .as_u64()
            .unwrap()
    };
    let span_hours = (time(999_999) - time(0)) as f64 / 3.6e9;
    assert!((23.9..24.1).contains(&span_hours), "{span_hours} h");
    let hours: BTreeSet<u64> = (0..1_000)
        .map(|i| time(i * 1_000) / 3_600_000_000 % 24)
        .collect();
    assert_eq!(hours.len(), 24);
}

#[test]
fn fields_come_in_jetstream_order() {
    let (bytes, _) = sample();
    for line in lines(bytes) {
        let line = std::str::from_utf8(line).unwrap();
        assert!(line.starts_with("{\"did\":\"did:plc:"), "{line}");
        assert_eq!(&line[40..52], "\",\"time_us\":", "{line}");
        let kind = line.find(",\"kind\":\"").expect("kind");
        assert_eq!(kind, 52 + 16, "{line}");
        if line[kind..].starts_with(",\"kind\":\"commit\"") {
            let at = |key: &str| line.find(key).unwrap_or_else(|| panic!("{key} in {line}"));
            let order = [
                at("\"commit\":{\"rev\":\""),
                at("\",\"operation\":\""),
                at("\",\"collection\":\""),
                at("\",\"rkey\":\""),
            ];
            assert!(order.windows(2).all(|w| w[0] < w[1]), "{line}");
            if let Some(record) = line.find(",\"record\":{\"$type\":\"") {
                assert!(order[3] < record);
                assert!(line[record..].contains("\",\"createdAt\":\""));
                assert!(line.ends_with("\"}}"), "{line}");
                assert!(line.rfind(",\"cid\":\"bafyrei").unwrap() > record);
            }
        }
    }
}

#[test]
fn every_document_has_the_expected_structure() {
    let (_, docs) = sample();
    for doc in docs {
        check_doc(doc).unwrap_or_else(|e| panic!("{e}: {doc}"));
    }
}

#[test]
fn kinds_operations_and_collections_are_mixed_like_jetstream() {
    let (_, docs) = sample();
    let n = docs.len() as f64;
    let mut kinds: HashMap<&str, f64> = HashMap::new();
    let mut operations: HashMap<&str, f64> = HashMap::new();
    let mut collections: HashMap<&str, f64> = HashMap::new();
    for doc in docs {
        *kinds.entry(doc["kind"].as_str().unwrap()).or_default() += 1.0 / n;
        if let Some(commit) = doc.get("commit") {
            *operations
                .entry(commit["operation"].as_str().unwrap())
                .or_default() += 1.0;
            *collections
                .entry(commit["collection"].as_str().unwrap())
                .or_default() += 1.0;
        }
    }
    let commits = kinds["commit"] * n;
    operations.values_mut().for_each(|v| *v /= commits);
    collections.values_mut().for_each(|v| *v /= commits);
    let within = |what: &str, share: f64, lo: f64, hi: f64| {
        assert!(
            (lo..=hi).contains(&share),
            "{what}: {share:.4} not in {lo}..={hi}"
        );
    };
    within("commit", kinds["commit"], 0.985, 0.995);
    within("identity", kinds["identity"], 0.004, 0.008);
    within("account", kinds["account"], 0.002, 0.006);
    within("create", operations["create"], 0.88, 0.94);
    within("update", operations["update"], 0.005, 0.04);
    within("delete", operations["delete"], 0.05, 0.09);
    within("like", collections["app.bsky.feed.like"], 0.43, 0.47);
    within("follow", collections["app.bsky.graph.follow"], 0.34, 0.38);
    within("post", collections["app.bsky.feed.post"], 0.08, 0.10);
    within("repost", collections["app.bsky.feed.repost"], 0.05, 0.07);
    let mut ranked: Vec<(&str, f64)> = collections.iter().map(|(&c, &s)| (c, s)).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    let top: Vec<&str> = ranked.iter().take(4).map(|(c, _)| *c).collect();
    assert_eq!(
        top,
        [
            "app.bsky.feed.like",
            "app.bsky.graph.follow",
            "app.bsky.feed.post",
            "app.bsky.feed.repost"
        ]
    );
    // The long tail is present too.
    assert!(collections.len() >= 15, "{} collections", collections.len());
}

#[test]
fn users_are_skewed() {
    let (_, docs) = sample();
    let mut per_user: HashMap<&str, u64> = HashMap::new();
    for doc in docs {
        *per_user.entry(doc["did"].as_str().unwrap()).or_default() += 1;
    }
    let top = *per_user.values().max().unwrap() as f64 / docs.len() as f64;
    let once = per_user.values().filter(|&&c| c == 1).count() as f64 / per_user.len() as f64;
    // A few users are very active, without any one of them dominating ...
    assert!(
        (0.005..0.05).contains(&top),
        "busiest user has {top:.4} of events"
    );
    // ... and many appear only once.
    assert!(once > 0.3, "{once:.3} of users appear once");
}

/// Distinct users and the busiest user's share of events in `cfg`'s documents.
fn user_spread(cfg: &BlueskyConfig) -> (usize, f64) {
    let bytes = generate(cfg, 2);
    let mut per_user: HashMap<String, u64> = HashMap::new();
    for line in lines(&bytes) {
        let doc: Value = serde_json::from_slice(line).unwrap();
        *per_user
            .entry(doc["did"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let top = *per_user.values().max().unwrap() as f64 / cfg.docs as f64;
    (per_user.len(), top)
}

#[test]
fn the_user_population_follows_its_settings() {
    let base = BlueskyConfig::new(40_000, 5);
    let (users, top) = user_spread(&base);
    let larger_pool = BlueskyConfig {
        users_per_million: 2 * base.users_per_million,
        ..base.clone()
    };
    let (more_users, _) = user_spread(&larger_pool);
    assert!(
        more_users as f64 > 1.3 * users as f64,
        "{more_users} users with twice the pool, {users} without"
    );
    let steeper = BlueskyConfig {
        popularity_offset: 0,
        ..base.clone()
    };
    let (_, steeper_top) = user_spread(&steeper);
    assert!(
        steeper_top > 2.0 * top,
        "busiest user {steeper_top:.4} with no offset, {top:.4} with the default"
    );
}

#[test]
fn shuffled_key_order_keeps_every_value_and_varies_the_order() {
    let jetstream = BlueskyConfig::new(5_000, 9);
    let shuffled = BlueskyConfig {
        key_order: KeyOrder::Shuffled,
        ..jetstream.clone()
    };
    let (a, b) = (generate(&jetstream, 1), generate(&shuffled, 2));
    let mut reordered = 0;
    for (x, y) in lines(&a).zip(lines(&b)) {
        let (vx, vy): (Value, Value) = (
            serde_json::from_slice(x).unwrap(),
            serde_json::from_slice(y).unwrap(),
        );
        // serde_json's maps compare by key, whatever the order.
        assert_eq!(vx, vy);
        reordered += usize::from(x != y);
    }
    assert_eq!(lines(&a).count(), lines(&b).count());
    // Four members have 24 orders; all but 1 in 24 differ from Jetstream's.
    assert!(reordered > 4_500, "{reordered} of 5,000 reordered");
}

#[test]
fn post_texts_carry_escapes_unicode_and_matching_facets() {
    let (_, docs) = sample();
    let texts: Vec<&Value> = docs
        .iter()
        .filter_map(|d| d.pointer("/commit/record/text"))
        .collect();
    let with = |pred: fn(&str) -> bool| texts.iter().filter(|t| pred(t.as_str().unwrap())).count();
    assert!(with(|t| t.contains('"')) > 20);
    assert!(with(|t| t.contains('\n')) > 100);
    assert!(with(|t| t.contains('\\')) > 5);
    assert!(
        with(|t| t.chars().any(|c| ('\u{3040}'..='\u{30ff}').contains(&c))) > 100,
        "kana"
    );
    assert!(with(|t| t.chars().any(|c| c >= '\u{1f300}')) > 100, "emoji");
    assert!(
        with(|t| t.contains(['ã', 'ç', 'é', 'ü', 'ñ'])) > 100,
        "accents"
    );
    assert!(with(str::is_empty) > 20);
    // Facet byte offsets index the parsed text, so escaping kept every byte in place.
    let mut facets = 0;
    for record in docs.iter().filter_map(|d| d.pointer("/commit/record")) {
        let Some(list) = record.get("facets") else {
            continue;
        };
        let text = record["text"].as_str().unwrap();
        for facet in list.as_array().unwrap() {
            let start = facet["index"]["byteStart"].as_u64().unwrap() as usize;
            let end = facet["index"]["byteEnd"].as_u64().unwrap() as usize;
            let covered = text
                .get(start..end)
                .unwrap_or_else(|| panic!("{start}..{end} in {text:?}"));
            let feature = &facet["features"][0];
            match feature["$type"].as_str().unwrap() {
                "app.bsky.richtext.facet#mention" => assert!(covered.starts_with('@'), "{covered}"),
                "app.bsky.richtext.facet#tag" => {
                    assert_eq!(covered, format!("#{}", feature["tag"].as_str().unwrap()))
                }
                "app.bsky.richtext.facet#link" => {
                    let uri = feature["uri"].as_str().unwrap();
                    assert!(
                        uri.contains(covered.trim_end_matches("...")),
                        "{covered} vs {uri}"
                    );
                }
                other => panic!("facet type {other}"),
            }
            facets += 1;
        }
    }
    assert!(facets > 300, "{facets} facets");
}

#[test]
fn average_document_size_matches_the_real_data_set() {
    let (bytes, docs) = sample();
    let average = (bytes.len() - docs.len()) as f64 / docs.len() as f64;
    assert!(
        (450.0..550.0).contains(&average),
        "{average:.1} bytes per document"
    );
}

// ---- structure checks ----

type Check = Result<(), String>;

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Check {
    if ok { Ok(()) } else { Err(what()) }
}

fn obj(v: &Value) -> Result<&Map<String, Value>, String> {
    v.as_object().ok_or_else(|| format!("not an object: {v}"))
}

fn string(v: &Value) -> Result<&str, String> {
    v.as_str().ok_or_else(|| format!("not a string: {v}"))
}

/// The object's keys are exactly `required` plus any of `optional`.
fn keys(v: &Value, required: &[&str], optional: &[&str]) -> Check {
    let map = obj(v)?;
    for key in required {
        ensure(map.contains_key(*key), || format!("missing {key}"))?;
    }
    for key in map.keys() {
        ensure(
            required.contains(&key.as_str()) || optional.contains(&key.as_str()),
            || format!("unexpected {key}"),
        )?;
    }
    Ok(())
}

fn base32(s: &str, alphabet: &str) -> bool {
    s.chars().all(|c| alphabet.contains(c))
}

fn did(v: &Value) -> Check {
    let s = string(v)?;
    let body = s.strip_prefix("did:plc:").ok_or("did prefix")?;
    ensure(
        body.len() == 24 && base32(body, "abcdefghijklmnopqrstuvwxyz234567"),
        || format!("did {s}"),
    )
}

fn tid(s: &str) -> Check {
    ensure(
        s.len() == 13 && base32(s, "234567abcdefghijklmnopqrstuvwxyz"),
        || format!("tid {s}"),
    )
}

fn cid(v: &Value, prefix: &str) -> Check {
    let s = string(v)?;
    let body = s.strip_prefix(prefix).ok_or_else(|| format!("cid {s}"))?;
    ensure(
        body.len() == 52 && base32(body, "abcdefghijklmnopqrstuvwxyz234567"),
        || format!("cid {s}"),
    )
}

fn at_uri(v: &Value, collection: &str) -> Check {
    let s = string(v)?;
    let rest = s.strip_prefix("at://").ok_or_else(|| format!("uri {s}"))?;
    let mut parts = rest.split('/');
    did(&Value::from(parts.next().unwrap_or("")))?;
    ensure(parts.next() == Some(collection), || {
        format!("uri {s} not in {collection}")
    })?;
    tid(parts.next().unwrap_or(""))?;
    ensure(parts.next().is_none(), || format!("uri {s}"))
}

fn strong_ref(v: &Value, collection: &str) -> Check {
    keys(v, &["cid", "uri"], &[])?;
    cid(&v["cid"], "bafyrei")?;
    at_uri(&v["uri"], collection)
}

/// `2024-11-21T16:00:00Z`, with optional `.mmm` or `.uuuuuu` fractions.
fn timestamp(v: &Value) -> Check {
    let s = string(v)?;
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let ok = matches!(b.len(), 20 | 24 | 27)
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[b.len() - 1] == b'Z'
        && (b.len() == 20 || (b[19] == b'.' && digits(20..b.len() - 1)));
    ensure(ok, || format!("timestamp {s}"))
}

fn blob(v: &Value) -> Check {
    keys(v, &["$type", "ref", "mimeType", "size"], &[])?;
    ensure(v["$type"] == "blob", || "blob $type".into())?;
    keys(&v["ref"], &["$link"], &[])?;
    cid(&v["ref"]["$link"], "bafkrei")?;
    ensure(string(&v["mimeType"])?.contains('/'), || "mimeType".into())?;
    ensure(v["size"].as_u64().is_some_and(|s| s > 0), || "size".into())
}

fn aspect_ratio(v: &Value) -> Check {
    keys(v, &["height", "width"], &[])?;
    ensure(
        v["height"].as_u64().is_some() && v["width"].as_u64().is_some(),
        || "aspectRatio".into(),
    )
}

fn seq_and_time(v: &Value) -> Check {
    ensure(v["seq"].as_u64().is_some(), || "seq".into())?;
    timestamp(&v["time"])
}

fn check_doc(doc: &Value) -> Check {
    did(&doc["did"])?;
    ensure(doc["time_us"].as_u64().is_some(), || "time_us".into())?;
    match string(&doc["kind"])? {
        "identity" => {
            keys(doc, &["did", "time_us", "kind", "identity"], &[])?;
            let identity = &doc["identity"];
            keys(identity, &["did", "handle", "seq", "time"], &[])?;
            ensure(identity["did"] == doc["did"], || "identity did".into())?;
            ensure(
                string(&identity["handle"])?.ends_with(".bsky.social"),
                || "handle".into(),
            )?;
            seq_and_time(identity)
        }
        "account" => {
            keys(doc, &["did", "time_us", "kind", "account"], &[])?;
            let account = &doc["account"];
            keys(account, &["active", "did", "seq", "time"], &["status"])?;
            ensure(account["did"] == doc["did"], || "account did".into())?;
            let active = account["active"].as_bool().ok_or("active")?;
            match account.get("status").map(Value::as_str) {
                None => ensure(active, || "inactive account without status".into())?,
                Some(Some("deactivated" | "takendown")) => {
                    ensure(!active, || "active account with status".into())?
                }
                Some(other) => return Err(format!("status {other:?}")),
            }
            seq_and_time(account)
        }
        "commit" => {
            keys(doc, &["did", "time_us", "kind", "commit"], &[])?;
            check_commit(&doc["commit"])
        }
        other => Err(format!("kind {other}")),
    }
}

fn check_commit(commit: &Value) -> Check {
    tid(string(&commit["rev"])?)?;
    let collection = string(&commit["collection"])?;
    let rkey = string(&commit["rkey"])?;
    let singleton = matches!(
        collection,
        "app.bsky.actor.profile" | "chat.bsky.actor.declaration" | "app.bsky.labeler.service"
    );
    if singleton {
        ensure(rkey == "self", || format!("rkey {rkey}"))?;
    } else {
        tid(rkey)?;
    }
    match string(&commit["operation"])? {
        "delete" => keys(commit, &["rev", "operation", "collection", "rkey"], &[]),
        "create" | "update" => {
            keys(
                commit,
                &["rev", "operation", "collection", "rkey", "record", "cid"],
                &[],
            )?;
            cid(&commit["cid"], "bafyrei")?;
            let record = &commit["record"];
            ensure(record["$type"] == collection, || "record $type".into())?;
            timestamp(&record["createdAt"])?;
            check_record(collection, record)
        }
        other => Err(format!("operation {other}")),
    }
}

fn check_record(collection: &str, r: &Value) -> Check {
    const BASE: [&str; 2] = ["$type", "createdAt"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        BASE.iter().chain(extra).copied().collect()
    };
    match collection {
        "app.bsky.feed.like" => {
            keys(r, &with(&["subject"]), &[])?;
            strong_ref(&r["subject"], "app.bsky.feed.post")
        }
        "app.bsky.feed.repost" => {
            keys(r, &with(&["subject"]), &["via"])?;
            strong_ref(&r["subject"], "app.bsky.feed.post")?;
            r.get("via")
                .map_or(Ok(()), |via| strong_ref(via, "app.bsky.feed.repost"))
        }
        "app.bsky.graph.follow" | "app.bsky.graph.block" => {
            keys(r, &with(&["subject"]), &[])?;
            did(&r["subject"])
        }
        "app.bsky.feed.post" => check_post(r),
        "app.bsky.actor.profile" => {
            keys(
                r,
                &with(&["description", "displayName"]),
                &["avatar", "banner", "pinnedPost"],
            )?;
            string(&r["description"])?;
            string(&r["displayName"])?;
            r.get("avatar").map_or(Ok(()), blob)?;
            r.get("banner").map_or(Ok(()), blob)?;
            r.get("pinnedPost")
                .map_or(Ok(()), |p| strong_ref(p, "app.bsky.feed.post"))
        }
        "app.bsky.graph.listitem" => {
            keys(r, &with(&["list", "subject"]), &[])?;
            at_uri(&r["list"], "app.bsky.graph.list")?;
            did(&r["subject"])
        }
        "app.bsky.graph.listblock" => {
            keys(r, &with(&["subject"]), &[])?;
            at_uri(&r["subject"], "app.bsky.graph.list")
        }
        "app.bsky.feed.threadgate" => {
            keys(r, &with(&["allow", "post"]), &[])?;
            ensure(r["allow"].is_array(), || "allow".into())?;
            at_uri(&r["post"], "app.bsky.feed.post")
        }
        "app.bsky.feed.postgate" => {
            keys(
                r,
                &with(&["detachedEmbeddingUris", "embeddingRules", "post"]),
                &[],
            )?;
            ensure(r["embeddingRules"].is_array(), || "embeddingRules".into())?;
            at_uri(&r["post"], "app.bsky.feed.post")
        }
        "app.bsky.graph.starterpack" => {
            keys(r, &with(&["list", "name"]), &["description", "feeds"])?;
            at_uri(&r["list"], "app.bsky.graph.list")?;
            string(&r["name"]).map(drop)
        }
        "app.bsky.graph.list" => {
            keys(r, &with(&["name", "purpose"]), &["description"])?;
            ensure(
                string(&r["purpose"])?.starts_with("app.bsky.graph.defs#"),
                || "purpose".into(),
            )
        }
        "app.bsky.feed.generator" => {
            keys(
                r,
                &with(&["description", "did", "displayName"]),
                &["avatar"],
            )?;
            ensure(string(&r["did"])?.starts_with("did:web:"), || {
                "generator did".into()
            })
        }
        "chat.bsky.actor.declaration" => {
            keys(r, &with(&["allowIncoming"]), &[])?;
            ensure(
                matches!(string(&r["allowIncoming"])?, "all" | "following" | "none"),
                || "allowIncoming".into(),
            )
        }
        "app.bsky.labeler.service" => {
            keys(r, &with(&["policies"]), &[])?;
            ensure(r["policies"]["labelValues"].is_array(), || {
                "labelValues".into()
            })
        }
        "fyi.unravel.frontpage.post" => {
            keys(r, &with(&["title", "url"]), &[])?;
            ensure(string(&r["url"])?.starts_with("https://"), || "url".into())
        }
        "xyz.statusphere.status" => keys(r, &with(&["status"]), &[]),
        "com.whtwnd.blog.entry" => keys(r, &with(&["content", "title", "visibility"]), &[]),
        other => Err(format!("collection {other}")),
    }
}

fn check_post(r: &Value) -> Check {
    keys(
        r,
        &["$type", "createdAt", "text"],
        &["embed", "facets", "langs", "reply", "tags"],
    )?;
    ensure(string(&r["text"])?.chars().count() <= 400, || {
        "text too long".into()
    })?;
    if let Some(langs) = r.get("langs") {
        let langs = langs.as_array().ok_or("langs")?;
        ensure(!langs.is_empty(), || "empty langs".into())?;
        for lang in langs {
            ensure(
                matches!(
                    string(lang)?,
                    "en" | "ja" | "pt" | "de" | "es" | "ko" | "fr"
                ),
                || format!("lang {lang}"),
            )?;
        }
    }
    if let Some(reply) = r.get("reply") {
        keys(reply, &["parent", "root"], &[])?;
        strong_ref(&reply["parent"], "app.bsky.feed.post")?;
        strong_ref(&reply["root"], "app.bsky.feed.post")?;
    }
    if let Some(tags) = r.get("tags") {
        ensure(
            tags.as_array()
                .is_some_and(|t| !t.is_empty() && t.iter().all(Value::is_string)),
            || "tags".into(),
        )?;
    }
    if let Some(facets) = r.get("facets") {
        for facet in facets.as_array().ok_or("facets")? {
            keys(facet, &["features", "index"], &[])?;
            keys(&facet["index"], &["byteEnd", "byteStart"], &[])?;
            let feature = &facet["features"][0];
            match string(&feature["$type"])? {
                "app.bsky.richtext.facet#mention" => did(&feature["did"])?,
                "app.bsky.richtext.facet#link" => string(&feature["uri"]).map(drop)?,
                "app.bsky.richtext.facet#tag" => string(&feature["tag"]).map(drop)?,
                other => return Err(format!("facet {other}")),
            }
        }
    }
    r.get("embed").map_or(Ok(()), check_embed)
}

fn check_images(e: &Value) -> Check {
    keys(e, &["$type", "images"], &[])?;
    ensure(e["$type"] == "app.bsky.embed.images", || {
        "images $type".into()
    })?;
    let images = e["images"].as_array().ok_or("images")?;
    ensure((1..=4).contains(&images.len()), || "image count".into())?;
    for image in images {
        keys(image, &["alt", "aspectRatio", "image"], &[])?;
        string(&image["alt"])?;
        aspect_ratio(&image["aspectRatio"])?;
        blob(&image["image"])?;
    }
    Ok(())
}

fn check_embed(e: &Value) -> Check {
    match string(&e["$type"])? {
        "app.bsky.embed.images" => check_images(e),
        "app.bsky.embed.external" => {
            keys(e, &["$type", "external"], &[])?;
            let external = &e["external"];
            keys(external, &["description", "title", "uri"], &["thumb"])?;
            external.get("thumb").map_or(Ok(()), blob)?;
            ensure(string(&external["uri"])?.starts_with("https://"), || {
                "external uri".into()
            })
        }
        "app.bsky.embed.record" => {
            keys(e, &["$type", "record"], &[])?;
            strong_ref(&e["record"], "app.bsky.feed.post")
        }
        "app.bsky.embed.recordWithMedia" => {
            keys(e, &["$type", "media", "record"], &[])?;
            check_images(&e["media"])?;
            keys(&e["record"], &["$type", "record"], &[])?;
            strong_ref(&e["record"]["record"], "app.bsky.feed.post")
        }
        "app.bsky.embed.video" => {
            keys(e, &["$type", "aspectRatio", "video"], &[])?;
            aspect_ratio(&e["aspectRatio"])?;
            blob(&e["video"])
        }
        other => Err(format!("embed {other}")),
    }
}
