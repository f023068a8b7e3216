"""JSONBench's DuckDB query text, verbatim, under `--dialect duckdb`: Tessera must give
DuckDB's rows over the same generated file, over the raw file and over the table.

Rows are compared as multisets after canonicalizing values (timestamps to UTC ISO text,
floats to 6 decimals), and the ORDER BY key columns in order, as in test_duckdb.py.
"""

import json
import random
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


def generated_texts(count: int, seed: int) -> list:
    """JSON texts of every kind (and some malformed ones), as a user's column holds them."""
    rng = random.Random(seed)

    def value(depth: int) -> str:
        kind = rng.randrange(9 if depth < 2 else 7)
        if kind == 0:
            return str(rng.randint(-(10**rng.randint(1, 25)), 10**rng.randint(1, 25)))
        if kind == 1:
            return repr(rng.randint(-400, 400) / rng.choice([1, 2, 4, 10, 3]))
        if kind == 2:
            return json.dumps(str(rng.randint(-1000, 1000)) if rng.random() < 0.5 else rng.choice(["1.5", " 7 ", "t", "no", "abc", ""]))
        if kind == 3:
            return rng.choice(["true", "false", "null"])
        if kind == 4:
            return f"{rng.randint(-9, 9)}e{rng.randint(-3, 3)}"
        if kind == 5:
            return rng.choice([" 1 ", "\t-0\n", "0.5", "-2.5", "3.5"])
        if kind == 6:
            return rng.choice(["", "abc", "{", "[1,", '"x', "01", "nul", "1 2"])
        if kind == 7:
            return "[" + ", ".join(value(depth + 1) for _ in range(rng.randrange(3))) + "]"
        return "{" + ",".join(f'"k{i}" : {value(depth + 1)}' for i in range(rng.randrange(3))) + "}"

    return [value(0) for _ in range(count)]


@pytest.mark.parametrize("seed", [17, 42, 1234])
@pytest.mark.parametrize("target", ["JSON", "BIGINT", "INTEGER", "TINYINT", "DOUBLE", "BOOLEAN", "VARCHAR"])
def test_casts_to_and_from_json(duck, target, seed):
    """Generated texts cast as DuckDB casts them: TRY_CAST, so a failure is NULL on both sides."""
    texts = generated_texts(400, seed)
    rows = ", ".join(f"({i}, '{t.replace(chr(39), chr(39) * 2)}')" for i, t in enumerate(texts))
    cast = "TRY_CAST(x AS JSON)" if target == "JSON" else f"TRY_CAST(TRY_CAST(x AS JSON) AS {target})"
    sql = f"SELECT i, {cast} AS v FROM (VALUES {rows}) t(i, x) ORDER BY i"
    expected = canon_rows(duck.execute(sql).fetchall())
    got = canon_rows(under_duckdb_dialect("", sql))
    differ = [(texts[e[0]], e[1], g[1]) for e, g in zip(expected, got) if e != g]
    assert len(got) == len(expected) and not differ, differ[:10]
