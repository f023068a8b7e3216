"""Differential tests of json_each, json_tree and UNNEST of JSON arrays against DuckDB.

Generated heterogeneous documents (objects with arrays of objects, nested arrays, empty
arrays and objects, scalars of every JSON type, awkward keys, scalar documents) are
written to one NDJSON file; each query runs in DuckDB over `read_ndjson_objects` and in
Tessera over the raw file and over the file ingested into a Tessera table. Rows must be
equal as multisets (values canonicalized as in test_duckdb.py).

A Tessera table stores an object's members sorted by key (as Parquet Variant does), so
over a table member order, and with it `id`, `parent` and the text of objects, follow
that order: JSON texts are compared with their keys sorted, and the cases that read ids
or member order run over the raw file only.
"""

import json
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from conftest import Tessera, tessera_binary

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from common.canon import canon_rows, same_rows  # noqa: E402

DOCS = 2000
KEYS = ["a", "b", "name", "x1", "a.b", "two words", "0k", "_u", "é", 'q"t', ""]


def scalar(rng):
    return rng.choice(
        [
            None,
            True,
            False,
            rng.randint(-1000, 1000),
            rng.randint(0, 2**64 - 1),
            rng.randint(-(2**63), 0),
            round(rng.uniform(-1e6, 1e6), rng.randint(0, 6)),
            rng.choice([1e-7, 2.5e21, 1e20, 0.5, 1e16, 123.0]),
            "".join(rng.choice("abcxyz é\"\\\n\t😀/") for _ in range(rng.randint(0, 8))),
        ]
    )


def value(rng, depth):
    """A random JSON value; containers get rarer with depth."""
    roll = rng.random()
    if depth >= 4 or roll < 0.45:
        return scalar(rng)
    if roll < 0.7:
        return [value(rng, depth + 1) for _ in range(rng.choice([0, 1, 2, 3, 5]))]
    return {rng.choice(KEYS): value(rng, depth + 1) for _ in range(rng.choice([0, 1, 2, 4]))}


def line(rng):
    """An element of the long `lines` arrays: objects of three kinds (none frequent
    enough for a table to shred the arrays as lists), now and then a field of another
    type, a scalar, null or a nested array."""
    roll = rng.random()
    if roll < 0.03:
        return scalar(rng)
    if roll < 0.05:
        return [value(rng, 2)]
    if roll < 0.08:
        return {"sku": rng.randint(0, 9), "n": "many", "x": value(rng, 2)}
    if roll < 0.5:
        return {"sku": f"l{rng.randint(0, 40)}", "n": rng.randint(0, 50)}
    if roll < 0.8:
        return {"url": f"u{rng.randint(0, 30)}", "rel": rng.choice(["next", "prev"])}
    return {"tag": f"t{rng.randint(0, 20)}"}


def document(rng, i):
    """Mostly objects with an id, an `items` array of objects and a long `lines` array
    (which a table keeps in a side relation of its elements); some other shapes."""
    roll = rng.random()
    if roll < 0.05:
        return scalar(rng)
    if roll < 0.12:
        return [value(rng, 1) for _ in range(rng.randint(0, 4))]
    doc = {"id": i}
    if rng.random() < 0.8:
        doc["items"] = [
            {"sku": f"s{rng.randint(0, 20)}", "qty": rng.randint(0, 5), "tags": value(rng, 2)}
            for _ in range(rng.choice([0, 0, 1, 2, 3, 7]))
        ]
    if rng.random() < 0.6:
        doc["lines"] = [line(rng) for _ in range(rng.randint(0, 60))]
    for key in rng.sample(KEYS, rng.randint(0, 4)):
        doc[key] = value(rng, 1)
    return doc


@pytest.fixture(scope="module")
def docs_file(tmp_path_factory) -> Path:
    rng = random.Random(17)
    path = tmp_path_factory.mktemp("json_each") / "docs.json"
    with path.open("w") as f:
        for i in range(DOCS):
            f.write(json.dumps(document(rng, i), ensure_ascii=rng.random() < 0.5) + "\n")
    return path


@pytest.fixture(scope="module")
def duck(docs_file):
    con = duckdb.connect()
    con.execute("CREATE TABLE jdocs AS SELECT json AS j FROM read_ndjson_objects(?)", [str(docs_file)])
    return con


@pytest.fixture(scope="module", params=["raw", "table"])
def tessera(request, docs_file, tmp_path_factory) -> Tessera:
    if request.param == "raw":
        return Tessera(f"CREATE EXTERNAL TABLE jdocs STORED AS NDJSON LOCATION '{docs_file}';")
    table = tmp_path_factory.mktemp("tables") / "docs"
    subprocess.run(
        [tessera_binary(), "ingest", str(docs_file), "--table", str(table), "--quiet"],
        check=True,
        capture_output=True,
    )
    # The long arrays are in side relations, so the cases over `lines` test reading them.
    manifest = json.loads(sorted((table / "_tessera").glob("*.json"))[-1].read_text())
    sides = {tuple(s["array"]) for f in manifest["files"] for s in f.get("sides", [])}
    assert ("lines",) in sides, sides
    return Tessera(f"CREATE EXTERNAL TABLE jdocs STORED AS TESSERA LOCATION '{table}';")


ID = "jdocs.j->>'id'"
# Cases whose answer depends on the order of an object's members (ids, order, document text).
ORDERED = {"each_all_columns", "tree_all_columns", "each_path", "tree_path", "types"}
CASES = [
    ("each_all_columns", "SELECT jdocs.j, e.* FROM jdocs, json_each(jdocs.j) AS e"),
    ("tree_all_columns", "SELECT jdocs.j, t.* FROM jdocs, json_tree(jdocs.j) AS t"),
    ("each_path", f"SELECT {ID} AS doc, e.* FROM jdocs, json_each(jdocs.j, '$.items') AS e"),
    ("tree_path", f"SELECT {ID} AS doc, t.* FROM jdocs, json_tree(jdocs.j, '$.items[0]') AS t"),
    ("each_key_path", f"SELECT {ID} AS doc, e.key, e.value FROM jdocs, json_each(jdocs.j, 'a') AS e"),
    ("cross_join_lateral", f"SELECT {ID} AS doc, e.key, e.type FROM jdocs CROSS JOIN LATERAL json_each(jdocs.j) AS e"),
    (
        "left_join_lateral",
        f"SELECT {ID} AS doc, e.key, e.value FROM jdocs LEFT JOIN LATERAL json_each(jdocs.j, '$.items') AS e ON true",
    ),
    ("count_per_key", "SELECT e.key, count(*) FROM jdocs, json_each(jdocs.j) AS e GROUP BY e.key"),
    ("rows_per_doc", f"SELECT {ID} AS doc, count(*) FROM jdocs, json_each(jdocs.j, '$.a') AS e GROUP BY doc"),
    (
        "rows_per_item",
        f"SELECT {ID} AS doc, count(*) FROM jdocs LEFT JOIN LATERAL json_each(jdocs.j, '$.items[0]') AS e ON true "
        "GROUP BY doc",
    ),
    ("types", "SELECT t.type, count(*), sum(t.id), max(t.parent) FROM jdocs, json_tree(jdocs.j) AS t GROUP BY t.type"),
    (
        "items_sku_qty",
        "SELECT i.value->>'sku' AS sku, sum(CAST(i.value->>'qty' AS BIGINT)) AS qty, count(*) "
        "FROM jdocs, json_each(jdocs.j, '$.items') AS i GROUP BY sku",
    ),
    (
        "nested_each",
        f"SELECT {ID} AS doc, i.key, t.key, t.value FROM jdocs, json_each(jdocs.j, '$.items') AS i, "
        "json_each(i.value, '$.tags') AS t",
    ),
    (
        "join_back",
        "SELECT d.id, count(*) FROM (SELECT jdocs.j->>'id' AS id, e.value AS v FROM jdocs, "
        "json_each(jdocs.j, '$.items') AS e) AS x JOIN (SELECT jdocs.j->>'id' AS id FROM jdocs) AS d "
        "ON x.id = d.id GROUP BY d.id",
    ),
    ("filter_unnested", "SELECT count(*) FROM jdocs, json_tree(jdocs.j) AS t WHERE t.atom IS NOT NULL AND t.key = 'qty'"),
    (
        "unnest_cast",
        f"SELECT {ID} AS doc, unnest(TRY_CAST(jdocs.j->'items' AS JSON[])) AS item FROM jdocs",
    ),
    (
        "unnest_extract_cast",
        f"SELECT {ID} AS doc, unnest(TRY_CAST(json_extract(jdocs.j, '$.a') AS JSON[])) AS item FROM jdocs",
    ),
    (
        "document_paths_above_each",
        "SELECT json_array_length(jdocs.j, '$.items') AS n, CAST(jdocs.j->>'id' AS BIGINT) % 5 AS m, "
        "count(*), count(DISTINCT i.value->>'sku'), sum(json_array_length(jdocs.j->'b')) FROM jdocs, "
        "json_each(jdocs.j, '$.items') AS i WHERE json_array_length(jdocs.j->'items') > 1 GROUP BY n, m",
    ),
    (
        "array_lengths",
        "SELECT json_array_length(jdocs.j->'items') AS n, json_array_length(jdocs.j, '$.items[0].tags') AS t, "
        "json_array_length(jdocs.j->'a') AS a, json_array_length(jdocs.j->'name'->0) AS m, count(*) "
        "FROM jdocs GROUP BY n, t, a, m",
    ),
    (
        "unnest_aggregate",
        "SELECT u->>'sku' AS sku, count(*) FROM (SELECT unnest(TRY_CAST(jdocs.j->'items' AS JSON[])) AS u "
        "FROM jdocs) AS s GROUP BY sku",
    ),
    (
        "unnest_filter_count",
        "SELECT count(*) FROM (SELECT unnest(TRY_CAST(jdocs.j->'items' AS JSON[])) AS u FROM jdocs) AS s "
        "WHERE CAST(s.u->>'qty' AS BIGINT) > 2",
    ),
    ("unnest_rows", "SELECT count(*) FROM (SELECT unnest(TRY_CAST(jdocs.j->'items' AS JSON[])) AS u FROM jdocs) AS s"),
    # Long arrays, which a table keeps in a side relation of their elements (Tiles-*).
    ("lines_per_doc", f"SELECT {ID} AS doc, count(*) FROM jdocs, json_each(jdocs.j, '$.lines') AS e GROUP BY doc"),
    ("lines_values", f"SELECT {ID} AS doc, e.key, e.value, e.type FROM jdocs, json_each(jdocs.j, '$.lines') AS e"),
    (
        "lines_accesses",
        "SELECT e.value->>'sku' AS sku, count(*), sum(TRY_CAST(e.value->>'n' AS BIGINT)), count(e.value->'x'), "
        "count(e.value->>'url'), count(DISTINCT e.value->>'tag') FROM jdocs, json_each(jdocs.j, '$.lines') AS e "
        "GROUP BY sku",
    ),
    (
        "lines_filtered",
        f"SELECT {ID} AS doc, e.value->>'n' FROM jdocs, json_each(jdocs.j, '$.lines') AS e "
        "WHERE e.value->>'sku' = 'l7' AND CAST(jdocs.j->>'id' AS BIGINT) % 3 = 0",
    ),
    (
        "lines_left_join",
        f"SELECT {ID} AS doc, count(e.value) FROM jdocs LEFT JOIN LATERAL json_each(jdocs.j, '$.lines') AS e ON true "
        "GROUP BY doc",
    ),
    (
        "lines_unnest",
        "SELECT u->>'sku' AS sku, count(*) FROM (SELECT unnest(TRY_CAST(jdocs.j->'lines' AS JSON[])) AS u "
        "FROM jdocs) AS s GROUP BY sku",
    ),
    (
        "lines_exists",
        f"SELECT {ID} AS doc FROM jdocs WHERE EXISTS (SELECT 1 FROM json_each(jdocs.j, '$.lines') AS e "
        "WHERE e.value->>'sku' = 'l3')",
    ),
    (
        "lines_root_text",
        "SELECT e.value->>'$' AS v, count(*) FROM jdocs, json_each(jdocs.j, '$.lines') AS e GROUP BY v",
    ),
    (
        "lines_exists_root_text",
        f"SELECT {ID} AS doc FROM jdocs WHERE EXISTS (SELECT 1 FROM json_each(jdocs.j, '$.lines') AS e "
        "WHERE (e.value->>'$') IN ('7', 'true', 'l3'))",
    ),
    (
        "lines_in",
        f"SELECT {ID} AS doc FROM jdocs WHERE 'l3' IN (SELECT e.value->>'sku' FROM json_each(jdocs.j, '$.lines') AS e)",
    ),
    (
        "lines_not_exists_two_fields",
        f"SELECT {ID} AS doc FROM jdocs WHERE NOT EXISTS (SELECT 1 FROM json_each(jdocs.j, '$.lines') AS e "
        "WHERE e.value->>'sku' = 'l3' OR TRY_CAST(e.value->>'n' AS BIGINT) > 7)",
    ),
    (
        "lines_positions",
        f"SELECT {ID} AS doc, jdocs.j->'lines'->2->>'sku', json_array_length(jdocs.j->'lines') FROM jdocs",
    ),
]


def sorted_keys(rows):
    """Rows with every JSON object or array text rewritten with its keys sorted."""

    def one(value):
        if isinstance(value, str) and value[:1] in "[{":
            try:
                return json.dumps(json.loads(value), sort_keys=True)
            except ValueError:
                return value
        return value

    return [tuple(one(v) for v in row) for row in rows]


@pytest.mark.parametrize("name,sql", CASES, ids=[c[0] for c in CASES])
def test_same_answer_as_duckdb(duck, tessera, name, sql, request):
    if name in ORDERED and "table" in request.node.callspec.id:
        pytest.skip("member order over a table is the table's (sorted keys)")
    expected = sorted_keys(canon_rows(duck.execute(sql).fetchall()))
    got = sorted_keys(canon_rows(tessera.query(sql)))
    assert len(got) == len(expected), name
    assert same_rows(got, expected), name


def test_the_documents_unnest_into_many_rows(duck):
    """The generated data exercises what the cases claim: many rows, every type."""
    rows, types = duck.execute(
        "SELECT count(*), count(DISTINCT t.type) FROM jdocs, json_tree(jdocs.j) AS t"
    ).fetchone()
    assert rows > 10 * DOCS
    assert types == 8
