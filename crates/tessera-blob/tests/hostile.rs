//! The S3 clients against small misbehaving HTTP servers on loopback: answers that do
//! not match the request, or lie about their size, end in a clear error (after the
//! usual retries), never in wrong bytes, a crash or a hang.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tessera_blob::s3::{S3Client, S3Error};
use tessera_blob::{Hedging, RetrievalOptions, S3Config, S3Overrides};

mod common;
use common::bounded;

/// A server that answers every request with the same canned bytes and counts the
/// requests it saw.
struct Canned {
    port: u16,
    requests: Arc<AtomicUsize>,
}

impl Canned {
    /// Serves `answer` (a whole HTTP response) on a loopback port from a thread that
    /// lives as long as the test process.
    fn start(answer: &'static [u8]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let counted = counted.clone();
                std::thread::spawn(move || {
                    // One request per connection: the head ends in a blank line and
                    // the clients' GETs carry no body.
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        match stream.read(&mut byte) {
                            Ok(1) => head.push(byte[0]),
                            _ => return,
                        }
                    }
                    counted.fetch_add(1, Ordering::SeqCst);
                    let _ = stream.write_all(answer);
                });
            }
        });
        Self { port, requests }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// S3 settings for a test server at `endpoint` with made-up keys.
fn config(endpoint: &str) -> S3Config {
    let env = |name: &str| match name {
        "AWS_ENDPOINT_URL" => Some(endpoint.to_string()),
        "AWS_ACCESS_KEY_ID" => Some("AKID".to_string()),
        "AWS_SECRET_ACCESS_KEY" => Some("SECRET".to_string()),
        "AWS_REGION" => Some("us-east-1".to_string()),
        _ => None,
    };
    S3Config::resolve(&S3Overrides::default(), &env).expect("test settings resolve")
}

/// Options with `attempts` quick attempts and no hedging, so a test counts requests.
fn options(attempts: u32) -> RetrievalOptions {
    RetrievalOptions {
        max_attempts: attempts,
        base_backoff: Duration::from_millis(1),
        attempt_timeout: Duration::from_secs(10),
        stall_timeout: Duration::from_secs(10),
        hedging: Hedging {
            enabled: false,
            ..Hedging::default()
        },
        retrievers: Some(1),
        ..RetrievalOptions::default()
    }
}

fn client(server: &Canned, attempts: u32) -> S3Client {
    S3Client::with_options(
        config(&server.endpoint()),
        "bucket",
        options(attempts),
        Arc::default(),
    )
    .expect("a client")
}

#[tokio::test]
async fn a_content_length_beyond_the_requested_range_is_refused() {
    // One TiB announced for a 100-byte range: allocating that would abort the process.
    let server = Canned::start(
        b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99/1099511627776\r\nContent-Length: 1099511627776\r\n\r\nabc",
    );
    let got = bounded("a ranged GET", client(&server, 1).get("key", Some(0..100))).await;
    let err = got.expect_err("a body larger than the range is refused");
    assert!(
        err.to_string().contains("larger than"),
        "the error names the size: {err}"
    );
}

/// 5 bytes as a "partial content" answer to any range, without `Content-Range`.
const SHORT_206: &[u8] = b"HTTP/1.1 206 Partial Content\r\nContent-Length: 5\r\n\r\nhello";

#[tokio::test]
async fn a_206_without_content_range_is_retried_then_refused() {
    let server = Canned::start(SHORT_206);
    let got = bounded("a ranged GET", client(&server, 3).get("key", Some(0..100))).await;
    let err = got.expect_err("5 bytes are not bytes 0..100");
    assert!(
        matches!(err, S3Error::Response(_)),
        "a mismatch is a response error: {err}"
    );
    assert_eq!(
        server.requests.load(Ordering::SeqCst),
        3,
        "every attempt was made"
    );
}

#[tokio::test]
async fn a_206_that_is_shorter_than_its_content_range_is_refused() {
    let server = Canned::start(
        b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99/1000\r\nContent-Length: 5\r\n\r\nhello",
    );
    let got = bounded("a ranged GET", client(&server, 2).get("key", Some(0..100))).await;
    assert!(matches!(got, Err(S3Error::Response(_))), "{got:?}");
}

#[tokio::test]
async fn a_206_for_another_range_is_refused() {
    let server = Canned::start(
        b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 5-9/1000\r\nContent-Length: 5\r\n\r\nhello",
    );
    let got = bounded("a ranged GET", client(&server, 2).get("key", Some(0..5))).await;
    assert!(matches!(got, Err(S3Error::Response(_))), "{got:?}");
}

#[tokio::test]
async fn both_clients_refuse_a_short_206() {
    use object_store::ObjectStoreExt;
    use object_store::path::Path;
    use tessera_blob::{S3ClientKind, StoreFactory};
    let server = Canned::start(SHORT_206);
    let factory = StoreFactory::with_options(config(&server.endpoint()), options(2));
    for kind in [S3ClientKind::Uring, S3ClientKind::ObjectStore] {
        let store = factory.open_s3("bucket", kind).expect("a store");
        let ranged = bounded("a ranged read", store.get_range(&Path::from("key"), 0..100)).await;
        assert!(
            ranged.is_err(),
            "{kind:?} took 5 bytes for 0..100: {ranged:?}"
        );
        // The object_store crate takes any 2xx answer to an unranged GET as the
        // object; only tessera-blob's client reads whole objects in checked ranges.
        if kind == S3ClientKind::ObjectStore {
            continue;
        }
        let whole = bounded("a whole read", async {
            store.get(&Path::from("key")).await?.bytes().await
        })
        .await;
        assert!(
            whole.is_err(),
            "{kind:?} took a short 206 as the object: {whole:?}"
        );
    }
}

#[tokio::test]
async fn the_object_store_client_gives_up_on_a_silent_server() {
    use object_store::ObjectStoreExt;
    use object_store::path::Path;
    use tessera_blob::{S3ClientKind, StoreFactory};
    // Accepts connections and never answers; the connections stay open.
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().collect();
        drop(held);
    });
    let options = RetrievalOptions {
        attempt_timeout: Duration::from_secs(1),
        ..options(2)
    };
    let factory = StoreFactory::with_options(config(&format!("http://127.0.0.1:{port}")), options);
    let store = factory
        .open_s3("bucket", S3ClientKind::ObjectStore)
        .expect("a store");
    // Far above the one-second attempts, so it fires only if they are not bounded.
    let guard = Duration::from_secs(60);
    let got = tokio::time::timeout(guard, store.get(&Path::from("key")))
        .await
        .expect("the read ends instead of hanging");
    assert!(got.is_err(), "a silent server gives no object: {got:?}");
}

#[tokio::test]
async fn a_chunked_answer_is_decoded() {
    let server = Canned::start(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n",
    );
    let got = bounded("a whole GET", client(&server, 1).get("key", None)).await;
    assert_eq!(got.expect("a chunked body").as_ref(), b"hello world");
}

/// 5 bytes as the answer to any range, announced as bytes 0-99 by `Content-Range`
/// and as 5 by `Content-Length`: every header agrees with itself, the body is short.
const TRUNCATED_206: &[u8] =
    b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99/1000\r\nContent-Length: 5\r\n\r\nhello";

#[tokio::test]
async fn the_object_store_client_retries_then_refuses_a_206_shorter_than_its_range() {
    use object_store::ObjectStoreExt;
    use object_store::path::Path;
    use tessera_blob::{S3ClientKind, StoreFactory};
    for attempts in [1, 3] {
        let server = Canned::start(TRUNCATED_206);
        let factory = StoreFactory::with_options(config(&server.endpoint()), options(attempts));
        let store = factory
            .open_s3("bucket", S3ClientKind::ObjectStore)
            .expect("a store");
        let ranged = bounded("a ranged read", store.get_range(&Path::from("key"), 0..100)).await;
        let err = ranged.expect_err("5 bytes are not bytes 0..100");
        assert!(
            err.to_string().contains("..100"),
            "the error names the range: {err}"
        );
        // A retry asks for the rest (5..100); this server's answer to that names
        // another range, which ends the retries.
        let requests = server.requests.load(Ordering::SeqCst);
        assert_eq!(
            requests,
            attempts.min(2) as usize,
            "a short body is asked for again"
        );
        let ranges = bounded(
            "ranged reads",
            store.get_ranges(&Path::from("key"), &[0..100, 500..600]),
        )
        .await;
        assert!(ranges.is_err(), "{ranges:?}");
    }
}
