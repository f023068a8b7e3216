"""Differential tests of Tessera tables with relational columns against DuckDB.

Both engines build the same table from the generated Bluesky file: three relational
columns computed from each document (did, kind, time_us) next to the document itself.
Tessera stores it as JSON tiles with the relational columns as ordinary Parquet columns
(CREATE TABLE AS under tessera.warehouse); DuckDB as a native table. Queries filter and
group on relational columns, on JSON paths, and on both; deletes by relational columns
must leave the same rows.
"""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from common.canon import canon_rows, same_rows  # noqa: E402

from conftest import Tessera, tessera_binary  # noqa: E402

TESSERA_COLUMNS = "j->>'did' AS did, j->>'kind' AS kind, json_get_int(j, 'time_us') AS time_us, j"
DUCKDB_COLUMNS = "j->>'did' AS did, j->>'kind' AS kind, CAST(j->>'time_us' AS BIGINT) AS time_us, j"


def create_tessera_table(bluesky_file: Path, warehouse: Path, name: str) -> Tessera:
    script = (
        f"SET tessera.warehouse = '{warehouse}'; "
        f"CREATE EXTERNAL TABLE bluesky STORED AS NDJSON LOCATION '{bluesky_file}'; "
        f"CREATE TABLE {name} AS SELECT {TESSERA_COLUMNS} FROM bluesky"
    )
    subprocess.run([tessera_binary(), "sql", script], check=True, capture_output=True)
    return Tessera(f"CREATE EXTERNAL TABLE {name} STORED AS TESSERA LOCATION '{warehouse / name}';")


@pytest.fixture(scope="module")
def median_time(duck) -> int:
    return duck.execute("SELECT quantile_disc(CAST(j->>'time_us' AS BIGINT), 0.5) FROM bluesky").fetchone()[0]


@pytest.fixture(scope="module")
def tables(duck, bluesky_file, tmp_path_factory):
    warehouse = tmp_path_factory.mktemp("warehouse")
    tessera = create_tessera_table(bluesky_file, warehouse, "events")
    duck.execute(f"CREATE OR REPLACE TABLE events AS SELECT {DUCKDB_COLUMNS} FROM bluesky")
    return tessera


def cases(median: int):
    return [
        ("kinds", "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind", [0]),
        ("later_half", f"SELECT count(*) FROM events WHERE time_us > {median}", []),
        (
            "busiest_committers",
            "SELECT did, count(*) AS n FROM events WHERE kind = 'commit' GROUP BY did ORDER BY n DESC, did LIMIT 10",
            [0, 1],
        ),
        (
            "collections_later",
            f"SELECT j->>'$.commit.collection' AS c, count(*) AS n FROM events "
            f"WHERE kind = 'commit' AND time_us > {median} GROUP BY c ORDER BY c",
            [0],
        ),
        (
            "bounds",
            "SELECT min(time_us), max(time_us), count(DISTINCT did), count(DISTINCT j->>'$.commit.collection') FROM events",
            [],
        ),
        (
            "relational_equals_json",
            "SELECT count(*) FROM events WHERE did = j->>'did' AND kind = j->>'kind'",
            [],
        ),
    ]


def test_same_answers_as_duckdb(duck, tables, median_time):
    for name, sql, key in cases(median_time):
        expected = canon_rows(duck.execute(sql).fetchall())
        got = canon_rows(tables.query(sql))
        assert len(expected) > 0, f"{name}: the query selects nothing, so it tests nothing"
        assert same_rows(got, expected), name
        if key:
            assert [tuple(r[i] for i in key) for r in got] == [tuple(r[i] for i in key) for r in expected], name


def test_deletes_by_relational_columns_leave_the_same_rows(duck, bluesky_file, tmp_path_factory, median_time):
    warehouse = tmp_path_factory.mktemp("deletes")
    tessera = create_tessera_table(bluesky_file, warehouse, "doomed")
    duck.execute(f"CREATE OR REPLACE TABLE doomed AS SELECT {DUCKDB_COLUMNS} FROM bluesky")
    delete = f"DELETE FROM doomed WHERE kind <> 'commit' OR time_us < {median_time}"
    removed = canon_rows(duck.execute(delete).fetchall())
    assert removed[0][0] > 0
    assert canon_rows(tessera.query(delete)) == removed
    check = (
        "SELECT kind, j->>'$.commit.operation' AS op, count(*) AS n, min(time_us) AS first "
        "FROM doomed GROUP BY kind, op ORDER BY kind, op"
    )
    expected = canon_rows(duck.execute(check).fetchall())
    assert len(expected) > 0
    assert same_rows(canon_rows(tessera.query(check)), expected)
