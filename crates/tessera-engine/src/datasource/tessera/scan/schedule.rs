//! The scan scheduler for object storage (AnyBlob: "Exploiting Cloud Object Storage for
//! High-Performance Analytics", VLDB 2023, §4.1–4.3, Algorithm 1).
//!
//! A scan keeps enough column chunks in flight to cover what its decoders consume while
//! one request is under way, over-prepared up to 2x, and no more: the budget each file
//! may fetch ahead is `2 · processSpeed · fetchLatency`, with both speeds measured as the
//! scan runs (lock-free counters shared by its partitions), so it follows changes of
//! either side. Until both have been observed it starts from one request's worth.

use std::sync::atomic::{AtomicU64, Ordering};

use tessera_table::Pacer;

/// Bytes ahead before anything is measured: one request of AnyBlob's 8–16 MiB.
const INITIAL_BUDGET: u64 = 16 << 20;
/// Fewest bytes ahead once measured: one request.
const MIN_BUDGET: u64 = 8 << 20;
/// Most bytes one file fetches ahead, whatever the speeds; bounds a scan's memory.
const MAX_BUDGET: u64 = 128 << 20;
/// Over-preparation factor of Algorithm 1.
const OVER_PREPARE: f64 = 2.0;

/// Retrieval and processing speeds of one scan, and the budget they imply.
#[derive(Debug, Default)]
pub(super) struct ScanPace {
    fetches: AtomicU64,
    fetched_bytes: AtomicU64,
    fetch_nanos: AtomicU64,
    processed_bytes: AtomicU64,
    process_nanos: AtomicU64,
}

impl Pacer for ScanPace {
    fn budget(&self) -> u64 {
        let fetches = self.fetches.load(Ordering::Relaxed);
        let processed = self.processed_bytes.load(Ordering::Relaxed);
        let process_nanos = self.process_nanos.load(Ordering::Relaxed);
        if fetches == 0 || processed == 0 || process_nanos == 0 {
            return INITIAL_BUDGET;
        }
        let latency = self.fetch_nanos.load(Ordering::Relaxed) as f64 / fetches as f64;
        let process_speed = processed as f64 / process_nanos as f64;
        let needed = OVER_PREPARE * process_speed * latency;
        (needed as u64).clamp(MIN_BUDGET, MAX_BUDGET)
    }

    fn fetched(&self, bytes: u64, nanos: u64) {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        self.fetched_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.fetch_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    fn processed(&self, bytes: u64, nanos: u64) {
        self.processed_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.process_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_covers_one_latency_of_processing_twice() {
        let pace = ScanPace::default();
        assert_eq!(pace.budget(), INITIAL_BUDGET);
        // Fetches take 50 ms; the decoder eats 1 GB/s: 2 x 50 MB ahead.
        pace.fetched(8 << 20, 50_000_000);
        pace.processed(1_000_000_000, 1_000_000_000);
        assert_eq!(pace.budget(), 100_000_000);
        // Slower decoding needs less ahead, but never under one request.
        pace.processed(0, 99_000_000_000);
        assert_eq!(pace.budget(), MIN_BUDGET);
        // Very slow retrieval is capped.
        pace.fetched(8 << 20, 100_000_000_000);
        pace.processed(1_000_000_000_000, 1);
        assert_eq!(pace.budget(), MAX_BUDGET);
    }
}
