//! What a caller hands the event loop and what it gets back.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bytes::Bytes;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;

/// Where to speak TLS to and with which settings.
#[derive(Debug, Clone)]
pub struct TlsTarget {
    /// The shared client configuration (trusted CAs, protocol versions).
    pub config: Arc<ClientConfig>,
    /// The name the server's certificate must carry (a DNS name or an IP address).
    pub server_name: ServerName<'static>,
}

/// One HTTP/1.1 request for the event loop.
#[derive(Debug)]
pub struct HttpRequest {
    /// The server to connect to.
    pub addr: SocketAddr,
    /// The request line and headers, ending in the blank line.
    pub head: Vec<u8>,
    /// The body, sent after the head.
    pub body: Bytes,
    /// Whether the response carries no body whatever its headers say (HEAD).
    pub head_only: bool,
    /// After this long the request fails with [`HttpError::TimedOut`].
    ///
    /// [`HttpError::TimedOut`]: super::HttpError::TimedOut
    pub timeout: Duration,
    /// After this long without any byte sent or received the request fails with
    /// [`HttpError::Stalled`]: a stalled connection is detected long before `timeout`,
    /// which must allow for slow but steady large transfers.
    ///
    /// [`HttpError::Stalled`]: super::HttpError::Stalled
    pub stall_timeout: Duration,
    /// Whether to open a new connection instead of reusing an idle one: a retry after
    /// a transport failure must not land on another connection of a failing path.
    pub fresh_connection: bool,
    /// Set when the first response byte arrives, so a hedging caller can tell a request
    /// that has not started answering from one that is still streaming.
    pub first_byte_seen: Option<Arc<AtomicBool>>,
    /// TLS settings for an `https` endpoint; `None` speaks plain HTTP.
    pub tls: Option<TlsTarget>,
    /// The most body bytes the caller asked for: a response announcing more fails
    /// with [`HttpError::TooLarge`] before anything is allocated for it, so a lying
    /// server cannot make the retriever allocate without limit.
    ///
    /// [`HttpError::TooLarge`]: super::HttpError::TooLarge
    pub max_body: usize,
}

/// Idle connections are pooled per server address and TLS name: a TLS session is
/// bound to the name its certificate was checked for.
pub(super) type PoolKey = (SocketAddr, Option<ServerName<'static>>);

impl HttpRequest {
    pub(super) fn pool_key(&self) -> PoolKey {
        (self.addr, self.tls.as_ref().map(|t| t.server_name.clone()))
    }
}

/// A complete HTTP response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Headers with lower-case names.
    pub headers: Vec<(String, String)>,
    /// The body, exactly `Content-Length` bytes when the server sent that header.
    pub body: Bytes,
    /// Time from admission to the first response byte.
    pub first_byte: Duration,
    /// Time from admission to the last response byte.
    pub elapsed: Duration,
    /// The TCP maximum segment size of a connection opened for this request (read
    /// once, after connecting; `None` on a reused connection): above 1500 bytes the
    /// path carries jumbo frames, which the MTU-based resolver of
    /// AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023) prefers.
    pub new_connection_segment: Option<u32>,
}

impl HttpResponse {
    /// The first header named `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}
