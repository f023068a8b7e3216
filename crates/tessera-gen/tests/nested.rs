//! Checks the nested generators (`events`, `models`): deterministic by seed and
//! independent of the thread count, valid JSON on every line, the configured outlier
//! and long-array shares present in the output (counted), and the key vocabulary of
//! `models` growing with its setting.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use tessera_gen::{
    EventsConfig, ModelsConfig, PER_MILLION, write_events_ndjson, write_models_ndjson,
};

fn events(cfg: &EventsConfig, threads: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let written = write_events_ndjson(cfg, threads, &mut out).unwrap();
    assert_eq!(written, out.len() as u64);
    out
}

fn models(cfg: &ModelsConfig, threads: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let written = write_models_ndjson(cfg, threads, &mut out).unwrap();
    assert_eq!(written, out.len() as u64);
    out
}

/// Every line parsed; a line that is not JSON fails the test with the line.
fn parse(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            serde_json::from_slice(line)
                .unwrap_or_else(|e| panic!("invalid JSON ({e}): {}", String::from_utf8_lossy(line)))
        })
        .collect()
}

#[test]
fn events_are_deterministic_by_seed_and_thread_independent() {
    let cfg = EventsConfig::new(5_000, 7);
    let one = events(&cfg, 1);
    assert_eq!(one, events(&cfg, 3));
    assert_ne!(one, events(&EventsConfig::new(5_000, 8), 1));
    assert_eq!(parse(&one).len(), 5_000);
}

#[test]
fn models_are_deterministic_by_seed_and_thread_independent() {
    let cfg = ModelsConfig::new(2_000, 7);
    let one = models(&cfg, 1);
    assert_eq!(one, models(&cfg, 3));
    assert_ne!(one, models(&ModelsConfig::new(2_000, 8), 1));
    assert_eq!(parse(&one).len(), 2_000);
}

/// Outlier counts over a set of events, by kind of outlier.
#[derive(Default, Debug)]
struct Outliers {
    null_elements: u64,
    scalar_elements: u64,
    string_ids: u64,
    null_distinct: u64,
    commits_without_author: u64,
}

impl Outliers {
    fn count(&mut self, doc: &Value) {
        let payload = &doc["payload"];
        for array in [
            &payload["commits"],
            &payload["pull_request"]["labels"],
            &payload["pull_request"]["assignees"],
            &payload["issue"]["labels"],
        ] {
            for element in array.as_array().into_iter().flatten() {
                match element {
                    Value::Null => self.null_elements += 1,
                    Value::Object(fields) => {
                        self.string_ids +=
                            u64::from(fields.get("id").is_some_and(Value::is_string));
                        self.null_distinct +=
                            u64::from(fields.get("distinct").is_some_and(Value::is_null));
                        self.commits_without_author +=
                            u64::from(fields.contains_key("sha") && !fields.contains_key("author"));
                    }
                    _ => self.scalar_elements += 1,
                }
            }
        }
    }

    fn all(&self) -> [u64; 5] {
        [
            self.null_elements,
            self.scalar_elements,
            self.string_ids,
            self.null_distinct,
            self.commits_without_author,
        ]
    }
}

/// Events whose top-level keys are not in the usual order (an outlier event always
/// rotates them), and the element outliers of all events.
fn outliers(bytes: &[u8]) -> (u64, Outliers) {
    let mut reordered = 0;
    let mut counts = Outliers::default();
    for (line, doc) in bytes.split(|&b| b == b'\n').zip(parse(bytes)) {
        reordered += u64::from(!line.starts_with(b"{\"id\":"));
        counts.count(&doc);
    }
    (reordered, counts)
}

#[test]
fn outlier_share_shows_up_in_the_output() {
    let docs = 20_000;
    let share = 50_000; // 5%
    let cfg = EventsConfig {
        outlier_per_million: share,
        ..EventsConfig::new(docs, 3)
    };
    let (reordered, counts) = outliers(&events(&cfg, 2));
    let expected = docs * share / PER_MILLION;
    assert!(
        reordered * 10 > expected * 7 && reordered * 10 < expected * 13,
        "{reordered} reordered events, expected about {expected}"
    );
    assert!(counts.all().iter().all(|&n| n > 0), "{counts:?}");

    let clean = EventsConfig {
        outlier_per_million: 0,
        ..cfg
    };
    let (reordered, counts) = outliers(&events(&clean, 2));
    assert_eq!(reordered, 0);
    assert_eq!(counts.all(), [0; 5], "{counts:?}");
}

/// The longest commit and label arrays of each event.
fn array_lengths(doc: &Value) -> (usize, usize) {
    let len = |v: &Value| v.as_array().map_or(0, Vec::len);
    let payload = &doc["payload"];
    let labels = len(&payload["pull_request"]["labels"]).max(len(&payload["issue"]["labels"]));
    (len(&payload["commits"]), labels)
}

#[test]
fn long_share_and_commits_max_show_up_in_the_output() {
    let docs = 20_000;
    for (long, commits_max) in [(10_000, 5), (40_000, 60)] {
        let cfg = EventsConfig {
            long_per_million: long,
            commits_max,
            ..EventsConfig::new(docs, 11)
        };
        let lengths: Vec<(usize, usize)> =
            parse(&events(&cfg, 2)).iter().map(array_lengths).collect();
        let long_events = lengths
            .iter()
            .filter(|(c, l)| *c >= 100 || *l >= 100)
            .count() as u64;
        let expected = docs * long / PER_MILLION;
        assert!(
            long_events * 10 > expected * 7 && long_events * 10 < expected * 13,
            "{long_events} long events, expected about {expected}"
        );
        let short_max = lengths
            .iter()
            .map(|&(c, _)| c as u64)
            .filter(|&c| c < 100)
            .max();
        assert_eq!(short_max, Some(commits_max), "commits_max {commits_max}");
    }
}

/// Distinct member names across all shapes, and how often each occurs.
fn member_names(docs: &[Value]) -> HashMap<String, u64> {
    let mut names = HashMap::new();
    for doc in docs {
        for shape in doc["shapes"].as_object().unwrap().values() {
            for name in shape["members"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|m| m.0)
            {
                *names.entry(name.clone()).or_insert(0) += 1;
            }
        }
    }
    names
}

#[test]
fn models_key_vocabulary_grows_with_keys_and_is_skewed() {
    let distinct = |keys: u64| {
        let cfg = ModelsConfig {
            keys,
            ..ModelsConfig::new(3_000, 5)
        };
        member_names(&parse(&models(&cfg, 2)))
    };
    let small = distinct(100);
    let large = distinct(20_000);
    assert!(small.len() <= 100, "{} names from 100 keys", small.len());
    assert!(
        large.len() > small.len() * 20,
        "{} names from 20000 keys, {} from 100",
        large.len(),
        small.len()
    );
    let top = large.iter().max_by_key(|(_, n)| **n).unwrap();
    let ops: HashSet<&str> = ["NextToken", "MaxResults", "Name"].into();
    assert!(ops.contains(top.0.as_str()), "most frequent member {top:?}");
}

/// Settings at their extremes are clamped, never a panic or an unbounded document.
#[test]
fn extreme_settings_still_give_valid_events() {
    let cfg = EventsConfig {
        commits_max: u64::MAX,
        long_per_million: PER_MILLION,
        outlier_per_million: PER_MILLION,
        actors: u64::MAX,
        ..EventsConfig::new(200, 1)
    };
    let docs = parse(&events(&cfg, 2));
    assert_eq!(docs.len(), 200);
    assert!(docs.iter().all(|doc| array_lengths(doc).0 <= 600));
    let models_cfg = ModelsConfig {
        keys: u64::MAX,
        ..ModelsConfig::new(2, 1)
    };
    assert_eq!(parse(&models(&models_cfg, 1)).len(), 2);
}

/// Above the short default, `tags` holds uniformly many hashtags up to `tags_max`; the
/// default keeps its skewed counts of 0, 1, 2 or 4.
#[test]
fn tags_max_makes_long_arrays_of_strings() {
    let docs = 5_000;
    let tags = |cfg: &EventsConfig| -> Vec<usize> {
        parse(&events(cfg, 2))
            .iter()
            .map(|doc| doc["tags"].as_array().map_or(0, Vec::len))
            .collect()
    };
    let short = tags(&EventsConfig::new(docs, 5));
    assert!(short.iter().all(|n| [0, 1, 2, 4].contains(n)), "{short:?}");
    let cfg = EventsConfig {
        tags_max: 64,
        ..EventsConfig::new(docs, 5)
    };
    let long = tags(&cfg);
    assert!(long.iter().all(|&n| n <= 64));
    let mean = long.iter().sum::<usize>() as f64 / long.len() as f64;
    assert!((28.0..36.0).contains(&mean), "mean {mean}");
    assert!(long.contains(&0) && long.contains(&64));
}
