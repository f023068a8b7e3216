//! Per-query accounting scopes against a real MinIO: concurrent scopes sharing one
//! store each count exactly their own requests.

use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tessera_blob::accounting;
use tessera_blob::{Hedging, RequestStats, RetrievalOptions, StatsSnapshot, StoreFactory};
use url::Url;

mod common;

const ROUNDS: u64 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_scopes_each_count_only_their_own_requests() {
    let minio = tessera_testkit::MinioServer::start();
    minio.create_bucket("acct");
    // Hedging off: a duplicate would be counted correctly but makes the exact number
    // of GETs depend on timing.
    let options = RetrievalOptions {
        hedging: Hedging {
            enabled: false,
            ..Hedging::default()
        },
        ..RetrievalOptions::default()
    };
    let factory = StoreFactory::with_options(common::config(&minio, &minio.endpoint()), options);
    let store = factory.open(&Url::parse("s3://acct").unwrap()).unwrap();
    let data = common::random_bytes(2_000_000, 41);
    store
        .put(&Path::from("shared.bin"), PutPayload::from(data.clone()))
        .await
        .unwrap();
    let setup = factory.stats().snapshot();

    let a = Arc::new(RequestStats::default());
    let b = Arc::new(RequestStats::default());
    // A: per round one PUT of 1000 bytes, three 10 000-byte ranged GETs and a HEAD.
    let work_a = {
        let store = store.clone();
        let data = data.clone();
        accounting::scope(a.clone(), async move {
            for round in 0..ROUNDS {
                let path = Path::from(format!("a/{round}.bin"));
                store
                    .put(&path, PutPayload::from(vec![7u8; 1000]))
                    .await
                    .unwrap();
                for i in 0..3u64 {
                    let from = (round * 3 + i) * 50_000;
                    let got = store
                        .get_range(&Path::from("shared.bin"), from..from + 10_000)
                        .await
                        .unwrap();
                    assert!(got[..] == data[from as usize..from as usize + 10_000]);
                }
                store.head(&path).await.unwrap();
            }
        })
    };
    // B: per round get_ranges of two ranges 1 MB apart (two GETs), a whole-object GET
    // (one request: the object is below the first request's size) and a listing.
    let work_b = {
        let store = store.clone();
        let data = data.clone();
        accounting::scope(b.clone(), async move {
            for _ in 0..ROUNDS {
                let ranges = [0..1000, 1_500_000..1_500_500];
                let got = store
                    .get_ranges(&Path::from("shared.bin"), &ranges)
                    .await
                    .unwrap();
                assert!(got[1][..] == data[1_500_000..1_500_500]);
                let whole = store
                    .get(&Path::from("shared.bin"))
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap();
                assert!(whole == data);
                let _: Vec<_> = store
                    .list(Some(&Path::from("nothing")))
                    .try_collect()
                    .await
                    .unwrap();
            }
        })
    };
    let (ra, rb) = tokio::join!(tokio::spawn(work_a), tokio::spawn(work_b));
    ra.unwrap();
    rb.unwrap();

    let got_a = a.snapshot();
    assert_eq!(
        got_a,
        StatsSnapshot {
            get_requests: ROUNDS * 4,
            put_requests: ROUNDS,
            bytes_received: ROUNDS * 3 * 10_000,
            bytes_sent: ROUNDS * 1000,
            ..StatsSnapshot::default()
        }
    );
    let got_b = b.snapshot();
    // Listings answer XML of a size MinIO decides: counted, but not exactly predictable.
    let listing_bytes = got_b
        .bytes_received
        .saturating_sub(ROUNDS * (1000 + 500 + data.len() as u64));
    assert!(
        listing_bytes > 0 && listing_bytes < ROUNDS * 4096,
        "{got_b:?}"
    );
    assert_eq!(
        got_b,
        StatsSnapshot {
            get_requests: ROUNDS * 3,
            put_requests: ROUNDS,
            bytes_received: got_b.bytes_received,
            ..StatsSnapshot::default()
        }
    );
    // The store's own counters saw both scopes' requests and nothing else.
    let total = factory.stats().snapshot().since(&setup);
    assert_eq!(total.get_requests, got_a.get_requests + got_b.get_requests);
    assert_eq!(total.put_requests, got_a.put_requests + got_b.put_requests);
    assert_eq!(
        total.bytes_received,
        got_a.bytes_received + got_b.bytes_received
    );
    assert!(got_a.dollars(tessera_blob::Provider::Aws) > 0.0);
}

/// A spawned task counts into the scope only when it is wrapped with `inherit`, and
/// nested scopes both count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_work_counts_when_it_inherits_the_scope_and_scopes_nest() {
    let minio = tessera_testkit::MinioServer::start();
    minio.create_bucket("nest");
    let factory = StoreFactory::new(common::config(&minio, &minio.endpoint()));
    let store = factory.open(&Url::parse("s3://nest").unwrap()).unwrap();
    store
        .put(&Path::from("o"), PutPayload::from(vec![1u8; 100]))
        .await
        .unwrap();
    let outer = Arc::new(RequestStats::default());
    let inner = Arc::new(RequestStats::default());
    accounting::scope(outer.clone(), async {
        let s = store.clone();
        tokio::spawn(accounting::inherit(async move {
            s.head(&Path::from("o")).await.unwrap();
        }))
        .await
        .unwrap();
        let s = store.clone();
        tokio::spawn(async move {
            s.head(&Path::from("o")).await.unwrap();
        })
        .await
        .unwrap();
        accounting::scope(inner.clone(), async {
            store.get(&Path::from("o")).await.unwrap();
        })
        .await;
    })
    .await;
    assert_eq!(
        outer.snapshot().get_requests,
        2,
        "inherited HEAD + nested GET"
    );
    assert_eq!(inner.snapshot().get_requests, 1);
    assert_eq!(inner.snapshot().bytes_received, 100);
}
