#!/usr/bin/env python3
"""Crystal's "regions" workload against Tessera's caches: the block cache, the predicate
cache and the region cache with and without its oracle.

After "Crystal: A Unified Cache Storage System for Analytical Databases" (Durner,
Chandramouli, Li; VLDB 2021), Section 6: each region covers 10-15% of the rows; each
query reads 8-13% of its region (about 1% of the table), one of 200 precomputed per
region; regions are picked with a Zipf law (s = 1); 400 queries. Here the hot regions also shift halfway: the second half ranks
the regions rotated by half of them, so the cold half becomes the hot one.

Per generator setting (`tessera gen bluesky`'s defaults, and many users with a flat head
and shuffled keys) the data is generated to MinIO and ingested into a table, directly
(the raw NDJSON is deleted after the ingest).
Queries go through toxiproxy in front of MinIO: 30 ms latency (downstream, so the first
byte of each response) and 70 MiB/s per connection.
A region is a time_us range of one group of (collection, operation) pairs: a pair with
at least 10% of the rows, or small pairs of one operation taken together (collection
IN (...)) until they reach 10%. A group with share p is cut into floor(p / 10%) regions
of equal shares along time_us (a single region above 15% keeps its middle 12.5%); the
regions' row counts are checked with a query and printed. A query narrows its region's
time range to a random sub-range with 8-13% of the region's rows (from a per-pair
histogram of time_us), and aggregates without GROUP BY, so the region cache may answer.

Variants, each one `tessera shell` process running all queries (the region cache's
LRU-2 history and oracle live in the process) over a fresh cache directory, with S =
10% and 20% of the table's bytes (the data files the ingest wrote):
- none: no cache;
- block: block cache of S (at least its 16 MiB minimum), predicate and region caches off;
- predicate: the same with the predicate cache on;
- requested: region cache of S with the oracle off (requested regions, LRU-2), block
  and predicate caches off;
- crystal: the same with the oracle on (95% of S for oracle regions).
Columns: latency is the wall time from sending `EXPLAIN ANALYZE <query>` to reading the
sentinel statement after it. "Recovers within" is N, where post-shift query N ends the
first window of 10 consecutive post-shift queries whose mean latency is at most 1.2x the
pre-shift steady state (the mean of the second quarter of the queries, i.e. the second
half of the first half); N >= 10 by construction, "never" if no window qualifies. From
EXPLAIN ANALYZE, summed over the queries: MB scanned (the table scans' bytes_scanned,
read from MinIO or the block cache), MB from block cache (bytes_from_cache; it can
exceed bytes_scanned, which counts the reads differently) and MB saved by regions
(remote_bytes_saved). "MinIO" columns count what MinIO served during the run, background
work included (its v3 metrics minio_api_requests_traffic_sent_bytes{type="s3"} and
minio_api_requests_total{name=...}): bytes sent, GetObject requests, and the priced
requests. Dollars price them as S3 Standard: GetObject and HeadObject $0.0004 per 1000,
ListObjectsV2 $0.005 per 1000, no transfer cost (same region).

Usage: bench/cache/crystal.py [--docs 10000000] [--queries 400] [--tessera PATH]
       [--variants none,block,predicate,requested,crystal]
"""

import argparse
import bisect
import csv
import io
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import BUCKET, MinIO, default_tessera, metrics, tessera  # noqa: E402
from common.minio import _sign  # noqa: E402
from common.toxiproxy import toxiproxy  # noqa: E402

GENERATORS = {
    "default": [],
    "many users, shuffled keys": [
        "--users-per-million", "1000000", "--popularity-offset", "40", "--key-order", "shuffled",
    ],
}
VARIANTS = ("none", "block", "predicate", "requested", "crystal")
SHARES = (0.10, 0.20)
BLOCK_MIN = 16 * 2**20
LATENCY_MS = 30
BANDWIDTH_KB = round(70 * 2**20 / 1000)  # toxiproxy's rate is in KB/s (1000 bytes)
BUCKETS = 1000  # time_us histogram resolution
REGION_MIN, REGION_MAX, REGION_WIDE = 0.10, 0.15, 0.125
QUERY_SHARE = (0.08, 0.13)
PRECOMPUTED = 200  # queries per region, as in the paper
WINDOW, RECOVERED, RECOVERY_TARGET = 10, 1.2, 40
PRICES = {"GetObject": 0.0004e-3, "HeadObject": 0.0004e-3, "ListObjectsV2": 0.005e-3}
COLLECTION, OPERATION = "j->'commit'->>'collection'", "j->'commit'->>'operation'"
SELECT = (
    "SELECT count(*) AS n, count(DISTINCT j->>'did') AS users, "
    "min(j->>'time_us') AS first_us, max(j->>'time_us') AS last_us FROM '{table}' WHERE {where}"
)


def prepare(binary: str, env: dict, minio: MinIO, name: str, flags: list, docs: int):
    """Generates and ingests one data set; returns the table and its data bytes."""
    slug = re.sub(r"\W+", "-", name)
    raw, table = f"s3://{BUCKET}/{slug}/raw.json", f"s3://{BUCKET}/{slug}/table"
    tessera(binary, env, "gen", "bluesky", "--docs", str(docs), "--seed", "7", *flags, "--out", raw)
    report = tessera(binary, env, "ingest", raw, "--table", table, "--quiet", "--report", "json")
    host, path = f"127.0.0.1:{minio.port}", f"/{BUCKET}/{slug}/raw.json"
    headers = _sign("DELETE", host, path)
    request = urllib.request.Request(minio.endpoint + path, method="DELETE", headers=headers)
    urllib.request.urlopen(request, timeout=30).read()
    return table, json.loads(report)["bytes_out"]


def distribution(binary: str, env: dict, table: str):
    """Rows per (collection, operation) and time_us bucket: (lo, hi, {pair: counts})."""
    rows = tessera(binary, env, "sql", "--format", "csv", (
        "WITH e AS (SELECT coalesce(j->'commit'->>'collection', '') AS c, "
        "coalesce(j->'commit'->>'operation', '') AS o, (j->>'time_us')::BIGINT AS t "
        f"FROM '{table}'), r AS (SELECT min(t) AS lo, max(t) AS hi FROM e) "
        f"SELECT c, o, lo, hi, (t - lo) * {BUCKETS} / (hi - lo + 1) AS b, count(*) AS n "
        "FROM e CROSS JOIN r GROUP BY c, o, lo, hi, b"
    ))
    histogram, lo, hi = {}, 0, 0
    for row in csv.DictReader(io.StringIO(rows)):
        lo, hi = int(row["lo"]), int(row["hi"])
        histogram.setdefault((row["c"], row["o"]), [0] * BUCKETS)[int(row["b"])] += int(row["n"])
    return lo, hi, histogram


def groups(histogram: dict, total: int) -> list:
    """Pairs with >= 10% of the rows alone, smaller ones of one operation together."""
    pairs = sorted((p for p in histogram if p[0]), key=lambda p: (-sum(histogram[p]), p))
    done, pending = [], {}
    for collection, operation in pairs:
        counts = histogram[(collection, operation)]
        members, summed = pending.pop(operation, ([], [0] * BUCKETS))
        members = members + [collection]
        summed = [a + b for a, b in zip(summed, counts)]
        if sum(summed) >= REGION_MIN * total:
            done.append((members, [operation], summed))
        else:
            pending[operation] = (members, summed)
    return done


def regions(lo: int, hi: int, histogram: dict) -> list:
    """Regions as dicts: collections, operations, their cumulative histogram, the range
    of the group's rows (as fractions qa..qb) and of time_us (t0..t1)."""
    total = sum(sum(counts) for counts in histogram.values())
    found = []
    for collections, operations, counts in groups(histogram, total):
        share = sum(counts) / total
        n = math.floor(share / REGION_MIN)
        cuts = [(i / n, (i + 1) / n) for i in range(n)]
        if share / n > REGION_MAX:
            middle = REGION_WIDE / share / 2
            cuts = [(0.5 - middle, 0.5 + middle)]
        cumulative = [0]
        for count in counts:
            cumulative.append(cumulative[-1] + count)
        for qa, qb in cuts:
            region = {"collections": collections, "operations": operations,
                      "cumulative": cumulative, "lo": lo, "hi": hi, "qa": qa, "qb": qb}
            region["t0"], region["t1"] = time_at(region, qa), time_at(region, qb)
            found.append(region)
    return found


def time_at(region: dict, q: float) -> int:
    """The time_us below which a fraction q of the region's group lies (interpolated)."""
    cumulative = region["cumulative"]
    target = q * cumulative[-1]
    b = min(max(bisect.bisect_left(cumulative, target) - 1, 0), BUCKETS - 1)
    inside = cumulative[b + 1] - cumulative[b]
    frac = (target - cumulative[b]) / inside if inside else 0.0
    width = (region["hi"] - region["lo"] + 1) / BUCKETS
    return region["lo"] + math.floor((b + frac) * width)


def where(region: dict, t0: int, t1: int) -> str:
    """The region's restriction with time_us in [t0, t1]."""
    def member(path: str, values: list) -> str:
        if len(values) == 1:
            return f"{path} = '{values[0]}'"
        return f"{path} IN ({', '.join(repr(v) for v in values)})"

    return (
        f"(j->>'time_us')::BIGINT BETWEEN {t0} AND {t1} AND "
        f"{member(COLLECTION, region['collections'])} AND {member(OPERATION, region['operations'])}"
    )


def verify(binary: str, env: dict, table: str, found: list) -> None:
    """Counts each region's rows with one query and prints them."""
    counts = ", ".join(
        f"count(*) FILTER (WHERE {where(r, r['t0'], r['t1'])}) AS r{i}" for i, r in enumerate(found)
    )
    query = f"SELECT count(*) AS total, {counts} FROM '{table}'"
    out = tessera(binary, env, "sql", "--format", "csv", query)
    row = next(csv.DictReader(io.StringIO(out)))
    total = int(row["total"])
    print(f"\n{len(found)} regions over {total} rows:\n")
    for i, region in enumerate(found):
        rows = int(row[f"r{i}"])
        verdict = "ok" if REGION_MIN <= rows / total <= REGION_MAX else "OUTSIDE 10-15%"
        restriction = where(region, region["t0"], region["t1"])
        print(f"- r{i}: {rows / total:.1%} ({rows} rows, {verdict}): {restriction}")


def workload(found: list, table: str, queries: int, seed: int = 7) -> list:
    """(region, SQL) per query: Zipf-ranked regions, re-ranked halfway; each query one of
    its region's PRECOMPUTED sub-range queries, picked uniformly (as the paper does)."""
    rng = random.Random(seed)
    k = len(found)
    hot = rng.sample(range(k), k)
    shifted = hot[k // 2:] + hot[: k // 2]
    weights = [1 / (rank + 1) for rank in range(k)]
    prepared = [[sub_range(region, rng) for _ in range(PRECOMPUTED)] for region in found]
    out = []
    for i in range(queries):
        r = rng.choices(hot if i < queries // 2 else shifted, weights)[0]
        out.append((r, SELECT.format(table=table, where=rng.choice(prepared[r]))))
    return out


def sub_range(region: dict, rng: random.Random) -> str:
    """The restriction of a random sub-range of `region` with 8-13% of its rows."""
    width = rng.uniform(*QUERY_SHARE) * (region["qb"] - region["qa"])
    start = rng.uniform(region["qa"], region["qb"] - width)
    return where(region, time_at(region, start), time_at(region, start + width))


def settings(variant: str, size: int, cache_dir: Path) -> list:
    """The SET statements of a variant with cache size `size` (bytes)."""
    if variant == "none":
        return []
    block = max(size, BLOCK_MIN)
    regions_on = variant in ("requested", "crystal")
    out = [
        f"SET tessera.block_cache = '{'off' if regions_on else 'on'}'",
        f"SET tessera.cache_size = '{math.ceil(block / 1024)}KiB'",
        f"SET tessera.predicate_cache = '{'on' if variant == 'predicate' else 'off'}'",
        f"SET tessera.region_cache = '{'on' if regions_on else 'off'}'",
    ]
    if regions_on:
        out.append(f"SET tessera.region_cache_size = '{math.ceil(size / 1024)}KiB'")
        out.append(f"SET tessera.region_oracle = '{'on' if variant == 'crystal' else 'off'}'")
    # Last: the caches read their settings when the directory is first opened.
    return out + [f"SET tessera.cache_dir = '{cache_dir}'"]


class Shell:
    """One `tessera shell` fed through pipes; each statement is followed by a sentinel
    query on a line of its own (an error skips the rest of its line), and its answer is
    what stdout prints before the sentinel's value."""

    def __init__(self, binary: str, env: dict):
        self.proc = subprocess.Popen(
            [binary, "shell"], env=env, text=True, bufsize=1,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.errors = []
        self.drain = threading.Thread(
            target=lambda: self.errors.extend(self.proc.stderr), daemon=True
        )
        self.drain.start()
        self.sent = 0
        self.proc.stdin.write(".mode csv\n")

    def run(self, statements: str):
        """Wall seconds until the sentinel, and the output before it."""
        self.sent += 1
        sentinel = f"done-{self.sent}"
        started = time.perf_counter()
        self.proc.stdin.write(f"{statements};\nSELECT '{sentinel}' AS sentinel;\n")
        self.proc.stdin.flush()
        lines = []
        for line in self.proc.stdout:
            if line.strip() == sentinel:
                return time.perf_counter() - started, "".join(lines)
            lines.append(line)
        self.fail("ended")

    def fail(self, what: str):
        time.sleep(0.3)  # the drain thread's last lines
        raise SystemExit(f"tessera shell {what}:\n{''.join(self.errors)[-3000:]}")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=600)
        self.drain.join()


def run_variant(binary: str, env: dict, minio: MinIO, setup: list, queries: list) -> dict:
    """All queries in one shell: latencies, remote figures of the plans, MinIO's counters."""
    before = minio.counters()
    shell = Shell(binary, env)
    if setup:
        shell.run("; ".join(setup))
        time.sleep(0.3)
        if any("Error" in line for line in shell.errors):
            shell.fail("refused the settings")
    figures = {"latencies": [], "scanned": 0.0, "from_cache": 0.0, "region_saved": 0.0,
               "answered": 0}
    for _, query in queries:
        seconds, text = shell.run(f"EXPLAIN ANALYZE {query}")
        if "Plan with Metrics" not in text:
            shell.fail(f"failed on {query}")
        table_scans = [line for line in text.splitlines() if "file_type=tessera" in line]
        scans = metrics("\n".join(table_scans))
        figures["latencies"].append(seconds)
        figures["scanned"] += scans["bytes_scanned"]
        figures["from_cache"] += scans["bytes_from_cache"]
        figures["region_saved"] += metrics(text)["remote_bytes_saved"]
        figures["answered"] += "RegionScan:" in text
    shell.close()
    for line in shell.errors:
        if "warning" in line:
            print(f"  {line.rstrip()}", file=sys.stderr)
    after = minio.counters()
    figures["minio"] = {key: after[key] - before.get(key, 0) for key in after}
    return figures


def recovery(latencies: list, half: int):
    """Post-shift queries until a 10-query window's mean is within 1.2x of the steady
    state before the shift (see the module docstring), or None."""
    steady = statistics.mean(latencies[half // 2: half])
    after = latencies[half:]
    for end in range(WINDOW, len(after) + 1):
        if statistics.mean(after[end - WINDOW: end]) <= RECOVERED * steady:
            return end
    return None


def summary(figures: dict) -> dict:
    latencies = figures["latencies"]
    half = len(latencies) // 2
    served = figures["minio"]
    return {
        "mean": statistics.mean(latencies),
        "p95": statistics.quantiles(latencies, n=20)[18],
        "first": statistics.mean(latencies[:half]),
        "second": statistics.mean(latencies[half:]),
        "recovery": recovery(latencies, half),
        "mb_scanned": figures["scanned"] / 1e6,
        "mb_block": figures["from_cache"] / 1e6,
        "mb_regions": figures["region_saved"] / 1e6,
        "answered": figures["answered"],
        "mb_minio": served["sent_bytes"] / 1e6,
        "gets_minio": served.get("GetObject", 0),
        "requests_minio": sum(served.get(api_name, 0) for api_name in PRICES),
        "dollars": sum(served.get(api_name, 0) * price for api_name, price in PRICES.items()),
    }


def report(name: str, results: dict) -> None:
    """The markdown table of one data setting; results maps (variant, share) to summaries."""
    none = results.get(("none", None))
    print(f"\n### {name}\n")
    print(
        "| variant | size | mean s | p95 s | mean 1st half | mean 2nd half | recovers within "
        "| answered by regions | MB scanned | MB from block cache | MB saved by regions "
        "| MB from MinIO | MinIO GETs | MinIO requests | $ | speed-up |"
    )
    print("|---|---|" + "---:|" * 14)
    for (variant, share), s in results.items():
        size = "-" if share is None else f"{share:.0%}"
        recovered = "never" if s["recovery"] is None else str(s["recovery"])
        speedup = f"{none['mean'] / s['mean']:.1f}x" if none else "-"
        print(
            f"| {variant} | {size} | {s['mean']:.3f} | {s['p95']:.3f} | {s['first']:.3f} | "
            f"{s['second']:.3f} | {recovered} | {s['answered']} | {s['mb_scanned']:.1f} | "
            f"{s['mb_block']:.1f} | "
            f"{s['mb_regions']:.1f} | {s['mb_minio']:.1f} | {s['gets_minio']:.0f} | "
            f"{s['requests_minio']:.0f} | {s['dollars']:.5f} | {speedup} |",
            flush=True,
        )


def checks(results: dict) -> None:
    """The issue's three targets: PASS or MISS with the figures (n/a when not run)."""
    def verdict(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    none, block = results.get(("none", None)), results.get(("block", 0.10))
    crystal20, crystal10 = results.get(("crystal", 0.20)), results.get(("crystal", 0.10))
    print()
    if none and crystal20:
        speedup = none["mean"] / crystal20["mean"]
        print(f"- (a) crystal at 20%: {speedup:.1f}x faster than none (target >= 8x): "
              f"{verdict(speedup >= 8)}")
    else:
        print("- (a) crystal at 20% vs none: n/a (variant not run)")
    if block and crystal10:
        faster = crystal10["mean"] < block["mean"]
        fewer = crystal10["mb_minio"] < block["mb_minio"]
        print(
            f"- (b) at 10%: crystal {crystal10['mean']:.3f} s and {crystal10['mb_minio']:.1f} MB "
            f"vs block {block['mean']:.3f} s and {block['mb_minio']:.1f} MB from MinIO: "
            f"{verdict(faster and fewer)}"
        )
    else:
        print("- (b) crystal vs block at 10%: n/a (variant not run)")
    for share, s in ((0.10, crystal10), (0.20, crystal20)):
        if s:
            ok = s["recovery"] is not None and s["recovery"] <= RECOVERY_TARGET
            print(f"- (c) crystal at {share:.0%} recovers within {s['recovery']} queries "
                  f"(target <= {RECOVERY_TARGET}): {verdict(ok)}")
        else:
            print(f"- (c) crystal at {share:.0%} recovery: n/a (variant not run)")


def bench(args, minio: MinIO, proxy: str, work: Path, name: str, flags: list) -> None:
    """One data setting: data, regions, workload, every variant, the table."""
    # The caches are on by default: every process here starts without them.
    direct = dict(os.environ, **minio.env(), TESSERA_CACHE_DIR="")
    table, table_bytes = prepare(args.tessera, direct, minio, name, flags, args.docs)
    found = regions(*distribution(args.tessera, direct, table))
    print(f"\n## {name}: {args.docs} documents, table {table_bytes / 2**20:.1f} MiB of data files")
    verify(args.tessera, direct, table, found)
    queries = workload(found, table, args.queries)
    for share in args.shares:
        size = int(share * table_bytes)
        raised = " (block and predicate variants: the 16 MiB minimum)" if size < BLOCK_MIN else ""
        print(f"\nS = {share:.0%} = {size / 2**20:.1f} MiB{raised}")
    proxied = dict(direct, AWS_ENDPOINT_URL=proxy)
    results = {}
    for variant in args.variants:
        for share in (None,) if variant == "none" else args.shares:
            size = 0 if share is None else int(share * table_bytes)
            cache_dir = work / re.sub(r"\W+", "-", name) / f"{variant}-{share}"
            print(f"[{name}] {variant} {share or ''}...", file=sys.stderr, flush=True)
            setup = settings(variant, size, cache_dir)
            figures = run_variant(args.tessera, proxied, minio, setup, queries)
            results[(variant, share)] = summary(figures)
    report(name, results)
    checks(results)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--tessera", default=default_tessera())
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--shares", default=",".join(map(str, SHARES)),
                        help="cache sizes as shares of the table's bytes")
    args = parser.parse_args()
    args.shares = [float(share) for share in args.shares.split(",")]
    args.variants = args.variants.split(",")
    unknown = set(args.variants) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"unknown variants {sorted(unknown)}; choose from {','.join(VARIANTS)}")
    print(f"# Crystal's regions workload: {args.queries} queries, through {LATENCY_MS} ms and "
          f"{BANDWIDTH_KB} KB/s per connection (toxiproxy)")
    with MinIO() as minio, toxiproxy(minio.port, LATENCY_MS, BANDWIDTH_KB) as proxy, \
            tempfile.TemporaryDirectory(prefix="tessera-crystal-") as work:
        minio.create_bucket(BUCKET)
        for name, flags in GENERATORS.items():
            bench(args, minio, proxy, Path(work), name, flags)


if __name__ == "__main__":
    main()
