"""Differential tests of the functions that merge, compare and tidy documents
(json_deep_merge, json_merge_patch_diff, json_normalize, json_strip_nulls) and of JSON
Pointer paths in json_set / json_remove, against DuckDB 2.0.0, over generated
heterogeneous nested documents.

Each line of the generated file is {"id": i, "old": O, "new": N}: O a random JSON value
(nested objects and arrays, integers of both signs up to 30 digits, doubles in several
spellings of the same number, strings with escapes and non-ASCII text, booleans, many
nulls, a few duplicate keys) and N mostly O changed at random (members kept, changed,
removed, added, reordered; nested the same way), so that merges and diffs meet shared
keys, otherwise an unrelated value. Both engines read the same file; per-row answers
must be the same text.
"""

import json
import random
from pathlib import Path

import duckdb
import pytest

from conftest import Tessera

DOCS = 500
KEYS = ["a", "b", "c", "0", "1", "-", "é", "k\"q", ""]
STRINGS = ["", "duck", "line\nbreak", "quote\"", "back\\slash", "é/ü", "😀", "\u0001"]
# Spellings that are the same double, the same integer, or look alike but are not.
NUMBERS = ["1", "1.0", "-0", "0", "-0.0", "0.0", "1E2", "100.0", "100", "2.5e-8", "1e300"]


def value(rng: random.Random, depth: int) -> str:
    """A random JSON value as text, so duplicate keys and number spellings survive."""
    kind = rng.randrange(10 if depth < 4 else 6)
    if kind in (0, 1):
        return "null"
    if kind == 2:
        return rng.choice(["true", "false"])
    if kind == 3:
        digits = rng.choice([1, 3, 19, 20, 30])
        return str(rng.randrange(10 ** (digits - 1), 10**digits) * rng.choice([1, -1]))
    if kind == 4:
        return rng.choice(NUMBERS)
    if kind == 5:
        return json.dumps(rng.choice(STRINGS), ensure_ascii=rng.random() < 0.5)
    if kind in (6, 7, 8):
        keys = rng.sample(KEYS, rng.randrange(5))
        if keys and rng.random() < 0.05:
            keys.append(keys[0])
        return "{" + ",".join(f"{json.dumps(k)}:{value(rng, depth + 1)}" for k in keys) + "}"
    return "[" + ",".join(value(rng, depth + 1) for _ in range(rng.randrange(4))) + "]"


def changed(rng: random.Random, text: str, depth: int) -> str:
    """`text` changed at random: an object keeps, changes, drops and adds members."""
    parsed = json.loads(text)
    if not isinstance(parsed, dict) or rng.random() < 0.1:
        return value(rng, depth) if rng.random() < 0.5 else text
    members = []
    for key, item in parsed.items():
        item_text = json.dumps(item)
        roll = rng.random()
        if roll < 0.2:
            continue
        if roll < 0.5:
            item_text = changed(rng, item_text, depth + 1)
        elif roll < 0.6:
            item_text = "null"
        members.append((key, item_text))
    members += [(k, value(rng, depth + 1)) for k in rng.sample(KEYS, rng.randrange(3))]
    if rng.random() < 0.3:
        rng.shuffle(members)
    return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in members) + "}"


def document(rng: random.Random) -> str:
    """Mostly objects, so that merges merge and diffs compare members."""
    if rng.random() < 0.8:
        keys = rng.sample(KEYS, 4)
        return "{" + ",".join(f"{json.dumps(k)}:{value(rng, 1)}" for k in keys) + "}"
    return value(rng, 0)


@pytest.fixture(scope="module")
def docs_file(tmp_path_factory) -> Path:
    rng = random.Random(26)
    path = tmp_path_factory.mktemp("json_merge") / "docs.json"
    lines = []
    for i in range(DOCS):
        old = document(rng)
        new = changed(rng, old, 0) if rng.random() < 0.8 else document(rng)
        lines.append(f'{{"id":{i},"old":{old},"new":{new}}}')
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def duck_docs(docs_file):
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE gen AS SELECT (json->>'id')::INT AS id, json->'old' AS old, "
        "json->'new' AS new FROM read_ndjson_objects(?)",
        [str(docs_file)],
    )
    return con


@pytest.fixture(scope="module")
def tessera_docs(docs_file) -> Tessera:
    return Tessera(
        f"CREATE EXTERNAL TABLE raw STORED AS NDJSON LOCATION '{docs_file}'; "
        "CREATE VIEW gen AS SELECT json_get_int(j, 'id') AS id, json(json_get(j, 'old')) AS old, "
        "json(json_get(j, 'new')) AS new FROM raw;"
    )


@pytest.mark.parametrize(
    "expression",
    [
        "json_deep_merge(old, new)",
        "json_deep_merge(new, old, new)",
        "json_merge_patch_diff(old, new)",
        "json_merge_patch_diff(new, old)",
        "json_merge_patch(old, json_merge_patch_diff(old, new))",
        "json_normalize(old)",
        "json_normalize(json_strip_nulls(new))",
        "json_strip_nulls(old)",
        "json_set(old, '/a/0', new)",
        "json_set(old, '/b/-', new)",
        "json_remove(old, '/c/1')",
        "json_insert(old, '/0/a', new)",
    ],
)
def test_per_row_answers_are_duckdbs(duck_docs, tessera_docs, expression):
    duck_rows = duck_docs.execute(f"SELECT id, {expression} FROM gen ORDER BY id").fetchall()
    tessera_rows = tessera_docs.query(f"SELECT id, {expression} AS v FROM gen ORDER BY id")
    assert len(duck_rows) == len(tessera_rows) == DOCS
    for (i, expected), row in zip(duck_rows, tessera_rows):
        assert row["id"] == i
        assert row["v"] == expected, f"row {i}"
