//! TLS under network faults: toxiproxy between the io_uring client and a MinIO
//! serving HTTPS cuts, slices and truncates the encrypted stream. Every fault ends in
//! exact bytes or a clear error, never short or wrong bytes.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use tessera_blob::RetrievalOptions;
use tessera_blob::s3::S3Client;
use tessera_testkit::{Direction, MinioOptions, MinioServer, Proxy, Toxic, Toxiproxy};

mod common;

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;
const BUCKET: &str = "tlsfaults";
const KEY: &str = "o.bin";

/// A TLS MinIO with one random object and a proxy in front of it.
struct Rig {
    minio: MinioServer,
    _toxiproxy: Toxiproxy,
    proxy: Proxy,
    data: Bytes,
}

impl Rig {
    async fn start(size: usize, seed: u64) -> Self {
        let minio = MinioServer::start_with(MinioOptions {
            tls: true,
            ..MinioOptions::default()
        });
        minio.create_bucket(BUCKET);
        let toxiproxy = Toxiproxy::start();
        let proxy = toxiproxy.proxy("minio-tls", minio.port());
        let rig = Self {
            minio,
            _toxiproxy: toxiproxy,
            proxy,
            data: common::random_bytes(size, seed),
        };
        let direct = rig.client_to(&rig.minio.endpoint());
        common::bounded("upload", direct.put(KEY, rig.data.clone(), false))
            .await
            .expect("upload straight to MinIO");
        rig
    }

    /// A client to `endpoint` trusting the test CA, with short stall limits and no
    /// hedging, so each fault meets the retry logic alone.
    fn client_to(&self, endpoint: &str) -> S3Client {
        let options = RetrievalOptions {
            ca_file: self.minio.ca_file().map(std::path::Path::to_path_buf),
            ..tessera_testkit::fault_retrieval_options()
        };
        S3Client::with_options(
            common::config(&self.minio, endpoint),
            BUCKET,
            options,
            Arc::default(),
        )
        .expect("a client")
    }

    /// A client through the proxy (TLS end to end: the proxy only forwards bytes).
    fn client(&self) -> S3Client {
        let endpoint = self.proxy.endpoint().replacen("http://", "https://", 1);
        self.client_to(&endpoint)
    }

    fn expected(&self, range: &Range<u64>) -> &[u8] {
        &self.data[range.start as usize..range.end as usize]
    }
}

fn ranges(size: usize, count: usize, len: usize) -> Vec<Range<u64>> {
    let stride = (size - len) / count.max(1);
    (0..count)
        .map(|i| (i * stride) as u64..(i * stride + len) as u64)
        .collect()
}

#[tokio::test]
async fn tls_records_split_into_tiny_segments_keep_the_bytes() {
    let rig = Rig::start(MIB, 51).await;
    // Handshake messages and records arrive a few bytes per receive, cut anywhere.
    rig.proxy.add(
        "slicer",
        Direction::Downstream,
        Toxic::Slicer {
            average_size: 64,
            size_variation: 60,
            delay_us: 5,
        },
    );
    let client = rig.client();
    for range in ranges(MIB, 4, 64 * KIB) {
        let got = common::bounded("GET", client.get(KEY, Some(range.clone())))
            .await
            .unwrap_or_else(|e| panic!("GET {range:?}: {e}"));
        assert!(
            got[..] == *rig.expected(&range),
            "wrong bytes for {range:?}"
        );
    }
    let (size, _) = common::bounded("HEAD", client.head(KEY)).await.unwrap();
    assert_eq!(size, MIB as u64);
}

#[tokio::test]
async fn truncated_tls_connections_are_retried_on_fresh_connections() {
    let rig = Rig::start(4 * MIB, 52).await;
    // 600 KiB per connection: a kept-alive connection is cut inside a record of its
    // third 256 KiB response; a fresh one (handshake included) carries a whole one.
    rig.proxy.add(
        "limit",
        Direction::Downstream,
        Toxic::LimitData { bytes: 600 * 1024 },
    );
    let client = rig.client();
    for range in ranges(4 * MIB, 12, 256 * KIB) {
        let got = common::bounded("GET", client.get(KEY, Some(range.clone())))
            .await
            .unwrap_or_else(|e| panic!("GET {range:?}: {e}"));
        assert!(
            got[..] == *rig.expected(&range),
            "wrong bytes for {range:?}"
        );
    }
    let stats = client.stats().snapshot();
    assert!(stats.retries > 0, "no connection was cut: {stats:?}");
    assert_eq!(stats.failures, 0, "{stats:?}");
}

#[tokio::test]
async fn a_tls_response_always_cut_short_is_a_clear_error() {
    let rig = Rig::start(2 * MIB, 53).await;
    rig.proxy.add(
        "limit",
        Direction::Downstream,
        Toxic::LimitData { bytes: 100 * 1024 },
    );
    let client = rig.client();
    let err = common::bounded("GET", client.get(KEY, Some(0..MIB as u64)))
        .await
        .expect_err("a body cut at 100 KiB cannot be delivered");
    // The close mid-record is seen as the end of the stream without close_notify.
    assert!(err.to_string().contains("truncated"), "{err}");
    let stats = client.stats().snapshot();
    assert_eq!(stats.get_requests, 4, "{stats:?}");
    assert_eq!(
        stats.bytes_received, 0,
        "short bytes were delivered: {stats:?}"
    );

    rig.proxy.remove("limit");
    for range in ranges(2 * MIB, 4, 10 * KIB) {
        let got = common::bounded("GET", client.get(KEY, Some(range.clone())))
            .await
            .unwrap();
        assert!(
            got[..] == *rig.expected(&range),
            "wrong bytes for {range:?}"
        );
    }
}

#[tokio::test]
async fn reset_tls_connections_fail_clearly_and_the_client_recovers() {
    let rig = Rig::start(MIB, 54).await;
    rig.proxy.add(
        "reset",
        Direction::Downstream,
        Toxic::ResetPeer { after_ms: 0 },
    );
    let client = rig.client();
    let err = common::bounded("GET", client.get(KEY, Some(0..1000)))
        .await
        .expect_err("every connection is reset");
    assert!(err.to_string().contains("connection reset"), "{err}");
    rig.proxy.remove("reset");
    let got = common::bounded("GET", client.get(KEY, Some(0..1000)))
        .await
        .unwrap();
    assert!(got[..] == *rig.expected(&(0..1000)));
}
