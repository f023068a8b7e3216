//! The io_uring S3 client through toxiproxy in front of MinIO: every injected fault
//! ends in the exact bytes of the object or in a clear error, never in wrong or short
//! bytes and never in a hang.

use std::net::{Ipv4Addr, SocketAddr};
use std::ops::Range;
use std::time::Duration;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use tessera_blob::endpoints::Endpoints;
use tessera_blob::s3::{ClientParts, S3Client};
use tessera_blob::uring_store::UringS3Store;
use tessera_blob::{Hedging, RetrievalOptions, S3ClientKind, StoreFactory};
use tessera_testkit::{Direction, MinioServer, Proxy, Toxic, Toxiproxy, fault_retrieval_options};

mod common;
use common::{bounded, random_bytes};

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;
const BUCKET: &str = "faults";
const KEY: &str = "data/object.bin";

/// MinIO with one random object, toxiproxy, and a proxy in front of MinIO.
struct Rig {
    minio: MinioServer,
    _toxiproxy: Toxiproxy,
    proxy: Proxy,
    data: Bytes,
}

impl Rig {
    async fn start(size: usize, seed: u64) -> Self {
        let minio = MinioServer::start();
        minio.create_bucket(BUCKET);
        let data = random_bytes(size, seed);
        let toxiproxy = Toxiproxy::start();
        let proxy = toxiproxy.proxy("minio", minio.port());
        let rig = Self {
            minio,
            _toxiproxy: toxiproxy,
            proxy,
            data,
        };
        let direct = common::direct(&rig.minio, BUCKET);
        bounded("upload", direct.put(KEY, rig.data.clone(), false))
            .await
            .expect("upload straight to MinIO");
        rig
    }

    /// A client through the proxy with short stall limits, hedging off unless asked.
    fn client(&self, options: RetrievalOptions) -> S3Client {
        common::client(&self.minio, &self.proxy.endpoint(), BUCKET, options)
    }

    /// Adds a toxic to the responses of every connection through the proxy.
    fn toxic(&self, name: &str, toxic: Toxic) {
        self.proxy.add(name, Direction::Downstream, toxic);
    }

    fn expected(&self, range: &Range<u64>) -> &[u8] {
        &self.data[range.start as usize..range.end as usize]
    }
}

/// Closes each connection after `kib` KiB of responses.
fn limit_kib(kib: u64) -> Toxic {
    Toxic::LimitData { bytes: kib * 1024 }
}

/// `count` ranges of `len` bytes spread over an object of `size` bytes.
fn ranges(size: usize, count: usize, len: usize) -> Vec<Range<u64>> {
    let stride = (size - len) / count.max(1);
    (0..count)
        .map(|i| (i * stride) as u64..(i * stride + len) as u64)
        .collect()
}

/// Fetches every range concurrently and asserts each is byte-exact.
async fn assert_exact(rig: &Rig, client: &S3Client, ranges: &[Range<u64>]) {
    let gets = ranges.iter().map(|r| client.get(KEY, Some(r.clone())));
    let results = bounded("concurrent GETs", futures::future::join_all(gets)).await;
    for (range, got) in ranges.iter().zip(results) {
        let got = got.unwrap_or_else(|e| panic!("GET {range:?}: {e}"));
        assert!(got[..] == *rig.expected(range), "wrong bytes for {range:?}");
    }
}

#[tokio::test]
async fn added_latency_delays_but_keeps_the_bytes() {
    let rig = Rig::start(4 * MIB, 1).await;
    rig.toxic(
        "latency",
        Toxic::Latency {
            latency_ms: 40,
            jitter_ms: 10,
        },
    );
    let client = rig.client(fault_retrieval_options());
    assert_exact(&rig, &client, &ranges(4 * MIB, 16, 200 * KIB)).await;
    let whole = bounded("whole GET", client.get(KEY, None)).await.unwrap();
    assert!(whole == rig.data, "whole object differs");
}

#[tokio::test]
async fn a_per_connection_bandwidth_cap_keeps_the_bytes() {
    let rig = Rig::start(4 * MIB, 2).await;
    rig.toxic(
        "bandwidth",
        Toxic::Bandwidth {
            kib_per_second: 4096,
        },
    );
    let client = rig.client(fault_retrieval_options());
    assert_exact(&rig, &client, &ranges(4 * MIB, 8, 512 * KIB)).await;
}

#[tokio::test]
async fn responses_sliced_into_tiny_segments_keep_the_bytes() {
    let rig = Rig::start(MIB, 3).await;
    // Heads and bodies arrive a few bytes per receive, split at arbitrary places.
    rig.toxic(
        "slicer",
        Toxic::Slicer {
            average_size: 64,
            size_variation: 60,
            delay_us: 5,
        },
    );
    let client = rig.client(fault_retrieval_options());
    assert_exact(&rig, &client, &ranges(MIB, 4, 64 * KIB)).await;
    let (size, _) = bounded("HEAD", client.head(KEY)).await.unwrap();
    assert_eq!(size, MIB as u64);
}

#[tokio::test]
async fn truncated_connections_are_retried_on_fresh_connections() {
    let rig = Rig::start(4 * MIB, 4).await;
    // Each connection carries 600 KiB, so a kept-alive connection is cut in the middle
    // of its third 256 KiB response; a fresh connection always carries a whole one.
    rig.toxic("limit", limit_kib(600));
    let client = rig.client(fault_retrieval_options());
    for range in ranges(4 * MIB, 12, 256 * KIB) {
        let got = bounded("GET", client.get(KEY, Some(range.clone())))
            .await
            .unwrap_or_else(|e| panic!("GET {range:?}: {e}"));
        assert!(
            got[..] == *rig.expected(&range),
            "wrong bytes for {range:?}"
        );
    }
    let stats = client.stats().snapshot();
    assert!(stats.retries > 0, "no connection was cut: {stats:?}");
    assert_eq!(stats.failures, 0);
}

#[tokio::test]
async fn a_response_always_cut_short_is_a_clear_error() {
    let rig = Rig::start(2 * MIB, 5).await;
    rig.toxic("limit", limit_kib(100));
    let options = fault_retrieval_options();
    let attempts = u64::from(options.max_attempts);
    let client = rig.client(options);
    let err = bounded("GET", client.get(KEY, Some(0..MIB as u64)))
        .await
        .expect_err("a body cut at 100 KiB cannot be delivered");
    assert!(err.to_string().contains("truncated"), "{err}");
    let stats = client.stats().snapshot();
    assert_eq!(stats.get_requests, attempts, "{stats:?}");
    assert_eq!(stats.failures, 1);
    assert!(
        stats.bytes_received == 0,
        "short bytes were delivered: {stats:?}"
    );

    // Small responses fit under the limit and stay exact.
    rig.proxy.remove("limit");
    assert_exact(&rig, &client, &ranges(2 * MIB, 4, 10 * KIB)).await;
}

#[tokio::test]
async fn reset_connections_fail_clearly_and_the_client_recovers() {
    let rig = Rig::start(MIB, 6).await;
    let client = rig.client(fault_retrieval_options());
    // Kept-alive connections exist before the fault.
    assert_exact(&rig, &client, &ranges(MIB, 4, 10 * KIB)).await;
    rig.toxic("reset", Toxic::ResetPeer { after_ms: 0 });
    let err = bounded("GET", client.get(KEY, Some(0..1000)))
        .await
        .expect_err("every connection is reset");
    let text = err.to_string().to_lowercase();
    assert!(
        text.contains("reset") || text.contains("closed"),
        "not a clear connection error: {err}"
    );
    rig.proxy.remove("reset");
    assert_exact(&rig, &client, &ranges(MIB, 8, 100 * KIB)).await;
}

#[tokio::test]
async fn a_stalled_connection_times_out_and_the_client_recovers() {
    let rig = Rig::start(MIB, 7).await;
    let client = rig.client(fault_retrieval_options());
    // No data moves and the connection stays open: only the stall limit ends it.
    rig.toxic("stall", Toxic::Timeout { close_after_ms: 0 });
    let err = bounded("GET", client.get(KEY, Some(0..1000)))
        .await
        .expect_err("a stalled connection delivers nothing");
    assert!(err.to_string().contains("timed out"), "{err}");
    rig.proxy.remove("stall");
    assert_exact(&rig, &client, &ranges(MIB, 4, 100 * KIB)).await;
}

#[tokio::test]
async fn faults_through_the_store_end_in_one_sentence() {
    let rig = Rig::start(64 * KIB, 8).await;
    let factory = StoreFactory::with_options(
        common::config(&rig.minio, &rig.proxy.endpoint()),
        fault_retrieval_options(),
    );
    let store = factory.open_s3(BUCKET, S3ClientKind::Uring).unwrap();
    let path = Path::from(KEY);
    rig.toxic("stall", Toxic::Timeout { close_after_ms: 0 });
    let err = bounded("get_range", store.get_range(&path, 0..10))
        .await
        .unwrap_err();
    let sentence = factory.explain(&err);
    assert!(
        sentence.starts_with("cannot reach the S3 endpoint") && sentence.contains("timed out"),
        "{sentence}"
    );
    rig.proxy.remove("stall");
    rig.proxy.set_enabled(false);
    let err = bounded("head", store.head(&path)).await.unwrap_err();
    assert!(
        factory.explain(&err).ends_with("connection refused"),
        "{}",
        factory.explain(&err)
    );
    rig.proxy.set_enabled(true);
    let got = bounded(
        "get_ranges",
        store.get_ranges(&path, &[0..10, 30_000..40_000]),
    )
    .await
    .unwrap();
    assert!(got[1][..] == rig.data[30_000..40_000]);
}

/// Two addresses of one endpoint (two proxies on 127.0.0.1 and 127.0.0.2, same port):
/// requests alternate between them; when one stalls, hedges to the other win and the
/// bytes stay exact.
#[tokio::test]
async fn hedges_rescue_requests_on_a_stalled_address() {
    let minio = MinioServer::start();
    minio.create_bucket(BUCKET);
    let data = random_bytes(2 * MIB, 9);
    common::direct(&minio, BUCKET)
        .put(KEY, data.clone(), false)
        .await
        .unwrap();
    let toxiproxy = Toxiproxy::start();
    let first = toxiproxy.proxy("first", minio.port());
    let second = toxiproxy.proxy_at(
        "second",
        Ipv4Addr::new(127, 0, 0, 2),
        first.port(),
        minio.port(),
    );
    let addresses: Vec<SocketAddr> = vec![first.addr(), second.addr()];
    let endpoints = Endpoints::new(Box::new(move || Ok(addresses.clone()))).unwrap();
    let options = RetrievalOptions {
        // Only a hedge can rescue a request: the stall limit is beyond the hang guard.
        stall_timeout: common::HANG_GUARD * 2,
        hedging: Hedging {
            enabled: true,
            percentile: 0.9,
            min_samples: 8,
            min_delay: Duration::from_millis(50),
        },
        ..fault_retrieval_options()
    };
    let parts = ClientParts {
        endpoints: Some(endpoints),
        ..ClientParts::default()
    };
    let client = S3Client::with_parts(
        common::config(&minio, &first.endpoint()),
        BUCKET,
        options,
        parts,
    )
    .unwrap();
    let range = 0..256 * KIB as u64;
    for _ in 0..16 {
        let got = bounded("warm-up GET", client.get(KEY, Some(range.clone())))
            .await
            .unwrap();
        assert!(got[..] == data[..range.end as usize]);
    }
    assert_eq!(client.stats().snapshot().hedges, 0);

    first.add(
        "stall",
        Direction::Downstream,
        Toxic::Timeout { close_after_ms: 0 },
    );
    for i in 0..4u64 {
        let range = i * 100_000..i * 100_000 + 256 * KIB as u64;
        let got = bounded("hedged GET", client.get(KEY, Some(range.clone())))
            .await
            .unwrap();
        assert!(got[..] == data[range.start as usize..range.end as usize]);
    }
    let stats = client.stats().snapshot();
    assert!(stats.hedges_won >= 1, "no hedge won: {stats:?}");
    assert_eq!(stats.failures, 0);
}

/// The store's accounting counts requests, bytes and dollars of what it fetched.
#[tokio::test]
async fn the_store_accounts_for_requests_and_bytes() {
    let rig = Rig::start(42 * MIB, 10).await;
    let client = rig.client(fault_retrieval_options());
    let stats = client.stats().clone();
    let store = UringS3Store::new(
        client,
        StoreFactory::new(common::config(&rig.minio, &rig.minio.endpoint()))
            .open_s3(BUCKET, S3ClientKind::ObjectStore)
            .unwrap(),
        BUCKET,
    );
    let path = Path::from(KEY);
    let before = stats.snapshot();
    // One 40 MiB range becomes three requests of 8-16 MiB; two close neighbours one.
    let near = 41 * MIB as u64;
    let ranges = [0..40 * MIB as u64, near..near + 100, near + 300..near + 400];
    let got = bounded("get_ranges", store.get_ranges(&path, &ranges))
        .await
        .unwrap();
    for (range, bytes) in ranges.iter().zip(&got) {
        assert!(
            bytes[..] == *rig.expected(range),
            "wrong bytes for {range:?}"
        );
    }
    let delta = stats.snapshot().since(&before);
    assert_eq!(delta.get_requests, 4, "{delta:?}");
    assert_eq!(delta.bytes_received, 40 * MIB as u64 + 400);
    let dollars = delta.dollars(tessera_blob::Provider::Aws);
    assert!((dollars - 4.0 * 0.4e-6).abs() < 1e-12, "{dollars}");
}

/// A create-only PUT whose answer is lost (the request reached MinIO, the response was
/// cut) is not sent again: a second attempt would fail its own condition and report
/// the write as someone else's. The caller gets a transport error and the object holds
/// what it wrote.
#[tokio::test]
async fn a_create_only_put_whose_answer_is_lost_is_not_retried_into_a_false_conflict() {
    let rig = Rig::start(KIB, 13).await;
    let client = rig.client(fault_retrieval_options());
    rig.toxic("limit", limit_kib(0));
    let body = random_bytes(10 * KIB, 14);
    let err = bounded(
        "create-only PUT",
        client.put("commit/0001", body.clone(), true),
    )
    .await
    .expect_err("the answer never arrives");
    assert!(
        matches!(err, tessera_blob::s3::S3Error::Transport(_)),
        "not a transport error: {err}"
    );
    rig.proxy.remove("limit");
    let stored = bounded("GET", client.get("commit/0001", None))
        .await
        .unwrap();
    assert!(stored == body, "the object does not hold the write");
    assert_eq!(client.stats().snapshot().retries, 0);
}
