#!/usr/bin/env python3
"""json_each / json_tree / UNNEST of JSON arrays: Tessera raw against DuckDB raw, one run.

Two data shapes, both NDJSON files read in place by both systems:
- bluesky: Bluesky events from `tessera gen bluesky` (small objects, short arrays);
- arrays: documents holding a large array of objects (`items`, up to --items-max
  elements each), generated here with a fixed seed.
DuckDB reads the file with `read_ndjson_objects` (a view with one JSON column `j`),
Tessera with `STORED AS NDJSON`. Each query runs --tries times per system in one process;
the table shows medians, the ratio DuckDB / Tessera (above 1: Tessera is faster) and
whether Tessera's rows equal DuckDB's. Issue 17's target: at least 3x DuckDB raw on a
1M-document file.

Usage: bench/json_each/run.py [--docs 1000000] [--tries 3] [--threads N] [--items-max 200]
       [--shapes bluesky,arrays] [--skip QUERY,...] [--memory-gb G]
"""

import argparse
import json
import os
import platform
import random
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

# (name, SQL run verbatim by both systems); every query aggregates, so answers are small.
QUERIES = {
    "bluesky": [
        ("each_count", "SELECT count(*) FROM jdocs, json_each(jdocs.j) AS e"),
        ("each_keys", "SELECT e.key, count(*) AS n FROM jdocs, json_each(jdocs.j) AS e GROUP BY e.key ORDER BY n DESC, e.key"),
        (
            "each_path_types",
            "SELECT e.type, count(*) AS n FROM jdocs, json_each(jdocs.j, '$.commit.record') AS e GROUP BY e.type ORDER BY e.type",
        ),
        ("tree_types", "SELECT t.type, count(*) AS n FROM jdocs, json_tree(jdocs.j) AS t GROUP BY t.type ORDER BY t.type"),
        (
            "unnest_langs",
            "SELECT u AS lang, count(*) AS n FROM (SELECT unnest(TRY_CAST(jdocs.j->'commit'->'record'->'langs' AS JSON[])) AS u "
            "FROM jdocs) AS s GROUP BY lang ORDER BY n DESC, lang LIMIT 10",
        ),
    ],
    "arrays": [
        ("each_items", "SELECT count(*) FROM jdocs, json_each(jdocs.j, '$.items') AS e"),
        (
            "items_by_sku",
            "SELECT e.value->>'sku' AS sku, sum(CAST(e.value->>'qty' AS BIGINT)) AS qty FROM jdocs, "
            "json_each(jdocs.j, '$.items') AS e GROUP BY sku ORDER BY qty DESC, sku LIMIT 10",
        ),
        (
            "left_join_items",
            "SELECT count(*), count(e.key) FROM jdocs LEFT JOIN LATERAL json_each(jdocs.j, '$.items') AS e ON true",
        ),
        ("tree_items", "SELECT t.type, count(*) AS n FROM jdocs, json_tree(jdocs.j, '$.items') AS t GROUP BY t.type ORDER BY t.type"),
        (
            "unnest_items",
            "SELECT count(*) FROM (SELECT unnest(CAST(jdocs.j->'items' AS JSON[])) AS u FROM jdocs) AS s",
        ),
    ],
}


def default_tessera() -> str:
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache/tessera/target"))
    return str(Path(target) / "release" / "tessera")


def bluesky_file(tessera: str, docs: int, seed: int, data: Path) -> Path:
    path = data / f"bluesky-{docs}-s{seed}.json"
    if not path.exists():
        data.mkdir(parents=True, exist_ok=True)
        subprocess.run([tessera, "gen", "bluesky", "--docs", str(docs), "--seed", str(seed), "--out", str(path)], check=True)
    return path


def arrays_file(docs: int, seed: int, items_max: int, data: Path) -> Path:
    """Documents with an `items` array of 0..items_max objects (some empty or missing)."""
    path = data / f"arrays-{docs}-{items_max}-s{seed}.json"
    if path.exists():
        return path
    data.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    with path.open("w") as f:
        for i in range(docs):
            doc = {"id": i, "user": f"u{rng.randint(0, 9999)}"}
            if rng.random() < 0.95:
                count = rng.randint(0, items_max)
                doc["items"] = [
                    {"sku": f"s{rng.randint(0, 999)}", "qty": rng.randint(1, 9), "price": round(rng.uniform(1, 500), 2)}
                    for _ in range(count)
                ]
            f.write(json.dumps(doc, separators=(",", ":")) + "\n")
    return path


def memory_gb_half() -> float:
    """Half of the machine's RAM: Tessera's default memory limit (DuckDB's is 80%)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30 / 2


def run_duckdb(path: Path, threads: int, tries: int, sqls: list[str], memory_gb: float):
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute(f"SET memory_limit = '{int(memory_gb)}GB'")
    con.execute(f"CREATE VIEW jdocs AS SELECT json AS j FROM read_ndjson_objects('{path}')")
    out = []
    for sql in sqls:
        times, rows = [], None
        for _ in range(tries):
            started = time.perf_counter()
            rows = con.execute(sql).fetchall()
            times.append(time.perf_counter() - started)
        out.append((times, canon_rows(rows)))
    # Closed before Tessera runs, so DuckDB's buffers do not take Tessera's memory.
    con.close()
    return out


def run_tessera(tessera: str, path: Path, threads: int, tries: int, sqls: list[str], memory_gb: float):
    """Each query `tries` times in one process; its times and last answer."""
    ddl = f"SET tessera.memory_limit = '{int(memory_gb)}GB'; CREATE EXTERNAL TABLE jdocs STORED AS NDJSON LOCATION '{path}';"
    out = []
    for sql in sqls:
        script = ddl + " " + " ".join(f"{sql};" for _ in range(tries))
        proc = subprocess.run(
            [tessera, "--threads", str(threads), "sql", "--timer", "--format", "json", script],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"tessera failed on {sql}:\n{proc.stderr}")
        times = [float(line.split()[2]) for line in proc.stderr.splitlines() if line.startswith("Run Time:")]
        out.append((times[1:], canon_rows(json.loads(proc.stdout.splitlines()[-1]))))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--items-max", type=int, default=200, help="most elements of an `items` array")
    parser.add_argument("--data", type=Path, default=REPO / "bench/data")
    parser.add_argument("--tessera", default=default_tessera())
    parser.add_argument("--shapes", default="bluesky,arrays", help="comma-separated data shapes to run")
    parser.add_argument("--skip", default="", help="comma-separated query names to leave out")
    parser.add_argument(
        "--memory-gb", type=float, default=memory_gb_half(), help="memory limit of each system (default: half of RAM)"
    )
    args = parser.parse_args()

    makers = {
        "bluesky": lambda: bluesky_file(args.tessera, args.docs, args.seed, args.data),
        "arrays": lambda: arrays_file(args.docs, args.seed, args.items_max, args.data),
    }
    files = {shape: makers[shape]() for shape in args.shapes.split(",")}
    version = subprocess.run([args.tessera, "--version"], capture_output=True, text=True).stdout.strip()
    print(
        f"json_each/UNNEST: {args.docs:,} documents per shape, {args.threads} threads, {args.tries} tries; "
        f"{platform.machine()}, {os.cpu_count()} cores, {args.memory_gb:.1f} GB memory limit each; "
        f"DuckDB {duckdb.__version__}, {version}\n"
    )
    print("| shape | query | DuckDB raw s | Tessera raw s | DuckDB / Tessera | same rows |")
    print("|---|---|---:|---:|---:|---|")
    all_same = True
    for shape, path in files.items():
        chosen = [(n, s) for n, s in QUERIES[shape] if n not in args.skip.split(",")]
        names = [n for n, _ in chosen]
        sqls = [s for _, s in chosen]
        duck = run_duckdb(path, args.threads, args.tries, sqls, args.memory_gb)
        tess = run_tessera(args.tessera, path, args.threads, args.tries, sqls, args.memory_gb)
        for name, (dt, drows), (tt, trows) in zip(names, duck, tess):
            d, t = statistics.median(dt), statistics.median(tt)
            same = same_rows(drows, trows)
            all_same &= same
            print(f"| {shape} | {name} | {d:.3f} | {t:.3f} | {d / t:.2f}x | {'yes' if same else 'NO'} |")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
