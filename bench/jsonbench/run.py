#!/usr/bin/env python3
"""JSONBench over raw NDJSON in place: Tessera and DuckDB, side by side in one run.

Both systems read the same generated Bluesky file where it lies: Tessera through
`CREATE EXTERNAL TABLE ... STORED AS NDJSON`, DuckDB through `read_ndjson_objects`
(JSONBench's `j` column as a view). Each query runs --tries times per system (Tessera
in one process, so later tries are hot, as DuckDB's are in its connection); the table
reports the median and the best, the speedup of the medians, and whether both systems
returned the same rows.

Usage: bench/jsonbench/run.py [--docs 1000000] [--tries 3] [--threads N]
"""

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench"))
from common.canon import canon_rows, same_rows  # noqa: E402


def queries(dialect: str) -> list[str]:
    text = (HERE / "queries" / f"{dialect}.sql").read_text()
    return [line for line in text.splitlines() if line.strip() and not line.startswith("--")]


def default_tessera() -> str:
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache/tessera/target"))
    return str(Path(target) / "release" / "tessera")


def ensure_data(tessera: str, docs: int, seed: int, data_dir: Path) -> Path:
    path = data_dir / f"bluesky-{docs}-s{seed}.json"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        print(f"generating {path}", file=sys.stderr)
        subprocess.run([tessera, "gen", "bluesky", "--docs", str(docs), "--seed", str(seed), "--out", str(path)], check=True)
    return path


def run_duckdb(path: Path, threads: int, tries: int):
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE VIEW bluesky AS SELECT json AS j FROM read_ndjson_objects('{path}')")
    out = []
    for sql in queries("duckdb"):
        times, rows = [], None
        for _ in range(tries):
            started = time.perf_counter()
            rows = con.execute(sql).fetchall()
            times.append(time.perf_counter() - started)
        out.append((times, canon_rows(rows)))
    return out


def run_tessera(tessera: str, path: Path, threads: int, tries: int):
    ddl = f"CREATE EXTERNAL TABLE bluesky STORED AS NDJSON LOCATION '{path}';"
    out = []
    for sql in queries("tessera"):
        script = ddl + " ".join([sql] * tries)
        proc = subprocess.run(
            [tessera, "--threads", str(threads), "sql", "--timer", "--format", "json", script],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"tessera failed on {sql}:\n{proc.stderr}")
        times = [float(line.split()[2]) for line in proc.stderr.splitlines() if line.startswith("Run Time:")]
        times = times[1:]  # the first is the CREATE EXTERNAL TABLE
        first = proc.stdout.splitlines()[0]
        out.append((times, canon_rows(json.loads(first))))
    return out


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--data", type=Path, default=REPO / "bench/data")
    parser.add_argument("--tessera", default=default_tessera())
    args = parser.parse_args()

    path = ensure_data(args.tessera, args.docs, args.seed, args.data)
    duck = run_duckdb(path, args.threads, args.tries)
    tess = run_tessera(args.tessera, path, args.threads, args.tries)

    version = subprocess.run([args.tessera, "--version"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"JSONBench, raw NDJSON in place: {args.docs:,} documents ({path.stat().st_size / 1e6:.0f} MB), "
        f"{args.threads} threads, {args.tries} tries per query; {platform.machine()}, {os.cpu_count()} cores; "
        f"DuckDB {duckdb.__version__}, {version}",
        "",
        "| query | DuckDB median (s) | DuckDB best (s) | Tessera median (s) | Tessera best (s) | speedup (medians) | same rows |",
        "|---|---|---|---|---|---|---|",
    ]
    medians_d, medians_t, all_same = [], [], True
    for i, ((td, rd), (tt, rt)) in enumerate(zip(duck, tess), start=1):
        md, mt = statistics.median(td), statistics.median(tt)
        medians_d.append(md)
        medians_t.append(mt)
        same = same_rows(rd, rt)
        all_same &= same
        lines.append(f"| Q{i} | {md:.3f} | {min(td):.3f} | {mt:.3f} | {min(tt):.3f} | {md / mt:.2f}x | {'yes' if same else 'NO'} |")
    gd, gt = geomean(medians_d), geomean(medians_t)
    lines.append(f"| geometric mean | {gd:.3f} | | {gt:.3f} | | {gd / gt:.2f}x | {'yes' if all_same else 'NO'} |")
    print("\n".join(lines))
    return 0 if all_same else 1


if __name__ == "__main__":
    raise SystemExit(main())
