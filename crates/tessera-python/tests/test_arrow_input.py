"""Python objects that export Arrow streams, queried by name: registered, or found as the
caller's variables (DuckDB's replacement scans); DuckDB on the same frames is the peer."""

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from common.canon import canon_rows

import tessera

ROWS = 5000


def sample_table() -> pa.Table:
    """Deterministic rows with nulls, repeated strings and exact floats."""
    ids = list(range(ROWS))
    return pa.table(
        {
            "id": ids,
            "name": [None if i % 13 == 0 else f"user{i % 97}" for i in ids],
            "value": [(i % 40) * 0.5 for i in ids],
            "category": [["red", "green", "blue"][i % 3] for i in ids],
        }
    )


def frame_of(kind: str):
    table = sample_table()
    return {"pyarrow": table, "pandas": table.to_pandas(), "polars": pl.from_arrow(table)}[kind]


KINDS = ["pyarrow", "pandas", "polars"]
# Fully ordered, so rows compare in order.
QUERIES = [
    "SELECT category, count(*) AS n, sum(value) AS total FROM frame GROUP BY category ORDER BY category",
    "SELECT id, name, value FROM frame WHERE value > 15 AND name IS NOT NULL ORDER BY id DESC LIMIT 25",
    "SELECT count(DISTINCT name) AS names, count(name) AS named, min(id) AS first, max(value) AS top FROM frame",
    "SELECT name, count(*) AS n FROM frame WHERE name LIKE 'user1%' GROUP BY name ORDER BY n DESC, name LIMIT 10",
]


def duckdb_rows(frame, query):
    con = duckdb.connect()
    con.register("frame", frame)
    return canon_rows(con.execute(query).fetchall())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("query", QUERIES, ids=[f"q{i + 1}" for i in range(len(QUERIES))])
def test_registered_frame_gives_duckdbs_rows(kind, query):
    frame = frame_of(kind)
    con = tessera.connect()
    con.register("frame", frame)
    expected = duckdb_rows(frame, query)
    assert expected
    assert canon_rows(con.sql(query).fetchall()) == expected


@pytest.mark.parametrize("kind", KINDS)
def test_caller_variable_is_found_by_name(kind):
    frame = frame_of(kind)
    con = tessera.connect()
    for query in QUERIES:
        assert canon_rows(con.sql(query).fetchall()) == duckdb_rows(frame, query), query


GLOBAL_FRAME = sample_table()


def test_module_variable_and_default_connection():
    rows = tessera.sql("SELECT count(*) FROM GLOBAL_FRAME WHERE category = 'red'").fetchall()
    assert rows == [(sum(1 for i in range(ROWS) if i % 3 == 0),)]


def test_borrowed_variable_is_not_left_registered():
    con = tessera.connect()

    def query_local():
        frame = sample_table()
        return con.sql("SELECT count(*) FROM frame").fetchall()

    assert query_local() == [(ROWS,)]
    with pytest.raises(tessera.SQLError, match="frame"):
        con.sql("SELECT count(*) FROM frame")


def test_known_table_wins_over_a_variable():
    con = tessera.connect()
    con.execute("CREATE TABLE frame AS VALUES (1), (2)")
    frame = sample_table()  # noqa: F841 (the name the query must not take)
    assert con.sql("SELECT count(*) FROM frame").fetchall() == [(2,)]


def test_register_replaces_and_unregister_removes():
    con = tessera.connect()
    con.register("t", pa.table({"x": [1, 2, 3]}))
    con.register("t", pd.DataFrame({"x": [10, 20]}))
    assert con.sql("SELECT sum(x) FROM t").fetchall()[0][0] == 30
    con.unregister("t")
    with pytest.raises(tessera.SQLError):
        con.sql("SELECT * FROM t")


def test_registering_a_non_arrow_object_raises():
    con = tessera.connect()
    with pytest.raises(tessera.Error, match="'t' cannot be queried: a list does not export an Arrow stream"):
        con.register("t", [1, 2, 3])
