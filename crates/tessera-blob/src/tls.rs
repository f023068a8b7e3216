//! TLS settings for the io_uring client: which certificate authorities it trusts.
//!
//! The handshake and record layer run inside the retriever's event loop
//! (`uring`) with rustls over the same non-blocking sockets as plain HTTP; this
//! module only builds the shared `rustls::ClientConfig`.
//!
//! Trust: the operating system's CA store (as `rustls-native-certs` finds it, which also
//! honours `SSL_CERT_FILE`/`SSL_CERT_DIR`) for public endpoints such as AWS. A private
//! endpoint signed by its own CA is trusted through a PEM bundle named by
//! `TESSERA_S3_CA_FILE` or, as the AWS CLI does, `AWS_CA_BUNDLE`; like the AWS CLI, a
//! bundle replaces the system store rather than adding to it, so exactly the named
//! authorities are trusted.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::ClientConfig;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Most certificates read from one CA bundle: system bundles hold a few hundred, so
/// this only bounds a file that is not a bundle at all.
const MAX_BUNDLE_CERTS: usize = 10_000;

/// Why a TLS configuration could not be built.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TlsError {
    /// The CA bundle could not be read or holds no usable certificate.
    #[error("the CA bundle {path} is unusable: {reason}")]
    Bundle {
        /// The bundle's path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Neither a bundle nor any system CA certificate is available.
    #[error(
        "no trusted CA certificates: the system store is empty or unreadable ({0}); set TESSERA_S3_CA_FILE or AWS_CA_BUNDLE to a PEM bundle"
    )]
    NoRoots(String),
    /// rustls refused the protocol settings (a build without TLS 1.2/1.3 support).
    #[error("TLS is unavailable: {0}")]
    Protocol(String),
}

/// The client configuration trusting the certificates in `ca_file` when given, else
/// the system store; HTTP/1.1 is offered by ALPN because that is all the event loop
/// speaks.
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, TlsError> {
    let roots = match ca_file {
        Some(path) => bundle_roots(path)?,
        None => system_roots()?,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Protocol(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn bundle_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let bad = |reason: String| TlsError::Bundle {
        path: path.to_path_buf(),
        reason,
    };
    let mut roots = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| bad(e.to_string()))?;
    for cert in certs.take(MAX_BUNDLE_CERTS) {
        let cert = cert.map_err(|e| bad(e.to_string()))?;
        roots
            .add(cert)
            .map_err(|e| bad(format!("a certificate does not parse: {e}")))?;
    }
    if roots.is_empty() {
        return Err(bad("it holds no PEM certificate".into()));
    }
    Ok(roots)
}

/// The system's CA certificates, read once per process: reading the store takes
/// milliseconds and every https client would otherwise repeat it.
fn system_roots() -> Result<RootCertStore, TlsError> {
    static SYSTEM: OnceLock<Result<Vec<CertificateDer<'static>>, String>> = OnceLock::new();
    let certs = SYSTEM.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        if found.certs.is_empty() {
            let reasons: Vec<String> = found.errors.iter().map(|e| e.to_string()).collect();
            return Err(if reasons.is_empty() {
                "no certificate found".to_string()
            } else {
                reasons.join("; ")
            });
        }
        Ok(found.certs)
    });
    let certs = certs.as_ref().map_err(|e| TlsError::NoRoots(e.clone()))?;
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(certs.iter().cloned());
    if roots.is_empty() {
        return Err(TlsError::NoRoots("no certificate parses".into()));
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_without_certificates_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let err = client_config(Some(&path)).unwrap_err();
        assert!(
            err.to_string().contains("holds no PEM certificate"),
            "{err}"
        );
        let missing = dir.path().join("missing.pem");
        let err = client_config(Some(&missing)).unwrap_err();
        assert!(err.to_string().contains("missing.pem"), "{err}");
    }

    #[test]
    fn the_system_store_is_used_without_a_bundle() {
        // The build machine has a CA store (/etc/ssl/certs); without one this is the
        // documented NoRoots error, which the assertion prints.
        let config = client_config(None);
        assert!(config.is_ok(), "{:?}", config.err());
    }
}
