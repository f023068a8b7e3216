//! Plain-language explanations of store failures: one sentence a user can act on,
//! naming the endpoint and access key id from the S3 settings, never the secret.

use crate::config::S3Config;

/// Turns an object-store failure into one sentence a user can act on.
///
/// The raw error of the `object_store` crate carries the S3 XML error body and the
/// HTTP client's error chain; this extracts the S3 error code (NoSuchBucket,
/// InvalidAccessKeyId, SignatureDoesNotMatch, AccessDenied ...) or the network failure
/// (refused, timed out, unknown host) and names the endpoint and access key id, never
/// the secret.
pub fn explain(error: &object_store::Error, s3: Option<&S3Config>) -> String {
    let text = full_chain(error);
    let endpoint = s3
        .map(|c| c.endpoint_description())
        .unwrap_or_else(|| "the object store".to_string());
    let key_id = s3
        .and_then(|c| c.credentials.as_ref())
        .map(|c| format!("'{}'", c.access_key_id));
    let code = xml_tag(&text, "Code");
    let bucket = xml_tag(&text, "BucketName");
    match code.as_deref() {
        Some("NoSuchBucket") => {
            return format!(
                "the bucket {}does not exist at {endpoint}",
                bucket.map(|b| format!("'{b}' ")).unwrap_or_default()
            );
        }
        Some("NoSuchKey") => return format!("no such object: {}", object_path(error)),
        Some("InvalidAccessKeyId") => {
            return format!(
                "{endpoint} does not know the access key id {}: check AWS_ACCESS_KEY_ID or the AWS profile",
                key_id.unwrap_or_default()
            );
        }
        Some("SignatureDoesNotMatch") => {
            return format!(
                "{endpoint} rejected the request signature: the secret key does not match access key id {}; check AWS_SECRET_ACCESS_KEY or the AWS profile",
                key_id.unwrap_or_default()
            );
        }
        Some("AccessDenied") | Some("AllAccessDisabled") => {
            return match key_id {
                Some(id) => format!(
                    "access denied to {} for access key id {id}",
                    object_path(error)
                ),
                None => format!(
                    "access denied to {}: no AWS credentials were found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile)",
                    object_path(error)
                ),
            };
        }
        _ => {}
    }
    let lower = text.to_lowercase();
    if lower.contains("the tls certificate of") {
        let reason = text
            .split("is not trusted: ")
            .nth(1)
            .map(first_line)
            .unwrap_or_default();
        return format!(
            "cannot verify the TLS certificate of the S3 endpoint {endpoint} ({reason}): set AWS_CA_BUNDLE or TESSERA_S3_CA_FILE to the PEM file of the CA that signed it"
        );
    }
    if lower.contains("connection refused") {
        return format!("cannot reach the S3 endpoint {endpoint}: connection refused");
    }
    if lower.contains("dns error") || lower.contains("failed to lookup address") {
        return format!("cannot reach the S3 endpoint {endpoint}: the host name does not resolve");
    }
    if lower.contains("timed out") || lower.contains("timeout") {
        return format!("cannot reach the S3 endpoint {endpoint}: the connection timed out");
    }
    if lower.contains("error sending request") || lower.contains("connection reset") {
        return format!("cannot reach the S3 endpoint {endpoint}: the connection failed");
    }
    match error {
        object_store::Error::NotFound { path, .. } => return format!("no such object: {path}"),
        object_store::Error::PermissionDenied { path, .. }
        | object_store::Error::Unauthenticated { path, .. } => {
            return format!(
                "{endpoint} refused access to '{path}' for access key id {}: check the credentials and the bucket's permissions",
                key_id.unwrap_or_else(|| "(none: no AWS credentials were found)".to_string())
            );
        }
        _ => {}
    }
    match code {
        Some(code) => {
            let message = xml_tag(&text, "Message").unwrap_or_default();
            format!("{endpoint} answered {code}: {message}")
        }
        None => first_line(&error.to_string()),
    }
}

fn object_path(error: &object_store::Error) -> String {
    use object_store::Error as E;
    match error {
        E::NotFound { path, .. }
        | E::PermissionDenied { path, .. }
        | E::Unauthenticated { path, .. }
        | E::Precondition { path, .. }
        | E::AlreadyExists { path, .. } => format!("'{path}'"),
        _ => "the requested object".to_string(),
    }
}

/// The error and all its sources, joined, so that codes buried in a source are found.
fn full_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    // Error chains are short; the bound guards against a cyclic chain.
    for _ in 0..16 {
        let Some(s) = source else { break };
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn xml_tag(text: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&close)? + start;
    Some(text[start..end].to_string())
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Addressing, Credentials};

    fn config() -> S3Config {
        S3Config {
            endpoint: Some("http://127.0.0.1:9".into()),
            region: "us-east-1".into(),
            credentials: Some(Credentials {
                access_key_id: "AKID".into(),
                secret_access_key: "TOPSECRET".into(),
                session_token: None,
            }),
            addressing: Addressing::Path,
            profile: "default".into(),
        }
    }

    fn generic(body: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: body.to_string().into(),
        }
    }

    #[test]
    fn s3_codes_become_sentences_without_secrets() {
        let cfg = config();
        let cases = [
            (
                "<Error><Code>NoSuchBucket</Code><BucketName>nobucket</BucketName></Error>",
                "bucket 'nobucket' does not exist at http://127.0.0.1:9",
            ),
            (
                "<Error><Code>InvalidAccessKeyId</Code></Error>",
                "does not know the access key id 'AKID'",
            ),
            (
                "<Error><Code>SignatureDoesNotMatch</Code></Error>",
                "secret key does not match access key id 'AKID'",
            ),
            (
                "<Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>",
                "answered SlowDown: Reduce your rate",
            ),
            (
                "error sending request: Connection refused (os error 111)",
                "connection refused",
            ),
        ];
        for (body, expected) in cases {
            let sentence = explain(&generic(body), Some(&cfg));
            assert!(sentence.contains(expected), "{body}: {sentence}");
            assert!(!sentence.contains("TOPSECRET"));
            assert!(!sentence.contains('\n'));
        }
    }

    #[test]
    fn anonymous_access_denied_says_no_credentials() {
        let mut cfg = config();
        cfg.credentials = None;
        let err = object_store::Error::PermissionDenied {
            path: "b/k".into(),
            source: "<Code>AccessDenied</Code>".to_string().into(),
        };
        let sentence = explain(&err, Some(&cfg));
        assert!(sentence.contains("no AWS credentials"), "{sentence}");
    }
}
