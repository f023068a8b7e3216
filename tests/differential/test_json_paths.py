"""Differential tests of DuckDB's JSON reading functions and paths (issue 17).

Generated heterogeneous nested documents (seeded) go through json_extract,
json_extract_string, json_value, json_exists, json_type, json_array_length, json_keys
and json_contains with JSONPath, JSON Pointer, wildcard, '..' and list paths, in Tessera
(the raw NDJSON file and the same file ingested into a table) and in DuckDB. Values
that are JSON text are compared parsed: DuckDB prints a minified copy, Tessera the
value's own text.
"""

import json
import random
import subprocess
from pathlib import Path

import duckdb
import pytest

from conftest import Tessera, tessera_binary

DOCS = 400

PATHS = [
    "$.a", "$.b.c", "$.arr[0]", "$.arr[#-1]", "$.arr[-2]", "/b/c", "/arr/1", "b",
    "$.arr[*]", "$.b.*", "$..c", "$.arr[*].x", "$..*", "$.b..x", "",
]
FUNCTIONS = [
    "json_extract", "json_extract_string", "json_value", "json_exists", "json_type",
    "json_array_length", "json_keys",
]


def value(rng: random.Random, depth: int):
    kinds = ["int", "float", "str", "bool", "null"] + (["obj", "arr"] * 2 if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.choice([0, -1, 7, 2**40, -(2**62), rng.randint(-1000, 1000)])
    if kind == "float":
        return rng.choice([0.5, -2.25, 1e-3, 12345.678])
    if kind == "str":
        return rng.choice(["", "x", "é€", 'q"uote', "back\\slash", "line\nbreak", "12"])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    keys = ["a", "b", "c", "x", "arr", "k y"]
    if kind == "obj":
        return {rng.choice(keys): value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [value(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def document(rng: random.Random, i: int) -> dict:
    doc = {"id": i}
    for key in ["a", "b", "arr"]:
        if rng.random() < 0.85:
            doc[key] = value(rng, 1)
    return doc


@pytest.fixture(scope="module")
def docs_file(tmp_path_factory) -> Path:
    rng = random.Random(17)
    path = tmp_path_factory.mktemp("paths") / "docs.json"
    path.write_text("".join(json.dumps(document(rng, i)) + "\n" for i in range(DOCS)))
    return path


@pytest.fixture(scope="module")
def duck(docs_file):
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE docs AS SELECT json::VARCHAR AS j FROM read_ndjson_objects(?)",
        [str(docs_file)],
    )
    return con


@pytest.fixture(scope="module", params=["raw", "table"])
def tessera(request, docs_file, tmp_path_factory) -> Tessera:
    if request.param == "raw":
        return Tessera(f"CREATE EXTERNAL TABLE docs STORED AS NDJSON LOCATION '{docs_file}';")
    table = tmp_path_factory.mktemp("tables") / "docs"
    subprocess.run(
        [tessera_binary(), "ingest", str(docs_file), "--table", str(table), "--quiet"],
        check=True,
        capture_output=True,
    )
    return Tessera(f"CREATE EXTERNAL TABLE docs STORED AS TESSERA LOCATION '{table}';")


def canon(v):
    """JSON text parsed, so that formatting differences do not count."""
    if isinstance(v, list):
        return [canon(x) for x in v]
    if isinstance(v, str):
        try:
            return ("json", json.loads(v))
        except ValueError:
            return ("text", v)
    return v


def deep_sorted(v):
    """Every list (and list inside a value) as a sorted multiset."""
    if isinstance(v, (list, tuple)):
        return sorted(json.dumps(deep_sorted(x), sort_keys=True) for x in v)
    return v


def rows(result, unordered: bool):
    cells = [canon(list(r.values()) if isinstance(r, dict) else list(r)) for r in result]
    if unordered:
        cells = [[c[0], deep_sorted(c[1])] for c in cells]
    return sorted(json.dumps(c, sort_keys=True) for c in cells)


def compare(duck, tessera, expr: str):
    # A Tessera table stores an object's members sorted by key (Variant), not in
    # document order: where members are enumerated (.*, .., json_keys) the table's
    # lists are compared as multisets. The raw file is compared in order.
    unordered = "TESSERA" in tessera.ddl and ("*" in expr or ".." in expr or "json_keys" in expr)
    sql = f"SELECT j->>'id' AS id, {expr} AS v FROM docs"
    want = rows(duck.execute(sql).fetchall(), unordered)
    got = rows(tessera.query(sql), unordered)
    assert got == want, f"{expr}: first difference {next(((g, w) for g, w in zip(got, want) if g != w), None)}"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_functions_and_paths_agree_with_duckdb(duck, tessera, function, path):
    if function in ("json_extract", "json_extract_string", "json_value", "json_exists") and path == "":
        pytest.skip("DuckDB reads '' as the whole document, covered by '$' in json_paths.slt")
    compare(duck, tessera, f"{function}(j, '{path}')")


def test_lists_of_paths_agree_with_duckdb(duck, tessera):
    compare(duck, tessera, "json_extract(j, ['$.a', '/b/c', '$.arr[#-1]'])")
    compare(duck, tessera, "json_type(j, ['$.a', 'b', '$.arr[0]'])")


@pytest.mark.parametrize("needle", ['1', '{"c": null}', '[0.5]', '"x"', '{"x": [true]}', "[]"])
def test_containment_agrees_with_duckdb(duck, tessera, needle):
    compare(duck, tessera, f"json_contains(j, '{needle}')")
