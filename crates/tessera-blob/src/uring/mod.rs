//! An io_uring HTTP/1.1 event loop: one retriever thread owns one ring and many TCP
//! connections, so hundreds of outstanding requests cost no thread each.
//!
//! Every request is a small state machine (connect, send, receive headers, receive
//! body). The loop drains new requests from a bounded channel, queues their
//! operations, submits them in one batch and reaps all completions before sleeping
//! again. Bodies with a known `Content-Length` are received straight into one
//! preallocated buffer, so the body is never copied after `recv`.
//!
//! HTTPS runs on the same sockets: a TLS exchange receives ciphertext into a
//! per-connection buffer, hands it to rustls (`read_tls`, `process_new_packets`) and
//! copies the decrypted plaintext into the head or body buffer (rustls's buffered API
//! copies records into its own buffers on the way; kernel TLS, which would receive
//! plaintext in place, is not assumed to be available); outgoing plaintext is
//! encrypted into a send buffer (`write_tls`) that the ring sends.
//! TLS sessions stay with their sockets in the keep-alive pool.
//!
//! The modules depend one way: [`event_loop`] (threads, ring, submission and
//! completion) drives [`exchange`] (one request's state machine), which uses
//! [`http`] (response parsing), [`tls`] (sessions), [`buffers`] (the body buffer
//! pool) and [`socket`] (socket set-up); [`request`] and [`error`] are the types
//! they share.

mod buffers;
mod error;
mod event_loop;
mod exchange;
mod http;
mod request;
mod socket;
mod tls;

pub use error::HttpError;
pub use event_loop::{MAX_RETRIEVERS, Retrievers};
#[cfg(feature = "fuzzing")]
pub use http::parse_response;
pub use request::{HttpRequest, HttpResponse, TlsTarget};
