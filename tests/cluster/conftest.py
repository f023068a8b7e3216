"""Fixtures of the cluster suite: MinIO with the generated data cut into objects, DuckDB
over the same documents, and Tessera clusters (a scheduler and executors, each its own
`tessera cluster` process on loopback) that read the objects with their own credentials."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))
from support import duckdb_bluesky, generate_bluesky, tessera_binary  # noqa: E402
from common.minio import MinIO  # noqa: E402

DOCS = int(os.environ.get("TESSERA_CLUSTER_DOCS", "40000"))
TPCH_SF = 0.01
# Objects per data set: tasks are cut per object (and per byte range of a large one).
OBJECTS = 4
# Seconds a cluster may take to register its executors.
READY_S_MAX = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def split_lines(path: Path, parts: int, out: Path) -> list[Path]:
    """`path` cut into `parts` files of whole lines, in order."""
    lines = path.read_bytes().splitlines(keepends=True)
    size = -(-len(lines) // parts)
    out.mkdir(parents=True, exist_ok=True)
    pieces = []
    for i in range(parts):
        piece = out / f"{path.stem}-{i}.json"
        piece.write_bytes(b"".join(lines[i * size : (i + 1) * size]))
        pieces.append(piece)
    return pieces


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def bluesky_file(data_dir) -> Path:
    return generate_bluesky(data_dir / "bluesky.json", DOCS, 7)


@pytest.fixture(scope="session")
def tpch_file(data_dir) -> Path:
    path = data_dir / "tpch.json"
    subprocess.run(
        [tessera_binary(), "gen", "tpch-json", "--sf", str(TPCH_SF), "--seed", "1", "--out", str(path)],
        check=True,
        capture_output=True,
    )
    return path


@pytest.fixture(scope="session")
def minio(bluesky_file, tpch_file, data_dir):
    """MinIO holding s3://data/bluesky/*.json and s3://data/tpch/*.json."""
    with MinIO() as server:
        server.create_bucket("data")
        for name, path in [("bluesky", bluesky_file), ("tpch", tpch_file)]:
            for piece in split_lines(path, OBJECTS, data_dir / name):
                server.put("data", f"{name}/{piece.name}", piece)
        yield server


@pytest.fixture(scope="session")
def duck_bluesky(bluesky_file):
    return duckdb_bluesky(bluesky_file)


@pytest.fixture(scope="session")
def duck_tpch(tpch_file):
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE tpch AS SELECT json AS j FROM read_ndjson_objects(?)", [str(tpch_file)])
    return con


class Cluster:
    """A scheduler and `executors` executors of one slot, as processes; use as a context
    manager. Executors are told lost after a few silent seconds, so that a fault test
    sees the scheduler react within its time."""

    def __init__(self, env: dict, executors: int):
        self.env = env
        self.executors = executors
        self.port = free_port()
        self.procs = []

    @property
    def url(self) -> str:
        return f"df://127.0.0.1:{self.port}"

    def start(self, *args: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [tessera_binary(), "cluster", *args],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def __enter__(self):
        self.start("scheduler", "--bind", f"127.0.0.1:{self.port}", "--executor-timeout-s", "6",
                   "--ready-executors", str(self.executors))
        self.executor_procs = [
            self.start("executor", "--scheduler", self.url, "--flight-port", str(free_port()),
                       "--grpc-port", str(free_port()), "--slots", "1", "--heartbeat-s", "1")
            for _ in range(self.executors)
        ]
        deadline = time.monotonic() + READY_S_MAX
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    self.__exit__(None, None, None)
                    pytest.fail(f"a cluster process exited at start: {proc.stderr.read()}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=1)
                return self
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        self.__exit__(None, None, None)
        pytest.fail(f"the cluster did not register {self.executors} executors within {READY_S_MAX} s")

    def __exit__(self, *exc):
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def tessera_env(minio) -> dict:
    env = dict(os.environ, **minio.env())
    env.pop("TESSERA_CLUSTER", None)
    return env


@pytest.fixture(scope="session")
def cluster_one(minio):
    with Cluster(tessera_env(minio), 1) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def cluster_two(minio):
    with Cluster(tessera_env(minio), 2) as cluster:
        yield cluster
