#!/usr/bin/env python3
"""Distribution on Ballista: the same queries embedded and on clusters of one and two
executors, side by side in one run.

Data: generated Bluesky events (JSONBench's five queries) and combined JSON TPC-H (its 22
queries), each cut into --parts objects of whole lines in one MinIO, read as raw NDJSON
(source `raw`) and as the Tessera table ingested from those objects (source `ingested`,
`tessera ingest` embedded, once per run; its time is reported).
Modes, all on this machine:
- embedded, 1 thread (`tessera --threads 1 sql`);
- a cluster of 1 executor x 1 slot (`tessera cluster` processes on loopback), plans of
  1 partition;
- a cluster of 2 executors x 1 slot, plans of 2 partitions.
Each query runs --tries times in one client process per mode (the first try is left out:
it warms the processes); the table reports medians, the overhead of distribution (1
executor against embedded) and the speed-up of the second executor, their geometric means
per shape, and whether every mode returned embedded's rows.

Usage: bench/cluster/run.py [--docs 1000000] [--sf 0.1] [--parts 8] [--tries 4]
                            [--sources raw,ingested] [--shapes JSONBench,TPC-H]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench"))
from common.cluster import Cluster  # noqa: E402
from common.minio import MinIO, split_lines  # noqa: E402
from jsonbench.run import default_tessera, geomean  # noqa: E402
from jsonbench.run import queries as jsonbench_queries  # noqa: E402
from tpch_json.run import normalize, same_answer  # noqa: E402
from tpch_json.run import queries as tpch_queries  # noqa: E402

# (label, executors, partitions per plan); 0 executors: embedded.
MODES = [("embedded 1 thread", 0, 1), ("cluster 1x1", 1, 1), ("cluster 2x1", 2, 2)]
# Seconds one client process may take.
PROCESS_S_MAX = 3600
# How each source names its table.
DDL = {
    "raw": "CREATE EXTERNAL TABLE {name} STORED AS NDJSON LOCATION 's3://data/{name}/*.json'",
    "ingested": "CREATE EXTERNAL TABLE {name} STORED AS TESSERA LOCATION 's3://data/tables/{name}'",
}


def generate(tessera: str, args, data: Path, wanted: list[str]) -> dict:
    """The generated file of each data set in `wanted`, made once per size."""
    files = {
        "bluesky": (data / f"bluesky-{args.docs}.json", ["gen", "bluesky", "--docs", str(args.docs), "--seed", "1"]),
        "tpch": (data / f"tpch-sf{args.sf:g}.json", ["gen", "tpch-json", "--sf", str(args.sf), "--seed", "1"]),
    }
    files = {name: spec for name, spec in files.items() if name in wanted}
    for path, command in files.values():
        if not path.exists():
            subprocess.run([tessera, *command, "--out", str(path)], check=True, capture_output=True)
    return {name: path for name, (path, _) in files.items()}


def ingest(tessera: str, env: dict, name: str) -> float:
    """Ingests s3://data/NAME/*.json into the Tessera table s3://data/tables/NAME; seconds."""
    start = time.monotonic()
    subprocess.run(
        [tessera, "ingest", f"s3://data/{name}/*.json", "--table", f"s3://data/tables/{name}"],
        env=env, check=True, capture_output=True, timeout=PROCESS_S_MAX,
    )
    return time.monotonic() - start


def run_queries(tessera: str, env: dict, cluster, threads: int, ddl: str, sqls: list[str], tries: int):
    """Per query: the times of tries 2.. and the last answer, or an error."""
    out = []
    placement = ["--cluster", cluster] if cluster else []
    for sql in sqls:
        script = ddl + ";\n" + ";\n".join([sql] * tries)
        proc = subprocess.run(
            [tessera, "--threads", str(threads), *placement, "sql", "--timer", "--format", "json", script],
            env=env, capture_output=True, text=True, timeout=PROCESS_S_MAX,
        )
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines() if line.startswith("Error")]
            out.append({"error": (errors or [f"exit {proc.returncode}"])[0]})
        else:
            times = [float(line.split()[2]) for line in proc.stderr.splitlines() if line.startswith("Run Time:")]
            last = proc.stdout.strip().splitlines()[-1]
            out.append({"times": times[1:], "rows": normalize(json.loads(last))})
        status = out[-1].get("error") or f"{statistics.median(out[-1]['times']):.3f} s"
        print(f"{cluster or 'embedded'} q{len(out)}: {status}", file=sys.stderr, flush=True)
    return out


def table(shape: str, names: list[str], results: list[list[dict]]) -> tuple[list[str], list[float], list[float]]:
    lines = [
        f"| {shape} query | " + " | ".join(f"{label} s" for label, _, _ in MODES)
        + " | overhead 1x1 / embedded | speed-up 2x1 over 1x1 | same rows |",
        "|---|" + "---:|" * (len(MODES) + 2) + "---|",
    ]
    overheads, speedups = [], []
    for i, name in enumerate(names):
        cells = [r[i] for r in results]
        medians = [statistics.median(c["times"]) if "times" in c else None for c in cells]
        shown = [f"{m:.3f}" if m is not None else f"error: {c['error'][:80]}" for m, c in zip(medians, cells)]
        same = all("rows" in c and same_answer(c["rows"], cells[0].get("rows", [])) for c in cells)
        overhead = medians[1] / medians[0] if None not in medians[:2] else None
        speedup = medians[1] / medians[2] if None not in medians[1:] else None
        if overhead and speedup:
            overheads.append(overhead)
            speedups.append(speedup)
        ratio = [f"{x:.2f}x" if x else "" for x in (overhead, speedup)]
        lines.append(f"| {name} | " + " | ".join(shown + ratio) + f" | {same} |")
    return lines, overheads, speedups


def run_shape(args, env: dict, shape: str, ddl: str, names: list[str], sqls: list[str], heading: str) -> list[str]:
    """One shape from one source in every mode: its table and geometric means."""
    results = []
    for _, executors, threads in MODES:
        if executors == 0:
            results.append(run_queries(args.tessera, env, None, threads, ddl, sqls, args.tries))
            continue
        with Cluster(args.tessera, env, executors) as cluster:
            results.append(run_queries(args.tessera, env, cluster.url, threads, ddl, sqls, args.tries))
    lines, overheads, speedups = table(shape, names, results)
    report = [heading, "", *lines, ""]
    if overheads:
        report.append(f"- {shape}: geometric mean overhead of 1 executor over embedded {geomean(overheads):.2f}x "
                      f"(target <= 1.3x); speed-up of the second executor {geomean(speedups):.2f}x "
                      f"(target >= 1.7x)")
    return report + [""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--tries", type=int, default=4)
    parser.add_argument("--sources", default="raw,ingested", help="comma-separated: raw, ingested")
    parser.add_argument("--shapes", default="JSONBench,TPC-H", help="comma-separated: JSONBench, TPC-H")
    parser.add_argument("--data", type=Path, default=REPO / "bench/data")
    parser.add_argument("--tessera", default=default_tessera())
    args = parser.parse_args()
    args.data.mkdir(parents=True, exist_ok=True)
    shapes = [
        ("JSONBench", "bluesky", [f"Q{i + 1}" for i in range(5)], jsonbench_queries("tessera")),
        ("TPC-H", "tpch", [f"Q{i + 1}" for i in range(22)], tpch_queries("tessera", args.sf)),
    ]
    shapes = [s for s in shapes if s[0] in args.shapes.split(",")]
    files = generate(args.tessera, args, args.data, [s[1] for s in shapes])
    version = subprocess.run([args.tessera, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"{version}, {platform.machine()}, {os.cpu_count()} cores, {args.tries} tries (first left out)\n", flush=True)
    with MinIO() as minio, tempfile.TemporaryDirectory(dir=args.data) as work:
        minio.create_bucket("data")
        for name, path in files.items():
            for piece in split_lines(path, args.parts, Path(work) / name):
                minio.put("data", f"{name}/{piece.name}", piece)
                piece.unlink()
        env = dict(os.environ, **minio.env())
        env.pop("TESSERA_CLUSTER", None)
        # Caches off in every process: repeated tries measure the distribution, not the
        # block or region cache (the cluster has no region cache).
        env["TESSERA_CACHE_DIR"] = ""
        for source in args.sources.split(","):
            for shape, table_name, names, sqls in shapes:
                heading = f"{shape} {source}: {files[table_name].name} "
                heading += f"({files[table_name].stat().st_size / 1e6:.0f} MB in {args.parts} objects"
                if source == "ingested":
                    heading += f", ingested in {ingest(args.tessera, env, table_name):.1f} s"
                report = run_shape(args, env, f"{shape} {source}", DDL[source].format(name=table_name),
                                   names, sqls, heading + ")")
                print("\n".join(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
