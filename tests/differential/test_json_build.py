"""Differential tests of the functions that build, change, describe and aggregate JSON
(json_merge_patch, to_json, json_structure, json_group_array, json_group_structure) and
casts between JSON and nested types
against DuckDB 2.0.0, over generated heterogeneous nested documents.

Each line of the generated file is {"id": i, "doc": D, "patch": P} with D and P random
JSON values: nested objects and arrays, integers of both signs up to 30 digits, doubles,
strings with escapes and non-ASCII text, booleans, nulls and a few duplicate keys. Both
engines read the same file; per-row answers must be the same text, aggregates the same
JSON (group order is free in both engines, so arrays are compared as multisets).
"""

import json
import random
from pathlib import Path

import pytest

from conftest import Tessera

DOCS = 400
KEYS = ["a", "b", "c", "id", "é", "k\"q", "x y", ""]
STRINGS = ["", "duck", "line\nbreak", "tab\t", "quote\"", "back\\slash", "é/ü", "😀", "\u0001"]


def value(rng: random.Random, depth: int):
    """A random JSON value as text, so duplicate keys and number spellings survive."""
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return "null"
    if kind == 1:
        return rng.choice(["true", "false"])
    if kind == 2:
        digits = rng.choice([1, 3, 10, 19, 20, 30])
        number = rng.randrange(10 ** (digits - 1), 10**digits)
        return str(number * rng.choice([1, -1]))
    if kind == 3:
        return rng.choice(["1.5", "-0.25", "1e300", "2.5e-8", "100.0", "1E2", "-0.0", "0.1", "123456.789"])
    if kind in (4, 5):
        return json.dumps(rng.choice(STRINGS), ensure_ascii=rng.random() < 0.5)
    if kind in (6, 7):
        keys = rng.sample(KEYS, rng.randrange(4))
        if keys and rng.random() < 0.1:
            keys.append(keys[0])
        members = [f"{json.dumps(k)}:{value(rng, depth + 1)}" for k in keys]
        return "{" + ",".join(members) + "}"
    return "[" + ",".join(value(rng, depth + 1) for _ in range(rng.randrange(4))) + "]"


def document(rng: random.Random) -> str:
    """A document: mostly objects, so that merge patches merge."""
    text = value(rng, 0)
    if rng.random() < 0.7:
        keys = rng.sample(KEYS, 3)
        text = "{" + ",".join(f"{json.dumps(k)}:{value(rng, 1)}" for k in keys) + "}"
    return text


@pytest.fixture(scope="module")
def docs_file(tmp_path_factory) -> Path:
    rng = random.Random(17)
    path = tmp_path_factory.mktemp("json_build") / "docs.json"
    lines = [f'{{"id":{i},"doc":{document(rng)},"patch":{document(rng)}}}' for i in range(DOCS)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def duck_docs(duck, docs_file):
    duck.execute(
        "CREATE OR REPLACE TABLE gen AS SELECT (json->>'id')::INT AS id, json->'doc' AS doc, "
        "json->'patch' AS patch FROM read_ndjson_objects(?)",
        [str(docs_file)],
    )
    return duck


@pytest.fixture(scope="module")
def tessera_docs(docs_file) -> Tessera:
    return Tessera(
        f"CREATE EXTERNAL TABLE raw STORED AS NDJSON LOCATION '{docs_file}'; "
        "CREATE VIEW gen AS SELECT json_get_int(j, 'id') AS id, json(json_get(j, 'doc')) AS doc, "
        "json(json_get(j, 'patch')) AS patch FROM raw;"
    )


def per_row(duck, tessera, expression_duck: str, expression_tessera: str):
    duck_rows = duck.execute(f"SELECT id, {expression_duck} FROM gen ORDER BY id").fetchall()
    tessera_rows = tessera.query(f"SELECT id, {expression_tessera} AS v FROM gen ORDER BY id")
    assert len(duck_rows) == len(tessera_rows) == DOCS
    for (i, expected), row in zip(duck_rows, tessera_rows):
        assert row["id"] == i
        assert row["v"] == expected, f"row {i}"


@pytest.mark.parametrize(
    "duck_expr, tessera_expr",
    [
        ("json_merge_patch(doc, patch)", None),
        ("json_merge_patch(patch, doc, patch)", None),
        ("to_json(doc)", None),
        ("json_structure(doc)", None),
        ("json_object('d', doc, 'p', json_array(patch, id))", None),
        ("json_set(doc, '$.a', patch)", None),
        ("json_remove(doc, '$.b')", None),
        # The JSON type: extractions nest, typeof names them, casts convert as DuckDB's.
        ("json_object('x', doc->'a', 'y', json_extract(doc, '$.b'))", None),
        ("typeof(doc->'a') || typeof(doc->>'a')", None),
        ("TRY_CAST(doc AS STRUCT(a BIGINT, b VARCHAR))::JSON", None),
        ("TRY_CAST(doc AS BIGINT[])::JSON", None),
    ],
)
def test_per_row_answers_are_duckdbs(duck_docs, tessera_docs, duck_expr, tessera_expr):
    per_row(duck_docs, tessera_docs, duck_expr, tessera_expr or duck_expr)


def test_aggregates_are_duckdbs(duck_docs, tessera_docs):
    (duck_array, duck_structure) = duck_docs.execute(
        "SELECT json_group_array(doc), json_group_structure(doc) FROM gen"
    ).fetchone()
    [row] = tessera_docs.query("SELECT json_group_array(doc) AS a, json_group_structure(doc) AS s FROM gen")
    canonical = sorted(json.dumps(v, sort_keys=True) for v in json.loads(duck_array))
    assert sorted(json.dumps(v, sort_keys=True) for v in json.loads(row["a"])) == canonical
    # Key order follows the first document that has a key, which the group order decides.
    assert json.loads(row["s"]) == json.loads(duck_structure)
