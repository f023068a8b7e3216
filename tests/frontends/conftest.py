"""Shared fixtures of the front-end tests: a generated Bluesky file, its ingested table,
and a running `tessera serve` process (PostgreSQL wire and Flight SQL on free ports)."""

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support import generate_bluesky, ingest, tessera_binary  # noqa: E402

DOCS = 20000
PASSWORD = "frontend-test-password"
USER = "tessera"
# How long a starting server may take to accept connections (a debug build is slow).
START_TIMEOUT_S = 60


@pytest.fixture(scope="session")
def bluesky_file(tmp_path_factory) -> Path:
    return generate_bluesky(tmp_path_factory.mktemp("data") / "bluesky.json", DOCS, 7)


@pytest.fixture(scope="session")
def bluesky_table(bluesky_file, tmp_path_factory) -> Path:
    return ingest(bluesky_file, tmp_path_factory.mktemp("tables") / "bluesky")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"tessera serve exited with {process.returncode}: {process.stderr.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"tessera serve did not listen on {port} within {START_TIMEOUT_S} s")


@dataclass
class Server:
    """A running `tessera serve`."""

    process: subprocess.Popen
    postgres_port: int
    flight_sql_port: int
    user: str = USER
    password: str = PASSWORD

    def stop(self, timeout_s: float = 30) -> int:
        """SIGTERM, then the exit code (a clean shutdown exits 0)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout_s)


def start_server(*extra: str, env: dict | None = None, postgres: bool = True, flight_sql: bool = True) -> Server:
    """Starts `tessera serve` on free ports (without the PostgreSQL server or Flight SQL
    when `postgres` or `flight_sql` is false); the caller stops it."""
    pg, flight = free_port(), free_port()
    process = subprocess.Popen(
        [
            tessera_binary(),
            "serve",
            "--postgres",
            f"127.0.0.1:{pg}" if postgres else "off",
            "--flight-sql",
            f"127.0.0.1:{flight}" if flight_sql else "off",
            "--user",
            USER,
            *extra,
        ],
        env={**os.environ, "TESSERA_PASSWORD": PASSWORD, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = Server(process, pg, flight)
    try:
        if postgres:
            wait_for_port(pg, process)
        if flight_sql:
            wait_for_port(flight, process)
    except BaseException:
        process.kill()
        raise
    return server


@pytest.fixture(scope="session")
def server():
    """One server for the whole session (tests that stop a server start their own)."""
    server = start_server()
    yield server
    assert server.stop() == 0, server.process.stderr.read()
