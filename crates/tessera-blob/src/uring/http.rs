//! HTTP/1.1 responses without I/O: finding where a head ends in the bytes received so
//! far, parsing it, and decoding chunked bodies from whatever pieces the reads
//! deliver, so every way a server can garble a response is testable without a server.

use super::error::HttpError;

/// Largest response head accepted; S3 heads are a few hundred bytes.
pub(super) const MAX_HEAD: usize = 16 * 1024;
/// Largest chunk-size or trailer line accepted; real ones are a few bytes.
const MAX_CHUNK_LINE: usize = 4096;

/// A parsed response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Head {
    /// Status code.
    pub(super) status: u16,
    /// Headers with lower-case names, in order.
    pub(super) headers: Vec<(String, String)>,
    /// The `Content-Length`, when the server sent one.
    pub(super) content_length: Option<usize>,
    /// Whether the body comes in chunks (`Transfer-Encoding: chunked`).
    pub(super) chunked: bool,
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
        chunked: false,
        keep_alive: true,
        len: head.len(),
    };
    for line in lines.filter(|l| !l.is_empty()) {
        header_line(&mut parsed, line)?;
    }
    // Both framings at once is how responses are smuggled past proxies.
    if parsed.chunked && parsed.content_length.is_some() {
        return Err(HttpError::Malformed(
            "both Content-Length and chunked transfer-encoding".into(),
        ));
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
            let len = value
                .parse()
                .map_err(|_| HttpError::Malformed(format!("bad content-length '{value}'")))?;
            if head.content_length.is_some_and(|other| other != len) {
                return Err(HttpError::Malformed("conflicting content-lengths".into()));
            }
            head.content_length = Some(len);
        }
        "transfer-encoding" if value.eq_ignore_ascii_case("chunked") => head.chunked = true,
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

/// Where a chunked body decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Reading a chunk-size line.
    Size,
    /// Reading chunk data, this many bytes still to come.
    Data(usize),
    /// Reading the line break after a chunk's data.
    DataEnd,
    /// Reading trailer lines after the last chunk, up to the blank line.
    Trailers,
    /// The body is complete.
    Done,
}

/// A decoder of a `Transfer-Encoding: chunked` body that takes it in whatever pieces
/// the reads deliver (a chunk-size line or a trailer may be split anywhere) and holds
/// at most `limit` decoded bytes, so a server cannot make it grow without bound.
#[derive(Debug)]
pub(super) struct Chunked {
    state: ChunkState,
    /// The part of a size or trailer line received so far.
    line: Vec<u8>,
    /// Body bytes the chunk sizes so far announced.
    announced: usize,
    limit: usize,
}

impl Chunked {
    /// A decoder for a body of at most `limit` bytes.
    pub(super) fn new(limit: usize) -> Self {
        Self {
            state: ChunkState::Size,
            line: Vec::new(),
            announced: 0,
            limit,
        }
    }

    /// Whether the last chunk and the trailers have arrived.
    pub(super) fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Decodes `input` into `body`; returns how many bytes it took, which is fewer
    /// than given only once the body is complete (the rest is not this body's).
    pub(super) fn feed(&mut self, input: &[u8], body: &mut Vec<u8>) -> Result<usize, HttpError> {
        let mut rest = input;
        while !rest.is_empty() && !self.is_done() {
            if let ChunkState::Data(left) = self.state {
                let take = left.min(rest.len());
                body.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                self.state = match left - take {
                    0 => ChunkState::DataEnd,
                    left => ChunkState::Data(left),
                };
            } else if let Some(line) = self.take_line(&mut rest)? {
                self.on_line(&line)?;
            }
        }
        Ok(input.len() - rest.len())
    }

    /// Moves bytes of a line from `rest` into the line buffer; the whole line, without
    /// its CRLF, once its end has arrived.
    fn take_line(&mut self, rest: &mut &[u8]) -> Result<Option<Vec<u8>>, HttpError> {
        let end = rest.iter().position(|&b| b == b'\n');
        let take = end.map_or(rest.len(), |i| i + 1);
        if self.line.len() + take > MAX_CHUNK_LINE {
            return Err(HttpError::Malformed("a chunk line too long".into()));
        }
        self.line.extend_from_slice(&rest[..take]);
        *rest = &rest[take..];
        if end.is_none() {
            return Ok(None);
        }
        let mut line = std::mem::take(&mut self.line);
        if !line.ends_with(b"\r\n") {
            return Err(HttpError::Malformed("a chunk line without CRLF".into()));
        }
        line.truncate(line.len() - 2);
        Ok(Some(line))
    }

    /// Acts on one complete size, data-end or trailer line.
    fn on_line(&mut self, line: &[u8]) -> Result<(), HttpError> {
        self.state = match self.state {
            ChunkState::Size => self.on_size(line)?,
            ChunkState::DataEnd if line.is_empty() => ChunkState::Size,
            ChunkState::DataEnd => {
                return Err(HttpError::Malformed(
                    "chunk data longer than its size".into(),
                ));
            }
            ChunkState::Trailers if line.is_empty() => ChunkState::Done,
            state => state,
        };
        Ok(())
    }

    /// The state after a chunk-size line (hex digits, then optional extensions).
    fn on_size(&mut self, line: &[u8]) -> Result<ChunkState, HttpError> {
        let digits = line.split(|&b| b == b';').next().unwrap_or_default();
        let size = std::str::from_utf8(digits)
            .ok()
            .map(str::trim)
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|d| usize::from_str_radix(d, 16).ok())
            .ok_or_else(|| {
                HttpError::Malformed(format!(
                    "bad chunk size '{}'",
                    String::from_utf8_lossy(line)
                ))
            })?;
        if size == 0 {
            return Ok(ChunkState::Trailers);
        }
        self.announced = self.announced.saturating_add(size);
        if self.announced > self.limit {
            return Err(HttpError::TooLarge {
                announced: self.announced,
                limit: self.limit,
            });
        }
        Ok(ChunkState::Data(size))
    }
}

/// Parses `response` as a whole HTTP response the way the event loop does: the head,
/// then a chunked body fed in pieces of `split` bytes (at least one) under a body cap
/// of `limit` bytes; returns the decoded body. For the fuzz target `http_response`
/// only: its checks are that this never panics and never returns more than `limit`
/// bytes.
#[cfg(feature = "fuzzing")]
pub fn parse_response(response: &[u8], split: usize, limit: usize) -> Result<Vec<u8>, HttpError> {
    let Some(head) = read_head(response)? else {
        return Ok(Vec::new());
    };
    let rest = &response[head.len..];
    if !head.chunked {
        let length = head.content_length.unwrap_or(rest.len());
        return Ok(rest[..length.min(rest.len()).min(limit)].to_vec());
    }
    let mut decoder = Chunked::new(limit);
    let mut body = Vec::new();
    for piece in rest.chunks(split.max(1)) {
        if decoder.feed(piece, &mut body)? < piece.len() {
            break;
        }
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &[u8] =
        b"HTTP/1.1 206 Partial Content\r\nContent-Length: 5\r\nETag: \"x\"\r\nConnection: close\r\n\r\n";

    fn malformed(head: &[u8]) -> bool {
        matches!(read_head(head), Err(HttpError::Malformed(_)))
    }

    /// Decodes `body` fed in pieces of `size` bytes, with the decoder's limit.
    fn decode(body: &[u8], size: usize, limit: usize) -> Result<(Vec<u8>, usize), HttpError> {
        let mut decoder = Chunked::new(limit);
        let mut out = Vec::new();
        let mut taken = 0;
        for piece in body.chunks(size) {
            taken += decoder.feed(piece, &mut out)?;
            if decoder.is_done() {
                break;
            }
        }
        assert!(decoder.is_done(), "the body ends");
        Ok((out, taken))
    }

    #[test]
    fn a_head_parses_into_status_headers_and_framing() {
        let head = read_head(HEAD).unwrap().expect("a whole head");
        assert_eq!(head.status, 206);
        assert_eq!(head.content_length, Some(5));
        assert!(!head.keep_alive);
        assert_eq!(head.len, HEAD.len());
        assert!(
            head.headers
                .contains(&("etag".to_string(), "\"x\"".to_string()))
        );
    }

    #[test]
    fn a_head_split_across_reads_parses_only_once_whole() {
        let whole = read_head(HEAD).unwrap();
        for split in 0..HEAD.len() {
            assert_eq!(read_head(&HEAD[..split]).unwrap(), None, "at {split}");
        }
        let mut received = HEAD.to_vec();
        received.extend_from_slice(b"hello");
        assert_eq!(
            read_head(&received).unwrap(),
            whole,
            "the body does not count"
        );
    }

    #[test]
    fn a_head_without_its_end_fails_when_the_buffer_is_full() {
        let endless = vec![b'x'; MAX_HEAD];
        assert!(malformed(&endless));
    }

    #[test]
    fn bad_or_overflowing_content_lengths_are_malformed() {
        for value in ["abc", "-1", "1.5", "", "18446744073709551616"] {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {value}\r\n\r\n");
            assert!(malformed(head.as_bytes()), "{value}");
        }
        let twice = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n";
        assert!(malformed(twice));
        let both = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(malformed(both));
    }

    #[test]
    fn missing_or_garbled_status_lines_are_malformed() {
        for head in [
            &b"\r\n\r\n"[..],
            b"HTTP/1.1\r\n\r\n",
            b"ICY 200 OK\r\n\r\n",
            b"HTTP/1.1 two-hundred OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            b"HTTP/1.1 200 \xff\r\n\r\n",
        ] {
            assert!(malformed(head), "{:?}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn unsupported_transfer_encodings_are_malformed() {
        assert!(malformed(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"
        ));
        let chunked = read_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n");
        assert!(chunked.unwrap().unwrap().chunked);
    }

    const CHUNKED: &[u8] = b"5;name=value\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nx-checksum: 1\r\nx-more: 2\r\n\r\n";

    #[test]
    fn a_chunked_body_decodes_however_the_reads_split_it() {
        let expected = b"helloabcdefghijklmnopqrstuvwxyz".to_vec();
        // Piece sizes of 1 and 2 split every size line, data end and trailer.
        for size in 1..=CHUNKED.len() {
            let (body, taken) = decode(CHUNKED, size, 1024).unwrap();
            assert_eq!(body, expected, "pieces of {size}");
            assert_eq!(taken, CHUNKED.len(), "pieces of {size}");
        }
    }

    #[test]
    fn bytes_after_the_last_chunk_are_left_alone() {
        let mut received = CHUNKED.to_vec();
        received.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        let (_, taken) = decode(&received, received.len(), 1024).unwrap();
        assert_eq!(taken, CHUNKED.len());
    }

    #[test]
    fn chunk_data_longer_than_its_size_is_malformed() {
        let long = b"3\r\nhello\r\n0\r\n\r\n";
        assert!(matches!(
            decode(long, 4, 1024),
            Err(HttpError::Malformed(_))
        ));
    }

    #[test]
    fn bad_chunk_sizes_are_malformed() {
        for body in [
            &b"zz\r\nhello\r\n0\r\n\r\n"[..],
            b"\r\nhello\r\n0\r\n\r\n",
            b"+5\r\nhello\r\n0\r\n\r\n",
            b"5\nhello\r\n0\r\n\r\n",
            b"10000000000000000\r\n",
        ] {
            let got = decode(body, body.len(), usize::MAX);
            assert!(matches!(got, Err(HttpError::Malformed(_))), "{got:?}");
        }
        let endless = vec![b'1'; MAX_CHUNK_LINE + 1];
        let mut decoder = Chunked::new(usize::MAX);
        assert!(decoder.feed(&endless, &mut Vec::new()).is_err());
    }

    #[test]
    fn chunks_beyond_the_limit_are_refused_before_they_arrive() {
        let got = decode(b"400\r\n", 5, 1000);
        assert!(
            matches!(
                got,
                Err(HttpError::TooLarge {
                    announced: 1024,
                    limit: 1000
                })
            ),
            "{got:?}"
        );
    }
}
