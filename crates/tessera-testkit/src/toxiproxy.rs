//! A toxiproxy server for one test: a TCP proxy in front of MinIO that injects the
//! faults of real object storage (latency, a per-connection bandwidth cap, resets,
//! stalls, truncation), driven through toxiproxy's HTTP API.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::http;
use crate::process::{find_tool, free_port, wait_for_listener, wait_for_port};

const INSTALL_HINT: &str = "run scripts/test.sh, which does `go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0` (the binary is named `server`)";
/// How long toxiproxy may take to start.
const START_LIMIT: Duration = Duration::from_secs(30);

/// A running toxiproxy server with its API on a free loopback port; killed on drop.
pub struct Toxiproxy {
    child: Child,
    api_port: u16,
}

/// Which way through the proxy a toxic acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Server to client: responses.
    Downstream,
    /// Client to server: requests.
    Upstream,
}

/// A fault toxiproxy injects into every connection through a proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toxic {
    /// Delays all data by `latency_ms`, plus up to `jitter_ms` either way.
    Latency {
        /// Added delay in milliseconds.
        latency_ms: u64,
        /// Random variation in milliseconds.
        jitter_ms: u64,
    },
    /// Caps each connection at `kib_per_second` KiB/s (toxiproxy's "KB" are 1024 bytes).
    Bandwidth {
        /// The rate limit.
        kib_per_second: u64,
    },
    /// Resets each connection (TCP RST) `after_ms` after data starts flowing.
    ResetPeer {
        /// Delay before the reset in milliseconds; 0 resets at once.
        after_ms: u64,
    },
    /// Stops all data; closes the connection after `close_after_ms`, or never when 0.
    Timeout {
        /// Delay before closing in milliseconds; 0 keeps the connection open, stalled.
        close_after_ms: u64,
    },
    /// Closes each connection once `bytes` bytes have passed.
    LimitData {
        /// Bytes let through per connection.
        bytes: u64,
    },
    /// Cuts the data into small segments sent with a delay in between.
    Slicer {
        /// Average segment size in bytes.
        average_size: u64,
        /// Variation of the segment size in bytes.
        size_variation: u64,
        /// Delay between segments in microseconds.
        delay_us: u64,
    },
}

impl Toxic {
    /// toxiproxy's type name and attributes object.
    fn to_json(self) -> (&'static str, String) {
        match self {
            Toxic::Latency {
                latency_ms,
                jitter_ms,
            } => (
                "latency",
                format!(r#"{{"latency":{latency_ms},"jitter":{jitter_ms}}}"#),
            ),
            Toxic::Bandwidth { kib_per_second } => {
                ("bandwidth", format!(r#"{{"rate":{kib_per_second}}}"#))
            }
            Toxic::ResetPeer { after_ms } => ("reset_peer", format!(r#"{{"timeout":{after_ms}}}"#)),
            Toxic::Timeout { close_after_ms } => {
                ("timeout", format!(r#"{{"timeout":{close_after_ms}}}"#))
            }
            Toxic::LimitData { bytes } => ("limit_data", format!(r#"{{"bytes":{bytes}}}"#)),
            Toxic::Slicer {
                average_size,
                size_variation,
                delay_us,
            } => (
                "slicer",
                format!(
                    r#"{{"average_size":{average_size},"size_variation":{size_variation},"delay":{delay_us}}}"#
                ),
            ),
        }
    }
}

/// One proxy: a loopback port forwarding to an upstream port, with toxics.
#[derive(Debug, Clone)]
pub struct Proxy {
    api_port: u16,
    name: String,
    ip: Ipv4Addr,
    port: u16,
}

impl Toxiproxy {
    /// Starts toxiproxy and waits until its API answers.
    pub fn start() -> Self {
        let binary = find_tool("server", INSTALL_HINT);
        let api_port = free_port();
        let child = Command::new(binary)
            .arg("-host")
            .arg("127.0.0.1")
            .arg("-port")
            .arg(api_port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("toxiproxy starts");
        let server = Self { child, api_port };
        assert!(
            wait_for_port(api_port, START_LIMIT),
            "toxiproxy did not listen on port {api_port}"
        );
        let (status, body) = server.call("GET", "/version", "");
        assert_eq!(status, 200, "toxiproxy /version: {body}");
        server
    }

    /// Creates the proxy `name` on a free loopback port in front of
    /// `127.0.0.1:upstream_port`.
    pub fn proxy(&self, name: &str, upstream_port: u16) -> Proxy {
        self.proxy_at(name, Ipv4Addr::LOCALHOST, free_port(), upstream_port)
    }

    /// Creates the proxy `name` listening on `ip:port` (any 127.x.y.z address is
    /// loopback on Linux, so several proxies can share one port, as several addresses
    /// of one endpoint do).
    pub fn proxy_at(&self, name: &str, ip: Ipv4Addr, port: u16, upstream_port: u16) -> Proxy {
        assert!(
            ip.is_loopback(),
            "proxies listen on loopback addresses only"
        );
        let (status, body) = self.call(
            "POST",
            "/proxies",
            &format!(
                r#"{{"name":"{name}","listen":"{ip}:{port}","upstream":"127.0.0.1:{upstream_port}","enabled":true}}"#
            ),
        );
        assert_eq!(status, 201, "create proxy {name}: {body}");
        assert!(
            wait_for_listener(SocketAddr::from((ip, port)), START_LIMIT),
            "proxy {name} did not listen on {ip}:{port}"
        );
        Proxy {
            api_port: self.api_port,
            name: name.to_string(),
            ip,
            port,
        }
    }

    fn call(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        api_call(self.api_port, method, path, body)
    }
}

/// One call to toxiproxy's API; panics when toxiproxy does not answer, since every
/// test that uses it depends on the answer.
fn api_call(api_port: u16, method: &str, path: &str, body: &str) -> (u16, String) {
    let headers = [("content-type".to_string(), "application/json".to_string())];
    http::request(api_port, method, path, &headers, body)
        .unwrap_or_else(|e| panic!("toxiproxy API {method} {path}: {e}"))
}

impl Proxy {
    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((self.ip, self.port))
    }

    /// `http://<ip>:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://{}:{}", self.ip, self.port)
    }

    /// Adds the toxic `name` to every connection, current and future, in `direction`.
    pub fn add(&self, name: &str, direction: Direction, toxic: Toxic) {
        self.add_with_toxicity(name, direction, toxic, 1.0);
    }

    /// Adds the toxic `name` to a share `toxicity` (0 to 1) of the connections.
    pub fn add_with_toxicity(&self, name: &str, direction: Direction, toxic: Toxic, toxicity: f64) {
        assert!((0.0..=1.0).contains(&toxicity), "toxicity {toxicity}");
        let stream = match direction {
            Direction::Downstream => "downstream",
            Direction::Upstream => "upstream",
        };
        let (kind, attributes) = toxic.to_json();
        let (status, body) = api_call(
            self.api_port,
            "POST",
            &format!("/proxies/{}/toxics", self.name),
            &format!(
                r#"{{"name":"{name}","type":"{kind}","stream":"{stream}","toxicity":{toxicity},"attributes":{attributes}}}"#
            ),
        );
        assert_eq!(status, 200, "add toxic {name}: {body}");
    }

    /// Removes the toxic `name`.
    pub fn remove(&self, name: &str) {
        let (status, body) = api_call(
            self.api_port,
            "DELETE",
            &format!("/proxies/{}/toxics/{name}", self.name),
            "",
        );
        assert_eq!(status, 204, "remove toxic {name}: {body}");
    }

    /// Enables or disables the proxy; disabling closes all its connections and refuses
    /// new ones.
    pub fn set_enabled(&self, enabled: bool) {
        let (status, body) = api_call(
            self.api_port,
            "POST",
            &format!("/proxies/{}", self.name),
            &format!(r#"{{"enabled":{enabled}}}"#),
        );
        assert_eq!(status, 200, "enable proxy {}: {body}", self.name);
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Retrieval options for tests that inject faults: stalls end after 1 s, backoff is
/// short and hedging is off (a hedge would be a second connection outside the test's
/// control), so each fault meets the retry logic alone.
pub fn fault_retrieval_options() -> tessera_blob::RetrievalOptions {
    tessera_blob::RetrievalOptions {
        max_attempts: 4,
        base_backoff: Duration::from_millis(10),
        stall_timeout: Duration::from_secs(1),
        attempt_timeout: Duration::from_secs(60),
        hedging: tessera_blob::Hedging {
            enabled: false,
            ..tessera_blob::Hedging::default()
        },
        ..tessera_blob::RetrievalOptions::default()
    }
}
