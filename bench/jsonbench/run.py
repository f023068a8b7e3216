#!/usr/bin/env python3
"""JSONBench: Tessera against DuckDB and chDB (ClickHouse), side by side in one run.

All systems read the same generated Bluesky file:
- DuckDB: JSONBench's setup, a table with one JSON column loaded from the file
  (`--duckdb-in-place` reads the file in place with `read_ndjson_objects` instead);
- chDB: JSONBench's ClickHouse DDL (JSON type with typed paths and its ORDER BY);
- Tessera raw: the NDJSON file in place (`STORED AS NDJSON`);
- Tessera table, hot: the file ingested into a Tessera table on local disk, every try in
  one process (later tries are hot, as the peers' are);
- Tessera table, cold: the same table ingested into MinIO, every try in a fresh process,
  so nothing is cached by Tessera;
- Tessera baseline table, hot: the table made and queried by another build
  (`--baseline`, e.g. the one before a change), side by side in the same run.
Each query runs --tries times per system; the table reports medians (best of the tries
for the hot systems), the geometric mean, load times and bytes on disk, and whether every
system returned DuckDB's rows.

Usage: bench/jsonbench/run.py [--docs 1000000] [--tries 3] [--threads N]
                              [--systems duckdb,chdb,raw,baseline_table,table,cold]
                              [--baseline BIN]
"""

import argparse
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench"))
from common import peers  # noqa: E402
from common.canon import canon_rows, same_rows, timed  # noqa: E402
from common.minio import MinIO  # noqa: E402

SYSTEMS = ["duckdb", "chdb", "raw", "baseline_table", "table", "cold"]
LABELS = {
    "duckdb": "DuckDB",
    "chdb": "chDB",
    "raw": "Tessera raw",
    "baseline_table": "Tessera baseline table hot",
    "table": "Tessera table hot",
    "cold": "Tessera table cold (MinIO)",
}
INTEGER = re.compile(r"^-?\d+$")


def queries(dialect: str) -> list[str]:
    text = (HERE / "queries" / f"{dialect}.sql").read_text()
    return [line for line in text.splitlines() if line.strip() and not line.startswith("--")]


def default_tessera() -> str:
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache/tessera/target"))
    return str(Path(target) / "release" / "tessera")


def ensure_data(tessera: str, docs: int, seed: int, gen: str, data_dir: Path) -> Path:
    """The generated file, made once per setting (`gen`: more `tessera gen bluesky` flags)."""
    setting = re.sub(r"[^0-9A-Za-z]+", "-", gen).strip("-")
    path = data_dir / f"bluesky-{docs}-s{seed}{'-' + setting if setting else ''}.json"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        print(f"generating {path}", file=sys.stderr)
        flags = ["--docs", str(docs), "--seed", str(seed), *gen.split(), "--out", str(path)]
        subprocess.run([tessera, "gen", "bluesky", *flags], check=True)
    return path



def run_duckdb(path: Path, threads: int, tries: int, work: Path, in_place: bool):
    if in_place:
        con, load = duckdb.connect(), None
        con.execute(f"SET threads = {threads}")
        con.execute(f"CREATE VIEW bluesky AS SELECT json AS j FROM read_ndjson_objects('{path}')")
    else:
        con, elapsed, size = peers.load_duckdb(path, threads, work)
        load = (elapsed, size)
    con.execute("SET TimeZone = 'UTC'")
    return [timed(lambda sql=sql: con.execute(sql).fetchall(), tries) for sql in queries("duckdb")], load


def run_chdb(path: Path, threads: int, tries: int, work: Path):
    sess, elapsed, size = peers.load_chdb(path, threads, work)

    def run(sql):
        text = sess.query(f"{sql.rstrip().rstrip(';')} SETTINGS max_threads = {threads}, session_timezone = 'UTC'", "JSONCompact")
        rows = json.loads(text.bytes().decode())["data"]
        # 64-bit integers arrive quoted; compare them as numbers. A typed path that is
        # absent reads as '' in ClickHouse (LowCardinality(String) is not nullable) where
        # the others read NULL; compare it as NULL.
        return [[chdb_value(v) for v in row] for row in rows]

    results = [timed(lambda sql=sql: run(sql), tries) for sql in queries("clickhouse")]
    sess.close()
    return results, (elapsed, size)


def chdb_value(v):
    if isinstance(v, str) and INTEGER.match(v):
        return int(v)
    return None if v == "" else v


def tessera_script(tessera: str, threads: int, ddl: str, sqls: list[str], env=None):
    """Runs `ddl` then `sqls` in one process; each statement's time and the last answer."""
    proc = subprocess.run(
        [tessera, "--threads", str(threads), "sql", "--timer", "--format", "json", ddl + " " + " ".join(sqls)],
        capture_output=True,
        text=True,
        env=dict(os.environ, **(env or {})),
    )
    if proc.returncode != 0:
        raise SystemExit(f"tessera failed on {sqls[0]}:\n{proc.stderr}")
    times = [float(line.split()[2]) for line in proc.stderr.splitlines() if line.startswith("Run Time:")]
    return times[1:], canon_rows(json.loads(proc.stdout.splitlines()[-1]))


def run_tessera(tessera: str, threads: int, tries: int, ddl: str, fresh: bool, env=None):
    """Each query `tries` times: in one process (hot), or one fresh process per try."""
    out = []
    for sql in queries("tessera"):
        if fresh:
            runs = [tessera_script(tessera, threads, ddl, [sql], env) for _ in range(tries)]
            out.append(([t for times, _ in runs for t in times], runs[-1][1]))
        else:
            out.append(tessera_script(tessera, threads, ddl, [sql] * tries, env))
    return out


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--gen",
        default="",
        help="more `tessera gen bluesky` flags: another generator setting, e.g. "
        "'--users-per-million 1000000 --popularity-offset 40 --key-order shuffled'",
    )
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument(
        "--ingest-threads",
        type=int,
        default=None,
        help="threads of the ingest (default: --threads); 1 writes one file per 262,144 "
        "documents, a table written on a smaller machine than the one querying it",
    )
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of " + ",".join(SYSTEMS))
    parser.add_argument("--duckdb-in-place", action="store_true", help="DuckDB reads the file in place")
    parser.add_argument("--data", type=Path, default=REPO / "bench/data")
    parser.add_argument("--tessera", default=default_tessera())
    parser.add_argument("--baseline", default=None, help="another tessera binary (an earlier build) run side by side as baseline_table")
    args = parser.parse_args()
    ingest_threads = args.ingest_threads or args.threads
    systems = [s for s in args.systems.split(",") if s and (args.baseline or s != "baseline_table")]
    unknown = set(systems) - set(SYSTEMS)
    if unknown or "duckdb" not in systems:
        raise SystemExit(f"--systems takes {','.join(SYSTEMS)} and must include duckdb (the reference); got {args.systems}")

    path = ensure_data(args.tessera, args.docs, args.seed, args.gen, args.data)
    results, loads = {}, {}
    with tempfile.TemporaryDirectory(prefix="jsonbench-") as work:
        work = Path(work)
        results["duckdb"], loads["duckdb"] = run_duckdb(path, args.threads, args.tries, work, args.duckdb_in_place)
        if "chdb" in systems:
            results["chdb"], loads["chdb"] = run_chdb(path, args.threads, args.tries, work)
        if "raw" in systems:
            ddl = f"CREATE EXTERNAL TABLE bluesky STORED AS NDJSON LOCATION '{path}';"
            results["raw"] = run_tessera(args.tessera, args.threads, args.tries, ddl, fresh=False)
        for system, binary in [("baseline_table", args.baseline), ("table", args.tessera)]:
            if system in systems:
                table = work / f"tessera-{system}"
                elapsed, _ = peers.ingest_tessera(binary, ingest_threads, path, str(table))
                loads[system] = (elapsed, peers.dir_bytes(table))
                ddl = f"CREATE EXTERNAL TABLE bluesky STORED AS TESSERA LOCATION '{table}';"
                results[system] = run_tessera(binary, args.threads, args.tries, ddl, fresh=False)
        if "cold" in systems:
            with MinIO() as minio:
                minio.create_bucket("bench")
                location = "s3://bench/tables/bluesky"
                peers.ingest_tessera(args.tessera, ingest_threads, path, location, minio.env())
                ddl = f"CREATE EXTERNAL TABLE bluesky STORED AS TESSERA LOCATION '{location}';"
                results["cold"] = run_tessera(args.tessera, args.threads, args.tries, ddl, fresh=True, env=minio.env())

    version = subprocess.run([args.tessera, "--version"], capture_output=True, text=True).stdout.strip()
    chdb_version = ""
    if "chdb" in results:
        chdb_version = f", chDB {peers.chdb().__version__}"
    shown = [s for s in SYSTEMS if s in results]
    lines = [
        f"JSONBench: {args.docs:,} documents ({path.stat().st_size / 1e6:.0f} MB), {args.threads} threads "
        f"(ingest: {ingest_threads}), {args.tries} tries per query; {platform.machine()}, {os.cpu_count()} cores; "
        f"DuckDB {duckdb.__version__}{chdb_version}, {version}",
        "",
        "Median seconds per query (best of the tries in brackets):",
        "",
        "| query | " + " | ".join(LABELS[s] for s in shown) + " | same rows |",
        "|---|" + "---|" * len(shown) + "---|",
    ]
    medians = {s: [] for s in shown}
    all_same = True
    reference = results["duckdb"]
    for q in range(len(reference)):
        cells = []
        same = True
        for s in shown:
            times, rows = results[s][q]
            medians[s].append(statistics.median(times))
            cells.append(f"{statistics.median(times):.3f} ({min(times):.3f})")
            same &= same_rows(reference[q][1], rows)
        all_same &= same
        lines.append(f"| Q{q + 1} | " + " | ".join(cells) + f" | {'yes' if same else 'NO'} |")
    means = {s: geomean(medians[s]) for s in shown}
    lines.append("| geometric mean | " + " | ".join(f"{means[s]:.3f}" for s in shown) + f" | {'yes' if all_same else 'NO'} |")
    lines += ["", "| system | load (s) | bytes on disk (MB) |", "|---|---|---|"]
    for s in shown:
        if s in loads and loads[s] is not None:
            lines.append(f"| {LABELS[s]} | {loads[s][0]:.2f} | {loads[s][1] / 1e6:.1f} |")
    ratios = []
    for a, b in [("table", "chdb"), ("table", "duckdb"), ("cold", "table"), ("raw", "duckdb"), ("baseline_table", "table")]:
        if a in means and b in means:
            ratios.append(f"{LABELS[a]} / {LABELS[b]} (geometric means): {means[a] / means[b]:.2f}x")
    lines += [""] + ratios
    print("\n".join(lines))
    return 0 if all_same else 1


if __name__ == "__main__":
    raise SystemExit(main())
