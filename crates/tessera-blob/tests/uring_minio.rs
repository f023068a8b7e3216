//! The io_uring S3 client against a real MinIO.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use tessera_blob::s3::{S3Client, S3Error};
use tessera_blob::{S3Config, S3Overrides};
use tessera_testkit::MinioServer;

mod common;

fn client(minio: &MinioServer, bucket: &str) -> S3Client {
    common::direct(minio, bucket)
}

#[tokio::test]
async fn put_get_range_head_delete_and_conditional_put() {
    let minio = MinioServer::start();
    minio.create_bucket("uring");
    let s3 = client(&minio, "uring");
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    s3.put("dir/obj", Bytes::from(data.clone()), false)
        .await
        .unwrap();

    assert_eq!(&s3.get("dir/obj", None).await.unwrap()[..], &data[..]);
    assert_eq!(
        &s3.get("dir/obj", Some(10..100_010)).await.unwrap()[..],
        &data[10..100_010]
    );
    let (size, etag) = s3.head("dir/obj").await.unwrap();
    assert_eq!(size, data.len() as u64);
    assert!(etag.is_some());

    // Many concurrent ranges share the one ring.
    let gets = (0..64u64).map(|i| s3.get("dir/obj", Some(i * 40_000..i * 40_000 + 30_000)));
    for (i, got) in futures::future::join_all(gets)
        .await
        .into_iter()
        .enumerate()
    {
        let start = i * 40_000;
        assert_eq!(&got.unwrap()[..], &data[start..start + 30_000]);
    }

    s3.put("commit", Bytes::from_static(b"a"), true)
        .await
        .unwrap();
    match s3.put("commit", Bytes::from_static(b"b"), true).await {
        Err(S3Error::Status { status: 412, .. }) => {}
        other => panic!("expected 412, got {other:?}"),
    }

    s3.delete("dir/obj").await.unwrap();
    match s3.get("dir/obj", None).await {
        Err(S3Error::Status { status: 404, body }) => assert!(body.contains("NoSuchKey"), "{body}"),
        other => panic!("expected NoSuchKey, got {other:?}"),
    }
}

#[tokio::test]
async fn unreachable_endpoint_is_a_clear_error() {
    let lookup = |name: &str| match name {
        "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:1".to_string()),
        _ => None,
    };
    let config = S3Config::resolve(&S3Overrides::default(), &lookup).unwrap();
    let s3 = S3Client::new(config, "b").unwrap();
    let err = s3.head("x").await.unwrap_err();
    assert!(err.to_string().contains("refused"), "{err}");
}

/// The store the factory opens for s3:// is the io_uring one, and behaves as an
/// `object_store::ObjectStore` should.
#[tokio::test]
async fn factory_store_reads_writes_and_reports_errors() {
    use object_store::path::Path;
    use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutPayload};
    use tessera_blob::StoreFactory;

    let minio = MinioServer::start();
    minio.create_bucket("seam");
    let env: Vec<(&str, String)> = minio.env();
    let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
    let factory = StoreFactory::new(S3Config::resolve(&S3Overrides::default(), &lookup).unwrap());
    let store = factory
        .open_s3("seam", tessera_blob::store::S3ClientKind::Uring)
        .unwrap();
    assert!(
        format!("{store:?}").starts_with("UringS3Store"),
        "{store:?}"
    );
    assert_eq!(store.to_string(), "s3://seam");

    let path = Path::from("t/data.json");
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    store
        .put(&path, PutPayload::from(data.clone()))
        .await
        .unwrap();
    assert_eq!(
        &store.get_range(&path, 5..50_005).await.unwrap()[..],
        &data[5..50_005]
    );
    assert_eq!(
        &store.get(&path).await.unwrap().bytes().await.unwrap()[..],
        &data[..]
    );
    let ranges = store
        .get_ranges(&path, &[0..10, 100..1_000, 150_000..200_000])
        .await
        .unwrap();
    assert_eq!(&ranges[2][..], &data[150_000..200_000]);
    let meta = store.head(&path).await.unwrap();
    assert_eq!(meta.size, data.len() as u64);
    let listed: Vec<_> = store.list(Some(&Path::from("t"))).collect::<Vec<_>>().await;
    assert_eq!(listed.len(), 1);

    let commit = Path::from("_log/0001.json");
    let create = || object_store::PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    store
        .put_opts(&commit, PutPayload::from_static(b"one"), create())
        .await
        .unwrap();
    let err = store
        .put_opts(&commit, PutPayload::from_static(b"two"), create())
        .await
        .unwrap_err();
    assert!(
        matches!(err, object_store::Error::AlreadyExists { .. }),
        "{err}"
    );
    assert_eq!(
        &store.get(&commit).await.unwrap().bytes().await.unwrap()[..],
        b"one"
    );

    let err = store.head(&Path::from("missing")).await.unwrap_err();
    assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
    let err = store
        .get_range(&Path::from("missing"), 0..4)
        .await
        .unwrap_err();
    assert_eq!(factory.explain(&err), "no such object: 'missing'");

    let missing = factory
        .open(&url::Url::parse("s3://nobucket").unwrap())
        .unwrap();
    let err = missing.get_range(&path, 0..4).await.unwrap_err();
    assert!(
        factory
            .explain(&err)
            .contains("the bucket 'nobucket' does not exist"),
        "{}",
        factory.explain(&err)
    );
}

/// A store over the io_uring client only (its fallback is pointed at a closed port, so
/// an operation that silently delegated would fail).
fn native_store(
    minio: &MinioServer,
    bucket: &str,
    page: u32,
) -> tessera_blob::uring_store::UringS3Store {
    use tessera_blob::{RetrievalOptions, S3ClientKind, StoreFactory};
    let options = RetrievalOptions {
        list_page_size: page,
        ..RetrievalOptions::default()
    };
    let client = S3Client::with_options(
        common::config(minio, &minio.endpoint()),
        bucket,
        options,
        Default::default(),
    )
    .unwrap();
    let unreachable = StoreFactory::new(common::config(minio, "http://127.0.0.1:1"))
        .open_s3(bucket, S3ClientKind::ObjectStore)
        .unwrap();
    tessera_blob::uring_store::UringS3Store::new(client, unreachable, bucket)
}

#[tokio::test]
async fn listing_pages_delimiters_and_deletes_are_native() {
    use object_store::path::Path;
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

    let minio = MinioServer::start();
    minio.create_bucket("listing");
    // Pages of 7 keys: 23 objects take four pages.
    let store = native_store(&minio, "listing", 7);
    let mut keys: Vec<String> = (0..20).map(|i| format!("t/part-{i:02}.json")).collect();
    keys.extend(["t/sub/a.json", "t/sub/b.json", "tx/other.json"].map(String::from));
    for (i, key) in keys.iter().enumerate() {
        store
            .put(&Path::from(key.as_str()), PutPayload::from(vec![b'x'; i]))
            .await
            .unwrap();
    }

    let mut listed: Vec<(String, u64)> = store
        .list(Some(&Path::from("t")))
        .map(|m| m.map(|m| (m.location.to_string(), m.size)))
        .try_collect()
        .await
        .unwrap();
    listed.sort();
    let mut expected: Vec<(String, u64)> = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| k.starts_with("t/"))
        .map(|(i, k)| (k.clone(), i as u64))
        .collect();
    expected.sort();
    assert_eq!(listed, expected, "`t` must not list `tx/`");
    assert_eq!(store.list(None).count().await, keys.len());

    let result = store
        .list_with_delimiter(Some(&Path::from("t")))
        .await
        .unwrap();
    assert_eq!(result.common_prefixes, vec![Path::from("t/sub")]);
    assert_eq!(result.objects.len(), 20);
    let top = store.list_with_delimiter(None).await.unwrap();
    assert_eq!(top.common_prefixes, vec![Path::from("t"), Path::from("tx")]);
    assert!(top.objects.is_empty());

    let doomed: Vec<object_store::Result<Path>> = keys
        .iter()
        .filter(|k| k.starts_with("t/sub/"))
        .map(|k| Ok(Path::from(k.as_str())))
        .collect();
    let doomed = futures::stream::iter(doomed).boxed();
    let deleted: Vec<Path> = store.delete_stream(doomed).try_collect().await.unwrap();
    assert_eq!(deleted.len(), 2);
    let after = store
        .list_with_delimiter(Some(&Path::from("t")))
        .await
        .unwrap();
    assert!(after.common_prefixes.is_empty());
    let err = store.head(&Path::from("t/sub/a.json")).await.unwrap_err();
    assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
}

#[tokio::test]
async fn multipart_uploads_assemble_large_objects() {
    use object_store::path::Path;
    use object_store::{ObjectStore, ObjectStoreExt, WriteMultipart};

    let minio = MinioServer::start();
    minio.create_bucket("multipart");
    let store = native_store(&minio, "multipart", 1000);
    let data = common::random_bytes(13 * 1024 * 1024 + 17, 11);
    let path = Path::from("big/object.bin");
    let upload = store.put_multipart(&path).await.unwrap();
    // 5 MiB parts (S3's minimum), written concurrently by WriteMultipart.
    let mut writer = WriteMultipart::new_with_chunk_size(upload, 5 * 1024 * 1024);
    for chunk in data.chunks(1_000_003) {
        writer.write(chunk);
    }
    writer.finish().await.unwrap();
    let got = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert!(got == data, "multipart object differs");

    // Open-ended ranges are native too: from an offset, and the last bytes.
    let size = data.len() as u64;
    for (range, expected) in [
        (
            object_store::GetRange::Offset(size - 5000),
            size - 5000..size,
        ),
        (object_store::GetRange::Suffix(777), size - 777..size),
    ] {
        let options = object_store::GetOptions {
            range: Some(range),
            ..Default::default()
        };
        let result = store.get_opts(&path, options).await.unwrap();
        assert_eq!(result.range, expected);
        assert_eq!(result.meta.size, size);
        let got = result.bytes().await.unwrap();
        assert!(
            got[..] == data[expected.start as usize..],
            "open range differs"
        );
    }

    let empty = Path::from("big/empty.bin");
    let mut upload = store.put_multipart(&empty).await.unwrap();
    upload.complete().await.unwrap();
    assert_eq!(store.head(&empty).await.unwrap().size, 0);

    let aborted = Path::from("big/aborted.bin");
    let mut upload = store.put_multipart(&aborted).await.unwrap();
    upload
        .put_part(object_store::PutPayload::from(vec![1u8; 5 * 1024 * 1024]))
        .await
        .unwrap();
    upload.abort().await.unwrap();
    let err = store.head(&aborted).await.unwrap_err();
    assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
}

/// With a key configured, objects are stored as AES-256-GCM ciphertext and read back
/// exactly, whole and by range, written whole or in parts; sizes are plaintext sizes;
/// a wrong key is an error.
#[tokio::test]
async fn encrypted_objects_round_trip_and_a_wrong_key_fails() {
    use object_store::path::Path;
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
    use tessera_blob::uring_store::UringS3Store;
    use tessera_blob::{EncryptionKey, ciphertext_len};
    use tessera_blob::{RetrievalOptions, S3ClientKind, StoreFactory};

    let minio = MinioServer::start();
    minio.create_bucket("sealed");
    let store_with = |key: [u8; 32]| {
        let options = RetrievalOptions {
            encryption: Some(EncryptionKey::new(key)),
            ..RetrievalOptions::default()
        };
        let config = common::config(&minio, &minio.endpoint());
        let client =
            S3Client::with_options(config.clone(), "sealed", options, Default::default()).unwrap();
        let fallback = StoreFactory::new(config)
            .open_s3("sealed", S3ClientKind::ObjectStore)
            .unwrap();
        UringS3Store::new(client, fallback, "sealed")
    };
    let store = store_with([3; 32]);
    let data = common::random_bytes(2 * 1024 * 1024 + 4321, 12);
    let path = Path::from("secret/data.bin");
    store
        .put(&path, PutPayload::from(data.clone()))
        .await
        .unwrap();

    let raw = client(&minio, "sealed")
        .get(path.as_ref(), None)
        .await
        .unwrap();
    assert_eq!(raw.len() as u64, ciphertext_len(data.len() as u64));
    assert!(
        !raw.windows(64).any(|w| w == &data[1000..1064]),
        "plaintext is visible in the stored object"
    );

    let whole = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert!(whole == data, "whole object differs");
    let ranges = [0..10, 1_048_570..1_048_590, 2_000_000..data.len() as u64];
    let got = store.get_ranges(&path, &ranges).await.unwrap();
    for (range, bytes) in ranges.iter().zip(&got) {
        assert!(bytes[..] == data[range.start as usize..range.end as usize]);
    }
    assert_eq!(store.head(&path).await.unwrap().size, data.len() as u64);
    let listed: Vec<_> = store.list(None).try_collect().await.unwrap();
    assert_eq!(listed[0].size, data.len() as u64);

    let wrong = store_with([4; 32]);
    let err = wrong.get_range(&path, 0..10).await.unwrap_err();
    assert!(err.to_string().contains("failed authentication"), "{err}");

    // Multipart uploads encrypt as parts arrive; parts of any size make one object.
    let big = common::random_bytes(11 * 1024 * 1024 + 99, 13);
    let big_path = Path::from("secret/big.bin");
    let mut writer = object_store::WriteMultipart::new_with_chunk_size(
        store.put_multipart(&big_path).await.unwrap(),
        3 * 1024 * 1024,
    );
    for chunk in big.chunks(777_777) {
        writer.write(chunk);
    }
    writer.finish().await.unwrap();
    let raw = client(&minio, "sealed")
        .head(big_path.as_ref())
        .await
        .unwrap();
    assert_eq!(raw.0, ciphertext_len(big.len() as u64));
    let got = store.get(&big_path).await.unwrap().bytes().await.unwrap();
    assert!(got == big, "encrypted multipart object differs");
    let tail = store
        .get_range(&big_path, big.len() as u64 - 10..big.len() as u64)
        .await
        .unwrap();
    assert!(tail[..] == big[big.len() - 10..]);
}

/// Whole-object reads and reads from an offset, whose size is unknown until the first
/// answer, follow the sizing policy: a first request of at most `max_request` bytes,
/// then the rest split into parts of at most that size; the bytes are exact, and an
/// empty object (whose ranges are unsatisfiable) reads as empty.
#[tokio::test]
async fn reads_of_unknown_size_are_split_by_the_sizing_policy() {
    use object_store::path::Path;
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
    use std::sync::Arc;
    use tessera_blob::{RequestStats, RetrievalOptions, Sizing};

    let minio = MinioServer::start();
    minio.create_bucket("unsized");
    let sizing = Sizing {
        max_request: 1024 * 1024,
        ..Sizing::default()
    };
    let options = RetrievalOptions {
        sizing: sizing.clone(),
        ..RetrievalOptions::default()
    };
    let stats = Arc::new(RequestStats::default());
    let client = S3Client::with_options(
        common::config(&minio, &minio.endpoint()),
        "unsized",
        options,
        stats.clone(),
    )
    .unwrap();
    let unreachable = tessera_blob::StoreFactory::new(common::config(&minio, "http://127.0.0.1:1"))
        .open_s3("unsized", tessera_blob::S3ClientKind::ObjectStore)
        .unwrap();
    let store = tessera_blob::uring_store::UringS3Store::new(client, unreachable, "unsized");
    let data = common::random_bytes(5 * 1024 * 1024 + 3, 31);
    let path = Path::from("o.bin");
    store
        .put(&path, PutPayload::from(data.clone()))
        .await
        .unwrap();

    for from in [0u64, 1_500_000] {
        let before = stats.snapshot();
        let options = object_store::GetOptions {
            range: (from > 0).then_some(object_store::GetRange::Offset(from)),
            ..Default::default()
        };
        let result = store.get_opts(&path, options).await.unwrap();
        assert_eq!(result.meta.size, data.len() as u64);
        assert_eq!(result.range, from..data.len() as u64);
        let got = result.bytes().await.unwrap();
        assert!(got[..] == data[from as usize..], "read from {from} differs");
        let rest = from + sizing.max_request..data.len() as u64;
        let parts = tessera_blob::sizing::plan(&[rest], &sizing).len() as u64;
        let gets = stats.snapshot().since(&before).get_requests;
        assert_eq!(
            gets,
            1 + parts,
            "read from {from}: one first request, then the parts"
        );
        assert!(parts >= 3, "the rest was split: {parts}");
    }

    let empty = Path::from("empty.bin");
    store.put(&empty, PutPayload::default()).await.unwrap();
    let result = store.get(&empty).await.unwrap();
    assert_eq!(result.meta.size, 0);
    assert!(result.bytes().await.unwrap().is_empty());
}

/// The event loop reads the TCP segment size of each connection it opens (the input of
/// the MTU-based endpoint choice); a reused connection reports none. Loopback's
/// 65536-byte MTU gives a segment far above a standard 1500-byte path's.
#[tokio::test]
async fn new_connections_report_their_tcp_segment_size() {
    let minio = MinioServer::start();
    minio.create_bucket("mss");
    let s3 = client(&minio, "mss");
    s3.put("k", Bytes::from_static(b"x"), false).await.unwrap();
    // One retriever thread: each thread keeps its own connection pool.
    let options = tessera_blob::RetrievalOptions {
        retrievers: Some(1),
        ..Default::default()
    };
    let fresh = common::client(&minio, &minio.endpoint(), "mss", options);
    let first = fresh.get_response("k", None).await.unwrap();
    let segment = first
        .new_connection_segment
        .expect("a new connection's segment");
    assert!(
        segment > tessera_blob::endpoints::STANDARD_SEGMENT,
        "{segment}"
    );
    let again = fresh.get_response("k", None).await.unwrap();
    assert_eq!(
        again.new_connection_segment, None,
        "the connection was reused"
    );
}
