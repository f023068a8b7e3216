//! The AWS event-stream framing of a `SelectObjectContent` answer: a sequence of
//! messages, each a 12-byte prelude (total length, headers length, CRC-32 of those 8
//! bytes), typed headers, a payload and a CRC-32 of everything before it.
//!
//! The bytes come from a server Tessera does not trust: every length is checked against
//! what is left and against [`MESSAGE_BYTES_MAX`], both checksums are verified, and a
//! truncated or corrupt stream is an error naming the offset, never a panic or a short
//! answer taken for a whole one.

use bytes::Bytes;

/// Bytes of the prelude: total length, headers length, prelude CRC.
const PRELUDE_BYTES: usize = 12;
/// Bytes of the message CRC that ends each message.
const TRAILER_BYTES: usize = 4;
/// Largest message accepted. S3 sends records in messages of at most a few MiB.
pub(crate) const MESSAGE_BYTES_MAX: usize = 16 << 20;

/// Why an event stream could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventStreamError {
    /// The stream ended inside a message.
    #[error("event stream truncated at byte {offset}: {needed} more bytes expected")]
    Truncated {
        /// Offset of the message that was cut.
        offset: usize,
        /// Bytes the message still needed.
        needed: usize,
    },
    /// A length in a prelude or header is impossible.
    #[error("event stream message at byte {offset}: {what}")]
    Malformed {
        /// Offset of the message.
        offset: usize,
        /// What was expected.
        what: String,
    },
    /// A checksum did not match.
    #[error("event stream message at byte {offset}: {which} CRC mismatch")]
    Checksum {
        /// Offset of the message.
        offset: usize,
        /// `prelude` or `message`.
        which: &'static str,
    },
}

/// One message: its string headers (other header types are skipped) and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// `(name, value)` of each string header, in order.
    pub headers: Vec<(String, String)>,
    /// The payload.
    pub payload: Bytes,
}

impl Message {
    /// The value of the string header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Splits `body` into its messages; fails on the first malformed one.
pub fn decode(body: &Bytes) -> Result<Vec<Message>, EventStreamError> {
    let mut messages = Vec::new();
    let mut offset = 0;
    while offset < body.len() {
        let (message, length) = decode_one(body, offset)?;
        messages.push(message);
        offset += length;
    }
    Ok(messages)
}

/// The message at `offset` and its length.
fn decode_one(body: &Bytes, offset: usize) -> Result<(Message, usize), EventStreamError> {
    let rest = &body[offset..];
    let malformed = |what: String| EventStreamError::Malformed { offset, what };
    if rest.len() < PRELUDE_BYTES {
        return Err(EventStreamError::Truncated {
            offset,
            needed: PRELUDE_BYTES - rest.len(),
        });
    }
    let total = be_u32(&rest[0..4]) as usize;
    let headers_len = be_u32(&rest[4..8]) as usize;
    if crc32fast::hash(&rest[0..8]) != be_u32(&rest[8..12]) {
        return Err(EventStreamError::Checksum {
            offset,
            which: "prelude",
        });
    }
    if !(PRELUDE_BYTES + TRAILER_BYTES..=MESSAGE_BYTES_MAX).contains(&total) {
        return Err(malformed(format!(
            "total length {total} outside {}..={MESSAGE_BYTES_MAX}",
            PRELUDE_BYTES + TRAILER_BYTES
        )));
    }
    if headers_len > total - PRELUDE_BYTES - TRAILER_BYTES {
        return Err(malformed(format!(
            "headers length {headers_len} exceeds the message's {total} bytes"
        )));
    }
    if rest.len() < total {
        return Err(EventStreamError::Truncated {
            offset,
            needed: total - rest.len(),
        });
    }
    let crc_at = total - TRAILER_BYTES;
    if crc32fast::hash(&rest[..crc_at]) != be_u32(&rest[crc_at..total]) {
        return Err(EventStreamError::Checksum {
            offset,
            which: "message",
        });
    }
    let headers_end = PRELUDE_BYTES + headers_len;
    let headers = headers(&rest[PRELUDE_BYTES..headers_end]).map_err(malformed)?;
    let payload = body.slice(offset + headers_end..offset + crc_at);
    Ok((Message { headers, payload }, total))
}

/// The string headers of a headers block; other types are skipped by their size.
fn headers(mut block: &[u8]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    while !block.is_empty() {
        let name_len = usize::from(block[0]);
        let name = take(&mut block, 1, name_len, "header name")?;
        let name = String::from_utf8(name.to_vec()).map_err(|_| "header name not UTF-8")?;
        let kind = take(&mut block, 0, 1, "header type")?[0];
        let value_len = match kind {
            0 | 1 => 0,
            2 => 1,
            3 => 2,
            4 => 4,
            5 | 8 => 8,
            9 => 16,
            6 | 7 => usize::from(u16::from_be_bytes(
                take(&mut block, 0, 2, "header value length")?
                    .try_into()
                    .expect("two bytes"),
            )),
            other => return Err(format!("header {name:?} has unknown type {other}")),
        };
        let value = take(&mut block, 0, value_len, "header value")?;
        if kind == 7 {
            let value = String::from_utf8(value.to_vec()).map_err(|_| "header value not UTF-8")?;
            out.push((name, value));
        }
    }
    Ok(out)
}

/// Skips `skip` bytes of `block`, then takes `len`; an error names `what` when short.
fn take<'a>(block: &mut &'a [u8], skip: usize, len: usize, what: &str) -> Result<&'a [u8], String> {
    let end = skip + len;
    if block.len() < end {
        return Err(format!("{what} runs past the headers block"));
    }
    let taken = &block[skip..end];
    *block = &block[end..];
    Ok(taken)
}

fn be_u32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes(bytes.try_into().expect("four bytes"))
}

/// Encodes a message with string headers: the inverse of [`decode`], for tests and for
/// servers that speak the format (the near-data worker's S3 Select emulation).
pub fn encode(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in headers {
        let name_len = u8::try_from(name.len()).expect("header names are short");
        let value_len = u16::try_from(value.len()).expect("header values are short");
        block.push(name_len);
        block.extend_from_slice(name.as_bytes());
        block.push(7);
        block.extend_from_slice(&value_len.to_be_bytes());
        block.extend_from_slice(value.as_bytes());
    }
    let total = PRELUDE_BYTES + block.len() + payload.len() + TRAILER_BYTES;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&u32::try_from(total).expect("small message").to_be_bytes());
    out.extend_from_slice(&u32::try_from(block.len()).expect("small").to_be_bytes());
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&block);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(payload: &[u8]) -> Vec<u8> {
        let headers = [
            (":message-type", "event"),
            (":event-type", "Records"),
            (":content-type", "application/octet-stream"),
        ];
        encode(&headers, payload)
    }

    #[test]
    fn round_trips_messages() {
        let mut body = records(b"{\"a\":1}\n");
        body.extend(encode(
            &[(":message-type", "event"), (":event-type", "End")],
            b"",
        ));
        let messages = decode(&Bytes::from(body)).unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].header(":event-type"), Some("Records"));
        assert_eq!(&messages[0].payload[..], b"{\"a\":1}\n");
        assert_eq!(messages[1].header(":event-type"), Some("End"));
        assert!(messages[1].payload.is_empty());
    }

    #[test]
    fn every_truncation_is_an_error() {
        let body = records(b"some records\n");
        for cut in 1..body.len() {
            let result = decode(&Bytes::copy_from_slice(&body[..cut]));
            assert!(
                matches!(result, Err(EventStreamError::Truncated { offset: 0, .. })),
                "cut at {cut}: {result:?}"
            );
        }
    }

    #[test]
    fn every_flipped_bit_is_caught() {
        let body = records(b"payload");
        for byte in 0..body.len() {
            for bit in 0..8 {
                let mut bad = body.clone();
                bad[byte] ^= 1 << bit;
                let result = decode(&Bytes::from(bad));
                assert!(result.is_err(), "flip {byte}.{bit} decoded: {result:?}");
            }
        }
    }

    #[test]
    fn non_string_headers_are_skipped() {
        let mut block = vec![2, b'n', b'b', 4, 0, 0, 0, 9];
        block.extend([1, b's', 7, 0, 2, b'o', b'k']);
        assert_eq!(headers(&block).unwrap(), vec![("s".into(), "ok".into())]);
        assert!(headers(&[5, b'a']).is_err());
        assert!(headers(&[1, b'a', 42]).is_err());
    }
}
