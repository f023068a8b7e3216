//! The generated data sets the caches' differential tests query: Bluesky and GitHub-like
//! events in two parts (a table version, then an append) with documents no generator
//! writes (wrong types, NULLs, missing and empty objects), and the paths queries test.

use std::path::Path;

use tessera_engine::TesseraSession;

use super::rows;

/// A generated data set: its documents and the JSON paths queries test.
pub struct DataSet {
    /// Names the data set in assertion messages.
    pub name: &'static str,
    /// Two NDJSON parts: the first table version, then an append.
    pub parts: [String; 2],
    /// Text paths as SQL over `j`, with values to compare them with.
    pub texts: Vec<(&'static str, Vec<&'static str>)>,
    /// Integer paths as SQL over `j` (`TRY_CAST`, so outliers are NULL).
    pub integers: Vec<&'static str>,
    /// What the round's `DELETE` removes.
    pub delete: &'static str,
}

/// Documents no generator writes: wrong types, NULLs, missing and empty objects.
pub const OUTLIERS: &str = r#"{"kind":5,"time_us":"abc","did":null,"type":7}
{"kind":null,"time_us":1.5e3,"commit":{"operation":7,"collection":["x"]},"actor":{"id":"x"}}
{"did":"did:plc:zzz","time_us":-1,"commit":null,"payload":{"size":-3,"action":null}}
{}
{"kind":"commit","time_us":9223372036854775807,"commit":{"operation":"delete"},"type":"PushEvent","actor":{"login":""}}
"#;

/// Bluesky events (`docs` per part) with the outliers.
pub fn bluesky(dir: &Path, docs: u64) -> DataSet {
    let part = |seed: u64, name: &str| {
        let mut out = Vec::new();
        let config = tessera_gen::BlueskyConfig::new(docs, seed);
        tessera_gen::write_ndjson(&config, 1, &mut out).unwrap();
        out.extend_from_slice(OUTLIERS.as_bytes());
        let path = dir.join(name);
        std::fs::write(&path, out).unwrap();
        path.display().to_string()
    };
    DataSet {
        name: "bluesky",
        parts: [part(1, "bluesky1.json"), part(2, "bluesky2.json")],
        texts: vec![
            ("j->>'kind'", vec!["commit", "identity", "account", "5"]),
            ("j->>'did'", vec!["did:plc:m", "did:plc:4", "did:plc:zzz"]),
            (
                "j->'commit'->>'operation'",
                vec!["create", "delete", "update"],
            ),
            (
                "j->'commit'->>'collection'",
                vec!["app.bsky.feed.like", "app.bsky.feed.post", "app.bsky.graph"],
            ),
        ],
        integers: vec!["TRY_CAST(j->>'time_us' AS BIGINT)"],
        delete: "j->>'kind' = 'identity'",
    }
}

/// GitHub-like events (`docs` per part) with the outliers.
pub fn events(dir: &Path, docs: u64) -> DataSet {
    let part = |seed: u64, name: &str| {
        let mut out = Vec::new();
        let config = tessera_gen::EventsConfig::new(docs, seed);
        tessera_gen::write_events_ndjson(&config, 1, &mut out).unwrap();
        out.extend_from_slice(OUTLIERS.as_bytes());
        let path = dir.join(name);
        std::fs::write(&path, out).unwrap();
        path.display().to_string()
    };
    DataSet {
        name: "events",
        parts: [part(1, "events1.json"), part(2, "events2.json")],
        texts: vec![
            (
                "j->>'type'",
                vec!["PushEvent", "WatchEvent", "IssuesEvent", "7"],
            ),
            ("j->'actor'->>'login'", vec!["alice", "m", ""]),
            (
                "j->'payload'->>'action'",
                vec!["opened", "closed", "started"],
            ),
        ],
        integers: vec![
            "TRY_CAST(j->'actor'->>'id' AS BIGINT)",
            "TRY_CAST(j->'payload'->>'size' AS BIGINT)",
        ],
        delete: "j->>'type' = 'WatchEvent'",
    }
}

/// The smallest and largest value of each integer path (the random literals' range).
pub async fn bounds(session: &TesseraSession, data: &DataSet) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    for path in &data.integers {
        let sql = format!(
            "SELECT MIN({path}), MAX({path}) FROM t WHERE {path} BETWEEN -10 AND 4000000000000000"
        );
        let row = rows(session, &sql).await.remove(0);
        let (low, high) = row.split_once(" | ").unwrap();
        out.push((low.parse().unwrap(), high.parse().unwrap()));
    }
    out
}
