#!/usr/bin/env python3
"""Nested, array-heavy and key-exploding JSON (issue 18, benchmarks (b) and (c)):
Tessera against DuckDB and chDB, each reading the file in place and from its own storage.

Data sets, made by `tessera gen` (cached in --data):
- events: GitHub-events-like documents (`tessera gen events`, default settings):
  arrays of objects (commits, labels, assignees), a few long arrays, 1% outliers;
- events-wide: the same generator at another setting (long pushes, 2% long arrays,
  10% outliers, a small actor pool), so nothing is tuned to one distribution;
- models: API-model-like documents (`tessera gen models`): maps keyed by thousands of
  distinct names.
Systems (--systems):
- duckdb_raw: `read_ndjson_objects` as a view `jdocs(j)` (the reference for rows);
- duckdb_table: a table `jdocs(j JSON)` loaded from the file (load timed);
- chdb_raw: `file(..., 'JSONAsObject')` (ClickHouse's JSON type, no type hints);
- chdb_table: a MergeTree table with one `JSON` column, no type hints (load timed);
- raw: Tessera over the file in place (`STORED AS NDJSON`);
- table: Tessera over a table made by `tessera ingest` (time and size reported);
- flat_table: the same, ingested with `--side-arrays false` (high-cardinality arrays
  kept whole in the documents instead of side relations of their elements, Tiles-*);
- baseline_raw, baseline_table: the same with another build (--baseline), side by side
  in the same run, to measure a change.
DuckDB and Tessera run the same SQL; chDB has its own spelling of each query (its JSON
type reads arrays of mixed elements as `Dynamic`, so elements go through JSON text).
Each query runs --tries times in one process per system; the tables show medians,
geometric means, ratios, load times and sizes, and whether each system's rows equal
DuckDB raw's (exit status 1 when any differ).

Usage: bench/nested/run.py [--docs 1000000] [--tries 3] [--threads N] [--tessera BIN]
       [--data DIR] [--datasets events,events-wide,models] [--systems ...] [--baseline BIN]
       [--gen 'more tessera gen events flags'] [--models-gen 'more tessera gen models flags']
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

SYSTEMS = ["duckdb_raw", "duckdb_table", "chdb_raw", "chdb_table", "baseline_raw", "baseline_table", "raw", "flat_table", "table"]
LABELS = {
    "baseline_raw": "Tessera baseline raw",
    "baseline_table": "Tessera baseline table",
    "duckdb_raw": "DuckDB raw",
    "duckdb_table": "DuckDB table",
    "chdb_raw": "chDB raw",
    "chdb_table": "chDB table",
    "raw": "Tessera raw",
    "flat_table": "Tessera table, no side relations",
    "table": "Tessera table",
}
# (generator, its flags) per data set; --gen / --models-gen add flags to every setting.
DATASETS = {
    "events": ("events", ""),
    "events-wide": ("events", "--commits-max 200 --long-share 0.02 --outlier-share 0.1 --actors 2000"),
    # Long arrays of hashtags (0-64, 0-40 per event): what a data file keeps whole and a
    # table moves to side relations (Tiles-*), at two settings.
    "events-tags": ("events", "--tags-max 64"),
    "events-tags-wide": ("events", "--tags-max 40 --commits-max 60 --outlier-share 0.1 --actors 2000"),
    "models": ("models", ""),
}
INTEGER = re.compile(r"^-?\d+$")

# (name, SQL of DuckDB and Tessera over `jdocs(j)`, chDB's SQL over `T` with column `json`).
# `->>` binds looser than `=` in DuckDB, hence the parentheses around paths compared.
P = "JSONExtractArrayRaw(toJSONString(json.^payload), 'commits')"
EVENTS = [
    ("commits_count", "SELECT count(*) FROM jdocs, json_each(jdocs.j, '$.payload.commits') AS e", "SELECT count() FROM T ARRAY JOIN JSONExtractArrayRaw(toJSONString(json.^payload), 'commits') AS c"),
    ("commits_by_author", "SELECT e.value->'author'->>'name' AS author, count(*) AS n FROM jdocs, json_each(jdocs.j, '$.payload.commits') AS e GROUP BY author ORDER BY n DESC, author LIMIT 10", "SELECT JSONExtract(c, 'author', 'name', 'Nullable(String)') AS author, count() AS n FROM T ARRAY JOIN JSONExtractArrayRaw(toJSONString(json.^payload), 'commits') AS c GROUP BY author ORDER BY n DESC, author LIMIT 10"),
    ("commits_two_fields", "SELECT e.value->'author'->>'name' AS author, count(*) AS n, sum(CASE WHEN (e.value->>'distinct') = 'true' THEN 1 ELSE 0 END) AS d FROM jdocs, json_each(jdocs.j, '$.payload.commits') AS e GROUP BY author ORDER BY n DESC, author LIMIT 10", "SELECT JSONExtract(c, 'author', 'name', 'Nullable(String)') AS author, count() AS n, sum(if(JSONExtractRaw(c, 'distinct') = 'true', 1, 0)) AS d FROM T ARRAY JOIN JSONExtractArrayRaw(toJSONString(json.^payload), 'commits') AS c GROUP BY author ORDER BY n DESC, author LIMIT 10"),
    ("first_commit_author", "SELECT count(*) FROM jdocs WHERE (jdocs.j->'payload'->'commits'->0->'author'->>'name') = 'alice'", "SELECT count() FROM T WHERE JSONExtract(toJSONString(json.^payload), 'commits', 1, 'author', 'name', 'Nullable(String)') = 'alice'"),
    ("pr_objects", "SELECT count(jdocs.j->'payload'->'pull_request') FROM jdocs", 'SELECT countIf(json.payload.pull_request.number IS NOT NULL) FROM T'),
    ("top_labels", "SELECT e.value->>'name' AS label, count(*) AS n FROM jdocs, json_each(jdocs.j, '$.payload.pull_request.labels') AS e GROUP BY label ORDER BY n DESC, label LIMIT 10", "SELECT JSONExtract(e, 'name', 'Nullable(String)') AS label, count() AS n FROM T ARRAY JOIN JSONExtractArrayRaw(toJSONString(json.^payload.pull_request), 'labels') AS e GROUP BY label ORDER BY n DESC, label LIMIT 10"),
    ("commits_per_type", "SELECT jdocs.j->>'type' AS type, sum(json_array_length(jdocs.j->'payload'->'commits')) AS commits FROM jdocs GROUP BY type ORDER BY type", "SELECT json.type.:String AS type, if(countIf(JSONHas(p, 'commits')) = 0, NULL, sum(JSONLength(p, 'commits'))) AS commits FROM (SELECT json, toJSONString(json.^payload) AS p FROM T) GROUP BY type ORDER BY type"),
    ("unnest_distinct", "SELECT count(*) FROM (SELECT unnest(TRY_CAST(jdocs.j->'payload'->'commits' AS JSON[])) AS u FROM jdocs) AS s WHERE (s.u->>'distinct') = 'true'", "SELECT count() FROM T ARRAY JOIN JSONExtractArrayRaw(toJSONString(json.^payload), 'commits') AS c WHERE JSONExtractRaw(c, 'distinct') = 'true'"),
    ("issue_reactions", "SELECT sum(CAST(jdocs.j->'payload'->'issue'->'reactions'->>'total_count' AS BIGINT)) FROM jdocs WHERE (jdocs.j->>'type') = 'IssuesEvent'", "SELECT sum(json.payload.issue.reactions.total_count.:Int64) FROM T WHERE json.type.:String = 'IssuesEvent'"),
    ("first_issue_label", "SELECT count(*) FROM jdocs WHERE (jdocs.j->'payload'->'issue'->'labels'->0->>'name') = 'bug'", "SELECT count() FROM T WHERE JSONExtract(toJSONString(json.^payload), 'issue', 'labels', 1, 'name', 'Nullable(String)') = 'bug'"),
    ("assignee_logins", "SELECT count(DISTINCT e.value->>'login') FROM jdocs, json_each(jdocs.j, '$.payload.pull_request.assignees') AS e", "SELECT uniqExact(JSONExtract(e, 'login', 'Nullable(String)')) FROM T ARRAY JOIN JSONExtractArrayRaw(toJSONString(json.^payload.pull_request), 'assignees') AS e"),
    ("labels_per_repo", "SELECT jdocs.j->'repo'->>'name' AS repo, count(*) AS n FROM jdocs, json_each(jdocs.j, '$.payload.issue.labels') AS e WHERE (e.value->>'name') = 'bug' GROUP BY repo ORDER BY n DESC, repo LIMIT 5", "SELECT json.repo.name.:String AS repo, count() AS n FROM T ARRAY JOIN JSONExtractArrayRaw(toJSONString(json.^payload.issue), 'labels') AS e WHERE JSONExtract(e, 'name', 'Nullable(String)') = 'bug' GROUP BY repo ORDER BY n DESC, repo LIMIT 5"),
    ("tags_count", "SELECT count(*) FROM jdocs, json_each(jdocs.j, '$.tags') AS e", "SELECT count() FROM T ARRAY JOIN JSONExtractArrayRaw(toJSONString(json), 'tags') AS t"),
    ("top_tags", "SELECT e.value->>'$' AS tag, count(*) AS n FROM jdocs, json_each(jdocs.j, '$.tags') AS e GROUP BY tag ORDER BY n DESC, tag LIMIT 10", "SELECT JSONExtractString(t) AS tag, count() AS n FROM T ARRAY JOIN JSONExtractArrayRaw(toJSONString(json), 'tags') AS t GROUP BY tag ORDER BY n DESC, tag LIMIT 10"),
    ("tagged_repos", "SELECT jdocs.j->'repo'->>'name' AS repo, count(*) AS n FROM jdocs, json_each(jdocs.j, '$.tags') AS e WHERE (e.value->>'$') = 'rust' GROUP BY repo ORDER BY n DESC, repo LIMIT 5", "SELECT json.repo.name.:String AS repo, count() AS n FROM T ARRAY JOIN JSONExtractArrayRaw(toJSONString(json), 'tags') AS t WHERE JSONExtractString(t) = 'rust' GROUP BY repo ORDER BY n DESC, repo LIMIT 5"),
    ("tags_mention", "SELECT count(*) FROM jdocs WHERE EXISTS (SELECT 1 FROM json_each(jdocs.j, '$.tags') AS e WHERE (e.value->>'$') = 'rust')", "SELECT count() FROM T WHERE has(arrayMap(t -> JSONExtractString(t), JSONExtractArrayRaw(toJSONString(json), 'tags')), 'rust')"),
    ("head_refs", "SELECT jdocs.j->'payload'->'pull_request'->'head'->>'ref' AS ref, count(*) AS n FROM jdocs WHERE (jdocs.j->'payload'->'pull_request') IS NOT NULL GROUP BY ref ORDER BY n DESC, ref", 'SELECT json.payload.pull_request.head.ref.:String AS ref, count() AS n FROM T WHERE json.payload.pull_request.head.ref IS NOT NULL GROUP BY ref ORDER BY n DESC, ref'),
]
MODELS = [
    ("shape_count", "SELECT count(*) FROM jdocs, json_each(jdocs.j, '$.shapes') AS s", 'SELECT count() FROM T ARRAY JOIN JSONExtractKeys(toJSONString(json.^shapes)) AS k'),
    ("next_token_shape", "SELECT s.value->'members'->'NextToken'->>'shape' AS shape, count(*) AS n FROM jdocs, json_each(jdocs.j, '$.shapes') AS s WHERE (s.value->'members'->'NextToken') IS NOT NULL GROUP BY shape ORDER BY shape", "SELECT JSONExtract(kv.2, 'members', 'NextToken', 'shape', 'Nullable(String)') AS shape, count() AS n FROM T ARRAY JOIN JSONExtractKeysAndValuesRaw(toJSONString(json.^shapes)) AS kv WHERE JSONHas(kv.2, 'members', 'NextToken') GROUP BY shape ORDER BY shape"),
    ("methods", "SELECT o.value->'http'->>'method' AS method, count(*) AS n FROM jdocs, json_each(jdocs.j, '$.operations') AS o GROUP BY method ORDER BY method", "SELECT JSONExtract(kv.2, 'http', 'method', 'Nullable(String)') AS method, count() AS n FROM T ARRAY JOIN JSONExtractKeysAndValuesRaw(toJSONString(json.^operations)) AS kv GROUP BY method ORDER BY method"),
    ("string_shape_objects", "SELECT count(jdocs.j->'shapes'->'String') FROM jdocs", 'SELECT countIf(json.shapes.String.type IS NOT NULL) FROM T'),
]
QUERIES = {"events": EVENTS, "models": MODELS}


def default_tessera() -> str:
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache/tessera/target"))
    return str(Path(target) / "release" / "tessera")


def ensure_data(tessera: str, generator: str, docs: int, seed: int, flags: str, data_dir: Path) -> Path:
    """The generated file, made once per generator setting."""
    setting = re.sub(r"[^0-9A-Za-z.]+", "-", flags).strip("-")
    path = data_dir / f"{generator}-{docs}-s{seed}{'-' + setting if setting else ''}.json"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        print(f"generating {path}", file=sys.stderr)
        cmd = [tessera, "gen", generator, "--docs", str(docs), "--seed", str(seed), *flags.split(), "--out", str(path)]
        subprocess.run(cmd, check=True)
    return path



def run_duckdb(path: Path, threads: int, tries: int, work: Path, sqls: list[str], table: bool):
    """DuckDB over the file in place (a view) or over a loaded table; results and load."""
    if table:
        con, elapsed, size = peers.load_duckdb(path, threads, work, table="jdocs")
        load = (elapsed, size)
    else:
        con, load = duckdb.connect(), None
        con.execute(f"SET threads = {threads}")
        con.execute(f"CREATE VIEW jdocs AS SELECT json AS j FROM read_ndjson_objects('{path}')")
    results = [timed(lambda sql=sql: con.execute(sql).fetchall(), tries) for sql in sqls]
    # Closed before the next system runs, so its buffers do not take their memory.
    con.close()
    return results, load


def chdb_value(v):
    """64-bit integers arrive quoted in JSONCompact; compare them as numbers."""
    return int(v) if isinstance(v, str) and INTEGER.match(v) else v


def run_chdb(path: Path, threads: int, tries: int, work: Path, sqls: list[str], table: bool):
    """chDB over the file in place or over a MergeTree table with one JSON column (no
    type hints); results and load (seconds, bytes of the active parts)."""
    sess = peers.chdb().session.Session(str(work / "chdb"))
    source, load = f"file('{path}', 'JSONAsObject')", None
    if table:
        sess.query("CREATE DATABASE IF NOT EXISTS nested")
        sess.query("CREATE TABLE nested.docs (json JSON) ENGINE = MergeTree ORDER BY tuple()")
        started = time.perf_counter()
        sess.query(f"INSERT INTO nested.docs SELECT json FROM {source} SETTINGS max_threads = {threads}")
        elapsed = time.perf_counter() - started
        parts = "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'nested' AND table = 'docs' AND active"
        load = (elapsed, int(sess.query(parts, "CSV").bytes().decode().strip()))
        source = "nested.docs"

    def run(sql):
        text = sess.query(f"{sql.replace('FROM T', 'FROM ' + source)} SETTINGS max_threads = {threads}", "JSONCompact")
        return [[chdb_value(v) for v in row] for row in json.loads(text.bytes().decode())["data"]]

    results = [timed(lambda sql=sql: run(sql), tries) for sql in sqls]
    sess.close()
    return results, load


def tessera_script(tessera: str, threads: int, ddl: str, sqls: list[str]):
    """Runs `ddl` then `sqls` in one process; each statement's time and the last answer."""
    proc = subprocess.run(
        [tessera, "--threads", str(threads), "sql", "--timer", "--format", "json", ddl + " " + " ".join(sqls)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"tessera failed on {sqls[0]}:\n{proc.stderr}")
    times = [float(line.split()[2]) for line in proc.stderr.splitlines() if line.startswith("Run Time:")]
    return times[1:], canon_rows(json.loads(proc.stdout.splitlines()[-1]))


def run_tessera(tessera: str, path: Path, threads: int, tries: int, work: Path, sqls: list[str], table: bool, flags=()):
    """Tessera over the file in place or over a table ingested with `flags`; results and ingest."""
    load = None
    if table:
        location = work / "tessera-table"
        elapsed, _ = peers.ingest_tessera(tessera, threads, path, str(location), flags=flags)
        load = (elapsed, peers.dir_bytes(location))
        ddl = f"CREATE EXTERNAL TABLE jdocs STORED AS TESSERA LOCATION '{location}';"
    else:
        ddl = f"CREATE EXTERNAL TABLE jdocs STORED AS NDJSON LOCATION '{path}';"
    return [tessera_script(tessera, threads, ddl, [f"{sql};"] * tries) for sql in sqls], load


def run_system(system: str, args, path: Path, work: Path, queries):
    """One system over one data set: per query (times, rows), and its load if any."""
    table = system.endswith("table")
    if system.startswith("duckdb"):
        return run_duckdb(path, args.threads, args.tries, work, [q[1] for q in queries], table)
    if system.startswith("chdb"):
        return run_chdb(path, args.threads, args.tries, work, [q[2] for q in queries], table)
    tessera = args.baseline if system.startswith("baseline") else args.tessera
    # The same build with high-cardinality arrays kept whole in the documents (Tiles-* off).
    flags = ["--side-arrays", "false"] if system == "flat_table" else []
    return run_tessera(tessera, path, args.threads, args.tries, work, [q[1] for q in queries], table, flags)


def geomean(values):
    return math.exp(sum(math.log(max(v, 1e-6)) for v in values) / len(values))


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "-"


def report(name: str, path: Path, queries, results, loads) -> tuple[list[str], bool]:
    """The Markdown tables of one data set, and whether every system matched DuckDB raw."""
    shown = [s for s in SYSTEMS if s in results]
    both = "raw" in results and "table" in results
    lines = [
        f"### {name}: {path.name} ({path.stat().st_size / 1e6:.0f} MB)",
        "",
        "| query | " + " | ".join(f"{LABELS[s]} s" for s in shown) + (" | Tessera raw / table" if both else "") + " | same rows |",
        "|---|" + "---:|" * len(shown) + ("---:|" if both else "") + "---|",
    ]
    medians = {s: [] for s in shown}
    all_same = True
    for q, (query, *_) in enumerate(queries):
        cells = []
        for s in shown:
            medians[s].append(statistics.median(results[s][q][0]))
            cells.append(f"{medians[s][-1]:.3f}")
        if both:
            cells.append(ratio(medians["raw"][-1], medians["table"][-1]))
        differ = [LABELS[s] for s in shown if not same_rows(results["duckdb_raw"][q][1], results[s][q][1])]
        all_same &= not differ
        lines.append(f"| {query} | " + " | ".join(cells) + f" | {'NO: ' + ', '.join(differ) if differ else 'yes'} |")
    means = {s: geomean(medians[s]) for s in shown}
    tail = [ratio(means["raw"], means["table"])] if both else []
    lines.append("| geometric mean | " + " | ".join([f"{means[s]:.3f}" for s in shown] + tail) + " | |")
    lines += ["", "| system | load s | bytes on disk MB |", "|---|---:|---:|"]
    lines += [f"| {LABELS[s]} | {loads[s][0]:.2f} | {loads[s][1] / 1e6:.1f} |" for s in shown if loads.get(s)]
    lines.append("")
    pairs = [("chdb_table", "table"), ("duckdb_raw", "table"), ("duckdb_table", "table"), ("raw", "table")]
    for a, b in pairs + [("baseline_raw", "raw"), ("baseline_table", "table"), ("flat_table", "table")]:
        if a in means and b in means:
            lines.append(f"- {LABELS[a]} / {LABELS[b]} (geometric means): {ratio(means[a], means[b])}")
    return lines + [""], all_same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000, help="documents per events data set")
    parser.add_argument("--models-docs", type=int, default=None, help="documents of the models data set (default: --docs / 10)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--tessera", default=default_tessera())
    parser.add_argument("--data", type=Path, default=REPO / "bench/data")
    parser.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated subset of " + ",".join(DATASETS))
    parser.add_argument("--systems", default=None, help="comma-separated subset of " + ",".join(SYSTEMS) + " (default: all; the baseline ones with --baseline)")
    parser.add_argument("--baseline", default=None, help="another tessera binary (an earlier build) run side by side as the baseline systems")
    parser.add_argument("--gen", default="", help="more `tessera gen events` flags, added to every events setting")
    parser.add_argument("--models-gen", default="", help="more `tessera gen models` flags, e.g. '--keys 50000'")
    args = parser.parse_args()
    default = [s for s in SYSTEMS if args.baseline or not s.startswith("baseline")]
    systems = [s for s in (args.systems.split(",") if args.systems else default) if s]
    if any(s.startswith("baseline") for s in systems) and not args.baseline:
        raise SystemExit("the baseline systems need --baseline")
    datasets = [d for d in args.datasets.split(",") if d]
    if set(systems) - set(SYSTEMS) or "duckdb_raw" not in systems or set(datasets) - set(DATASETS):
        raise SystemExit(f"--systems takes {','.join(SYSTEMS)} (with duckdb_raw, the reference); --datasets {','.join(DATASETS)}")

    version = subprocess.run([args.tessera, "--version"], capture_output=True, text=True).stdout.strip()
    chdb_version = f", chDB {peers.chdb().__version__}" if any(s.startswith("chdb") for s in systems) else ""
    print(
        f"Nested JSON: {args.threads} threads, {args.tries} tries per query (medians); {platform.machine()}, "
        f"{os.cpu_count()} cores; DuckDB {duckdb.__version__}{chdb_version}, {version}\n"
    )
    all_same = True
    for name in datasets:
        generator, flags = DATASETS[name]
        docs = args.docs if generator == "events" else (args.models_docs or max(args.docs // 10, 1))
        extra = args.gen if generator == "events" else args.models_gen
        path = ensure_data(args.tessera, generator, docs, args.seed, f"{flags} {extra}".strip(), args.data)
        results, loads = {}, {}
        for system in systems:
            with tempfile.TemporaryDirectory(prefix="nested-") as work:
                results[system], loads[system] = run_system(system, args, path, Path(work), QUERIES[generator])
        lines, same = report(name, path, QUERIES[generator], results, loads)
        all_same &= same
        print("\n".join(lines), flush=True)
    return 0 if all_same else 1


if __name__ == "__main__":
    raise SystemExit(main())
