"""Shared fixtures: a generated Bluesky file, DuckDB over it as the peer, and Tessera
connections over it raw and after `Connection.ingest`, all through the installed wheel."""

import sys
from pathlib import Path

import pytest

import tessera

REPO = Path(__file__).resolve().parents[3]
# The differential suite's data set (tests/differential), whose answers have no ties at
# the LIMIT boundaries of JSONBench's queries.
DOCS = 30000
SEED = 42

sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))
from support import duckdb_bluesky, generate_bluesky, tessera_binary  # noqa: E402, F401


@pytest.fixture(scope="session")
def bluesky_file(tmp_path_factory) -> Path:
    return generate_bluesky(tmp_path_factory.mktemp("data") / "bluesky.json", DOCS, SEED)


@pytest.fixture(scope="session")
def duck(bluesky_file):
    return duckdb_bluesky(bluesky_file)


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
