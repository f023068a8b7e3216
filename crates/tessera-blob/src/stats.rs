//! Request accounting: how many requests, bytes, retries and hedges retrieval cost,
//! and what the requests cost in dollars at a provider's list prices (AnyBlob
//! Table 1; Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023). Counters are atomics shared by every store a factory opens, so the engine
//! can take a [`StatsSnapshot`] before and after a query and show the difference.

use std::sync::atomic::{AtomicU64, Ordering};

/// Cloud providers with the request prices of AnyBlob Table 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// AWS S3 (us-east-2).
    Aws,
    /// Google Cloud Storage (us-east-1).
    Gcp,
    /// IBM Cloud Object Storage (us-east).
    Ibm,
    /// Azure Blob Storage (East US 2).
    Azure,
    /// Oracle Cloud Object Storage (us-ashburn-1).
    Oci,
}

/// Dollars per million requests of each billing class.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    /// GET and HEAD.
    pub get_per_million: f64,
    /// PUT, POST, LIST (and COPY): S3's more expensive class.
    pub put_per_million: f64,
}

impl Provider {
    /// The provider's request prices.
    pub fn prices(self) -> Prices {
        let (get_per_million, put_per_million) = match self {
            Provider::Aws | Provider::Gcp => (0.40, 5.00),
            Provider::Ibm => (0.42, 5.20),
            Provider::Azure => (0.40, 6.25),
            Provider::Oci => (0.34, 0.34),
        };
        Prices {
            get_per_million,
            put_per_million,
        }
    }
}

/// The billing class of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestClass {
    /// GET and HEAD.
    Get,
    /// PUT, POST and LIST.
    Put,
    /// DELETE and aborts, which S3 does not bill.
    Free,
}

/// Cumulative counters, updated lock-free by every request.
#[derive(Debug, Default)]
pub struct RequestStats {
    get_requests: AtomicU64,
    put_requests: AtomicU64,
    free_requests: AtomicU64,
    bytes_received: AtomicU64,
    bytes_sent: AtomicU64,
    retries: AtomicU64,
    hedges: AtomicU64,
    hedges_won: AtomicU64,
    failures: AtomicU64,
}

/// The counters at one moment; subtract two to get what happened in between.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// GET and HEAD requests sent, including retries and hedges (each is billed).
    pub get_requests: u64,
    /// PUT, POST and LIST requests sent, including retries.
    pub put_requests: u64,
    /// Unbilled requests (DELETE, aborts).
    pub free_requests: u64,
    /// Response body bytes received.
    pub bytes_received: u64,
    /// Request body bytes sent.
    pub bytes_sent: u64,
    /// Attempts after the first of a request.
    pub retries: u64,
    /// Duplicates sent for slow requests.
    pub hedges: u64,
    /// Hedges that finished before the request they duplicated.
    pub hedges_won: u64,
    /// Requests that failed after all their attempts.
    pub failures: u64,
}

impl RequestStats {
    /// Counts one attempt of class `class` that sent `sent` body bytes.
    pub fn record_request(&self, class: RequestClass, sent: u64) {
        let counter = match class {
            RequestClass::Get => &self.get_requests,
            RequestClass::Put => &self.put_requests,
            RequestClass::Free => &self.free_requests,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.bytes_sent.fetch_add(sent, Ordering::Relaxed);
    }

    /// Counts `bytes` of response body received.
    pub fn record_received(&self, bytes: u64) {
        self.bytes_received.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts a retry.
    pub fn record_retry(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a hedge as it is sent.
    pub fn record_hedge(&self) {
        self.hedges.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a hedge that finished before the request it duplicated.
    pub fn record_hedge_won(&self) {
        self.hedges_won.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a request that failed for good.
    pub fn record_failure(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> StatsSnapshot {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StatsSnapshot {
            get_requests: load(&self.get_requests),
            put_requests: load(&self.put_requests),
            free_requests: load(&self.free_requests),
            bytes_received: load(&self.bytes_received),
            bytes_sent: load(&self.bytes_sent),
            retries: load(&self.retries),
            hedges: load(&self.hedges),
            hedges_won: load(&self.hedges_won),
            failures: load(&self.failures),
        }
    }
}

impl StatsSnapshot {
    /// What happened between `earlier` and this snapshot.
    pub fn since(&self, earlier: &StatsSnapshot) -> StatsSnapshot {
        StatsSnapshot {
            get_requests: self.get_requests.saturating_sub(earlier.get_requests),
            put_requests: self.put_requests.saturating_sub(earlier.put_requests),
            free_requests: self.free_requests.saturating_sub(earlier.free_requests),
            bytes_received: self.bytes_received.saturating_sub(earlier.bytes_received),
            bytes_sent: self.bytes_sent.saturating_sub(earlier.bytes_sent),
            retries: self.retries.saturating_sub(earlier.retries),
            hedges: self.hedges.saturating_sub(earlier.hedges),
            hedges_won: self.hedges_won.saturating_sub(earlier.hedges_won),
            failures: self.failures.saturating_sub(earlier.failures),
        }
    }

    /// Dollars the counted requests cost at `provider`'s request prices (transfer
    /// within a region is free; storage is not a request cost).
    pub fn dollars(&self, provider: Provider) -> f64 {
        let prices = provider.prices();
        (self.get_requests as f64 * prices.get_per_million
            + self.put_requests as f64 * prices.put_per_million)
            / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tebibyte_in_16_mib_gets_costs_about_2_6_cents_on_aws() {
        let stats = RequestStats::default();
        for _ in 0..65_536 {
            stats.record_request(RequestClass::Get, 0);
        }
        let dollars = stats.snapshot().dollars(Provider::Aws);
        assert!((dollars - 0.0262144).abs() < 1e-9, "{dollars}");
    }

    #[test]
    fn snapshots_subtract() {
        let stats = RequestStats::default();
        stats.record_request(RequestClass::Put, 10);
        let before = stats.snapshot();
        stats.record_request(RequestClass::Get, 0);
        stats.record_received(100);
        stats.record_retry();
        stats.record_hedge();
        stats.record_hedge_won();
        let delta = stats.snapshot().since(&before);
        assert_eq!(
            delta,
            StatsSnapshot {
                get_requests: 1,
                bytes_received: 100,
                retries: 1,
                hedges: 1,
                hedges_won: 1,
                ..Default::default()
            }
        );
        assert!((delta.dollars(Provider::Oci) - 0.34e-6).abs() < 1e-12);
    }
}
