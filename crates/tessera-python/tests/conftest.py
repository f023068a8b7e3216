"""Shared fixtures: a generated Bluesky file, DuckDB over it as the peer, and Tessera
connections over it raw and after `Connection.ingest`, all through the installed wheel."""

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import tessera

REPO = Path(__file__).resolve().parents[3]
# The differential suite's data set (tests/differential), whose answers have no ties at
# the LIMIT boundaries of JSONBench's queries.
DOCS = 30000
SEED = 42

sys.path.insert(0, str(REPO / "bench"))


def tessera_binary() -> str:
    path = os.environ.get("TESSERA_BIN")
    if not path or not Path(path).is_file():
        pytest.fail("TESSERA_BIN must name a built tessera binary (scripts/python_package.sh sets it)")
    return path


def generate_bluesky(path: Path, docs: int, seed: int) -> Path:
    """`tessera gen bluesky` into `path`."""
    subprocess.run(
        [tessera_binary(), "gen", "bluesky", "--docs", str(docs), "--seed", str(seed), "--out", str(path)],
        check=True,
        capture_output=True,
    )
    return path


@pytest.fixture(scope="session")
def bluesky_file(tmp_path_factory) -> Path:
    return generate_bluesky(tmp_path_factory.mktemp("data") / "bluesky.json", DOCS, SEED)


@pytest.fixture(scope="session")
def duck(bluesky_file):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    # JSONBench's DuckDB setup: one JSON column named j.
    con.execute("CREATE TABLE bluesky AS SELECT json AS j FROM read_ndjson_objects(?)", [str(bluesky_file)])
    return con


@pytest.fixture(scope="session")
def ingested(bluesky_file, tmp_path_factory):
    """The file ingested into a Tessera table with `Connection.ingest`: (location, summary)."""
    table = tmp_path_factory.mktemp("tables") / "bluesky"
    with tessera.connect() as con:
        summary = con.ingest(bluesky_file, table=table)
    return table, summary


@pytest.fixture(scope="session", params=["raw", "table"])
def bluesky(request, bluesky_file):
    """A connection with table `bluesky` over the raw NDJSON, and over the ingested table."""
    con = tessera.connect()
    if request.param == "raw":
        con.execute(f"CREATE EXTERNAL TABLE bluesky STORED AS NDJSON LOCATION '{bluesky_file}'")
    else:
        table, _ = request.getfixturevalue("ingested")
        con.execute(f"CREATE EXTERNAL TABLE bluesky STORED AS TESSERA LOCATION '{table}'")
    return con
