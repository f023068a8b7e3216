//! The io_uring S3 client against a real MinIO.

use bytes::Bytes;
use futures::StreamExt;
use tessera_blob::s3::{S3Client, S3Error};
use tessera_blob::{S3Config, S3Overrides};
use tessera_testkit::MinioServer;

fn client(minio: &MinioServer, bucket: &str) -> S3Client {
    let env: Vec<(&str, String)> = minio.env();
    let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
    let config = S3Config::resolve(&S3Overrides::default(), &lookup).unwrap();
    S3Client::new(config, bucket).unwrap()
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
    assert!(store.to_string().starts_with("UringS3Store"), "{store}");

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
