//! A MinIO server for one test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use rustls::ClientConfig;
use tessera_blob::Credentials;
use tessera_blob::sigv4::{EMPTY_SHA256, Request, sign};

use crate::certs::TestCa;
use crate::http;
use crate::process::{find_tool, free_port, wait_for_port};

const INSTALL_HINT: &str = "run scripts/test.sh, which does `go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c`";
/// How long MinIO may take to start.
const START_LIMIT: Duration = Duration::from_secs(60);

/// How to start MinIO.
#[derive(Debug, Clone, Default)]
pub struct MinioOptions {
    /// Serve HTTPS with a server certificate from a fresh test CA
    /// ([`MinioServer::ca_file`] names the CA to trust).
    pub tls: bool,
    /// Extra environment variables for the server (for example the
    /// `MINIO_API_REQUESTS_*` throttling settings).
    pub env: Vec<(String, String)>,
    /// Drives of one erasure set (`data/d1` ... `data/dN`) when above 1, so a test can
    /// damage an object's metadata on some drives; one plain directory otherwise.
    pub drives: usize,
}

/// A running MinIO server on a free loopback port; stopped and deleted on drop.
pub struct MinioServer {
    child: Child,
    port: u16,
    credentials: Credentials,
    /// The CA file and the client configuration trusting it, when serving HTTPS.
    tls: Option<(PathBuf, Arc<ClientConfig>)>,
    drives: Vec<PathBuf>,
    _dir: tempfile::TempDir,
}

impl MinioServer {
    /// Starts MinIO over a fresh temporary directory and waits until it serves requests.
    pub fn start() -> Self {
        Self::start_with(MinioOptions::default())
    }

    /// Starts MinIO with `options` and waits until it serves requests.
    pub fn start_with(options: MinioOptions) -> Self {
        let binary = find_tool("minio", INSTALL_HINT);
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("data");
        let certs = dir.path().join("certs");
        let tls = options.tls.then(|| {
            let ca = TestCa::create(&dir.path().join("ca"), "Tessera test CA");
            ca.issue_server_cert(&certs);
            let file = ca.cert_file();
            let config = tessera_blob::tls::client_config(Some(&file))
                .expect("the test CA makes a client configuration");
            (file, config)
        });
        let port = free_port();
        let console = free_port();
        let credentials = Credentials {
            access_key_id: "tessera-test".to_string(),
            secret_access_key: "tessera-test-secret".to_string(),
            session_token: None,
        };
        let mut command = Command::new(binary);
        command.arg("server");
        let drives: Vec<PathBuf> = if options.drives > 1 {
            let drives: Vec<PathBuf> = (1..=options.drives)
                .map(|i| data.join(format!("d{i}")))
                .collect();
            for drive in &drives {
                std::fs::create_dir_all(drive).expect("a drive directory");
            }
            // MinIO's ellipsis notation: one erasure set over d1 ... dN. Drives on
            // one disk are refused outside CI mode (the server stays unavailable).
            command.arg(data.join(format!("d{{1...{}}}", options.drives)));
            command.env("MINIO_CI_CD", "1");
            drives
        } else {
            command.arg(&data);
            vec![data.clone()]
        };
        if tls.is_some() {
            command.arg("--certs-dir").arg(&certs);
        }
        let child = command
            .arg("--address")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--console-address")
            .arg(format!("127.0.0.1:{console}"))
            .env("MINIO_ROOT_USER", &credentials.access_key_id)
            .env("MINIO_ROOT_PASSWORD", &credentials.secret_access_key)
            .env("MINIO_BROWSER", "off")
            .env("MINIO_UPDATE", "off")
            .envs(options.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(dir.path().join("minio.log"))
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null()),
            )
            .spawn()
            .expect("MinIO starts");
        let mut server = Self {
            child,
            port,
            credentials,
            tls,
            drives,
            _dir: dir,
        };
        assert!(
            wait_for_port(port, START_LIMIT),
            "MinIO did not listen on port {port}"
        );
        server.wait_until_ready();
        server
    }

    fn wait_until_ready(&mut self) {
        let deadline = Instant::now() + START_LIMIT;
        while Instant::now() < deadline {
            if let Ok((200, _)) = self.request("GET", "/minio/health/ready", false) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let log =
                    std::fs::read_to_string(self._dir.path().join("minio.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(5).collect();
                panic!("MinIO exited during start: {status}: {}", tail.join(" | "));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("MinIO was not ready within {START_LIMIT:?}");
    }

    /// `http://127.0.0.1:<port>`, or `https://` when serving TLS.
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The drive directories MinIO stores objects in (`<drive>/<bucket>/<key>/...`).
    pub fn drives(&self) -> &[PathBuf] {
        &self.drives
    }

    /// The PEM file of the CA that signed the server's certificate, when serving TLS.
    pub fn ca_file(&self) -> Option<&Path> {
        self.tls.as_ref().map(|(file, _)| file.as_path())
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The root credentials.
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// Environment variables that point AWS clients (and `tessera`) at this server,
    /// with `AWS_CA_BUNDLE` naming the test CA when it serves TLS.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", self.credentials.access_key_id.clone()),
            (
                "AWS_SECRET_ACCESS_KEY",
                self.credentials.secret_access_key.clone(),
            ),
            ("AWS_REGION", "us-east-1".to_string()),
        ];
        if let Some(file) = self.ca_file() {
            env.push(("AWS_CA_BUNDLE", file.display().to_string()));
        }
        env
    }

    /// Creates a bucket. MinIO answers 503 for a moment after it reports ready, so
    /// that answer is retried until [`START_LIMIT`].
    pub fn create_bucket(&self, name: &str) {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            let (status, body) = self
                .request("PUT", &format!("/{name}"), true)
                .expect("MinIO answers");
            if status == 503 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            assert_eq!(status, 200, "create bucket {name}: {body}");
            return;
        }
    }

    /// One signed (or unsigned) HTTP/1.1 request with an empty body; returns status and body.
    fn request(&self, method: &str, path: &str, signed: bool) -> std::io::Result<(u16, String)> {
        let host = format!("127.0.0.1:{}", self.port);
        let headers = if signed {
            let request = Request {
                method,
                host: &host,
                path,
                query: &[],
                headers: &[],
                payload_sha256: EMPTY_SHA256,
            };
            sign(&request, &self.credentials, "us-east-1", SystemTime::now())
        } else {
            Vec::new()
        };
        match &self.tls {
            Some((_, config)) => http::request_tls(self.port, config, method, path, &headers, ""),
            None => http::request(self.port, method, path, &headers, ""),
        }
    }
}

impl Drop for MinioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
