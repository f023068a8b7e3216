//! Test certificate authorities made with the `openssl` command: a CA and a server
//! certificate for `127.0.0.1`/`localhost` signed by it, so TLS tests run against a
//! real chain (rustls refuses a CA certificate presented as a server's own).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Days the test certificates are valid: a test run is far shorter.
const VALID_DAYS: &str = "2";

/// A certificate authority in a directory: `ca.crt` (public, PEM) and `ca.key`.
#[derive(Debug, Clone)]
pub struct TestCa {
    dir: PathBuf,
}

impl TestCa {
    /// Creates a new CA (ECDSA P-256) in `dir`, named `name`.
    pub fn create(dir: &Path, name: &str) -> Self {
        std::fs::create_dir_all(dir).expect("a directory for the CA");
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                VALID_DAYS,
                "-subj",
                &format!("/CN={name}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        );
        Self {
            dir: dir.to_path_buf(),
        }
    }

    /// The CA certificate (PEM): what a client is told to trust.
    pub fn cert_file(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// Writes a server certificate for `127.0.0.1` and `localhost` signed by this CA
    /// into `dir` as `public.crt` and `private.key`, the names MinIO's `--certs-dir`
    /// expects.
    pub fn issue_server_cert(&self, dir: &Path) {
        std::fs::create_dir_all(dir).expect("a directory for the certificate");
        let ext = dir.join("server.ext");
        std::fs::write(
            &ext,
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .expect("the extension file is written");
        openssl(
            dir,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                "private.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        );
        let ca_crt = self.cert_file();
        let ca_key = self.dir.join("ca.key");
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                path_str(&ca_crt),
                "-CAkey",
                path_str(&ca_key),
                "-set_serial",
                "1",
                "-out",
                "public.crt",
                "-days",
                VALID_DAYS,
                "-extfile",
                "server.ext",
            ],
        );
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command is installed");
    assert!(
        output.status.success(),
        "openssl {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}
