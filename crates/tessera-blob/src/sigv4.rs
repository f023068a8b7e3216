//! AWS Signature Version 4 for S3 requests (header signing).
//!
//! Both the retrieval client and test tooling sign requests here, so there is one
//! implementation to check against AWS's published examples.

use std::time::SystemTime;

use chrono::{DateTime, Utc};
use ring::{digest, hmac};

use crate::config::Credentials;

/// The payload hash that tells S3 the body is not signed (used for GETs and streaming).
pub(crate) const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";

/// Hex SHA-256 of the empty body.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// The parts of a request that the signature covers.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `GET`, `PUT`, `HEAD`, `DELETE`, `POST`.
    pub method: &'a str,
    /// The `Host` header value (with `:port` when not the default).
    pub host: &'a str,
    /// The absolute path, not yet percent-encoded (`/bucket/key with spaces`).
    pub path: &'a str,
    /// Query parameters, not yet encoded.
    pub query: &'a [(&'a str, &'a str)],
    /// Other headers to sign (names in any case).
    pub headers: &'a [(&'a str, &'a str)],
    /// Hex SHA-256 of the body, or `UNSIGNED-PAYLOAD`.
    pub payload_sha256: &'a str,
}

/// Headers to add to a request: `authorization`, `x-amz-date`, `x-amz-content-sha256`
/// and, with temporary credentials, `x-amz-security-token`.
pub fn sign(
    request: &Request<'_>,
    credentials: &Credentials,
    region: &str,
    now: SystemTime,
) -> Vec<(String, String)> {
    let time: DateTime<Utc> = now.into();
    let amz_date = time.format("%Y%m%dT%H%M%SZ").to_string();
    let date = &amz_date[..8];

    let mut headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    headers.push(("host".into(), request.host.to_string()));
    headers.push(("x-amz-date".into(), amz_date.clone()));
    headers.push((
        "x-amz-content-sha256".into(),
        request.payload_sha256.to_string(),
    ));
    if let Some(token) = &credentials.session_token {
        headers.push(("x-amz-security-token".into(), token.clone()));
    }
    headers.sort();
    let signed_headers = headers
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();

    let canonical_query = canonical_query(request.query).unwrap_or_default();

    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        request.method,
        uri_encode(request.path, false),
        canonical_query,
        canonical_headers,
        signed_headers,
        request.payload_sha256
    );
    let scope = format!("{date}/{region}/s3/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );

    let key = [date, region, "s3", "aws4_request"].iter().fold(
        format!("AWS4{}", credentials.secret_access_key).into_bytes(),
        |key, part| hmac_sha256(&key, part.as_bytes()),
    );
    let signature = hex(&hmac_sha256(&key, string_to_sign.as_bytes()));

    let mut out = vec![
        (
            "authorization".to_string(),
            format!(
                "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
                credentials.access_key_id
            ),
        ),
        ("x-amz-date".to_string(), amz_date),
        (
            "x-amz-content-sha256".to_string(),
            request.payload_sha256.to_string(),
        ),
    ];
    if let Some(token) = &credentials.session_token {
        out.push(("x-amz-security-token".to_string(), token.clone()));
    }
    out
}

/// The query string in SigV4's canonical form (names and values percent-encoded,
/// sorted), which is also a valid query string for the request line; `None` when there
/// are no parameters.
pub(crate) fn canonical_query(query: &[(&str, &str)]) -> Option<String> {
    if query.is_empty() {
        return None;
    }
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k, true), uri_encode(v, true)))
        .collect();
    pairs.sort();
    Some(
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&"),
    )
}

/// Hex SHA-256 of `data` (for signed payloads).
pub(crate) fn sha256_hex(data: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, data).as_ref())
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Percent-encodes all but unreserved characters (and `/` in paths), as SigV4 requires.
pub(crate) fn uri_encode(text: &str, encode_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b'/' if !encode_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn example_credentials() -> Credentials {
        Credentials {
            access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        }
    }

    /// 2013-05-24T00:00:00Z, the time of AWS's published S3 examples.
    fn example_time() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_369_353_600)
    }

    #[test]
    fn matches_aws_get_object_example() {
        let request = Request {
            method: "GET",
            host: "examplebucket.s3.amazonaws.com",
            path: "/test.txt",
            query: &[],
            headers: &[("Range", "bytes=0-9")],
            payload_sha256: EMPTY_SHA256,
        };
        let headers = sign(
            &request,
            &example_credentials(),
            "us-east-1",
            example_time(),
        );
        assert_eq!(
            headers[0].1,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
        assert_eq!(headers[1], ("x-amz-date".into(), "20130524T000000Z".into()));
    }

    #[test]
    fn matches_aws_list_objects_example() {
        let request = Request {
            method: "GET",
            host: "examplebucket.s3.amazonaws.com",
            path: "/",
            query: &[("max-keys", "2"), ("prefix", "J")],
            headers: &[],
            payload_sha256: EMPTY_SHA256,
        };
        let headers = sign(
            &request,
            &example_credentials(),
            "us-east-1",
            example_time(),
        );
        assert!(
            headers[0].1.ends_with(
                "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
            ),
            "{}",
            headers[0].1
        );
    }

    #[test]
    fn session_tokens_are_signed_and_sent() {
        let mut creds = example_credentials();
        creds.session_token = Some("TOKEN".into());
        let request = Request {
            method: "HEAD",
            host: "h",
            path: "/b/k",
            query: &[],
            headers: &[],
            payload_sha256: UNSIGNED_PAYLOAD,
        };
        let headers = sign(&request, &creds, "r", example_time());
        assert!(headers[0].1.contains("x-amz-security-token"));
        assert!(
            headers
                .iter()
                .any(|(k, v)| k == "x-amz-security-token" && v == "TOKEN")
        );
    }

    #[test]
    fn encodes_like_sigv4() {
        assert_eq!(uri_encode("/a b/c+d~e", false), "/a%20b/c%2Bd~e");
        assert_eq!(uri_encode("a/b", true), "a%2Fb");
        assert_eq!(uri_encode("é", true), "%C3%A9");
    }
}
