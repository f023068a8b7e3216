//! Why a request failed in transport, and which failures a retry may cure.

use std::net::SocketAddr;
use std::time::Duration;

/// Why a request failed in transport (HTTP statuses are not errors here).
#[derive(Debug, Clone, thiserror::Error)]
pub enum HttpError {
    /// The TCP connection could not be established.
    #[error("connection to {addr} failed: {reason}")]
    Connect {
        /// The server address.
        addr: SocketAddr,
        /// The operating system's reason (for example "connection refused").
        reason: String,
    },
    /// The connection broke while sending or receiving.
    #[error("connection reset while {phase}: {reason}")]
    Io {
        /// What the request was doing.
        phase: &'static str,
        /// The operating system's reason.
        reason: String,
    },
    /// The server closed the connection before the whole body arrived.
    #[error("truncated response: received {received} of {expected} body bytes")]
    Truncated {
        /// Body bytes received.
        received: usize,
        /// Body bytes announced by `Content-Length`.
        expected: usize,
    },
    /// The response announced a larger body than the request asked for.
    #[error("the response body of {announced} bytes is larger than the {limit} bytes asked for")]
    TooLarge {
        /// Body bytes announced by `Content-Length`.
        announced: usize,
        /// The most the request accepts (the request's `max_body`).
        limit: usize,
    },
    /// The response could not be parsed.
    #[error("malformed HTTP response: {0}")]
    Malformed(String),
    /// The request did not finish within its timeout.
    #[error("request timed out after {0:?}")]
    TimedOut(Duration),
    /// No byte moved for the stall timeout.
    #[error("request timed out: no data moved for {0:?}")]
    Stalled(Duration),
    /// The caller stopped waiting (a hedged duplicate finished first).
    #[error("request cancelled by the caller")]
    Cancelled,
    /// The server's TLS certificate is not trusted for its name; retrying cannot help.
    #[error("the TLS certificate of {server} is not trusted: {reason}")]
    Certificate {
        /// The name the certificate was checked for.
        server: String,
        /// rustls's reason (for example "UnknownIssuer").
        reason: String,
    },
    /// The TLS session failed (a protocol error or a corrupted record).
    #[error("TLS failure while {phase}: {reason}")]
    Tls {
        /// What the request was doing.
        phase: &'static str,
        /// rustls's reason.
        reason: String,
    },
    /// The event loop is not running (it failed to start or shut down).
    #[error("the io_uring retriever is not running: {0}")]
    Unavailable(String),
}

impl HttpError {
    /// Whether the request certainly did not reach the server (the connection never
    /// opened), so that sending it again cannot apply it twice.
    pub fn never_sent(&self) -> bool {
        matches!(self, HttpError::Connect { .. })
    }

    /// Whether trying again on a fresh connection may succeed.
    pub fn is_transient(&self) -> bool {
        !matches!(
            self,
            HttpError::Malformed(_)
                | HttpError::TooLarge { .. }
                | HttpError::Unavailable(_)
                | HttpError::Cancelled
                | HttpError::Certificate { .. }
        )
    }
}
