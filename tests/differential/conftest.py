"""Shared fixtures: one generated Bluesky file, a DuckDB connection and a Tessera runner."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from support import duckdb_bluesky, generate_bluesky, ingest, tessera_binary  # noqa: E402

DOCS = int(os.environ.get("TESSERA_DIFF_DOCS", "30000"))


@pytest.fixture(scope="session")
def bluesky_file(tmp_path_factory) -> Path:
    return generate_bluesky(tmp_path_factory.mktemp("data") / "bluesky.json", DOCS, 42)


@pytest.fixture(scope="session")
def duck(bluesky_file):
    return duckdb_bluesky(bluesky_file)


class Tessera:
    """Runs queries through the tessera binary on the same documents, read by `ddl`."""

    def __init__(self, ddl: str):
        self.ddl = ddl

    def query(self, sql: str) -> list:
        out = subprocess.run(
            [tessera_binary(), "sql", "--format", "json", self.ddl + sql],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise AssertionError(f"tessera failed on {sql}:\n{out.stderr}")
        return json.loads(out.stdout)


@pytest.fixture(scope="session")
def ingested_table(bluesky_file, tmp_path_factory) -> Path:
    """The same file ingested into a Tessera table (JSON tiles), in one commit."""
    return ingest(bluesky_file, tmp_path_factory.mktemp("tables") / "bluesky")


@pytest.fixture(scope="session", params=["raw", "table"])
def tessera(request, bluesky_file) -> Tessera:
    """Tessera over the raw NDJSON in place, and over the ingested table."""
    if request.param == "raw":
        return Tessera(f"CREATE EXTERNAL TABLE bluesky STORED AS NDJSON LOCATION '{bluesky_file}';")
    table = request.getfixturevalue("ingested_table")
    return Tessera(f"CREATE EXTERNAL TABLE bluesky STORED AS TESSERA LOCATION '{table}';")
