//! Latencies learned online: the base latency (time to first byte) and the data
//! latency (time per MiB after it), which drive the concurrency model of
//! AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023)
//! `requests = throughput * (baseLatency + size * dataLatency) / size`, and recent
//! per-size-class percentiles, which decide when a request is late enough to hedge.

use std::sync::Mutex;
use std::time::Duration;

use crate::options::Hedging;

const MIB: f64 = 1024.0 * 1024.0;
/// Recent requests remembered per size class and for the latency model.
const WINDOW: usize = 128;
/// Size classes: one per power of two of the request size, up to 2^47 bytes.
const CLASSES: usize = 48;
/// S3's median base latency (AnyBlob), used until requests have been measured.
const PRIOR_BASE: Duration = Duration::from_millis(30);
/// S3's median data latency per MiB (AnyBlob), used until measured.
const PRIOR_PER_MIB: Duration = Duration::from_millis(20);
/// Measured requests needed before measurements replace the priors.
const MIN_MEASURED: usize = 8;

/// A fixed-size window of the most recent durations, in nanoseconds.
#[derive(Debug, Default, Clone)]
struct Window {
    values: Vec<u64>,
    next: usize,
}

impl Window {
    fn push(&mut self, value: Duration) {
        let value = u64::try_from(value.as_nanos()).unwrap_or(u64::MAX);
        if self.values.len() < WINDOW {
            self.values.push(value);
        } else {
            self.values[self.next] = value;
        }
        self.next = (self.next + 1) % WINDOW;
    }

    /// The `p` quantile (0 to 1) by nearest rank, or `None` below `min` values.
    fn quantile(&self, p: f64, min: usize) -> Option<Duration> {
        if self.values.len() < min.max(1) {
            return None;
        }
        let mut sorted = self.values.clone();
        sorted.sort_unstable();
        let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        Some(Duration::from_nanos(sorted[rank - 1]))
    }
}

#[derive(Debug, Clone, Default)]
struct Class {
    first_byte: Window,
    total: Window,
}

#[derive(Debug)]
struct Inner {
    classes: Vec<Class>,
    base: Window,
    per_mib: Window,
}

/// Online latency statistics of one client's requests.
#[derive(Debug)]
pub struct LatencyModel {
    inner: Mutex<Inner>,
}

impl Default for LatencyModel {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner {
                classes: vec![Class::default(); CLASSES],
                base: Window::default(),
                per_mib: Window::default(),
            }),
        }
    }
}

/// When a request of some size should get a duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HedgeDeadlines {
    /// Hedge if no response byte arrived by then.
    pub first_byte: Duration,
    /// Hedge if the response is not complete by then.
    pub completion: Duration,
}

fn class_of(size: u64) -> usize {
    (u64::BITS - size.leading_zeros()) as usize % CLASSES
}

impl LatencyModel {
    /// Records a successful request of `size` body bytes.
    pub fn record(&self, size: u64, first_byte: Duration, total: Duration) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let class = &mut inner.classes[class_of(size)];
        class.first_byte.push(first_byte);
        class.total.push(total);
        inner.base.push(first_byte);
        // Small bodies say nothing about per-byte speed.
        if size as f64 >= MIB {
            let data = total.saturating_sub(first_byte);
            inner.per_mib.push(data.div_f64(size as f64 / MIB));
        }
    }

    /// Median base latency (time to first byte), or AnyBlob's S3 median before
    /// enough requests were measured.
    pub fn base_latency(&self) -> Duration {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.base.quantile(0.5, MIN_MEASURED).unwrap_or(PRIOR_BASE)
    }

    /// Median data latency per MiB, or AnyBlob's S3 median before enough requests
    /// of at least 1 MiB were measured.
    pub fn data_latency_per_mib(&self) -> Duration {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner
            .per_mib
            .quantile(0.5, MIN_MEASURED)
            .unwrap_or(PRIOR_PER_MIB)
    }

    /// Requests of `size` bytes to keep in flight to reach `bytes_per_second`:
    /// `throughput * (base + size * data) / size`, rounded up, within `1..=limit`.
    pub fn concurrency(&self, size: u64, bytes_per_second: f64, limit: usize) -> usize {
        let size = size.max(1) as f64;
        let latency = self.base_latency().as_secs_f64()
            + size / MIB * self.data_latency_per_mib().as_secs_f64();
        let requests = (bytes_per_second * latency / size).ceil();
        (requests.min(limit as f64) as usize).clamp(1, limit.max(1))
    }

    /// When a request of `size` bytes is late by `hedging`'s percentile of recent
    /// requests of its size class; `None` while hedging is off or the class has too few
    /// samples.
    pub fn hedge_deadlines(&self, size: u64, hedging: &Hedging) -> Option<HedgeDeadlines> {
        if !hedging.enabled {
            return None;
        }
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let class = &inner.classes[class_of(size)];
        let first = class
            .first_byte
            .quantile(hedging.percentile, hedging.min_samples)?;
        let total = class
            .total
            .quantile(hedging.percentile, hedging.min_samples)?;
        Some(HedgeDeadlines {
            first_byte: first.max(hedging.min_delay),
            completion: total.max(hedging.min_delay),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn priors_give_seed_002_s3_concurrency() {
        // 100 Gbit/s of 16 MiB requests at 30 ms + 20 ms/MiB: about 260 requests.
        let model = LatencyModel::default();
        let n = model.concurrency(16 << 20, 100e9 / 8.0, 10_000);
        assert!((255..=265).contains(&n), "{n}");
        assert_eq!(model.concurrency(16 << 20, 100e9 / 8.0, 64), 64);
    }

    #[test]
    fn measurements_replace_the_priors() {
        let model = LatencyModel::default();
        for _ in 0..MIN_MEASURED {
            model.record(4 << 20, 10 * MS, 50 * MS);
        }
        assert_eq!(model.base_latency(), 10 * MS);
        assert_eq!(model.data_latency_per_mib(), 10 * MS);
        // 1 GB/s of 4 MiB requests at 10 ms + 40 ms: 1e9 * 0.05 / 4 MiB = 11.9 -> 12.
        assert_eq!(model.concurrency(4 << 20, 1e9, 1000), 12);
    }

    #[test]
    fn hedge_deadlines_follow_the_percentile_of_the_size_class() {
        let model = LatencyModel::default();
        let hedging = Hedging {
            min_samples: 20,
            percentile: 0.95,
            ..Hedging::default()
        };
        for i in 1..=20u32 {
            model.record(1 << 20, i * 10 * MS, i * 100 * MS);
        }
        assert_eq!(
            model.hedge_deadlines(1 << 20, &hedging),
            Some(HedgeDeadlines {
                first_byte: 190 * MS,
                completion: 1900 * MS,
            })
        );
        // Another size class has no samples yet, and hedging can be switched off.
        assert_eq!(model.hedge_deadlines(64 << 20, &hedging), None);
        let off = Hedging {
            enabled: false,
            ..hedging
        };
        assert_eq!(model.hedge_deadlines(1 << 20, &off), None);
    }
}
