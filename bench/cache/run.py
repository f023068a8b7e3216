#!/usr/bin/env python3
"""Cache benchmark: a raw NDJSON object and a Tessera table on MinIO, read with no cache,
with a cold and a warm block cache (`SET tessera.cache_dir`), and, for the table, from the
region cache.

Per generator setting (`tessera gen bluesky`, `tessera gen events`) the data is generated
to MinIO once and ingested into a table there. Every run is a new `tessera` process, so a
warm run is answered by the cache's disk tier (the memory tier starts empty):
- none: no cache;
- cold: a fresh cache directory, first run (everything from MinIO, ranges kept in memory);
- warm: the same directory after two runs (the second admits ranges to disk: LRU-2).
The block modes turn the region cache off. For the table, a filtered query runs too:
- none: no cache;
- block: the warm block cache, as above;
- region: a directory where one process ran the query twice (the second run wrote its
  region), read by a new process (the region is restored from disk and answers).
Each mode runs --tries times (cold on a fresh directory each time); the table reports the
median wall time and, from EXPLAIN ANALYZE, the scan's bytes and requests from MinIO and
what the caches answered (bytes_from_cache, requests_saved; remote_bytes_saved for a
region); a scan's bytes_scanned counts what it read, from MinIO or the block cache.

Usage: bench/cache/run.py [--docs 200000] [--tries 3] [--tessera PATH]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench"))
from common.minio import MinIO  # noqa: E402

BUCKET = "bench"
# One grouping query per generator, over a path every document has.
QUERIES = {
    "bluesky": "SELECT j->>'kind' AS kind, count(*) AS n FROM {src} GROUP BY kind",
    "events": "SELECT j->>'type' AS type, count(*) AS n FROM {src} GROUP BY type",
}
# One filtered query per generator, which the region cache answers (no grouping on
# dictionary codes).
FILTERED = {
    "bluesky": "SELECT count(*) AS n, max(j->>'did') AS did FROM {src} "
    "WHERE j->>'kind' = 'commit' AND j->'commit'->>'operation' = 'create'",
    "events": "SELECT count(*) AS n, max(j->'actor'->>'login') AS login FROM {src} "
    "WHERE j->>'type' = 'PushEvent'",
}
METRICS = (
    "bytes_scanned",
    "requests",
    "bytes_from_cache",
    "requests_saved",
    "remote_bytes_saved",
)


def default_tessera() -> str:
    """The release binary the test scripts build (jsonbench's choice, without its imports
    of DuckDB and chDB)."""
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache/tessera/target"))
    return str(Path(target) / "release" / "tessera")


def tessera(binary: str, env: dict, *args: str) -> str:
    done = subprocess.run([binary, *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"tessera {' '.join(args)[:200]} failed:\n{done.stderr}")
    return done.stdout


# EXPLAIN ANALYZE prints counters for people: `23.29 M`, `1.50 K`, `12`.
SCALES = {"": 1, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def metrics(explained: str, names=METRICS) -> dict:
    """Sums each counter of `names` over the plan's lines (scans report per partition)."""
    totals = {}
    for name in names:
        found = re.findall(rf"\b{name}=([0-9.]+)(?: ([KMBT]))?\b", explained)
        totals[name] = sum(float(number) * SCALES[scale] for number, scale in found)
    return totals


def settings(cache_dir, regions: bool) -> str:
    """The statements choosing the cache: none, the block cache alone, or both."""
    if cache_dir is None:
        return ""
    script = f"SET tessera.cache_dir = '{cache_dir}'; "
    if not regions:
        script += "SET tessera.region_cache = 'off'; "
    return script


def run_once(binary: str, env: dict, query: str, cache_dir, regions: bool = False) -> dict:
    script = settings(cache_dir, regions) + f"EXPLAIN ANALYZE {query}"
    started = time.perf_counter()
    out = tessera(binary, env, "sql", "--format", "csv", script)
    return {"seconds": time.perf_counter() - started, **metrics(out)}


def measure(binary: str, env: dict, query: str, tries: int, work: Path) -> dict:
    """Median figures per mode."""
    runs = {"none": [], "cold": [], "warm": []}
    for attempt in range(tries):
        runs["none"].append(run_once(binary, env, query, None))
        cold_dir = work / f"cold-{attempt}"
        runs["cold"].append(run_once(binary, env, query, cold_dir))
    warm_dir = work / "warm"
    for _ in range(2):
        run_once(binary, env, query, warm_dir)
    runs["warm"] = [run_once(binary, env, query, warm_dir) for _ in range(tries)]
    return {
        mode: {key: statistics.median(r[key] for r in results) for key in results[0]}
        for mode, results in runs.items()
    }


def measure_regions(binary: str, env: dict, query: str, tries: int, work: Path) -> dict:
    """Median figures with no cache, the warm block cache and the region cache."""
    block = measure(binary, env, query, tries, work / "block")
    region_dir = work / "region"
    # One process, two requests: LRU-2 writes the region on the second.
    tessera(binary, env, "sql", "--format", "csv", settings(region_dir, True) + f"{query}; {query}")
    runs = [run_once(binary, env, query, region_dir, regions=True) for _ in range(tries)]
    region = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    return {"none": block["none"], "block": block["warm"], "region": region}


def row(generator: str, docs: int, label: str, mode: str, f: dict) -> str:
    return (
        f"| {generator} {docs} | {label} | {mode} | {f['seconds']:.3f} | "
        f"{f['bytes_scanned'] / 1e6:.1f} | {f['requests']:.0f} | "
        f"{f['bytes_from_cache'] / 1e6:.1f} | {f['requests_saved']:.0f} | "
        f"{f['remote_bytes_saved'] / 1e6:.1f} |"
    )


def prepare(binary: str, env: dict, generator: str, docs: int) -> dict:
    raw = f"s3://{BUCKET}/{generator}/raw.json"
    table = f"s3://{BUCKET}/{generator}/table"
    tessera(binary, env, "gen", generator, "--docs", str(docs), "--seed", "7", "--out", raw)
    tessera(binary, env, "ingest", raw, "--table", table)
    return {"raw NDJSON": f"'{raw}'", "Tessera table": f"'{table}'"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--tessera", default=default_tessera())
    args = parser.parse_args()
    print(
        "| data | source | cache | median s | MB scanned | requests | MB from cache "
        "| requests saved | MB saved by regions |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    with MinIO() as minio, tempfile.TemporaryDirectory(prefix="tessera-cache-bench-") as work:
        minio.create_bucket(BUCKET)
        # The caches are on by default: every process here starts without them.
        env = dict(os.environ, **minio.env(), TESSERA_CACHE_DIR="")
        for generator, query in QUERIES.items():
            sources = prepare(args.tessera, env, generator, args.docs)
            for label, src in sources.items():
                place = Path(work) / generator / label.replace(" ", "-")
                figures = measure(args.tessera, env, query.format(src=src), args.tries, place)
                for mode, f in figures.items():
                    print(row(generator, args.docs, label, mode, f), flush=True)
            filtered = FILTERED[generator].format(src=sources["Tessera table"])
            place = Path(work) / generator / "filtered"
            figures = measure_regions(args.tessera, env, filtered, args.tries, place)
            for mode, f in figures.items():
                print(row(generator, args.docs, "table, filtered", mode, f), flush=True)


if __name__ == "__main__":
    main()
