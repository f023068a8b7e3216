//! The small requested-region (RR) cache: LRU-2 admission and eviction.
//!
//! "Crystal: A Unified Cache Storage System for Analytical Databases" (Sections
//! 2.1, 4.7) keeps a small eager cache for short-term bursts and found it best to
//! cache a region only on its second (k-th) occurrence: one-off requests then do
//! not churn the cache. We implement LRU-k with k = 2: a request is admitted when
//! its fingerprint occurs earlier in a bounded history of misses; eviction removes
//! the region whose second-to-last access is oldest (largest backward 2-distance).
//! The cache is bounded in bytes; evicted regions are returned so the caller can
//! delete their files.

use std::collections::{BTreeMap, VecDeque};

use crate::semantic::cover::RegionIndex;
use crate::semantic::region::{Region, RegionId, Request, RequestKey};

/// Default length of the miss history consulted for admission.
pub const REQUESTED_HISTORY_LEN_DEFAULT: usize = 64;

/// Admission decision for a missed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Second occurrence: materialize the region and call [`RequestedCache::insert`].
    Admit(AdmitTicket),
    /// First occurrence within the history: do not cache yet.
    Wait,
}

/// Proof of admission carrying the two access ticks LRU-2 needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmitTicket {
    previous_tick: u64,
    tick: u64,
}

#[derive(Debug, Clone, Copy)]
struct Access {
    previous_tick: u64,
    last_tick: u64,
}

/// LRU-2 requested-region cache bounded by `bytes_max`.
#[derive(Debug, Clone)]
pub struct RequestedCache {
    bytes_max: u64,
    history_len_max: usize,
    history: VecDeque<(RequestKey, u64)>,
    regions: RegionIndex,
    access: BTreeMap<RegionId, (Access, u64)>,
    used_bytes: u64,
    tick: u64,
}

impl RequestedCache {
    /// An empty cache of at most `bytes_max` bytes, remembering the last
    /// `history_len_max` misses for admission.
    pub fn new(bytes_max: u64, history_len_max: usize) -> Self {
        assert!(history_len_max >= 1, "LRU-2 needs a history");
        RequestedCache {
            bytes_max,
            history_len_max,
            history: VecDeque::with_capacity(history_len_max),
            regions: RegionIndex::new(),
            access: BTreeMap::new(),
            used_bytes: 0,
            tick: 0,
        }
    }

    /// Records a miss and decides admission: admit on the second occurrence
    /// of the same request key within the history.
    pub fn observe_miss(&mut self, request: &Request) -> Admission {
        self.tick += 1;
        let key = request.key();
        let previous = self
            .history
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, t)| *t);
        if self.history.len() == self.history_len_max {
            self.history.pop_front();
        }
        self.history.push_back((key, self.tick));
        match previous {
            Some(previous_tick) => Admission::Admit(AdmitTicket {
                previous_tick,
                tick: self.tick,
            }),
            None => Admission::Wait,
        }
    }

    /// Records a hit on a cached region (updates its two access ticks).
    /// Returns false if the region is not cached.
    pub fn record_hit(&mut self, id: RegionId) -> bool {
        self.tick += 1;
        let tick = self.tick;
        match self.access.get_mut(&id) {
            Some((a, _)) => {
                a.previous_tick = a.last_tick;
                a.last_tick = tick;
                true
            }
            None => false,
        }
    }

    /// Inserts an admitted region, evicting by LRU-2 until it fits. Returns the
    /// evicted regions (delete their files), or gives the region back if it
    /// alone exceeds `bytes_max`.
    pub fn insert(&mut self, region: Region, ticket: AdmitTicket) -> Result<Vec<Region>, Region> {
        assert!(ticket.tick <= self.tick, "ticket from another cache");
        assert!(
            !self.access.contains_key(&region.id),
            "region ids must be unique"
        );
        if region.bytes > self.bytes_max {
            return Err(region);
        }
        let mut evicted = Vec::new();
        while self.used_bytes + region.bytes > self.bytes_max {
            let victim = self
                .victim()
                .expect("used bytes > 0 implies a resident region");
            evicted.push(self.remove(victim).expect("victim is resident"));
        }
        let access = Access {
            previous_tick: ticket.previous_tick,
            last_tick: ticket.tick,
        };
        self.used_bytes += region.bytes;
        self.access.insert(region.id, (access, region.bytes));
        self.regions.insert(region);
        assert!(self.used_bytes <= self.bytes_max, "RR cache over budget");
        Ok(evicted)
    }

    /// Inserts a region found on disk at startup (materialized by an earlier process),
    /// as if admitted now: it has no miss history here, and ranking it as just
    /// accessed twice keeps a restart from evicting what the last run found useful
    /// before new regions compete with it. Same result as [`RequestedCache::insert`].
    pub fn restore(&mut self, region: Region) -> Result<Vec<Region>, Region> {
        self.tick += 1;
        let ticket = AdmitTicket {
            previous_tick: self.tick,
            tick: self.tick,
        };
        self.insert(region, ticket)
    }

    /// The resident region with the oldest second-to-last access.
    fn victim(&self) -> Option<RegionId> {
        self.access
            .iter()
            .min_by_key(|(id, (a, _))| (a.previous_tick, a.last_tick, **id))
            .map(|(id, _)| *id)
    }

    /// Removes a region (e.g. handed over to the oracle cache, or covered by it).
    pub fn remove(&mut self, id: RegionId) -> Option<Region> {
        let (_, bytes) = self.access.remove(&id)?;
        self.used_bytes -= bytes;
        let region = self.regions.remove(id);
        assert!(region.is_some(), "index and access map agree");
        region
    }

    /// The resident regions, indexed for [`crate::semantic::cover::cover`].
    pub fn index(&self) -> &RegionIndex {
        &self.regions
    }

    /// Bytes currently charged.
    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    /// The byte budget.
    pub fn bytes_max(&self) -> u64 {
        self.bytes_max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::dnf::Dnf;
    use crate::semantic::normalize::NormalizeLimits;
    use crate::semantic::predicate::{CmpOp, ColumnId, Predicate, Value};

    fn request(v: i128) -> Request {
        let p = Predicate::Compare {
            column: ColumnId::new("x"),
            op: CmpOp::Eq,
            value: Value::Int(v),
        };
        Request {
            table: "t".into(),
            version: 1,
            predicate: Dnf::from_predicate(&p, &NormalizeLimits::default()).unwrap(),
            columns: [ColumnId::new("x")].into(),
        }
    }

    fn region(id: u64, r: &Request, bytes: u64) -> Region {
        Region {
            id: RegionId(id),
            table: r.table.clone(),
            version: r.version,
            predicate: r.predicate.clone(),
            columns: r.columns.clone(),
            rows: 1,
            bytes,
        }
    }

    fn admit(cache: &mut RequestedCache, r: &Request) -> AdmitTicket {
        match cache.observe_miss(r) {
            Admission::Admit(t) => t,
            Admission::Wait => panic!("expected admission"),
        }
    }

    #[test]
    fn admitted_on_second_request_only() {
        let mut cache = RequestedCache::new(100, 4);
        assert_eq!(cache.observe_miss(&request(1)), Admission::Wait);
        assert_eq!(cache.observe_miss(&request(2)), Admission::Wait);
        assert!(matches!(
            cache.observe_miss(&request(1)),
            Admission::Admit(_)
        ));
    }

    #[test]
    fn history_is_bounded() {
        let mut cache = RequestedCache::new(100, 2);
        cache.observe_miss(&request(1));
        cache.observe_miss(&request(2));
        cache.observe_miss(&request(3));
        assert_eq!(
            cache.observe_miss(&request(1)),
            Admission::Wait,
            "first occurrence fell out"
        );
    }

    #[test]
    fn evicts_oldest_second_to_last_access() {
        let mut cache = RequestedCache::new(100, 16);
        let (a, b, c) = (request(1), request(2), request(3));
        cache.observe_miss(&a);
        cache.observe_miss(&b);
        let ta = admit(&mut cache, &a);
        let tb = admit(&mut cache, &b);
        assert!(cache.insert(region(1, &a, 50), ta).unwrap().is_empty());
        assert!(cache.insert(region(2, &b, 50), tb).unwrap().is_empty());
        // Two more hits on a make its second-to-last access recent.
        cache.record_hit(RegionId(1));
        cache.record_hit(RegionId(1));
        cache.observe_miss(&c);
        let tc = admit(&mut cache, &c);
        let evicted = cache.insert(region(3, &c, 40), tc).unwrap();
        assert_eq!(
            evicted.iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![RegionId(2)]
        );
        assert_eq!(cache.used_bytes(), 90);
        assert!(
            cache.insert(region(4, &c, 101), tc).is_err(),
            "larger than the cache"
        );
    }

    #[test]
    fn restored_regions_count_against_the_budget() {
        let mut cache = RequestedCache::new(100, 4);
        assert!(
            cache
                .restore(region(1, &request(1), 60))
                .unwrap()
                .is_empty()
        );
        let evicted = cache.restore(region(2, &request(2), 60)).unwrap();
        assert_eq!(
            evicted.iter().map(|r| r.id).collect::<Vec<_>>(),
            [RegionId(1)]
        );
        assert_eq!(cache.used_bytes(), 60);
        assert!(cache.restore(region(3, &request(3), 101)).is_err());
    }
}
