//! Finding installed tools and picking free loopback ports.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Finds an executable installed by `go install` (in `$GOBIN`, `$GOPATH/bin`,
/// `~/go/bin`) or on `PATH`; panics with the install hint when it is missing, so that a
/// test without its server fails instead of passing vacuously.
pub fn find_tool(name: &str, install_hint: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["GOBIN"] {
        if let Some(dir) = std::env::var_os(var) {
            dirs.push(dir.into());
        }
    }
    if let Some(gopath) = std::env::var_os("GOPATH") {
        dirs.extend(std::env::split_paths(&gopath).map(|p| p.join("bin")));
    }
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join("go/bin"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("`{name}` is not installed: {install_hint}"))
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("the loopback interface has free ports")
}

/// Waits until `127.0.0.1:port` accepts connections, up to `limit`.
pub fn wait_for_port(port: u16, limit: Duration) -> bool {
    wait_for_listener(SocketAddr::from(([127, 0, 0, 1], port)), limit)
}

/// Waits until `addr` accepts connections, up to `limit`.
pub fn wait_for_listener(addr: SocketAddr, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if TcpStream::connect(addr).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}
