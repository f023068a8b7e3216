//! The io_uring S3 client against a real MinIO.

use bytes::Bytes;
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
