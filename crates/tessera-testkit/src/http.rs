//! A one-shot HTTP/1.1 client over `std::net::TcpStream` for the test servers' admin
//! APIs: enough for MinIO's health and bucket calls and toxiproxy's JSON API, without
//! pulling an HTTP stack into the test kit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

/// How long one admin call may wait for its answer; servers on loopback answer in
/// milliseconds, so this only bounds a hung server.
const ANSWER_LIMIT: Duration = Duration::from_secs(10);
/// Largest admin answer read; admin answers are small JSON or XML documents.
const MAX_ANSWER: u64 = 1024 * 1024;

/// Sends `method path` to `127.0.0.1:port` with the extra header lines and body, on a
/// fresh connection that the server closes; returns the status and the whole response
/// text (head and body).
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &str,
) -> std::io::Result<(u16, String)> {
    request_over(port, None, method, path, headers, body)
}

/// [`request`] over TLS with `config`, checking the certificate for `127.0.0.1`.
pub fn request_tls(
    port: u16,
    config: &Arc<ClientConfig>,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &str,
) -> std::io::Result<(u16, String)> {
    request_over(port, Some(config), method, path, headers, body)
}

fn request_over(
    port: u16,
    tls: Option<&Arc<ClientConfig>>,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &str,
) -> std::io::Result<(u16, String)> {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(ANSWER_LIMIT))?;
    stream.set_write_timeout(Some(ANSWER_LIMIT))?;
    let mut response = String::new();
    match tls {
        None => {
            stream.write_all(head.as_bytes())?;
            stream.take(MAX_ANSWER).read_to_string(&mut response)?;
        }
        Some(config) => {
            let name = ServerName::from(std::net::IpAddr::from([127, 0, 0, 1]));
            let session = ClientConnection::new(config.clone(), name)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            let mut stream = StreamOwned::new(session, stream);
            stream.write_all(head.as_bytes())?;
            stream.flush()?;
            stream.take(MAX_ANSWER).read_to_string(&mut response)?;
        }
    }
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, response))
}
