//! What reading a data file costs: requests to the store and bytes received, counted
//! by the decoder's reads and the fetches made ahead of it alike.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tessera_blob::RequestStats;

/// What reading one file has cost so far: requests to the store and bytes received.
#[derive(Debug, Default)]
pub struct Traffic {
    /// Ranged GET requests issued (one per range, as the store API takes them).
    pub requests: AtomicU64,
    /// Bytes received.
    pub bytes: AtomicU64,
    /// The part of `bytes` that was the file's footer (its Parquet metadata): read
    /// once per file and process, where the rest grows with the rows and leaves read.
    pub footer_bytes: AtomicU64,
    /// The part of `requests` that fetched the footer: the requests a process that
    /// holds the footer does not make.
    pub footer_requests: AtomicU64,
    /// What the store sent on the file's behalf, as its io_uring S3 client counts it
    /// (split and hedged GETs, retries); zero for stores that do not count (local files).
    pub store: Arc<RequestStats>,
    /// Ranges read a second time because a page did not match its checksum (the store
    /// or the network may have sent bad bytes).
    pub checksum_retries: AtomicU64,
}

impl Traffic {
    pub(crate) fn count(&self, requests: usize, bytes: u64) {
        self.requests.fetch_add(requests as u64, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}
