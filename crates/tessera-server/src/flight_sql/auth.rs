//! Basic authentication in the handshake and the bearer token of later calls.

use base64::Engine;
use base64::alphabet::STANDARD as ALPHABET;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use tonic::Status;
use tonic::metadata::MetadataMap;

use crate::Credentials;

/// Standard base64, with or without padding: Go's Flight client (ADBC) leaves it out.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &ALPHABET,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Bytes of randomness in a token (hex-encoded on the wire).
const TOKEN_BYTES: usize = 32;

/// Checks the handshake's `authorization: Basic ...` header against `credentials`.
pub(super) fn check_basic(metadata: &MetadataMap, credentials: &Credentials) -> Result<(), Status> {
    let value = authorization(metadata)?;
    let encoded = value
        .strip_prefix("Basic ")
        .ok_or_else(|| Status::unauthenticated(LOG_IN))?;
    let decoded = BASE64
        .decode(encoded.trim())
        .map_err(|_| Status::unauthenticated("the basic authorization header is not base64"))?;
    let text = String::from_utf8(decoded)
        .map_err(|_| Status::unauthenticated("the basic authorization header is not UTF-8"))?;
    let (user, password) = text
        .split_once(':')
        .ok_or_else(|| Status::unauthenticated("the basic authorization header lacks a ':'"))?;
    // Both compared in full so that the time taken does not tell which one was wrong.
    let user_ok = constant_time_eq(user.as_bytes(), credentials.user.as_bytes());
    let password_ok = constant_time_eq(password.as_bytes(), credentials.password.as_bytes());
    if user_ok & password_ok {
        Ok(())
    } else {
        Err(Status::unauthenticated("wrong user name or password"))
    }
}

/// The bearer token of a call.
pub(super) fn bearer(metadata: &MetadataMap) -> Result<&str, Status> {
    authorization(metadata)?
        .strip_prefix("Bearer ")
        .map(str::trim)
        .ok_or_else(|| Status::unauthenticated(LOG_IN))
}

/// A new unguessable session token.
pub(super) fn new_token() -> Result<String, Status> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|_| Status::internal("the operating system gave no randomness for a token"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

const LOG_IN: &str =
    "log in first: a handshake with basic authentication gives the bearer token every call needs";

fn authorization(metadata: &MetadataMap) -> Result<&str, Status> {
    metadata
        .get("authorization")
        .ok_or_else(|| Status::unauthenticated(LOG_IN))?
        .to_str()
        .map_err(|_| Status::unauthenticated("the authorization header is not text"))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};

    fn header(value: &str) -> MetadataMap {
        let mut map = MetadataMap::new();
        map.insert("authorization", value.parse().unwrap());
        map
    }

    fn credentials() -> Credentials {
        Credentials {
            user: "u".into(),
            password: "p:w".into(),
        }
    }

    #[test]
    fn basic_accepts_only_the_credentials() {
        let ok = format!("Basic {}", STANDARD.encode("u:p:w"));
        assert!(check_basic(&header(&ok), &credentials()).is_ok());
        let unpadded = format!("Basic {}", STANDARD_NO_PAD.encode("u:p:w"));
        assert!(check_basic(&header(&unpadded), &credentials()).is_ok());
        let wrong = format!("Basic {}", STANDARD.encode("u:p"));
        let err = check_basic(&header(&wrong), &credentials()).unwrap_err();
        assert_eq!(err.message(), "wrong user name or password");
        assert!(check_basic(&MetadataMap::new(), &credentials()).is_err());
    }

    #[test]
    fn tokens_differ_and_bearer_is_read() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 2 * TOKEN_BYTES);
        assert_eq!(bearer(&header(&format!("Bearer {a}"))).unwrap(), a);
    }
}
