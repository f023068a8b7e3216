//! Fetching a file's column chunks (or, with rows selected, their selected pages) ahead
//! of the decoder.
//!
//! On object storage a ranged GET takes tens of milliseconds before its first byte, so a
//! decoder that asks for the next row group only when it has finished the last one
//! idles for that long every time. A [`Readahead`] knows, once the footer is read, every
//! column chunk the scan will decode, in order; it keeps fetching them in the background
//! as long as the bytes fetched but not yet decoded stay within the budget a [`Pacer`]
//! sets (the engine's scan scheduler, which derives it from the measured retrieval and
//! processing speeds). The decoder's reads are served from those fetches when they
//! cover them and go to the store directly otherwise, so the budget changes speed,
//! never answers.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parking_lot::Mutex;

use tessera_blob::accounting;

use crate::traffic::Traffic;

/// Sets how far ahead a scan fetches and learns from what it observes.
pub trait Pacer: Send + Sync + std::fmt::Debug {
    /// Bytes a file may have fetched (or in flight) ahead of its decoder.
    fn budget(&self) -> u64;
    /// A background fetch of `bytes` took `nanos` from request to last byte.
    fn fetched(&self, bytes: u64, nanos: u64);
    /// The decoder worked `nanos` on `bytes` before asking for more.
    fn processed(&self, bytes: u64, nanos: u64);
}

/// Most column chunks one file keeps fetched ahead, whatever the budget; bounds the
/// bookkeeping per file.
const MAX_AHEAD: usize = 64;

type Fetch = Shared<BoxFuture<'static, Result<Bytes, Arc<object_store::Error>>>>;

struct Ahead {
    /// Which row group the range belongs to (entries of earlier groups are dropped once
    /// the decoder moves past them).
    group: usize,
    range: Range<u64>,
    fetch: Fetch,
}

struct State {
    planned: VecDeque<(usize, Range<u64>)>,
    ahead: VecDeque<Ahead>,
    /// When the decoder last received bytes, and how many.
    last_delivery: Option<(Instant, u64)>,
}

/// The column chunks of one file, fetched ahead within a budget.
pub struct Readahead {
    store: Arc<dyn ObjectStore>,
    key: Path,
    pacer: Arc<dyn Pacer>,
    traffic: Arc<Traffic>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Readahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readahead")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Readahead {
    /// Plans the fetch of `chunks` (row group, byte range), in decode order.
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        key: Path,
        pacer: Arc<dyn Pacer>,
        traffic: Arc<Traffic>,
        chunks: Vec<(usize, Range<u64>)>,
    ) -> Self {
        debug_assert!(
            chunks.windows(2).all(|w| w[0].0 <= w[1].0),
            "in row group order"
        );
        Self {
            store,
            key,
            pacer,
            traffic,
            state: Mutex::new(State {
                planned: chunks.into(),
                ahead: VecDeque::new(),
                last_delivery: None,
            }),
        }
    }

    /// Starts fetches while the bytes ahead stay within the budget (at least one).
    fn pump(&self, state: &mut State) {
        let budget = self.pacer.budget();
        let mut ahead: u64 = state
            .ahead
            .iter()
            .map(|a| a.range.end - a.range.start)
            .sum();
        while let Some((_, next)) = state.planned.front() {
            let size = next.end - next.start;
            let room = state.ahead.is_empty() || ahead + size <= budget;
            if !room || state.ahead.len() >= MAX_AHEAD {
                break;
            }
            let (group, range) = state.planned.pop_front().expect("a planned chunk");
            let store = Arc::clone(&self.store);
            let key = self.key.clone();
            let pacer = Arc::clone(&self.pacer);
            let traffic = Arc::clone(&self.traffic);
            let request = range.clone();
            let task = tokio::spawn(async move {
                let started = Instant::now();
                let counted = Arc::clone(&traffic.store);
                let bytes = accounting::scope(counted, store.get_range(&key, request)).await?;
                traffic.count(1, bytes.len() as u64);
                pacer.fetched(bytes.len() as u64, started.elapsed().as_nanos() as u64);
                Ok(bytes)
            });
            let fetch = async move {
                match task.await {
                    Ok(result) => result.map_err(Arc::new),
                    Err(join) => Err(Arc::new(object_store::Error::Generic {
                        store: "readahead",
                        source: Box::new(join),
                    })),
                }
            }
            .boxed()
            .shared();
            ahead += size;
            state.ahead.push_back(Ahead {
                group,
                range,
                fetch,
            });
        }
    }

    /// For each of `ranges`, its bytes if a fetch ahead covers it (`None`: read it
    /// directly). One call is one request of the decoder: the time since the previous
    /// one was spent decoding what that one delivered.
    pub(crate) async fn take(
        &self,
        ranges: &[Range<u64>],
    ) -> Vec<Option<Result<Bytes, Arc<object_store::Error>>>> {
        let hits: Vec<Option<(u64, Fetch)>> = {
            let mut state = self.state.lock();
            if let Some((at, bytes)) = state.last_delivery.take() {
                self.pacer.processed(bytes, at.elapsed().as_nanos() as u64);
            }
            let hits: Vec<Option<(usize, u64, Fetch)>> = ranges
                .iter()
                .map(|range| {
                    state
                        .ahead
                        .iter()
                        .find(|a| a.range.start <= range.start && range.end <= a.range.end)
                        .map(|a| (a.group, a.range.start, a.fetch.clone()))
                })
                .collect();
            if let Some(group) = hits.iter().flatten().map(|(g, _, _)| *g).min() {
                state.ahead.retain(|a| a.group >= group);
            }
            self.pump(&mut state);
            hits.into_iter()
                .map(|h| h.map(|(_, start, fetch)| (start, fetch)))
                .collect()
        };
        let mut out = Vec::with_capacity(ranges.len());
        for (range, hit) in ranges.iter().zip(hits) {
            out.push(match hit {
                Some((start, fetch)) => Some(fetch.await.map(|bytes| {
                    let from = (range.start - start) as usize;
                    bytes.slice(from..from + (range.end - range.start) as usize)
                })),
                None => None,
            });
        }
        out
    }

    /// The decoder received `bytes` (from fetches ahead or directly) just now.
    pub(crate) fn delivered(&self, bytes: u64) {
        self.state.lock().last_delivery = Some((Instant::now(), bytes));
    }

    /// Starts the first fetches.
    pub(crate) fn start(&self) {
        let mut state = self.state.lock();
        self.pump(&mut state);
    }
}
