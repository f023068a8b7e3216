#!/usr/bin/env python3
"""Ingest benchmark: load the same generated Bluesky NDJSON into DuckDB, chDB and Tessera.

All three systems load one file in one run, each into its own storage on local disk:
- DuckDB: JSONBench's setup, a table with one JSON column filled by `read_ndjson_objects`,
  in a database file (size after CHECKPOINT);
- chDB (ClickHouse): JSONBench's DDL (JSON type with typed paths, its ORDER BY), loaded
  with `JSONAsObject` (size = bytes on disk of the table's active parts);
- Tessera: `tessera ingest FILE --table DIR` (JSON tiles in Parquet Variant; size = bytes
  under the table prefix), whose JSON report gives the shredded paths and the share of
  values served from typed columns.
Each load runs --tries times into fresh storage; the table reports medians.

With --file, any NDJSON file (another data shape, e.g. `tessera gen tpch`) is loaded
instead of generated Bluesky events, by DuckDB and Tessera (chDB's DDL is Bluesky's).

Usage: bench/ingest/run.py [--docs 1000000] [--tries 3] [--threads N] [--file F.json]
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench"))
from common import peers  # noqa: E402
from jsonbench.run import default_tessera, ensure_data  # noqa: E402

def load_duckdb(path: Path, threads: int, work: Path):
    con, elapsed, size = peers.load_duckdb(path, threads, work)
    rows = con.execute("SELECT count(*) FROM bluesky").fetchone()[0]
    con.close()
    return elapsed, size, rows


def load_chdb(path: Path, threads: int, work: Path):
    sess, elapsed, size = peers.load_chdb(path, threads, work)
    rows = int(sess.query("SELECT count() FROM bluesky.bluesky", "CSV").bytes().decode().strip())
    sess.close()
    return elapsed, size, rows


def load_tessera(tessera: str, path: Path, threads: int, work: Path):
    table = work / "tessera-table"
    elapsed, report = peers.ingest_tessera(tessera, threads, path, str(table))
    return elapsed, peers.dir_bytes(table), report["documents"], report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--data", type=Path, default=REPO / "bench/data")
    parser.add_argument("--tessera", default=default_tessera())
    parser.add_argument("--skip-chdb", action="store_true", help="leave chDB out (its load takes ~30 s per try)")
    parser.add_argument("--file", type=Path, help="an NDJSON file to load instead of generated Bluesky events")
    args = parser.parse_args()

    if args.file:
        path, what = args.file, args.file.name
        with open(path, "rb") as f:
            args.docs = sum(1 for line in f if line.strip())
    else:
        path, what = ensure_data(args.tessera, args.docs, args.seed, "", args.data), "Bluesky"
    systems = {"DuckDB": lambda w: load_duckdb(path, args.threads, w)[:3]}
    if not args.skip_chdb and not args.file:
        systems["chDB"] = lambda w: load_chdb(path, args.threads, w)[:3]
    report = {}

    def tessera(w):
        elapsed, size, rows, rep = load_tessera(args.tessera, path, args.threads, w)
        report.update(rep)
        return elapsed, size, rows

    systems["Tessera"] = tessera

    results = {name: [] for name in systems}
    for _ in range(args.tries):
        for name, load in systems.items():
            work = Path(tempfile.mkdtemp(prefix=f"ingest-{name}-", dir=args.data))
            try:
                results[name].append(load(work))
            finally:
                shutil.rmtree(work, ignore_errors=True)

    version = subprocess.run([args.tessera, "--version"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"Ingest of {args.docs:,} {what} documents ({path.stat().st_size / 1e6:.0f} MB NDJSON), {args.threads} threads, "
        f"{args.tries} tries; {platform.machine()}, {os.cpu_count()} cores; {version}",
        "",
        "| system | load median (s) | load best (s) | bytes on disk (MB) | rows | load vs DuckDB |",
        "|---|---|---|---|---|---|",
    ]
    duck_median = statistics.median(r[0] for r in results["DuckDB"])
    all_rows = True
    for name, runs in results.items():
        median = statistics.median(r[0] for r in runs)
        rows = runs[-1][2]
        all_rows &= rows == args.docs
        lines.append(
            f"| {name} | {median:.2f} | {min(r[0] for r in runs):.2f} | {runs[-1][1] / 1e6:.1f} | {rows:,} | {median / duck_median:.2f}x |"
        )
    lines += ["", "Tessera's shredded paths (share of documents served from the typed column):", ""]
    lines += ["| path | type | typed share |", "|---|---|---|"]
    for p in report.get("paths", []):
        lines.append(f"| `{p['path']}` | {p['type']} | {100 * p['typed_share']:.1f}% |")
    print("\n".join(lines))
    return 0 if all_rows else 1


if __name__ == "__main__":
    raise SystemExit(main())
