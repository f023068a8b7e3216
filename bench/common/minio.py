"""A throwaway MinIO server for benchmarks: started on a free loopback port over a
temporary directory, with one bucket, and stopped on exit.

The binary is the one scripts/tools.sh installs (`$TESSERA_CACHE/bin/minio`). Buckets are
created with a SigV4-signed PUT, so nothing beyond the standard library is needed.
"""

import datetime as dt
import hashlib
import hmac
import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

USER = "tessera-bench"
SECRET = "tessera-bench-secret"
REGION = "us-east-1"


def _binary() -> str:
    cache = Path(os.environ.get("TESSERA_CACHE", Path.home() / ".cache/tessera"))
    return str(cache / "bin" / "minio")


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def split_lines(source: Path, parts: int, out: Path) -> list:
    """`source` cut into `parts` files of whole lines and about equal size, in `out`
    (objects for a store, so that scans get several)."""
    size = source.stat().st_size
    out.mkdir(parents=True, exist_ok=True)
    paths, written = [], 0
    with open(source, "rb") as f:
        for i in range(parts):
            path = out / f"{source.stem}-part{i:02}.json"
            limit = size * (i + 1) // parts
            with open(path, "wb") as part:
                for line in f:
                    part.write(line)
                    written += len(line)
                    if written >= limit:
                        break
            paths.append(path)
    return paths


def _sign(method: str, host: str, path: str, payload: str = "", query: str = "") -> dict:
    """SigV4 headers of a request; `payload` is the body's SHA-256 (empty: no body), or
    `UNSIGNED-PAYLOAD`; `query` is the canonical query string (sorted, encoded)."""
    now = dt.datetime.now(dt.timezone.utc)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = payload or hashlib.sha256(b"").hexdigest()
    headers = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": stamp}
    names = ";".join(sorted(headers))
    canonical = "\n".join(
        [method, path, query, *(f"{k}:{headers[k]}" for k in sorted(headers)), "", names, payload]
    )
    scope = f"{day}/{REGION}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + SECRET).encode()
    for part in (day, REGION, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={USER}/{scope}, SignedHeaders={names}, Signature={signature}"
    )
    return headers


class MinIO:
    """A running MinIO; use as a context manager."""

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="tessera-minio-")
        self.port = free_port()
        # Public metrics: `counters` reads them without signing.
        env = dict(os.environ, MINIO_ROOT_USER=USER, MINIO_ROOT_PASSWORD=SECRET,
                   MINIO_PROMETHEUS_AUTH_TYPE="public")
        self.proc = subprocess.Popen(
            [_binary(), "server", self.dir.name, "--address", f"127.0.0.1:{self.port}", "--quiet"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{self.endpoint}/minio/health/live", timeout=1)
                return self
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        self.__exit__(None, None, None)
        raise SystemExit("MinIO did not start within 30 s")

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.dir.cleanup()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict:
        """Environment variables that point Tessera at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": USER,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION": REGION,
        }

    def create_bucket(self, name: str) -> None:
        """Creates `name`, retrying while MinIO still warms up (it answers 503 briefly)."""
        for _ in range(100):
            request = urllib.request.Request(
                f"{self.endpoint}/{name}", method="PUT", headers=_sign("PUT", f"127.0.0.1:{self.port}", f"/{name}")
            )
            try:
                urllib.request.urlopen(request, timeout=5)
                return
            except urllib.error.HTTPError as e:
                if e.code != 503:
                    raise SystemExit(f"create bucket {name}: HTTP {e.code} {e.read()[:200]!r}")
            time.sleep(0.1)
        raise SystemExit(f"create bucket {name}: MinIO kept answering 503")

    def put(self, bucket: str, key: str, path: Path) -> None:
        """Uploads the file `path` as `bucket/key` (streamed, unsigned payload)."""
        target = f"/{bucket}/{key}"
        headers = _sign("PUT", f"127.0.0.1:{self.port}", target, "UNSIGNED-PAYLOAD")
        headers["Content-Length"] = str(path.stat().st_size)
        with open(path, "rb") as body:
            request = urllib.request.Request(
                self.endpoint + target, data=body, method="PUT", headers=headers
            )
            urllib.request.urlopen(request, timeout=600).read()

    def keys(self, bucket: str, prefix: str) -> list[str]:
        """The keys in `bucket` that start with `prefix` (the first 1000)."""
        query = "&".join(
            f"{k}={urllib.parse.quote(v, safe='-_.~')}" for k, v in sorted({"list-type": "2", "prefix": prefix}.items())
        )
        headers = _sign("GET", f"127.0.0.1:{self.port}", f"/{bucket}", query=query)
        request = urllib.request.Request(f"{self.endpoint}/{bucket}?{query}", headers=headers)
        text = urllib.request.urlopen(request, timeout=30).read().decode()
        return re.findall(r"<Key>([^<]*)</Key>", text)

    def counters(self) -> dict:
        """MinIO's S3 counters: requests per API (`GetObject`, `SelectObjectContent`, ...)
        and `sent_bytes`."""
        url = f"{self.endpoint}/minio/metrics/v3/api/requests"
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        counters = {}
        requests = r'^minio_api_requests_total\{name="(\w+)".*type="s3"\} (\S+)$'
        for name, value in re.findall(requests, text, re.M):
            counters[name] = float(value)
        sent = re.search(r'^minio_api_requests_traffic_sent_bytes\{.*type="s3"\} (\S+)$', text, re.M)
        counters["sent_bytes"] = float(sent.group(1))
        return counters
