"""What Tessera's Python test suites share (tests/differential, tests/frontends and the
Python package's tests): the built binary, generated Bluesky data and its ingested table,
DuckDB's JSONBench setup over the same file, and JSONBench's queries."""

import os
import subprocess
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]


def tessera_binary() -> str:
    """The `tessera` binary the suite runs (`TESSERA_BIN`, set by the test scripts)."""
    path = os.environ.get("TESSERA_BIN")
    if not path or not Path(path).is_file():
        pytest.fail("TESSERA_BIN must name a built tessera binary (scripts/test.sh sets it)")
    return path


def generate_bluesky(path: Path, docs: int, seed: int) -> Path:
    """`tessera gen bluesky` into `path`."""
    subprocess.run(
        [tessera_binary(), "gen", "bluesky", "--docs", str(docs), "--seed", str(seed), "--out", str(path)],
        check=True,
        capture_output=True,
    )
    return path


def ingest(source: Path, table: Path) -> Path:
    """`tessera ingest` of `source` into a new table at `table`, in one commit."""
    subprocess.run(
        [tessera_binary(), "ingest", str(source), "--table", str(table), "--quiet"],
        check=True,
        capture_output=True,
    )
    return table


def duckdb_bluesky(path: Path):
    """DuckDB with JSONBench's setup over `path`: a table `bluesky` of one JSON column `j`."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE bluesky AS SELECT json AS j FROM read_ndjson_objects(?)", [str(path)])
    return con


def jsonbench_queries(dialect: str) -> list[str]:
    """JSONBench's five queries in `dialect` (tessera, duckdb, clickhouse), one per line."""
    text = (REPO / "bench/jsonbench/queries" / f"{dialect}.sql").read_text()
    return [line for line in text.splitlines() if line.strip() and not line.startswith("--")]
