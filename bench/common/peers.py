"""Loading the Bluesky file into each system's own storage, shared by the ingest and the
query benchmarks so both measure the same setup: DuckDB and chDB as JSONBench sets them
up, Tessera with `tessera ingest`."""

import json
import os
import subprocess
import time
from pathlib import Path

# JSONBench's ClickHouse DDL: a JSON column with typed paths, sorted for its queries.
CLICKHOUSE_DDL = """
CREATE TABLE bluesky.bluesky
(
    `data` JSON(
        `kind` LowCardinality(String),
        `commit.operation` LowCardinality(String),
        `commit.collection` LowCardinality(String),
        `did` String,
        `time_us` UInt64) CODEC(ZSTD(1))
)
ORDER BY (
    data.kind,
    data.commit.operation,
    data.commit.collection,
    data.did,
    fromUnixTimestamp64Micro(data.time_us))
"""


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def load_duckdb(path: Path, threads: int, work: Path, table: str = "bluesky"):
    """JSONBench's DuckDB setup: table `bluesky(j JSON)` (or `table`); the open
    connection, the load time and the database file's size."""
    import duckdb

    db = work / "duck.db"
    con = duckdb.connect(str(db))
    con.execute(f"SET threads = {threads}")
    started = time.perf_counter()
    con.execute(f"CREATE TABLE {table} (j JSON)")
    con.execute(f"INSERT INTO {table} SELECT json FROM read_ndjson_objects('{path}')")
    con.execute("CHECKPOINT")
    return con, time.perf_counter() - started, db.stat().st_size


def chdb():
    """The chDB module, or an exit naming the command that installs it (it is not in the
    test suite's requirements)."""
    try:
        import chdb as module
    except ImportError:
        raise SystemExit(
            "chDB is not installed: source scripts/env.sh && $TESSERA_VENV/bin/pip install -r bench/requirements-chdb.txt"
        ) from None
    return module


def load_chdb(path: Path, threads: int, work: Path):
    """JSONBench's ClickHouse setup in chDB: the open session, the load time and the bytes
    on disk of the table's active parts."""
    sess = chdb().session.Session(str(work / "chdb"))
    sess.query("CREATE DATABASE IF NOT EXISTS bluesky")
    sess.query(CLICKHOUSE_DDL)
    started = time.perf_counter()
    sess.query(
        f"INSERT INTO bluesky.bluesky SELECT json FROM file('{path}', 'JSONAsObject') "
        f"SETTINGS max_threads = {threads}, input_format_allow_errors_num = 0"
    )
    elapsed = time.perf_counter() - started
    size = int(
        sess.query(
            "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'bluesky' AND table = 'bluesky' AND active",
            "CSV",
        ).bytes().decode().strip()
    )
    return sess, elapsed, size


def ingest_tessera(tessera: str, threads: int, path: Path, table: str, env=None, flags=()):
    """`tessera ingest` (with more `flags`) into `table` (a directory or an s3:// URL):
    seconds and its report."""
    started = time.perf_counter()
    proc = subprocess.run(
        [tessera, "--threads", str(threads), "ingest", str(path), "--table", table, "--report", "json", "--quiet", *flags],
        capture_output=True,
        text=True,
        env=dict(os.environ, **(env or {})),
    )
    if proc.returncode != 0:
        raise SystemExit(f"tessera ingest failed:\n{proc.stderr}")
    return time.perf_counter() - started, json.loads(proc.stdout)
