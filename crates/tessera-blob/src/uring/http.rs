//! HTTP/1.1 response heads: finding where a head ends in the bytes received so far
//! and parsing it, with no I/O, so every way a server can garble a head is testable
//! without a server.

use super::error::HttpError;

/// Largest response head accepted; S3 heads are a few hundred bytes.
pub(super) const MAX_HEAD: usize = 16 * 1024;

/// A parsed response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Head {
    /// Status code.
    pub(super) status: u16,
    /// Headers with lower-case names, in order.
    pub(super) headers: Vec<(String, String)>,
    /// The `Content-Length`, when the server sent one.
    pub(super) content_length: Option<usize>,
    /// Whether the server allows another request on the connection.
    pub(super) keep_alive: bool,
    /// Bytes of the head, blank line included; the body starts there.
    pub(super) len: usize,
}

/// The head at the start of `received` once all of it has arrived: `None` while the
/// blank line that ends it is still to come, an error once `received` fills the head
/// buffer without one.
pub(super) fn read_head(received: &[u8]) -> Result<Option<Head>, HttpError> {
    match received.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(end) => parse_head(&received[..end + 4]).map(Some),
        None if received.len() >= MAX_HEAD => {
            Err(HttpError::Malformed("response head too large".into()))
        }
        None => Ok(None),
    }
}

/// Parses a complete head (status line, headers, blank line).
fn parse_head(head: &[u8]) -> Result<Head, HttpError> {
    let text = std::str::from_utf8(head)
        .map_err(|_| HttpError::Malformed("response head is not UTF-8".into()))?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.split(' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::Malformed(format!(
            "unexpected status line '{status_line}'"
        )));
    }
    let status = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| HttpError::Malformed(format!("bad status line '{status_line}'")))?;
    let mut parsed = Head {
        status,
        headers: Vec::new(),
        content_length: None,
        keep_alive: true,
        len: head.len(),
    };
    for line in lines.filter(|l| !l.is_empty()) {
        header_line(&mut parsed, line)?;
    }
    Ok(parsed)
}

/// Adds one header line to `head`, taking note of the ones that frame the body.
fn header_line(head: &mut Head, line: &str) -> Result<(), HttpError> {
    let Some((name, value)) = line.split_once(':') else {
        return Err(HttpError::Malformed(format!("bad header line '{line}'")));
    };
    let name = name.trim().to_ascii_lowercase();
    let value = value.trim().to_string();
    match name.as_str() {
        "content-length" => {
            head.content_length = Some(
                value
                    .parse()
                    .map_err(|_| HttpError::Malformed(format!("bad content-length '{value}'")))?,
            );
        }
        "connection" if value.eq_ignore_ascii_case("close") => head.keep_alive = false,
        "transfer-encoding" if !value.eq_ignore_ascii_case("identity") => {
            return Err(HttpError::Malformed(format!(
                "transfer-encoding '{value}' is not supported"
            )));
        }
        _ => {}
    }
    head.headers.push((name, value));
    Ok(())
}
