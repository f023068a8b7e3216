//! API-model-like documents (after the AWS SDK service models): objects used as maps
//! whose keys are names (shapes, members, operations), so that thousands of distinct
//! key paths appear across documents while a few names (`NextToken`, `MaxResults`) are
//! everywhere. This is the "path explosion" that makes a shredding store decide which
//! paths to keep; Tessera's other generators never produce it.

use std::io::{self, Write};

use crate::json::{write_key, write_str, write_u64};
use crate::parallel;
use crate::rng::{PowerLaw, Rng, hash2};
use crate::words;

/// What to generate: `docs` service models from `seed`, whose member names come from a
/// vocabulary of `keys` distinct names with Zipf-like popularity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelsConfig {
    /// Number of documents (service models).
    pub docs: u64,
    /// Seed; the same configuration always yields the same bytes.
    pub seed: u64,
    /// Distinct member names in the vocabulary (at least 1, at most [`KEYS_MAX`]).
    pub keys: u64,
}

/// The largest vocabulary: it is built in memory before generation starts.
pub const KEYS_MAX: u64 = 1_000_000;

impl ModelsConfig {
    /// `docs` models from `seed` with 5,000 member names.
    pub const fn new(docs: u64, seed: u64) -> Self {
        Self {
            docs,
            seed,
            keys: 5_000,
        }
    }
}

/// Writes all documents of `cfg` to `out` as NDJSON in index order using `threads`
/// workers; returns the number of bytes written. The bytes do not depend on `threads`.
pub fn write_models_ndjson(
    cfg: &ModelsConfig,
    threads: usize,
    out: &mut impl Write,
) -> io::Result<u64> {
    let generator = Generator::new(cfg);
    let write_doc = |index, buf: &mut Vec<u8>| generator.write_doc(index, buf);
    parallel::write_docs(cfg.docs, BATCH_DOCS, threads, write_doc, out)
}

/// Documents per batch handed between threads (models are a few KB each).
const BATCH_DOCS: u64 = 1_024;
/// The names real API models share most, at the head of the vocabulary.
const FREQUENT: &[&str] = &[
    "NextToken",
    "MaxResults",
    "Name",
    "Arn",
    "Tags",
    "Id",
    "Status",
    "Description",
    "CreationTime",
    "ResourceArn",
    "ClientToken",
    "Filters",
];
const VERBS: &[(&str, &str)] = &[
    ("Describe", "GET"),
    ("List", "GET"),
    ("Get", "GET"),
    ("Create", "POST"),
    ("Delete", "DELETE"),
    ("Update", "PUT"),
    ("Put", "PUT"),
    ("Tag", "POST"),
];
const SCALARS: &[&str] = &["String", "Integer", "Boolean", "Timestamp", "Long"];
const LOCATIONS: &[&str] = &["uri", "querystring", "header"];
const ERRORS: &[&str] = &[
    "ThrottlingException",
    "ValidationException",
    "AccessDeniedException",
    "ResourceNotFoundException",
    "InternalServerException",
];

struct Generator {
    seed: u64,
    /// Member names by popularity rank.
    names: Vec<String>,
    popularity: PowerLaw,
}

impl Generator {
    fn new(cfg: &ModelsConfig) -> Self {
        let keys = cfg.keys.clamp(1, KEYS_MAX);
        Self {
            seed: cfg.seed,
            names: vocabulary(keys),
            popularity: PowerLaw::new(keys, 2),
        }
    }

    fn name(&self, rng: &mut Rng) -> &str {
        &self.names[self.popularity.sample(rng) as usize]
    }

    fn write_doc(&self, index: u64, out: &mut Vec<u8>) {
        let mut rng = Rng::new(hash2(self.seed, index));
        let ops = self.operations(&mut rng);
        out.extend_from_slice(b"{\"service\":");
        let service = format!("{}{}", self.name(&mut rng), index % 1000);
        write_str(out, &service);
        out.extend_from_slice(b",\"version\":\"20");
        write_u64(out, 10 + rng.below(15));
        out.extend_from_slice(b"-0");
        write_u64(out, 1 + rng.below(9));
        out.extend_from_slice(b"-1");
        write_u64(out, rng.below(10));
        out.extend_from_slice(b"\",\"protocol\":");
        write_str(out, rng.pick(&["json", "rest-json", "query", "rest-xml"]));
        out.extend_from_slice(b",\"shapes\":{");
        let mut first = true;
        for (op, _) in &ops {
            for suffix in ["Request", "Response"] {
                write_key(out, &mut first, &format!("{op}{suffix}"));
                self.write_structure(&mut rng, out);
            }
        }
        for scalar in SCALARS {
            write_key(out, &mut first, scalar);
            out.extend_from_slice(b"{\"type\":");
            write_str(out, &scalar.to_ascii_lowercase());
            out.push(b'}');
        }
        out.extend_from_slice(b"},\"operations\":{");
        let mut first = true;
        for (op, method) in &ops {
            write_key(out, &mut first, op);
            write_operation(&mut rng, op, method, out);
        }
        out.extend_from_slice(b"}}");
    }

    /// 2-12 distinct operation names with their HTTP methods.
    fn operations(&self, rng: &mut Rng) -> Vec<(String, &'static str)> {
        let n = rng.between(2, 12);
        let mut ops: Vec<(String, &'static str)> = Vec::new();
        for _ in 0..n {
            let (verb, method) = rng.pick(VERBS);
            let op = format!("{verb}{}", self.name(rng));
            if !ops.iter().any(|(o, _)| *o == op) {
                ops.push((op, method));
            }
        }
        ops
    }

    /// `{"type": "structure", "required": [...], "members": {Name: {"shape", ...}}}`.
    fn write_structure(&self, rng: &mut Rng, out: &mut Vec<u8>) {
        let n = rng.between(1, 12);
        let mut members: Vec<&str> = Vec::new();
        for _ in 0..n {
            let name = self.name(rng);
            if !members.contains(&name) {
                members.push(name);
            }
        }
        out.extend_from_slice(b"{\"type\":\"structure\",\"required\":[");
        let required = rng.below(members.len() as u64 + 1) as usize;
        for (i, name) in members[..required].iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(out, name);
        }
        out.extend_from_slice(b"],\"members\":{");
        let mut first = true;
        for name in &members {
            write_key(out, &mut first, name);
            out.extend_from_slice(b"{\"shape\":");
            write_str(out, rng.pick(SCALARS));
            if rng.chance(200) {
                out.extend_from_slice(b",\"location\":");
                write_str(out, rng.pick(LOCATIONS));
                out.extend_from_slice(b",\"locationName\":");
                write_str(out, &name.to_ascii_lowercase());
            }
            out.push(b'}');
        }
        out.extend_from_slice(b"}}");
    }
}

/// `{"input": {"shape"}, "output": {"shape"}, "http": {"method", "requestUri"},
/// "errors": [{"shape"}...]}`.
fn write_operation(rng: &mut Rng, op: &str, method: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"input\":{\"shape\":");
    write_str(out, &format!("{op}Request"));
    out.extend_from_slice(b"},\"output\":{\"shape\":");
    write_str(out, &format!("{op}Response"));
    out.extend_from_slice(b"},\"http\":{\"method\":");
    write_str(out, method);
    out.extend_from_slice(b",\"requestUri\":");
    write_str(out, &format!("/{}", op.to_ascii_lowercase()));
    out.extend_from_slice(b"},\"errors\":[");
    for i in 0..rng.below(4) {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"shape\":");
        write_str(out, rng.pick(ERRORS));
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
}

/// `keys` distinct CamelCase names: [`FREQUENT`] first, then pairs and triples of
/// capitalized English words.
fn vocabulary(keys: u64) -> Vec<String> {
    let mut stems: Vec<String> = Vec::new();
    for word in words::EN {
        let stem = capitalize(word);
        // Repeated words would repeat names, so each stem is kept once.
        if word.len() > 1 && word.bytes().all(|b| b.is_ascii_alphabetic()) && !stems.contains(&stem)
        {
            stems.push(stem);
        }
    }
    let l = stems.len() as u64;
    let mut names: Vec<String> = FREQUENT.iter().map(|s| (*s).to_string()).collect();
    names.truncate(keys as usize);
    let mut k = 0u64;
    while (names.len() as u64) < keys {
        let mut name = String::new();
        let mut rest = k;
        // Two words, then three once the pairs run out: names grow only as needed.
        let words_n = if k < l * l { 2 } else { 3 };
        for _ in 0..words_n {
            name.push_str(&stems[(rest % l) as usize]);
            rest /= l;
        }
        names.push(name);
        k += 1;
    }
    names
}

fn capitalize(word: &str) -> String {
    let mut out = word.to_ascii_lowercase();
    if let Some(first) = out.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    out
}
