//! A MinIO server for one test.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use tessera_blob::Credentials;
use tessera_blob::sigv4::{EMPTY_SHA256, Request, sign};

use crate::http;
use crate::process::{find_tool, free_port, wait_for_port};

const INSTALL_HINT: &str = "run scripts/test.sh, which does `go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c`";
/// How long MinIO may take to start.
const START_LIMIT: Duration = Duration::from_secs(60);

/// A running MinIO server on a free loopback port; stopped and deleted on drop.
pub struct MinioServer {
    child: Child,
    port: u16,
    credentials: Credentials,
    _dir: tempfile::TempDir,
}

impl MinioServer {
    /// Starts MinIO over a fresh temporary directory and waits until it serves requests.
    pub fn start() -> Self {
        let binary = find_tool("minio", INSTALL_HINT);
        let dir = tempfile::tempdir().expect("a temporary directory");
        let port = free_port();
        let console = free_port();
        let credentials = Credentials {
            access_key_id: "tessera-test".to_string(),
            secret_access_key: "tessera-test-secret".to_string(),
            session_token: None,
        };
        let child = Command::new(binary)
            .arg("server")
            .arg(dir.path())
            .arg("--address")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--console-address")
            .arg(format!("127.0.0.1:{console}"))
            .env("MINIO_ROOT_USER", &credentials.access_key_id)
            .env("MINIO_ROOT_PASSWORD", &credentials.secret_access_key)
            .env("MINIO_BROWSER", "off")
            .env("MINIO_UPDATE", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("MinIO starts");
        let mut server = Self {
            child,
            port,
            credentials,
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
                panic!("MinIO exited during start: {status}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("MinIO was not ready within {START_LIMIT:?}");
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The root credentials.
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// Environment variables that point AWS clients (and `tessera`) at this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", self.credentials.access_key_id.clone()),
            (
                "AWS_SECRET_ACCESS_KEY",
                self.credentials.secret_access_key.clone(),
            ),
            ("AWS_REGION", "us-east-1".to_string()),
        ]
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
        http::request(self.port, method, path, &headers, "")
    }
}

impl Drop for MinioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
