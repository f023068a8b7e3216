#!/usr/bin/env python3
"""Storage-side pushdown (issue 20): PushdownDB's experiments ("PushdownDB: Accelerating a
DBMS using S3 Computation", ICDE 2020) on raw NDJSON in MinIO, the link between Tessera
and the store capped by toxiproxy (20 ms to the first byte of each response, --link-mib
MiB/s per connection, 100 by default), every mode in one run.

Data, two shapes, each generated once and cut into --parts objects of whole lines (as
PushdownDB partitioned its tables, so that objects load in parallel):
- tpch: `tessera gen tpch-json --sf SF`, the eight TPC-H tables as one stream of JSON
  objects (a table's rows are those with its key column);
- bluesky: `tessera gen bluesky --docs N`, Bluesky events;
- csv: the same TPC-H rows as CSV with a header, one table per prefix (as PushdownDB
  stored TPC-H), lineitem and orders in --parts objects;
- tpch-table, bluesky-table: the tpch and bluesky objects ingested into Tessera tables
  (`tessera ingest`, embedded, once per run) at s3://bench/table/<tpch|bluesky>, read
  under the same names.

Modes: local (`SET tessera.pushdown = 'off'`: Tessera reads every object and filters),
s3select (`'s3select'`: MinIO runs the scans' conditions and projections) and worker
(`'worker'`: a `tessera serve --storage-side` process beside MinIO, reading it directly,
runs the scans with the filters, projections, partial aggregates and top-K sorts above
them, and a join's probe side with its build keys' Bloom filter; its answers cross a
link capped like MinIO's) and auto (`'auto'`: each scan where
the cost model, told the link's bandwidth, expects it to finish first). Each query
runs --tries times per mode, each a new `tessera sql` process running `EXPLAIN ANALYZE`,
the modes taking turns in an order rotated at each try (run one after another, auto
measured 1.2x slower than the worker it always followed on JSON Q19 at SF 1, and
0.98x once they alternated); the table reports the median wall time, the bytes that
crossed the link (the scans' `bytes_scanned`: objects read, or the records S3 Select
returned; and the worker's `worker_bytes`), the bytes MinIO sent (to Tessera or the worker) and read for S3 Select,
the requests MinIO served (its own counters, last try) and the dollars of
PushdownDB's cost model: requests at $0.0004 per 1,000 GETs (S3 Select requests too) and
$0.005 per 1,000 LISTs, S3 Select's $0.002/GB scanned and $0.0007/GB returned, and the
query's seconds at an instance price (a 2-vCPU m6i.large's $0.096 an hour, this
machine's size, and PushdownDB's r4.8xlarge's $2.128), plus, whenever the worker ran a
sub-plan (forced or chosen), the worker's m6i.large for the query's seconds. Each mode's
answer is checked against local's (floats to a relative 1e-9).

Experiments: a filter selectivity sweep over each shape (lineitem's `l_quantity`, and a
`time_us` range of the events), string equality filters, a group-by with 2, 8 and 32
groups and over the events' skewed collections (also as `unaggregated`: S3 Select
returning the documents instead of aggregating them, as for the filter sweep and Q1 and
Q6), a top-K with K of 1, 100 and 10,000 (also as `unsampled`: S3 Select without
the sampled threshold), PushdownDB's Bloom-join sweep (customers
joined with their orders, `c_acctbal <= X` for X from -950 to -450; `s3select` runs its
filtered join, `bloom` its Bloom join: S3 Select with `tessera.bloom_join` on) and its
TPC-H subset (Q1, Q3, Q6, Q12, Q14, Q17, Q19, Tessera's dialect of
bench/tpch_json/queries), and over CSV the filter sweep and the TPC-H subset in the
specification's text (`CSV ...`), and over the Tessera tables the filter sweep, the
group-bys, the Bluesky filters and the TPC-H subset (`Table ...`; S3 Select cannot read
Parquet tables, so only local, worker and auto).

Usage: bench/pushdown/run.py [--sf 0.3] [--docs 1000000] [--parts 8] [--tries 3] [--link-mib 100]
                             [--experiments 'Bloom join,TPC-H'] [--tessera PATH]
                             [--plans DIR]
"""

import argparse
import contextlib
import csv
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from cache.run import default_tessera, metrics, tessera  # noqa: E402
from common.minio import MinIO, free_port, split_lines  # noqa: E402
from common.toxiproxy import links  # noqa: E402
from tpch_json.make_queries import QUERIES, TABLES, columns  # noqa: E402
from tpch_json.run import queries, same_answer  # noqa: E402

BUCKET = "bench"
LATENCY_MS = 20
MODES = ("off", "s3select", "worker", "auto")
CSV_TYPES = {"int": "BIGINT", "dec": "DOUBLE", "str": "VARCHAR", "date": "DATE"}
# The tables cut into --parts objects; the others are one object each.
CSV_PARTED = ("lineitem", "orders")
# PushdownDB's Bloom-join sweep (§V-B1): customers by c_acctbal, from very selective up.
BLOOM_JOIN = "Bloom join"
TOP_K = "top-K"
# Modes run besides MODES for the experiments so labelled (`labelled`): S3 Select with one
# of its operators switched (mode: label prefix, setting, value).
SELECT_VARIANTS = {"bloom": (BLOOM_JOIN, "bloom_join", "on"),
                   "unsampled": (TOP_K, "top_k_sampling", "off"),
                   "unaggregated": (("filter l_quantity", "group-by", "TPC-H Q1", "TPC-H Q6"),
                                    "select_aggregation", "off")}
ACCTBAL_BOUNDS = (-950, -900, -800, -700, -600, -450)
# Tessera tables ingested from a raw shape: table shape -> raw shape, also the table's name.
TABLE_SHAPES = {"tpch-table": "tpch", "bluesky-table": "bluesky"}
TABLE = "Table"
TABLE_MODES = ("off", "worker", "auto")
# The raw shapes' experiments also run over their tables, by label prefix.
TABLE_EXPERIMENTS = ("filter", "group-by", "TPC-H")
WORKER_TOKEN = "bench-worker-token"
TPCH_SUBSET = (1, 3, 6, 12, 14, 17, 19)
REQUEST_DOLLARS = {"GetObject": 0.0004e-3, "SelectObjectContent": 0.0004e-3,
                   "HeadObject": 0.0004e-3, "ListObjectsV2": 0.005e-3}
SCANNED_PER_GB, RETURNED_PER_GB = 0.002, 0.0007
# Compute at an instance's hourly price: this machine's size, and PushdownDB's instance.
INSTANCES = {"m6i.large": 0.096, "r4.8xlarge": 2.128}
WORKER_PER_HOUR = INSTANCES["m6i.large"]
METRICS = ("bytes_scanned", "select_store_bytes", "select_returned_bytes",
           "select_requests", "select_fallbacks", "select_retries",
           "worker_bytes", "worker_requests", "worker_fallbacks")


def prepare(binary: str, env: dict, minio: MinIO, work: Path, name: str, gen: list,
            parts: int) -> int:
    """Generates a shape, uploads its parts to s3://bench/<name>/; returns its bytes."""
    local = work / f"{name}.json"
    tessera(binary, env, "gen", *gen, "--out", str(local))
    for path in split_lines(local, parts, work):
        minio.put(BUCKET, f"{name}/{path.name}", path)
        path.unlink()
    size = local.stat().st_size
    local.unlink()
    return size


def prepare_csv(binary: str, env: dict, minio: MinIO, work: Path, sf: float, parts: int) -> int:
    """TPC-H at `sf` as CSV, uploaded to s3://bench/csv/<table>/; returns its bytes."""
    local = work / "tpch-csv.json"
    tessera(binary, env, "gen", "tpch-json", "--sf", str(sf), "--out", str(local))
    rows = {table: [] for table in TABLES}
    with open(local) as f:
        for line in f:
            doc = json.loads(line)
            table = next(t for t, (key, _) in TABLES.items() if key in doc)
            rows[table].append([doc.get(c) for c, _ in columns(table)])
    local.unlink()
    size = 0
    for table, table_rows in rows.items():
        count = parts if table in CSV_PARTED else 1
        for i in range(count):
            path = work / f"{table}-part{i:02}.csv"
            with open(path, "w", newline="") as out:
                writer = csv.writer(out, lineterminator="\n")
                writer.writerow(c for c, _ in columns(table))
                writer.writerows(table_rows[i * len(table_rows) // count:
                                            (i + 1) * len(table_rows) // count])
            size += path.stat().st_size
            minio.put(BUCKET, f"csv/{table}/{path.name}", path)
            path.unlink()
    return size


def ingest(binary: str, env: dict, shape: str) -> float:
    """Ingests the raw objects of table shape `shape` into its Tessera table; seconds."""
    raw = TABLE_SHAPES[shape]
    started = time.perf_counter()
    tessera(binary, env, "ingest", f"s3://{BUCKET}/{raw}/*.json",
            "--table", f"s3://{BUCKET}/table/{raw}")
    return time.perf_counter() - started


def ddl(name: str) -> str:
    if name in TABLE_SHAPES:
        raw = TABLE_SHAPES[name]
        return f"CREATE EXTERNAL TABLE {raw} STORED AS TESSERA LOCATION 's3://{BUCKET}/table/{raw}'"
    if name == "csv":
        return "; ".join(
            f"CREATE EXTERNAL TABLE {table} "
            f"({', '.join(f'{c} {CSV_TYPES[t]}' for c, t in columns(table))}) STORED AS CSV "
            f"LOCATION 's3://{BUCKET}/csv/{table}/' OPTIONS ('format.has_header' 'true')"
            for table in TABLES)
    return f"CREATE EXTERNAL TABLE {name} STORED AS NDJSON LOCATION 's3://{BUCKET}/{name}/'"


@contextlib.contextmanager
def storage_side(binary: str, env: dict):
    """A `tessera serve --storage-side` process on a free port; yields its port."""
    port = free_port()
    worker = subprocess.Popen(
        [binary, "serve", "--storage-side", "--worker-address", f"127.0.0.1:{port}"],
        env=dict(env, TESSERA_WORKER_TOKEN=WORKER_TOKEN), stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield port
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def settings(mode: str, env: dict) -> str:
    """The statements choosing `mode`, with the worker and the link's bandwidth (of `env`)
    and latency; a mode of SELECT_VARIANTS is S3 Select with its setting."""
    pushdown, variant = mode, ""
    if mode in SELECT_VARIANTS:
        _, setting, value = SELECT_VARIANTS[mode]
        pushdown, variant = "s3select", f"SET tessera.{setting} = '{value}'; "
    return (f"SET tessera.pushdown = '{pushdown}'; {variant}"
            f"SET tessera.worker = '{env['WORKER']}'; SET tessera.link_mib = {env['LINK_MIB']}; "
            f"SET tessera.link_latency_ms = {LATENCY_MS}")


def labelled(label: str, prefixes) -> bool:
    """Whether `label` is one of `prefixes` (a string or a tuple) or starts with one and a
    space or comma: "TPC-H Q1" is not "TPC-H Q12"."""
    prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
    return any(label == p or label.startswith((p + " ", p + ",")) for p in prefixes)


def modes_of(label: str) -> tuple:
    """The modes a query runs in: MODES, and the S3 Select variants of its experiment;
    over a Tessera table, TABLE_MODES."""
    if labelled(label, TABLE):
        return TABLE_MODES
    return MODES + tuple(m for m, (prefixes, _, _) in SELECT_VARIANTS.items()
                         if labelled(label, prefixes))


def answer(binary: str, env: dict, table: str, mode: str, sql: str) -> list:
    """The query's rows as JSON objects' values."""
    script = f"{ddl(table)}; {settings(mode, env)}; {sql}"
    out = tessera(binary, env, "sql", "--format", "ndjson", script)
    return [tuple(json.loads(line).values()) for line in out.splitlines() if line.strip()]


def run_once(binary: str, env: dict, minio: MinIO, table: str, mode: str, sql: str) -> dict:
    """One run of `EXPLAIN ANALYZE sql` in `mode`: its seconds, plan and MinIO's counts."""
    script = f"{ddl(table)}; {settings(mode, env)}; EXPLAIN ANALYZE {sql}"
    before = minio.counters()
    started = time.perf_counter()
    explained = tessera(binary, env, "sql", script)
    seconds = time.perf_counter() - started
    after = minio.counters()
    return {"seconds": seconds, "explained": explained,
            "served": {k: after[k] - before.get(k, 0) for k in after if k != "sent_bytes"},
            "sent": after["sent_bytes"] - before.get("sent_bytes", 0)}


def run(binary: str, env: dict, minio: MinIO, table: str, modes: tuple, sql: str,
        tries: int) -> dict:
    """Each of `modes`: the median seconds of `tries` runs and the last run's plan, bytes,
    requests and dollars. The modes take turns, in an order rotated at each try, so that
    none always follows the same one (MinIO and the page cache remember the run before)."""
    runs = {mode: [] for mode in modes}
    for attempt in range(tries):
        turn = attempt % len(modes)
        for mode in modes[turn:] + modes[:turn]:
            runs[mode].append(run_once(binary, env, minio, table, mode, sql))
    return {mode: summary(tried) for mode, tried in runs.items()}


def summary(tried: list) -> dict:
    """The median seconds of the runs `tried`, and the last one's figures and dollars."""
    last = tried[-1]
    figures = metrics(last["explained"], METRICS)
    served = last["served"]
    median = statistics.median(t["seconds"] for t in tried)
    storage = sum(REQUEST_DOLLARS.get(k, 0.0) * n for k, n in served.items())
    storage += figures["select_store_bytes"] / 1e9 * SCANNED_PER_GB
    storage += figures["select_returned_bytes"] / 1e9 * RETURNED_PER_GB
    if figures["worker_requests"] > 0:  # forced, or chosen by auto
        storage += median * WORKER_PER_HOUR / 3600
    dollars = {name: storage + median * price / 3600 for name, price in INSTANCES.items()}
    return {"seconds": median, "tries": [t["seconds"] for t in tried],
            "requests": sum(served.values()), "dollars": dollars,
            "link_bytes": figures["bytes_scanned"] + figures["worker_bytes"],
            "store_sent_bytes": last["sent"], "explained": last["explained"], **figures}


def experiments(sf: float, bounds: dict) -> list:
    """(shape, label, SQL) of every query of the run."""
    lineitem = "json_get_int(j, 'l_orderkey') IS NOT NULL"
    out = []
    for q in (1, 3, 11, 26, 51):  # l_quantity is uniform in 1..50: 0%, 4%, 20%, 50%, 100%
        out.append(("tpch", f"filter l_quantity < {q}",
                    f"SELECT count(*), sum(json_get_float(j, 'l_extendedprice')) FROM tpch "
                    f"WHERE {lineitem} AND json_get_float(j, 'l_quantity') < {q}"))
    low, high = bounds["low"], bounds["high"]
    for share in (0.01, 0.1, 0.5, 1.0):
        cut = low + int((high - low) * share)
        out.append(("bluesky", f"filter time_us, {share:.0%} of the range",
                    f"SELECT count(*), count(DISTINCT j->>'did') FROM bluesky "
                    f"WHERE json_get_int(j, 'time_us') <= {cut}"))
    out.append(("bluesky", "filter kind = 'identity'",
                "SELECT count(*), max(j->>'did') FROM bluesky WHERE j->>'kind' = 'identity'"))
    out.append(("bluesky", "filter collection = post",
                "SELECT j->'commit'->>'operation' AS op, count(*) FROM bluesky "
                "WHERE j->'commit'->>'collection' = 'app.bsky.feed.post' GROUP BY op"))
    price = "json_get_float(j, 'l_extendedprice')"
    for groups in (2, 8, 32):
        out.append(("tpch", f"group-by, {groups} groups",
                    f"SELECT json_get_int(j, 'l_orderkey') % {groups} AS g, count(*), "
                    f"sum({price}) FROM tpch WHERE {lineitem} GROUP BY g"))
    # Skewed groups (PushdownDB's hybrid group-by): a few collections hold most events.
    out.append(("bluesky", "group-by collection, skewed",
                "SELECT j->'commit'->>'collection' AS c, count(*), "
                "max(json_get_int(j, 'time_us')) FROM bluesky GROUP BY c"))
    for k in (1, 100, 10_000):
        out.append(("tpch", f"{TOP_K}, K = {k}",
                    f"SELECT json_get_int(j, 'l_orderkey') AS o, {price} AS p FROM tpch "
                    f"WHERE {lineitem} ORDER BY p DESC, o LIMIT {k}"))
    for bound in ACCTBAL_BOUNDS:
        out.append(("tpch", f"{BLOOM_JOIN}, c_acctbal <= {bound}",
                    "SELECT count(*), sum(json_get_float(o.j, 'o_totalprice')) FROM tpch c "
                    "JOIN tpch o ON json_get_int(o.j, 'o_custkey') = json_get_int(c.j, 'c_custkey') "
                    f"WHERE json_get_float(c.j, 'c_acctbal') <= {bound}"))
    texts = queries("tessera", sf)
    for number in TPCH_SUBSET:
        out.append(("tpch", f"TPC-H Q{number}", texts[number - 1]))
    for q in (1, 3, 11, 26, 51):
        out.append(("csv", f"CSV filter l_quantity < {q}",
                    f"SELECT count(*), sum(l_extendedprice) FROM lineitem WHERE l_quantity < {q}"))
    for number in TPCH_SUBSET:
        out.append(("csv", f"CSV TPC-H Q{number}", QUERIES[number - 1].replace(":SF", repr(sf))))
    raw_shapes = {raw: shape for shape, raw in TABLE_SHAPES.items()}
    out += [(raw_shapes[shape], f"{TABLE} {label}", sql) for shape, label, sql in out
            if shape in raw_shapes and labelled(label, TABLE_EXPERIMENTS)]
    return out


def report(rows: list, mode_rows: dict) -> None:
    names = list(INSTANCES)
    print("\n| shape | query | mode | s | speed-up | MB over the link | MB MinIO sent "
          "| MB S3 Select read | requests | fallbacks | "
          + " | ".join(f"$ ({n}) | vs local" for n in names) + " | same answer |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|" + "---:|---:|" * len(names) + "---|")
    for shape, label, _ in rows:
        local = mode_rows[(label, "off")]
        for mode in modes_of(label):
            r = mode_rows[(label, mode)]
            dollars = " | ".join(f"{r['dollars'][n]:.6f} | {r['dollars'][n] / local['dollars'][n]:.2f}"
                                 for n in names)
            fallbacks = r["select_fallbacks"] + r["worker_fallbacks"]
            print(f"| {shape} | {label} | {mode} | {r['seconds']:.2f} | "
                  f"{local['seconds'] / r['seconds']:.2f}x | {r['link_bytes'] / 1e6:.1f} | "
                  f"{r['store_sent_bytes'] / 1e6:.1f} | {r['select_store_bytes'] / 1e6:.1f} | "
                  f"{r['requests']:.0f} | {fallbacks:.0f} | {dollars} | {r['same']} |")
    for prefix in ("TPC-H", "CSV TPC-H", f"{TABLE} TPC-H"):
        subset = [label for _, label, _ in rows if label.startswith(prefix + " ")]
        for mode in modes_of(subset[0])[1:] if subset else ():
            speedups = [mode_rows[(q, "off")]["seconds"] / mode_rows[(q, mode)]["seconds"]
                        for q in subset]
            print(f"- {prefix} subset, {mode}: mean speed-up {statistics.mean(speedups):.2f}x "
                  "(target >= 6.7x)")
            for n in names:
                saving = [1 - mode_rows[(q, mode)]["dollars"][n] / mode_rows[(q, "off")]["dollars"][n]
                          for q in subset]
                print(f"- {prefix} subset, {mode}, compute at {n}: mean saving "
                      f"{statistics.mean(saving):.0%} (target >= 30%)")
    behind = []
    chosen = [label for _, label, _ in rows if "auto" in modes_of(label)]
    for label in chosen:
        # The forced modes: S3 Select's variants switch one of its operators off.
        forced = [m for m in modes_of(label) if m in MODES and m != "auto"]
        best = min(mode_rows[(label, m)]["seconds"] for m in forced)
        ratio = mode_rows[(label, "auto")]["seconds"] / best
        if ratio > 1.10:
            behind.append(f"{label} ({ratio:.2f}x)")
    print(f"- auto more than 10% slower than the best forced mode: {len(behind)} of {len(chosen)} "
          f"queries{': ' + ', '.join(behind) if behind else ''} (target: none)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=0.3)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--link-mib", type=float, default=100,
                        help="MiB/s per connection between Tessera and MinIO")
    parser.add_argument("--tessera", default=default_tessera())
    parser.add_argument("--experiments", default="",
                        help="comma-separated labels or label prefixes (`labelled`) of the "
                             "experiments to run (all)")
    parser.add_argument("--plans", type=Path,
                        help="a directory to keep each query's last EXPLAIN ANALYZE in, "
                             "as <label>.<mode>.txt")
    args = parser.parse_args()
    binary = args.tessera
    if args.plans:
        args.plans.mkdir(parents=True, exist_ok=True)
    rate_kb = round(args.link_mib * 2**20 / 1000)  # toxiproxy's rate is in KB/s (1000 bytes)
    print(f"# pushdown: TPC-H SF {args.sf:g}, {args.docs} Bluesky events, {args.parts} objects each, "
          f"{LATENCY_MS} ms and {args.link_mib:g} MiB/s per connection (toxiproxy), {args.tries} tries")
    with contextlib.ExitStack() as stack, MinIO() as minio, links(LATENCY_MS, rate_kb) as proxies, \
            tempfile.TemporaryDirectory(prefix="tessera-pushdown-") as tmp:
        work = Path(tmp)
        minio.create_bucket(BUCKET)
        direct = dict(os.environ, **minio.env(), TESSERA_CACHE_DIR="",
                      TESSERA_WORKER_TOKEN=WORKER_TOKEN)
        worker_port = stack.enter_context(storage_side(binary, direct))
        direct["WORKER"] = f"http://127.0.0.1:{worker_port}"
        direct["LINK_MIB"] = str(args.link_mib)
        chosen = tuple(p.strip() for p in args.experiments.split(",") if p.strip())

        def wanted(bounds: dict) -> list:
            return [r for r in experiments(args.sf, bounds)
                    if not chosen or labelled(r[1], chosen)]

        # Only the shapes the chosen experiments read are generated (SF 1 takes minutes).
        shapes = {shape for shape, _, _ in wanted({"low": 0, "high": 0})}
        tables = sorted(shapes & set(TABLE_SHAPES))
        shapes = (shapes - set(TABLE_SHAPES)) | {TABLE_SHAPES[t] for t in tables}
        gens = {"tpch": ["tpch-json", "--sf", str(args.sf)],
                "bluesky": ["bluesky", "--docs", str(args.docs)]}
        sizes = {shape: prepare_csv(binary, direct, minio, work, args.sf, args.parts)
                 if shape == "csv" else
                 prepare(binary, direct, minio, work, shape, gens[shape], args.parts)
                 for shape in sorted(shapes)}
        print("# data: " + ", ".join(f"{k} {v / 1e6:.0f} MB" for k, v in sizes.items()))
        for table in tables:
            seconds = ingest(binary, direct, table)
            data = minio.keys(BUCKET, f"table/{TABLE_SHAPES[table]}/data/")
            print(f"# {table}: ingested in {seconds:.1f} s into {len(data)} data files")
        bounds = {"low": 0, "high": 0}
        if "bluesky" in shapes:
            out = tessera(binary, direct, "sql", "--format", "ndjson",
                          f"{ddl('bluesky')}; SELECT min(json_get_int(j, 'time_us')) AS low, "
                          "max(json_get_int(j, 'time_us')) AS high FROM bluesky")
            bounds = json.loads(out.splitlines()[-1])
        env = dict(direct, AWS_ENDPOINT_URL=proxies.add("minio", minio.port),
                   WORKER=proxies.add("worker", worker_port))
        rows = wanted(bounds)
        results = {}
        for shape, label, sql in rows:
            expected = answer(binary, direct, shape, "off", sql)
            measured = run(binary, env, minio, shape, modes_of(label), sql, args.tries)
            for mode, result in measured.items():
                if args.plans:
                    name = f"{re.sub(r'[^A-Za-z0-9.-]+', '_', label)}.{mode}.txt"
                    (args.plans / name).write_text(result["explained"])
                result["same"] = same_answer(answer(binary, direct, shape, mode, sql), expected)
                results[(label, mode)] = result
                tries = ", ".join(f"{t:.2f}" for t in result["tries"])
                print(f"  {label} {mode}: {result['seconds']:.2f} s ({tries}), "
                      f"{result['bytes_scanned'] / 1e6:.1f} MB", file=sys.stderr)
        report(rows, results)


if __name__ == "__main__":
    main()
