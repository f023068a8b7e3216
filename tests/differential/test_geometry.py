"""Differential tests of GEOMETRY against DuckDB 2.0.0 over generated geometries.

Random geometries of every kind (points, line strings, polygons, their multi forms,
nested collections, EMPTY parts) in XY, XYZ, XYM and XYZM, with coordinates of every
layout (small integers, fractions, huge and tiny magnitudes, negative zero), are written
as WKT with irregular spacing and case; both engines read the same NDJSON file. Each
row's WKT and GeoJSON output, the WKT after a GeoJSON round trip and the JSON written
under both settings of json_geometry_format must be the same text.
"""

import json
import random
from pathlib import Path

import pytest

from conftest import Tessera

ROWS = 500
KINDS = ["POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON", "GEOMETRYCOLLECTION"]


def number(rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:
        return str(rng.randrange(-100, 100))
    if kind == 1:
        return repr(rng.randrange(-10**6, 10**6) / 1000)
    if kind == 2:
        return repr(rng.uniform(-1, 1) * 10 ** rng.randrange(-30, 30))
    if kind == 3:
        return rng.choice(["-0.0", "1e16", "1e15", "0.0001", "0.00001", "1e21", "123456789012345678"])
    return repr(rng.random())


def coord(rng: random.Random, dims: int) -> str:
    return " ".join(number(rng) for _ in range(dims))


def coords(rng: random.Random, dims: int, least: int) -> str:
    return "(" + ", ".join(coord(rng, dims) for _ in range(least + rng.randrange(3))) + ")"


def body(rng: random.Random, kind: str, dims: int, suffix: str, depth: int) -> str:
    if rng.random() < 0.1:
        return "EMPTY"
    n = 1 + rng.randrange(3)
    if kind == "POINT":
        return f"({coord(rng, dims)})"
    if kind == "LINESTRING":
        return coords(rng, dims, 2)
    if kind == "POLYGON":
        return "(" + ", ".join(coords(rng, dims, 4) for _ in range(n)) + ")"
    if kind == "MULTIPOINT":
        return "(" + ", ".join(rng.choice([coord(rng, dims), f"({coord(rng, dims)})", "EMPTY"]) for _ in range(n)) + ")"
    if kind == "MULTILINESTRING":
        return "(" + ", ".join(coords(rng, dims, 2) for _ in range(n)) + ")"
    if kind == "MULTIPOLYGON":
        return "(" + ", ".join("(" + coords(rng, dims, 4) + ")" for _ in range(n)) + ")"
    return "(" + ", ".join(tagged(rng, dims, suffix, depth + 1) for _ in range(n)) + ")"


def tagged(rng: random.Random, dims: int, suffix: str, depth: int) -> str:
    """A geometry keyword (any case), its dimensions (nested ones repeat the root's) and body."""
    kind = rng.choice(KINDS if depth < 3 else KINDS[:-1])
    name = kind if rng.random() < 0.8 else kind.lower()
    return f"{name}{suffix} {body(rng, kind, dims, suffix, depth)}"


def geometry(rng: random.Random) -> str:
    dims, suffix = rng.choice([(2, ""), (3, " Z"), (3, " M"), (4, " ZM")])
    return tagged(rng, dims, suffix, 0)


@pytest.fixture(scope="module")
def geometries_file(tmp_path_factory) -> Path:
    rng = random.Random(26)
    path = tmp_path_factory.mktemp("geometry") / "geometries.json"
    lines = [json.dumps({"id": i, "wkt": geometry(rng)}) for i in range(ROWS)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def duck_geometries(duck, geometries_file):
    duck.execute(
        "CREATE OR REPLACE TABLE gen AS SELECT (json->>'id')::INT AS id, json->>'wkt' AS wkt "
        "FROM read_ndjson_objects(?)",
        [str(geometries_file)],
    )
    return duck


@pytest.fixture(scope="module")
def tessera_geometries(geometries_file) -> Tessera:
    return Tessera(
        f"CREATE EXTERNAL TABLE raw STORED AS NDJSON LOCATION '{geometries_file}'; "
        "CREATE VIEW gen AS SELECT json_get_int(j, 'id') AS id, j->>'wkt' AS wkt FROM raw;"
    )


@pytest.mark.parametrize(
    "setting, expression",
    [
        ("wkt", "ST_AsText(wkt::GEOMETRY)"),
        ("wkt", "ST_AsGeoJSON(wkt::GEOMETRY)::VARCHAR"),
        ("wkt", "ST_AsText(ST_GeomFromGeoJSON(ST_AsGeoJSON(wkt::GEOMETRY)))"),
        ("wkt", "ST_AsText(ST_GeomFromWKB(ST_AsWKB(wkt::GEOMETRY)))"),
        ("wkt", "to_json(wkt::GEOMETRY)::VARCHAR"),
        ("geojson", "json_object('g', wkt::GEOMETRY)::VARCHAR"),
    ],
)
def test_geometry_text_is_duckdbs(duck_geometries, tessera_geometries, setting, expression):
    """Every row answers as DuckDB does, or both engines reject it."""
    duck_rows = {}
    for i, wkt in duck_geometries.execute("SELECT id, wkt FROM gen ORDER BY id").fetchall():
        try:
            duck_geometries.execute(f"SET json_geometry_format = '{setting}'")
            [(value,)] = duck_geometries.execute(
                f"SELECT {expression} FROM (SELECT ? AS wkt)", [wkt]
            ).fetchall()
            duck_rows[i] = value
        except Exception:
            duck_rows[i] = None
    valid = [i for i, v in duck_rows.items() if v is not None]
    assert len(valid) > ROWS // 2, "the generator should mostly produce valid WKT"
    ids = ",".join(str(i) for i in valid)
    rows = tessera_geometries.query(
        f"SET json_geometry_format = '{setting}'; "
        f"SELECT id, {expression} AS v FROM gen WHERE id IN ({ids}) ORDER BY id"
    )
    assert [r["id"] for r in rows] == valid
    for row in rows:
        assert row["v"] == duck_rows[row["id"]], f"row {row['id']}"
