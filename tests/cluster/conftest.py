"""Fixtures of the cluster suite: MinIO with the generated data cut into objects, DuckDB
over the same documents, and Tessera clusters (a scheduler and executors, each its own
`tessera cluster` process on loopback) that read the objects with their own credentials."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))
from support import duckdb_bluesky, generate_bluesky, tessera_binary  # noqa: E402
from common.cluster import Cluster  # noqa: E402
from common.minio import MinIO, split_lines  # noqa: E402

DOCS = int(os.environ.get("TESSERA_CLUSTER_DOCS", "40000"))
TPCH_SF = 0.01
# Objects per data set: tasks are cut per object (and per byte range of a large one).
OBJECTS = 4


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def bluesky_file(data_dir) -> Path:
    return generate_bluesky(data_dir / "bluesky.json", DOCS, 7)


@pytest.fixture(scope="session")
def tpch_file(data_dir) -> Path:
    path = data_dir / "tpch.json"
    subprocess.run(
        [tessera_binary(), "gen", "tpch-json", "--sf", str(TPCH_SF), "--seed", "1", "--out", str(path)],
        check=True,
        capture_output=True,
    )
    return path


@pytest.fixture(scope="session")
def minio(bluesky_file, tpch_file, data_dir):
    """MinIO holding s3://data/bluesky/*.json and s3://data/tpch/*.json."""
    with MinIO() as server:
        server.create_bucket("data")
        for name, path in [("bluesky", bluesky_file), ("tpch", tpch_file)]:
            for piece in split_lines(path, OBJECTS, data_dir / name):
                server.put("data", f"{name}/{piece.name}", piece)
        yield server


@pytest.fixture(scope="session")
def tables(minio):
    """The same objects ingested (embedded) into Tessera tables s3://data/tables/NAME."""
    for name in ["bluesky", "tpch"]:
        subprocess.run(
            [tessera_binary(), "ingest", f"s3://data/{name}/*.json", "--table", f"s3://data/tables/{name}"],
            env=tessera_env(minio),
            check=True,
            capture_output=True,
        )
    return minio


@pytest.fixture(scope="session")
def duck_bluesky(bluesky_file):
    return duckdb_bluesky(bluesky_file)


@pytest.fixture(scope="session")
def duck_tpch(tpch_file):
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE tpch AS SELECT json AS j FROM read_ndjson_objects(?)", [str(tpch_file)])
    return con


def tessera_env(minio) -> dict:
    env = dict(os.environ, **minio.env())
    env.pop("TESSERA_CLUSTER", None)
    return env


@pytest.fixture(scope="session")
def cluster_one(minio):
    with Cluster(tessera_binary(), tessera_env(minio), 1) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def cluster_two(minio):
    with Cluster(tessera_binary(), tessera_env(minio), 2) as cluster:
        yield cluster
