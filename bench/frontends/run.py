#!/usr/bin/env python3
"""JSONBench Q1-Q5 on an ingested Tessera table through every front end, one run.

Front ends: the CLI (`tessera sql --timer`, hot in one process), the Python package
in-process (`con.sql(q).arrow()`), Arrow Flight SQL through the ADBC driver
(`cursor.fetch_arrow_table()`), and the PostgreSQL wire protocol through psycopg
(`cursor.fetchall()`), the servers being one `tessera serve` process on loopback. Every
front end must return the same rows. Then a 1M-row result to pandas: Tessera's `.df()`
against DuckDB's `.df()` of the same result over DuckDB's own table of the same file.

Run at two generator settings (JSONBench's default population, and more users with
shuffled keys), so that no figure holds on one data shape only. Issue 22's targets: hot
geometric mean through Flight SQL within 1.15x of in-process Python, and `.df()` of a
1M-row result within 1.5x of DuckDB's.

Needs a release `tessera` binary and the release wheel installed in the interpreter that
runs this script (see docs/BENCHMARKS.md for the commands).

Usage: bench/frontends/run.py [--docs 1000000] [--tries 5] [--threads 2] [--data DIR]
"""

import argparse
import math
import os
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
sys.path.insert(0, str(REPO / "tests" / "frontends"))
from common import peers  # noqa: E402
from common.canon import canon_rows  # noqa: E402
from jsonbench.run import default_tessera, ensure_data, queries, tessera_script  # noqa: E402

SETTINGS = {
    "default": "",
    "many-users": "--users-per-million 1000000 --popularity-offset 40 --key-order shuffled",
}
PASSWORD = "bench-password"
# The 1M-row result every engine hands to pandas.
WIDE_RESULT = {
    "tessera": "SELECT j->>'$.did' AS did, j->>'$.commit.collection' AS collection, "
    "CAST(j->>'$.time_us' AS BIGINT) AS time_us FROM bluesky",
    "duckdb": "SELECT j->>'$.did' AS did, j->>'$.commit.collection' AS collection, "
    "CAST(j->>'$.time_us' AS BIGINT) AS time_us FROM bluesky",
}


def timed(run, tries: int):
    """Median seconds of `tries` calls of `run` after one warm-up, and the last answer."""
    answer = run()
    times = []
    for _ in range(tries):
        started = time.perf_counter()
        answer = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), answer


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def table_ddl(table: Path) -> str:
    return f"CREATE EXTERNAL TABLE bluesky STORED AS TESSERA LOCATION '{table}';"


def run_cli(tessera: str, threads: int, tries: int, ddl: str):
    out = []
    for sql in queries("tessera"):
        times, rows = tessera_script(tessera, threads, ddl, [sql] * (tries + 1))
        out.append((statistics.median(times[1:]), rows))
    return out


def run_python(threads: int, tries: int, ddl: str):
    import tessera

    con = tessera.connect(threads=threads)
    con.execute(ddl)
    return [
        timed(lambda sql=sql: canon_rows(con.sql(sql).arrow().to_pylist()), tries)
        for sql in queries("tessera")
    ]


def run_flight_sql(port: int, tries: int, ddl: str):
    import adbc_driver_flightsql.dbapi as flight_sql

    # The driver's handshake sends basic credentials and keeps the bearer token.
    con = flight_sql.connect(f"grpc://127.0.0.1:{port}", db_kwargs={"username": "tessera", "password": PASSWORD})
    cursor = con.cursor()
    cursor.execute(ddl)

    def run(sql):
        cursor.execute(sql)
        return canon_rows(cursor.fetch_arrow_table().to_pylist())

    results = [timed(lambda sql=sql: run(sql), tries) for sql in queries("tessera")]
    con.close()
    return results


def run_postgres(port: int, tries: int, ddl: str):
    import psycopg

    con = psycopg.connect(host="127.0.0.1", port=port, user="tessera", password=PASSWORD, autocommit=True)
    con.execute(ddl)

    def run(sql):
        return canon_rows(con.execute(sql).fetchall())

    results = [timed(lambda sql=sql: run(sql), tries) for sql in queries("tessera")]
    con.close()
    return results


def start_server(tessera: str, threads: int):
    from conftest import free_port, wait_for_port

    pg, flight = free_port(), free_port()
    process = subprocess.Popen(
        [tessera, "--threads", str(threads), "serve", "--postgres", f"127.0.0.1:{pg}", "--flight-sql", f"127.0.0.1:{flight}"],
        env=dict(os.environ, TESSERA_PASSWORD=PASSWORD),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_port(pg, process)
    wait_for_port(flight, process)
    return process, pg, flight


def run_frontends(tessera: str, threads: int, tries: int, table: Path):
    ddl = table_ddl(table)
    results = {"CLI": run_cli(tessera, threads, tries, ddl), "Python": run_python(threads, tries, ddl)}
    process, pg, flight = start_server(tessera, threads)
    try:
        results["Flight SQL"] = run_flight_sql(flight, tries, ddl)
        results["PostgreSQL"] = run_postgres(pg, tries, ddl)
    finally:
        process.terminate()
        process.wait(timeout=60)
    return results


def run_dataframes(threads: int, tries: int, path: Path, table: Path, work: Path):
    """`.df()` of the 1M-row result, each engine over its own table of the file; then of
    the same rows read back from one Parquet file by both (the front end's cost alone:
    DuckDB's JSON column is text, so its first figure includes parsing it)."""
    import tessera

    con = tessera.connect(threads=threads)
    con.execute(table_ddl(table))
    ours, frame = timed(lambda: con.sql(WIDE_RESULT["tessera"]).df(), tries)
    duck, _, _ = peers.load_duckdb(path, threads, work)
    theirs, duck_frame = timed(lambda: duck.execute(WIDE_RESULT["duckdb"]).df(), tries)
    assert len(frame) == len(duck_frame), (len(frame), len(duck_frame))
    parquet = work / "result.parquet"
    duck.execute(f"COPY ({WIDE_RESULT['duckdb']}) TO '{parquet}' (FORMAT parquet)")
    read_back = f"SELECT * FROM '{parquet}'"
    ours_parquet, _ = timed(lambda: con.sql(read_back).df(), tries)
    theirs_parquet, _ = timed(lambda: duck.execute(read_back).df(), tries)
    return {"table": (ours, theirs), "parquet": (ours_parquet, theirs_parquet), "rows": len(frame)}


def report(setting: str, results: dict, frames) -> bool:
    names = list(results)
    reference = results["Python"]
    same = all(
        [rows for _, rows in results[name]] == [rows for _, rows in reference] for name in names
    )
    print(f"\n### {setting}\n")
    print("| query | " + " | ".join(f"{n} (s)" for n in names) + " |")
    print("|---|" + "---:|" * len(names))
    for i in range(len(reference)):
        print(f"| Q{i + 1} | " + " | ".join(f"{results[n][i][0]:.3f}" for n in names) + " |")
    means = {n: geomean([t for t, _ in results[n]]) for n in names}
    print("| geometric mean | " + " | ".join(f"{means[n]:.3f}" for n in names) + " |")
    print(f"\nSame rows from every front end: {'yes' if same else 'NO'}. "
          f"Flight SQL / Python: {means['Flight SQL'] / means['Python']:.2f}x (target at most 1.15x); "
          f"PostgreSQL / Python: {means['PostgreSQL'] / means['Python']:.2f}x.")
    for source, label in (("table", "each over its own table"), ("parquet", "both over one Parquet file of the rows")):
        ours, theirs = frames[source]
        print(f"`.df()` of {frames['rows']} rows, {label}: Tessera {ours:.3f} s, DuckDB {theirs:.3f} s, "
              f"ratio {ours / theirs:.2f}x (target at most 1.5x).")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--tries", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", type=Path, default=Path("/tmp/benchdata"))
    parser.add_argument("--tessera", default=default_tessera())
    args = parser.parse_args()
    ok = True
    for setting, flags in SETTINGS.items():
        path = ensure_data(args.tessera, args.docs, args.seed, flags, args.data)
        with tempfile.TemporaryDirectory(dir=args.data) as work:
            table = Path(work) / "table"
            peers.ingest_tessera(args.tessera, args.threads, path, str(table))
            results = run_frontends(args.tessera, args.threads, args.tries, table)
            frames = run_dataframes(args.threads, args.tries, path, table, Path(work))
            ok &= report(f"{setting} ({args.docs} documents)", results, frames)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
