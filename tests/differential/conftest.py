"""Shared fixtures: one generated Bluesky file, a DuckDB connection and a Tessera runner."""

import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = int(os.environ.get("TESSERA_DIFF_DOCS", "30000"))


def tessera_binary() -> str:
    path = os.environ.get("TESSERA_BIN")
    if not path or not Path(path).is_file():
        pytest.fail("TESSERA_BIN must name a built tessera binary (scripts/test.sh sets it)")
    return path


@pytest.fixture(scope="session")
def bluesky_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "bluesky.json"
    subprocess.run(
        [tessera_binary(), "gen", "bluesky", "--docs", str(DOCS), "--seed", "42", "--out", str(path)],
        check=True,
        capture_output=True,
    )
    return path


@pytest.fixture(scope="session")
def duck(bluesky_file):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    # JSONBench's DuckDB setup: one JSON column named j.
    con.execute(
        "CREATE TABLE bluesky AS SELECT json AS j FROM read_ndjson_objects(?)",
        [str(bluesky_file)],
    )
    return con


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
    table = tmp_path_factory.mktemp("tables") / "bluesky"
    subprocess.run(
        [tessera_binary(), "ingest", str(bluesky_file), "--table", str(table), "--quiet"],
        check=True,
        capture_output=True,
    )
    return table


@pytest.fixture(scope="session", params=["raw", "table"])
def tessera(request, bluesky_file) -> Tessera:
    """Tessera over the raw NDJSON in place, and over the ingested table."""
    if request.param == "raw":
        return Tessera(f"CREATE EXTERNAL TABLE bluesky STORED AS NDJSON LOCATION '{bluesky_file}';")
    table = request.getfixturevalue("ingested_table")
    return Tessera(f"CREATE EXTERNAL TABLE bluesky STORED AS TESSERA LOCATION '{table}';")
