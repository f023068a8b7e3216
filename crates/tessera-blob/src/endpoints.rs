//! A DNS cache that keeps several addresses of one endpoint (the throughput-based
//! resolver of AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023)): requests are spread over the addresses, each address's
//! throughput is tracked, and an address that performs clearly worse than the others
//! is replaced by a fresh one from DNS. Resolving once, not per request, saves a
//! round trip per request.
//!
//! It is also AnyBlob's MTU-based resolver: some S3 nodes carry jumbo frames (path
//! MTU up to 9001 bytes), which amortize the kernel's per-packet CPU cost. AnyBlob
//! probes with a do-not-fragment ping; here the TCP maximum segment size of each new
//! connection (read by the event loop, no ICMP privileges needed) tells the same. Once
//! an address is known to carry jumbo frames, addresses known to carry only standard
//! frames get no new requests and are replaced by fresh ones from DNS, so the cache
//! converges on jumbo-frame endpoints while throughput still decides among them.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Addresses kept per endpoint.
pub(crate) const MAX_ADDRESSES: usize = 8;
/// Throughput samples an address needs before it can be judged.
const MIN_SAMPLES: u32 = 16;
/// An address is replaced when its throughput is below this share of the median.
const WORSE_SHARE: f64 = 0.5;
/// Weight of a new sample in an address's moving average.
const EWMA_WEIGHT: f64 = 0.125;
/// Bodies smaller than this say nothing about throughput.
const MIN_SAMPLE_BYTES: u64 = 256 * 1024;
/// Largest TCP segment of a standard 1500-byte Ethernet MTU path (1460 for IPv4
/// without options); a larger segment means jumbo frames (8400-9001 on S3).
pub const STANDARD_SEGMENT: u32 = 1460;
/// Addresses remembered as carrying only standard frames, so DNS answers do not bring
/// them back while jumbo-frame addresses exist.
const MAX_REMEMBERED_STANDARD: usize = 64;

/// Looks the endpoint up again; returns its current addresses.
pub type Resolver = Box<dyn Fn() -> std::io::Result<Vec<SocketAddr>> + Send + Sync>;

#[derive(Debug, Clone)]
struct Address {
    addr: SocketAddr,
    /// Moving average of bytes per second.
    throughput: f64,
    samples: u32,
    /// The TCP segment size of its latest new connection.
    segment: Option<u32>,
}

impl Address {
    fn fresh(addr: SocketAddr) -> Self {
        Self {
            addr,
            throughput: 0.0,
            samples: 0,
            segment: None,
        }
    }

    fn jumbo(&self) -> bool {
        self.segment.is_some_and(|s| s > STANDARD_SEGMENT)
    }

    fn standard(&self) -> bool {
        self.segment.is_some_and(|s| s <= STANDARD_SEGMENT)
    }
}

/// The cached addresses of one endpoint.
pub struct Endpoints {
    addresses: Mutex<Vec<Address>>,
    /// Addresses measured with standard frames (bounded, oldest forgotten first).
    standard: Mutex<std::collections::VecDeque<SocketAddr>>,
    next: AtomicUsize,
    resolve: Resolver,
}

impl std::fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoints")
            .field("addresses", &self.addresses())
            .finish_non_exhaustive()
    }
}

impl Endpoints {
    /// Resolves through `resolve` once and keeps up to `MAX_ADDRESSES` addresses.
    pub fn new(resolve: Resolver) -> std::io::Result<Self> {
        let mut found = resolve()?;
        found.dedup();
        found.truncate(MAX_ADDRESSES);
        if found.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the host name resolves to no address",
            ));
        }
        let addresses = found.into_iter().map(Address::fresh).collect();
        Ok(Self {
            addresses: Mutex::new(addresses),
            standard: Mutex::default(),
            next: AtomicUsize::new(0),
            resolve,
        })
    }

    /// The endpoint `host:port`, resolved by the system resolver.
    pub(crate) fn system(host: &str, port: u16) -> std::io::Result<Self> {
        let host = host.to_string();
        Self::new(Box::new(move || {
            use std::net::ToSocketAddrs;
            Ok((host.as_str(), port).to_socket_addrs()?.collect())
        }))
    }

    /// The address for the next request: the cached addresses in turn, leaving out
    /// those known to carry only standard frames while one carries jumbo frames.
    pub(crate) fn pick(&self) -> SocketAddr {
        let addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        let prefer_jumbo = addresses.iter().any(Address::jumbo);
        let eligible = |a: &&Address| !(prefer_jumbo && a.standard());
        let count = addresses.iter().filter(eligible).count();
        addresses
            .iter()
            .filter(eligible)
            .nth(turn % count.max(1))
            .unwrap_or(&addresses[turn % addresses.len()])
            .addr
    }

    /// Records the TCP segment size of a new connection to `addr`; an address with
    /// standard frames is replaced by a fresh one from DNS while another address has
    /// jumbo frames (the MTU-based resolver).
    pub(crate) fn record_segment(&self, addr: SocketAddr, segment: u32) {
        let mut addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        let Some(index) = addresses.iter().position(|a| a.addr == addr) else {
            return;
        };
        let had_jumbo = addresses.iter().any(Address::jumbo);
        addresses[index].segment = Some(segment);
        if addresses[index].standard() {
            let mut standard = self.standard.lock().unwrap_or_else(|p| p.into_inner());
            if !standard.contains(&addr) {
                if standard.len() == MAX_REMEMBERED_STANDARD {
                    standard.pop_front();
                }
                standard.push_back(addr);
            }
        }
        // DNS is asked only when this changes something: the first jumbo address
        // sends every standard one to be replaced, a later standard one is replaced
        // itself. Standard addresses DNS cannot replace stay, unpicked.
        let replaced: Vec<usize> = match (had_jumbo, addresses[index].jumbo()) {
            (false, true) => addresses
                .iter()
                .enumerate()
                .filter(|(_, a)| a.standard())
                .map(|(i, _)| i)
                .collect(),
            (true, false) => vec![index],
            _ => Vec::new(),
        };
        for index in replaced {
            self.replace(&mut addresses, index);
        }
    }

    /// The cached addresses known to carry jumbo frames (what the tests check the
    /// segment bookkeeping by).
    #[cfg(test)]
    fn jumbo_addresses(&self) -> Vec<SocketAddr> {
        let addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        addresses
            .iter()
            .filter(|a| a.jumbo())
            .map(|a| a.addr)
            .collect()
    }

    /// The cached addresses.
    pub(crate) fn addresses(&self) -> Vec<SocketAddr> {
        let addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        addresses.iter().map(|a| a.addr).collect()
    }

    /// Records that `addr` delivered `bytes` in `seconds`; may replace an address
    /// that is clearly slower than the others.
    pub(crate) fn record(&self, addr: SocketAddr, bytes: u64, seconds: f64) {
        if bytes < MIN_SAMPLE_BYTES || seconds <= 0.0 {
            return;
        }
        let rate = bytes as f64 / seconds;
        let mut addresses = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = addresses.iter_mut().find(|a| a.addr == addr) else {
            return;
        };
        entry.throughput = if entry.samples == 0 {
            rate
        } else {
            entry.throughput + EWMA_WEIGHT * (rate - entry.throughput)
        };
        entry.samples = entry.samples.saturating_add(1);
        if let Some(slow) = slowest_outlier(&addresses) {
            self.replace(&mut addresses, slow);
        }
    }

    /// Replaces the address at `index` with one DNS returns that is not cached yet;
    /// keeps it when DNS has nothing new (an endpoint is never left without addresses).
    fn replace(&self, addresses: &mut [Address], index: usize) {
        let Ok(found) = (self.resolve)() else { return };
        // While an address carries jumbo frames, one known to carry standard frames
        // is no replacement.
        let avoid: Vec<SocketAddr> = if addresses.iter().any(Address::jumbo) {
            let standard = self.standard.lock().unwrap_or_else(|p| p.into_inner());
            standard.iter().copied().collect()
        } else {
            Vec::new()
        };
        if let Some(fresh) = found
            .into_iter()
            .find(|f| addresses.iter().all(|a| a.addr != *f) && !avoid.contains(f))
        {
            addresses[index] = Address::fresh(fresh);
        } else {
            // Judge it again on fresh samples rather than re-resolving on every request.
            addresses[index].samples = 0;
        }
    }
}

/// The index of an address that is judged (enough samples) and below
/// [`WORSE_SHARE`] of the median throughput of the judged addresses.
fn slowest_outlier(addresses: &[Address]) -> Option<usize> {
    let judged: Vec<(usize, f64)> = addresses
        .iter()
        .enumerate()
        .filter(|(_, a)| a.samples >= MIN_SAMPLES)
        .map(|(i, a)| (i, a.throughput))
        .collect();
    if judged.len() < 2 {
        return None;
    }
    let mut rates: Vec<f64> = judged.iter().map(|(_, r)| *r).collect();
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    judged
        .into_iter()
        .filter(|(_, r)| *r < WORSE_SHARE * median)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn addr(last: u8) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, last], 9000))
    }

    /// A resolver that answers with the first `served` of a fixed list of addresses.
    fn dns(served: Arc<AtomicUsize>) -> Resolver {
        Box::new(move || {
            let all = [addr(1), addr(2), addr(3), addr(4)];
            Ok(all[..served.load(Ordering::Relaxed)].to_vec())
        })
    }

    #[test]
    fn requests_rotate_over_the_cached_addresses() {
        let endpoints = Endpoints::new(dns(Arc::new(AtomicUsize::new(3)))).unwrap();
        let picked: Vec<_> = (0..6).map(|_| endpoints.pick()).collect();
        assert_eq!(
            picked,
            vec![addr(1), addr(2), addr(3), addr(1), addr(2), addr(3)]
        );
    }

    #[test]
    fn a_clearly_slower_address_is_replaced_by_a_new_one() {
        let served = Arc::new(AtomicUsize::new(3));
        let endpoints = Endpoints::new(dns(served.clone())).unwrap();
        served.store(4, Ordering::Relaxed);
        for _ in 0..MIN_SAMPLES {
            endpoints.record(addr(1), 1 << 20, 0.01);
            endpoints.record(addr(3), 1 << 20, 0.01);
            endpoints.record(addr(2), 1 << 20, 0.1);
        }
        assert_eq!(endpoints.addresses(), vec![addr(1), addr(4), addr(3)]);
    }

    #[test]
    fn similar_addresses_and_a_single_address_are_kept() {
        let endpoints = Endpoints::new(dns(Arc::new(AtomicUsize::new(2)))).unwrap();
        for _ in 0..MIN_SAMPLES * 2 {
            endpoints.record(addr(1), 1 << 20, 0.01);
            endpoints.record(addr(2), 1 << 20, 0.012);
        }
        assert_eq!(endpoints.addresses(), vec![addr(1), addr(2)]);
        let single = Endpoints::new(dns(Arc::new(AtomicUsize::new(1)))).unwrap();
        for _ in 0..MIN_SAMPLES * 2 {
            single.record(addr(1), 1 << 20, 1.0);
        }
        assert_eq!(single.addresses(), vec![addr(1)]);
    }

    #[test]
    fn jumbo_frame_addresses_are_preferred_and_standard_ones_replaced() {
        let served = Arc::new(AtomicUsize::new(3));
        let endpoints = Endpoints::new(dns(served.clone())).unwrap();
        // Without any measurement every address is used.
        endpoints.record_segment(addr(1), 1448);
        let picked: std::collections::HashSet<_> = (0..6).map(|_| endpoints.pick()).collect();
        assert_eq!(picked.len(), 3);
        // A jumbo address appears: the known-standard one is replaced by the address DNS
        // now also returns, and no longer picked.
        served.store(4, Ordering::Relaxed);
        endpoints.record_segment(addr(2), 8949);
        assert_eq!(endpoints.addresses(), vec![addr(4), addr(2), addr(3)]);
        assert_eq!(endpoints.jumbo_addresses(), vec![addr(2)]);
        // addr(3) turns out standard and DNS has nothing new: it stays but is skipped.
        endpoints.record_segment(addr(3), 1448);
        let picked: std::collections::HashSet<_> = (0..8).map(|_| endpoints.pick()).collect();
        assert_eq!(picked, [addr(4), addr(2)].into_iter().collect());
        // Once the new address is measured as jumbo too, both jumbo addresses share.
        endpoints.record_segment(addr(4), 8949);
        let picked: Vec<_> = (0..4).map(|_| endpoints.pick()).collect();
        assert!(picked.iter().all(|a| *a == addr(4) || *a == addr(2)));
        assert!(picked.contains(&addr(4)) && picked.contains(&addr(2)));
    }

    #[test]
    fn standard_frames_everywhere_change_nothing() {
        let endpoints = Endpoints::new(dns(Arc::new(AtomicUsize::new(3)))).unwrap();
        for last in 1..=3 {
            endpoints.record_segment(addr(last), 1448);
        }
        assert_eq!(endpoints.addresses(), vec![addr(1), addr(2), addr(3)]);
        let picked: std::collections::HashSet<_> = (0..6).map(|_| endpoints.pick()).collect();
        assert_eq!(picked.len(), 3);
    }

    #[test]
    fn no_address_is_an_error() {
        assert!(Endpoints::new(dns(Arc::new(AtomicUsize::new(0)))).is_err());
    }
}
