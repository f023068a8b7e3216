"""Differential tests of read_json and friends against DuckDB's read_json.

Generated heterogeneous records (each key with its own mix: integers, doubles, strings,
ISO dates and timestamps, booleans, nulls, nested objects and lists, keys missing from
some records, keys whose values conflict in type) are written three ways: NDJSON, one
JSON array, and pretty-printed objects one after another. Each query runs in DuckDB and
in Tessera (the `tessera` binary, `--dialect duckdb`) on the same file; rows must be equal as
multisets (canonicalized as in test_duckdb.py), and the inferred columns must have the
same names, in the same order, with the same kind of type.
"""

import datetime as dt
import json
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from conftest import tessera_binary

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from common.canon import canon_rows, same_rows  # noqa: E402

RECORDS = 400


def record(rng, i):
    """One record; every key but `id` is sometimes missing."""
    day = dt.date(2020, 1, 1) + dt.timedelta(days=rng.randint(0, 2000))
    out = {"id": i}
    candidates = {
        "n": lambda: rng.randint(-(2**40), 2**40),
        "x": lambda: rng.choice([rng.randint(-9, 9), round(rng.uniform(-1e4, 1e4), 3)]),
        "s": lambda: "".join(rng.choice("ab é\"\\/😀") for _ in range(rng.randint(0, 6))),
        "d": lambda: day.isoformat(),
        "t": lambda: f"{day.isoformat()} {rng.randint(0, 23):02}:{rng.randint(0, 59):02}:07",
        "b": lambda: rng.random() < 0.5,
        "o": lambda: {"k": rng.randint(0, 5), "v": rng.choice(["p", "q", None])},
        "l": lambda: [rng.randint(0, 9) for _ in range(rng.randint(0, 3))],
        "mixed": lambda: rng.choice([1, "one", [1], {"one": 1}, True]),
    }
    for key, make in candidates.items():
        roll = rng.random()
        if roll < 0.75:
            out[key] = make()
        elif roll < 0.85:
            out[key] = None
    return out


@pytest.fixture(scope="module")
def records():
    rng = random.Random(26)
    return [record(rng, i) for i in range(RECORDS)]


@pytest.fixture(scope="module", params=["ndjson", "array", "pretty"])
def json_file(request, records, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("read_json") / f"records_{request.param}.json"
    if request.param == "ndjson":
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    elif request.param == "array":
        text = json.dumps(records, ensure_ascii=False)
    else:
        text = "\n".join(json.dumps(r, ensure_ascii=False, indent=2) for r in records)
    path.write_text(text, encoding="utf-8")
    return path


def tessera(sql: str) -> list:
    """Rows of `sql` run by the tessera binary under the duckdb dialect."""
    out = subprocess.run(
        [tessera_binary(), "sql", "--dialect", "duckdb", "--format", "json", sql],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise AssertionError(f"tessera failed on {sql}:\n{out.stderr}")
    return json.loads(out.stdout)


QUERIES = {
    "scalars": "SELECT id, n, x, s, b FROM read_json('{f}')",
    "dates": "SELECT id, d::VARCHAR, t FROM read_json('{f}') WHERE d IS NOT NULL",
    "date_filter": "SELECT count(*) FROM read_json('{f}') WHERE d >= DATE '2023-01-01'",
    "struct_fields": "SELECT id, o.k, o.v FROM read_json('{f}')",
    "list_unnest": "SELECT id, unnest(l) FROM read_json('{f}')",
    "list_length": "SELECT id, array_length(l) FROM read_json('{f}')",
    "records_false": "SELECT count(*) FROM read_json('{f}', records=false)",
    "objects": "SELECT count(*) FROM read_json_objects('{f}')",
    "columns": "SELECT id, n FROM read_json('{f}', columns={{id: 'BIGINT', n: 'BIGINT'}})",
    "sample_all": "SELECT count(n), count(s) FROM read_json('{f}', sample_size=-1)",
}


def kind(type_name: str) -> str:
    """A type's kind, as both engines name it (DuckDB's names, Arrow's names)."""
    lower = type_name.lower()
    for word, k in [
        ("struct", "struct"),
        ("[]", "list"),
        ("list", "list"),
        ("json", "json"),
        ("timestamp", "timestamp"),
        ("date", "date"),
        ("bool", "boolean"),
        ("double", "double"),
        ("float", "double"),
        ("int", "integer"),
        ("varchar", "text"),
        ("utf8", "text"),
    ]:
        if word in lower:
            return k
    return lower


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_query_matches_duckdb(name, json_file):
    sql = QUERIES[name].format(f=json_file)
    expected = canon_rows(duckdb.connect().execute(sql).fetchall())
    got = canon_rows(tessera(sql))
    assert same_rows(got, expected), f"{name}: {sql}"


def test_inferred_columns_match_duckdb(json_file):
    duck = duckdb.connect().execute(f"DESCRIBE SELECT * FROM read_json('{json_file}')").fetchall()
    ours = tessera(f"DESCRIBE SELECT * FROM read_json('{json_file}')")
    assert [r[0] for r in duck] == [r["column_name"] for r in ours]
    # Under the duckdb dialect DESCRIBE answers with DuckDB's columns and type names; the
    # kinds must agree (DuckDB 2.0.0 widens this file's 41-bit integers to HUGEINT).
    assert [kind(r[1]) for r in duck] == [kind(r["column_type"]) for r in ours]


def geometry(rng):
    """A random GeoJSON geometry of each kind DuckDB reads, or None."""
    def pt():
        return [rng.randint(-90, 90), round(rng.uniform(-180, 180), 2)]

    def ring():
        first = pt()
        return [first, pt(), pt(), first]

    kinds = {
        "Point": lambda: pt(),
        "MultiPoint": lambda: [pt() for _ in range(rng.randint(1, 3))],
        "LineString": lambda: [pt() for _ in range(rng.randint(2, 4))],
        "MultiLineString": lambda: [[pt(), pt()] for _ in range(rng.randint(1, 2))],
        "Polygon": lambda: [ring()],
        "MultiPolygon": lambda: [[ring()] for _ in range(rng.randint(1, 2))],
    }
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.2:
        return {"type": "GeometryCollection", "geometries": [{"type": "Point", "coordinates": pt()}]}
    name = rng.choice(sorted(kinds))
    return {"type": name, "coordinates": kinds[name]()}


@pytest.fixture(scope="module")
def features():
    """Features with pseudo-columns and properties that collide with them."""
    rng = random.Random(27)
    out = []
    for i in range(200):
        feature = {"type": "Feature", "id": f"F{i}", "geometry": geometry(rng)}
        if rng.random() < 0.5:
            feature["bbox"] = [0.0, 0.0, float(i), float(i)]
        feature["properties"] = {"id": i, "name": rng.choice(["a", "b", None]), "pop": rng.randint(0, 9)}
        out.append(feature)
    return out


@pytest.fixture(scope="module", params=["collection", "lines"])
def geojson_file(request, features, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("read_geojson")
    if request.param == "collection":
        path = folder / "features.geojson"
        path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    else:
        path = folder / "features.geojsonl"
        path.write_text("".join(json.dumps(f) + "\n" for f in features))
    return path


GEOJSON_QUERIES = {
    "geometries": "SELECT id, ST_AsText(geometry), id_1, name, pop FROM read_json('{f}')",
    "bbox": "SELECT id, bbox FROM read_json('{f}')",
    "null_geometries": "SELECT count(*), count(geometry) FROM read_json('{f}')",
    "plain": "SELECT count(*), min(type) FROM read_json('{f}', geojson=false)",
}


@pytest.mark.parametrize("name", sorted(GEOJSON_QUERIES))
def test_geojson_matches_duckdb(name, geojson_file):
    sql = GEOJSON_QUERIES[name].format(f=geojson_file)
    expected = canon_rows(duckdb.connect().execute(sql).fetchall())
    got = canon_rows(tessera(sql))
    assert same_rows(got, expected), f"{name}: {sql}"
