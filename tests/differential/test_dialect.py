"""JSONBench's DuckDB query text, verbatim, under `--dialect duckdb`: Tessera must give
DuckDB's rows over the same generated file, over the raw file and over the table.

Rows are compared as multisets after canonicalizing values (timestamps to UTC ISO text,
floats to 6 decimals), and the ORDER BY key columns in order, as in test_duckdb.py.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import tessera_binary

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from common.canon import canon_rows, same_rows  # noqa: E402

QUERIES = [
    line
    for line in (REPO / "bench/jsonbench/queries/duckdb.sql").read_text().splitlines()
    if line.strip() and not line.startswith("--")
]
# The ORDER BY key columns of each query, by index.
KEYS = [[1], [1], [1, 0], [1], [1]]


def under_duckdb_dialect(ddl: str, sql: str) -> list:
    out = subprocess.run(
        [tessera_binary(), "sql", "--dialect", "duckdb", "--format", "json", ddl + sql],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise AssertionError(f"tessera failed on {sql}:\n{out.stderr}")
    return json.loads(out.stdout)


def test_the_text_is_duckdbs():
    assert len(QUERIES) == len(KEYS) == 5
    assert any(" in [" in q for q in QUERIES), "Q3's IN [...] list"
    assert any("/ 1000000" in q for q in QUERIES), "fractional seconds"


@pytest.mark.parametrize("index", range(len(QUERIES)), ids=[f"q{i + 1}" for i in range(len(QUERIES))])
def test_jsonbench_duckdb_text(duck, tessera, index):
    sql, key = QUERIES[index], KEYS[index]
    expected = canon_rows(duck.execute(sql).fetchall())
    got = canon_rows(under_duckdb_dialect(tessera.ddl, sql))
    assert expected, "the generated data must give rows"
    assert same_rows(got, expected), f"{sql}\nDuckDB: {expected[:5]}\nTessera: {got[:5]}"
    assert [tuple(r[i] for i in key) for r in got] == [tuple(r[i] for i in key) for r in expected], sql
