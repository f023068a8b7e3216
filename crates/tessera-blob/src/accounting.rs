//! Per-query accounting: the requests, bytes, retries, hedges and dollars of only the
//! work a caller started, while other queries share the same stores and retriever
//! threads.
//!
//! A store's own [`RequestStats`] (from [`crate::StoreFactory::stats`]) count every
//! request of every query. To count one query's share, run its work inside
//! [`scope`]: every request an io_uring store sends while polled inside the scope —
//! GET, ranged and split GETs with their hedges and retries, HEAD, PUT, multipart
//! parts, listings, deletes — is also counted into the scope's `RequestStats`. The
//! retriever threads do the network work, but requests are counted by the async
//! caller that awaits them, so work done on those threads for the scope's requests is
//! counted in the scope. Scopes nest: a request counts into every enclosing scope.
//!
//! A tokio task-local does not follow `tokio::spawn`: wrap futures spawned on behalf
//! of the scope with [`inherit`] (for example the partition streams an engine drives on
//! other tasks).
//!
//! ```
//! use std::sync::Arc;
//! use tessera_blob::accounting;
//! use tessera_blob::{Provider, RequestStats};
//!
//! # async fn run(store: Arc<dyn object_store::ObjectStore>) -> object_store::Result<()> {
//! use object_store::ObjectStoreExt;
//! let query = Arc::new(RequestStats::default());
//! let bytes = accounting::scope(query.clone(), async {
//!     store.get_range(&"data/part-0.parquet".into(), 0..4096).await
//! })
//! .await?;
//! let own = query.snapshot();
//! println!(
//!     "{} GETs, {} bytes, {} retries, {} hedges ({} won), ${:.6}",
//!     own.get_requests,
//!     own.bytes_received,
//!     own.retries,
//!     own.hedges,
//!     own.hedges_won,
//!     own.dollars(Provider::Aws)
//! );
//! # let _ = bytes;
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::sync::Arc;

use crate::stats::RequestStats;

/// Most nested scopes one request counts into; deeper scopes are not counted, so a
/// runaway recursion cannot make every request walk an unbounded list.
const MAX_DEPTH: usize = 8;

tokio::task_local! {
    static SCOPES: Arc<Vec<Arc<RequestStats>>>;
}

/// Runs `future` with every io_uring store request it makes also counted into
/// `stats` (and into any enclosing scope's counters).
pub async fn scope<F: Future>(stats: Arc<RequestStats>, future: F) -> F::Output {
    let mut chain: Vec<Arc<RequestStats>> = current().map(|c| c.to_vec()).unwrap_or_default();
    if chain.len() < MAX_DEPTH && !chain.iter().any(|s| Arc::ptr_eq(s, &stats)) {
        chain.push(stats);
    }
    SCOPES.scope(Arc::new(chain), future).await
}

/// `future` carrying the scopes active where `inherit` is called, for handing to
/// `tokio::spawn` (task-locals do not cross spawns on their own).
pub fn inherit<F: Future>(future: F) -> impl Future<Output = F::Output> {
    let scopes = current();
    async move {
        match scopes {
            Some(scopes) => SCOPES.scope(scopes, future).await,
            None => future.await,
        }
    }
}

/// The counters of the scopes the current task is polled in.
fn current() -> Option<Arc<Vec<Arc<RequestStats>>>> {
    SCOPES.try_with(Arc::clone).ok()
}

/// Applies `count` to `own` (a store's counters) and to every active scope's counters
/// that is not `own` itself.
pub(crate) fn count(own: &RequestStats, count: impl Fn(&RequestStats)) {
    count(own);
    if let Some(scopes) = current() {
        for stats in scopes.iter() {
            if !std::ptr::eq(Arc::as_ptr(stats), own) {
                count(stats);
            }
        }
    }
}
