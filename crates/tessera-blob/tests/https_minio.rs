//! The io_uring client over HTTPS against a real MinIO serving TLS with a certificate
//! from a test CA.

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use tessera_blob::{RetrievalOptions, StoreFactory};
use tessera_testkit::{MinioOptions, MinioServer, TestCa};
use url::Url;

mod common;

fn tls_minio() -> MinioServer {
    MinioServer::start_with(MinioOptions {
        tls: true,
        ..MinioOptions::default()
    })
}

/// A factory for `minio` trusting the CAs in `ca_file` (the system store when `None`).
fn factory(minio: &MinioServer, ca_file: Option<&std::path::Path>) -> StoreFactory {
    let options = RetrievalOptions {
        ca_file: ca_file.map(std::path::Path::to_path_buf),
        ..RetrievalOptions::default()
    };
    StoreFactory::with_options(common::config(minio, &minio.endpoint()), options)
}

/// Every operation Tessera issues works over TLS through the default store, with
/// exact bytes, and is served by tessera-blob (its counters move) rather than by the
/// object_store client.
#[tokio::test]
async fn https_gets_ranges_head_put_multipart_list_and_delete() {
    let minio = tls_minio();
    assert!(minio.endpoint().starts_with("https://"));
    minio.create_bucket("secure");
    let factory = factory(&minio, minio.ca_file());
    let store = factory.open(&Url::parse("s3://secure").unwrap()).unwrap();

    // 3 MiB and a bit: several TLS records and receive buffers per body.
    let data = common::random_bytes(3 * 1024 * 1024 + 4321, 5);
    let path = Path::from("t/data.bin");
    store
        .put(&path, PutPayload::from(data.clone()))
        .await
        .unwrap();
    let whole = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert!(whole == data, "whole GET over TLS differs");
    let range = store.get_range(&path, 1_000_001..2_500_000).await.unwrap();
    assert!(
        range[..] == data[1_000_001..2_500_000],
        "ranged GET differs"
    );
    let ranges = [0..10, 17..1_048_593, 3_000_000..3_145_728 + 4321];
    let got = store.get_ranges(&path, &ranges).await.unwrap();
    for (r, g) in ranges.iter().zip(&got) {
        assert!(
            g[..] == data[r.start as usize..r.end as usize],
            "range {r:?} differs"
        );
    }
    assert_eq!(store.head(&path).await.unwrap().size, data.len() as u64);

    let big = common::random_bytes(11 * 1024 * 1024 + 3, 6);
    let big_path = Path::from("t/big.bin");
    let upload = store.put_multipart(&big_path).await.unwrap();
    let mut writer = WriteMultipart::new_with_chunk_size(upload, 5 * 1024 * 1024);
    for chunk in big.chunks(999_999) {
        writer.write(chunk);
    }
    writer.finish().await.unwrap();
    let got = store.get(&big_path).await.unwrap().bytes().await.unwrap();
    assert!(got == big, "multipart object over TLS differs");

    let mut listed: Vec<(String, u64)> = store
        .list(Some(&Path::from("t")))
        .map(|m| m.map(|m| (m.location.to_string(), m.size)))
        .try_collect()
        .await
        .unwrap();
    listed.sort();
    assert_eq!(
        listed,
        vec![
            ("t/big.bin".to_string(), big.len() as u64),
            ("t/data.bin".to_string(), data.len() as u64)
        ]
    );
    store.delete(&path).await.unwrap();
    let err = store.head(&path).await.unwrap_err();
    assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");

    let stats = factory.stats().snapshot();
    assert!(
        stats.get_requests + stats.put_requests >= 10
            && stats.bytes_received >= (data.len() + big.len()) as u64,
        "tessera-blob served the requests: {stats:?}"
    );
}

/// A server whose certificate the client cannot verify — signed by another CA, or by
/// a CA the system store does not hold — fails at once (no retries) with one sentence
/// that says so and names no secret.
#[tokio::test]
async fn an_untrusted_certificate_is_one_clear_sentence() {
    let minio = tls_minio();
    minio.create_bucket("secure");
    let other = tempfile::tempdir().unwrap();
    let wrong = TestCa::create(other.path(), "Some other CA");
    for ca in [Some(wrong.cert_file()), None] {
        let factory = factory(&minio, ca.as_deref());
        let store = factory.open(&Url::parse("s3://secure").unwrap()).unwrap();
        let err = store.head(&Path::from("any")).await.unwrap_err();
        let sentence = factory.explain(&err);
        assert!(
            sentence.contains("TLS certificate")
                && sentence.contains(&minio.endpoint())
                && sentence.contains("AWS_CA_BUNDLE"),
            "{sentence}"
        );
        assert!(!sentence.contains('\n'), "{sentence}");
        let secret = &minio.credentials().secret_access_key;
        assert!(!sentence.contains(secret.as_str()), "{sentence}");
        assert_eq!(factory.stats().snapshot().retries, 0, "{ca:?}");
    }
}
