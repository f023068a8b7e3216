//! Deterministic, fast generators of benchmark data for Tessera.
//!
//! The Bluesky generator produces Jetstream-like events as NDJSON, modelled on the
//! JSONBench data set that Tessera's benchmarks use, so benchmarks and tests can make
//! any amount of realistic data locally instead of downloading it. The TPC-H generator
//! produces the eight TPC-H tables as one stream of JSON objects keyed by column name,
//! the "combined JSON TPC-H" workload of the JSON tiles paper. The events generator
//! produces GitHub-events-like documents full of arrays of objects, with outliers on
//! purpose; the models generator produces API-model-like documents whose objects are
//! maps keyed by thousands of distinct names. A seed fixes the
//! bytes: the PRNG is our own, so output does not drift with dependency upgrades.

mod bluesky;
mod events;
mod json;
mod models;
mod parallel;
mod rng;
mod tpch;
mod words;

pub use bluesky::{BlueskyConfig, KeyOrder, write_doc, write_ndjson};
pub use events::{
    COMMITS_MAX_LIMIT, EventsConfig, PER_MILLION, SHORT_TAGS_MAX, TAGS_MAX_LIMIT,
    write_events_ndjson,
};
pub use models::{KEYS_MAX as MODELS_KEYS_MAX, ModelsConfig, write_models_ndjson};
pub use tpch::{TpchConfig, TpchError, write_tpch_ndjson};
