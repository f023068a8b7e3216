#!/usr/bin/env python3
"""Combined JSON TPC-H (JSON Tiles, SIGMOD 2021): Tessera and DuckDB on the same file in one run.

Data: `tessera gen tpch-json --sf SF`, every row of the eight TPC-H tables as one JSON
object keyed by column name, all tables in one NDJSON stream; each system sees it as a
table `tpch(j)` with one JSON column. The 22 queries (queries/*.sql, written by
make_queries.py) select each table by the presence of its key column and extract typed
columns with JSON accesses.

Systems:
- DuckDB: JSONBench's setup, a table `tpch(j JSON)` in a database file, loaded by
  `read_ndjson_objects` (load time reported);
- Tessera over the raw NDJSON in place (`CREATE EXTERNAL TABLE ... STORED AS NDJSON`);
- Tessera over an ingested table (`tessera ingest FILE --table DIR`, then
  `STORED AS TESSERA`), when the binary has `ingest` (load time reported).

Each query runs --tries times per system (Tessera in one process per query, so later
tries are hot, as DuckDB's are in its connection); the table reports medians and bests,
geometric means, and whether every Tessera answer matches DuckDB's. Money columns are
DOUBLE in both, so float values are compared with a relative tolerance of 1e-9 (sums
over millions of values differ in their last bits with the summation order). A query
that fails or times out is reported with its error, and left out of the geometric means.

Usage: bench/tpch_json/run.py [--sf 0.1] [--tries 3] [--threads N] [--no-ingest]
"""

import argparse
import datetime as dt
import json
import math
import os
import platform
import shutil
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
from common.canon import canon_rows  # noqa: E402
from jsonbench.run import default_tessera, geomean  # noqa: E402


def queries(dialect: str, sf: float) -> list[str]:
    """The 22 queries of `dialect`, with Q11's scale-factor parameter filled in."""
    text = (HERE / "queries" / f"{dialect}.sql").read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    return [q.strip().replace(":SF", repr(sf)) for q in body.split(";") if q.strip()]


def ensure_data(tessera: str, sf: float, seed: int, data_dir: Path) -> Path:
    path = data_dir / f"tpch-sf{sf:g}-s{seed}.json"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        print(f"generating {path}", file=sys.stderr)
        subprocess.run(
            [tessera, "gen", "tpch-json", "--sf", str(sf), "--seed", str(seed), "--out", str(path)], check=True
        )
    return path


def normalize(rows):
    """Canonical rows, with dates as ISO text (Tessera's JSON output renders them so)."""
    as_text = [
        tuple(v.isoformat() if isinstance(v, dt.date) and not isinstance(v, dt.datetime) else v for v in row)
        for row in (r.values() if isinstance(r, dict) else r for r in rows)
    ]
    return canon_rows(as_text)


def close(a, b) -> bool:
    numbers = (int, float)
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, numbers) and isinstance(b, numbers) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    return a == b


def same_answer(a, b) -> bool:
    """True when both hold the same rows in any order, floats equal up to tolerance."""
    if len(a) != len(b):
        return False

    def key(row):
        return repr(tuple(float(f"{v:.6g}") if isinstance(v, float) else v for v in row))

    pairs = zip(sorted(a, key=key), sorted(b, key=key))
    return all(len(x) == len(y) and all(close(u, v) for u, v in zip(x, y)) for x, y in pairs)


def run_duckdb(path: Path, sf: float, threads: int, tries: int, work: Path):
    con, load, _ = peers.load_duckdb(path, threads, work, table="tpch")
    out = []
    for sql in queries("duckdb", sf):
        times, rows = [], None
        for _ in range(tries):
            started = time.perf_counter()
            rows = con.execute(sql).fetchall()
            times.append(time.perf_counter() - started)
        out.append({"times": times, "rows": normalize(rows)})
        progress("DuckDB", len(out), out[-1])
    con.close()
    return load, out


def progress(system: str, number: int, result) -> None:
    status = result.get("error") or f"{min(result['times']):.3f} s, {len(result['rows'])} rows"
    print(f"{system} Q{number}: {status}", file=sys.stderr, flush=True)


def run_tessera(name: str, tessera: str, ddl: str, sf: float, threads: int, tries: int, timeout: float):
    out = []
    for sql in queries("tessera", sf):
        script = ddl + ";\n" + ";\n".join([sql] * tries)
        try:
            proc = subprocess.run(
                [tessera, "--threads", str(threads), "sql", "--timer", "--format", "json", script],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            out.append({"error": f"timeout after {timeout:.0f} s"})
            progress(name, len(out), out[-1])
            continue
        if proc.returncode != 0:
            lines = [line for line in proc.stderr.splitlines() if line.startswith("Error")] or proc.stderr.splitlines()
            out.append({"error": lines[0] if lines else f"exit code {proc.returncode}"})
            progress(name, len(out), out[-1])
            continue
        times = [float(line.split()[2]) for line in proc.stderr.splitlines() if line.startswith("Run Time:")]
        first = proc.stdout.splitlines()[0]
        out.append({"times": times[1:], "rows": normalize(json.loads(first))})
        progress(name, len(out), out[-1])
    return out


def has_ingest(tessera: str) -> bool:
    return subprocess.run([tessera, "ingest", "--help"], capture_output=True).returncode == 0


def cell(result) -> tuple[str, str]:
    if "error" in result:
        message = result["error"].replace("|", "\\|")
        return f"error: {message[:160]}", ""
    return f"{statistics.median(result['times']):.3f}", f"{min(result['times']):.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--timeout", type=float, default=900, help="seconds per Tessera query process")
    parser.add_argument("--data", type=Path, default=REPO / "bench/data")
    parser.add_argument("--tessera", default=default_tessera())
    parser.add_argument("--no-ingest", action="store_true", help="skip the ingested Tessera table")
    args = parser.parse_args()

    path = ensure_data(args.tessera, args.sf, args.seed, args.data)
    docs = sum(1 for _ in path.open("rb"))
    with tempfile.TemporaryDirectory(dir=args.data) as work:
        duck_load, duck = run_duckdb(path, args.sf, args.threads, args.tries, Path(work))
    systems = [("Tessera raw NDJSON", f"CREATE EXTERNAL TABLE tpch STORED AS NDJSON LOCATION '{path}'")]
    loads = [f"DuckDB load {duck_load:.1f} s"]
    if not args.no_ingest and has_ingest(args.tessera):
        table = path.with_suffix(".tessera")
        shutil.rmtree(table, ignore_errors=True)
        elapsed, _ = peers.ingest_tessera(args.tessera, args.threads, path, str(table))
        loads.append(f"Tessera ingest {elapsed:.1f} s")
        systems.append(("Tessera table", f"CREATE EXTERNAL TABLE tpch STORED AS TESSERA LOCATION '{table}'"))
    results = [
        run_tessera(name, args.tessera, ddl, args.sf, args.threads, args.tries, args.timeout) for name, ddl in systems
    ]

    version = subprocess.run([args.tessera, "--version"], capture_output=True, text=True).stdout.strip()
    header = ["query", "DuckDB median (s)", "DuckDB best (s)"]
    for name, _ in systems:
        header += [f"{name} median (s)", f"{name} best (s)", f"{name} vs DuckDB (medians)"]
    header += ["rows", "same rows"]
    lines = [
        f"Combined JSON TPC-H SF {args.sf:g}: {docs:,} documents ({path.stat().st_size / 1e6:.0f} MB NDJSON), "
        f"{args.threads} threads, {args.tries} tries per query; {'; '.join(loads)}; "
        f"{platform.machine()}, {os.cpu_count()} cores; DuckDB {duckdb.__version__}, {version}",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    all_same = True
    for i, reference in enumerate(duck):
        row = [f"Q{i + 1}", *cell(reference)]
        verdicts = []
        for result in (r[i] for r in results):
            median, best = cell(result)
            speedup = ""
            if "error" not in result:
                speedup = f"{statistics.median(reference['times']) / statistics.median(result['times']):.2f}x"
                verdicts.append("yes" if same_answer(reference["rows"], result["rows"]) else "NO")
            else:
                verdicts.append("error")
            row += [median, best, speedup]
        all_same &= all(v == "yes" for v in verdicts)
        row += [str(len(reference["rows"])), " / ".join(verdicts)]
        lines.append("| " + " | ".join(row) + " |")
    summary = ["geometric mean", f"{geomean([statistics.median(r['times']) for r in duck]):.3f}", ""]
    for result in results:
        ok = [i for i, r in enumerate(result) if "error" not in r]
        g_t = geomean([statistics.median(result[i]["times"]) for i in ok]) if ok else float("nan")
        g_d = geomean([statistics.median(duck[i]["times"]) for i in ok]) if ok else float("nan")
        note = "" if len(ok) == len(result) else f" ({len(ok)} queries)"
        summary += [f"{g_t:.3f}{note}", "", f"{g_d / g_t:.2f}x"]
    summary += ["", "yes" if all_same else "NO"]
    lines.append("| " + " | ".join(summary) + " |")
    print("\n".join(lines))
    return 0 if all_same else 1


if __name__ == "__main__":
    raise SystemExit(main())
