"""A throwaway toxiproxy in front of a loopback server, emulating object storage's latency
and per-connection bandwidth: started on free ports, stopped on exit.

The binary is the one scripts/tools.sh installs (`$TESSERA_CACHE/bin/server`).
"""

import contextlib
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from common.minio import free_port


def api(port: int, path: str, body: dict) -> None:
    """POSTs `body` to toxiproxy's API on `port`."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).read()


class Links:
    """Proxies of one toxiproxy, each a capped link to a loopback server."""

    def __init__(self, api_port: int, latency_ms: int, rate_kb: int):
        self.api_port, self.latency_ms, self.rate_kb = api_port, latency_ms, rate_kb

    def add(self, name: str, upstream: int) -> str:
        """A proxy to 127.0.0.1:upstream adding `latency_ms` to the first byte of each
        response and limiting each connection to `rate_kb` KB/s (1000 bytes) downstream;
        its endpoint URL."""
        address = f"127.0.0.1:{free_port()}"
        api(self.api_port, "/proxies", {"name": name, "listen": address,
                                        "upstream": f"127.0.0.1:{upstream}", "enabled": True})
        toxics = {"latency": {"latency": self.latency_ms, "jitter": 0},
                  "bandwidth": {"rate": self.rate_kb}}
        for kind, attributes in toxics.items():
            api(self.api_port, f"/proxies/{name}/toxics",
                {"type": kind, "stream": "downstream", "toxicity": 1.0, "attributes": attributes})
        return f"http://{address}"


@contextlib.contextmanager
def links(latency_ms: int, rate_kb: int):
    """A toxiproxy whose proxies (`Links.add`) all get `latency_ms` and `rate_kb`."""
    binary = Path(os.environ.get("TESSERA_CACHE", Path.home() / ".cache/tessera")) / "bin/server"
    port = free_port()
    proc = subprocess.Popen(
        [str(binary), "-host", "127.0.0.1", "-port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/version", timeout=1).read()
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        yield Links(port, latency_ms, rate_kb)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextlib.contextmanager
def toxiproxy(upstream: int, latency_ms: int, rate_kb: int):
    """One capped link to 127.0.0.1:upstream (see `Links.add`); yields its endpoint URL."""
    with links(latency_ms, rate_kb) as proxies:
        yield proxies.add("minio", upstream)
