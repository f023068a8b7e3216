"""One plan, three places: JSONBench and the 22 JSON TPC-H queries over raw NDJSON in
MinIO, and over the Tessera tables ingested from it, give DuckDB's rows embedded, on a
cluster of one executor, and on a cluster of two (Ballista cutting the plan into stages,
tasks per object or share of a table's file); a lost executor ends a query with exact
rows or one clear sentence, never a wrong answer or a hang."""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))
from common.canon import canon_rows, same_rows  # noqa: E402
from support import jsonbench_queries, tessera_binary  # noqa: E402
from tpch_json.run import normalize, queries, same_answer  # noqa: E402

from common.cluster import Cluster  # noqa: E402
from common.minio import free_port  # noqa: E402
from conftest import TPCH_SF, tessera_env  # noqa: E402

BLUESKY = "CREATE EXTERNAL TABLE bluesky STORED AS NDJSON LOCATION 's3://data/bluesky/*.json';\n"
TPCH = "CREATE EXTERNAL TABLE tpch STORED AS NDJSON LOCATION 's3://data/tpch/*.json';\n"
# The same documents ingested: scans pinned to the client's table version.
INGESTED = "CREATE EXTERNAL TABLE {name} STORED AS TESSERA LOCATION 's3://data/tables/{name}';\n"
SOURCES = ["raw", "ingested"]
# Partitions per query: more than one executor's slot, so that two executors share tasks.
THREADS = "4"
# Seconds a query may take before the test calls it a hang.
QUERY_S_MAX = 300
# ORDER BY key columns of JSONBench's five queries (ties may come in either order).
JSONBENCH_KEYS = [[1], [1], [1, 0], [1], [1]]
MODES = ["embedded", "one executor", "two executors"]


def tessera(minio, cluster: str | None, script: str) -> subprocess.CompletedProcess:
    placement = ["--cluster", cluster] if cluster else []
    return subprocess.run(
        [tessera_binary(), "--threads", THREADS, *placement, "sql", "--format", "json", script],
        env=tessera_env(minio),
        capture_output=True,
        text=True,
        timeout=QUERY_S_MAX,
    )


def rows(minio, cluster: str | None, script: str) -> list:
    out = tessera(minio, cluster, script)
    assert out.returncode == 0, f"tessera failed ({cluster or 'embedded'}):\n{out.stderr}"
    return json.loads(out.stdout)


@pytest.fixture(params=MODES)
def cluster(request) -> str | None:
    """The cluster a mode sends queries to (`None`: embedded)."""
    fixture = {"one executor": "cluster_one", "two executors": "cluster_two"}.get(request.param)
    return request.getfixturevalue(fixture).url if fixture else None


@pytest.fixture(params=SOURCES)
def source(request) -> str:
    """Whether queries read the raw objects or the Tessera tables ingested from them."""
    if request.param == "ingested":
        request.getfixturevalue("tables")
    return request.param


def table(source: str, name: str) -> str:
    """The DDL naming table `name` over `source`."""
    raw = {"bluesky": BLUESKY, "tpch": TPCH}[name]
    return raw if source == "raw" else INGESTED.format(name=name)


@pytest.mark.parametrize("number", range(1, 6))
def test_jsonbench_as_duckdb(minio, source, cluster, duck_bluesky, number):
    duck_sql, tessera_sql = jsonbench_queries("duckdb")[number - 1], jsonbench_queries("tessera")[number - 1]
    expected = canon_rows(duck_bluesky.execute(duck_sql).fetchall())
    got = canon_rows(rows(minio, cluster, table(source, "bluesky") + tessera_sql))
    assert len(expected) > 0, "the query selects nothing, so it tests nothing"
    assert same_rows(got, expected)
    key = JSONBENCH_KEYS[number - 1]
    assert [tuple(r[i] for i in key) for r in got] == [tuple(r[i] for i in key) for r in expected]


@pytest.mark.parametrize("number", range(1, 23))
def test_tpch_as_duckdb(minio, source, cluster, duck_tpch, number):
    duck_sql, tessera_sql = queries("duckdb", TPCH_SF)[number - 1], queries("tessera", TPCH_SF)[number - 1]
    expected = normalize(duck_tpch.execute(duck_sql).fetchall())
    got = normalize(rows(minio, cluster, table(source, "tpch") + tessera_sql))
    assert same_answer(got, expected), f"Q{number}: {got[:5]} != {expected[:5]}"


def test_plans_go_to_the_cluster(minio, source, cluster_two):
    query = "EXPLAIN SELECT j->>'kind', count(*) FROM bluesky GROUP BY 1"
    plan = "\n".join(str(r) for r in rows(minio, cluster_two.url, table(source, "bluesky") + query))
    assert f"ClusterExec: scheduler=http://127.0.0.1:{cluster_two.port}" in plan
    if source == "ingested":
        # The table's own scan and the grouping on its dictionary codes are sent.
        assert "file_type=tessera" in plan and "CodeAggregateExec" in plan, plan
    embedded = "\n".join(str(r) for r in rows(minio, None, table(source, "bluesky") + query))
    assert "ClusterExec" not in embedded


def test_an_insert_writes_on_the_cluster_and_commits_once(minio, cluster_two, duck_bluesky):
    """INSERT ... SELECT on a cluster: the executors read and write the files, this
    session commits them as one version holding every document."""
    location = f"s3://data/tables/insert_{free_port()}"
    table = BLUESKY + f"CREATE EXTERNAL TABLE copy STORED AS TESSERA LOCATION '{location}';\n"
    insert = "INSERT INTO copy SELECT j FROM bluesky WHERE j->>'kind' = 'commit';\n"
    plan = "\n".join(str(r) for r in rows(minio, cluster_two.url, table + "EXPLAIN " + insert))
    assert plan.index("CommitSink") < plan.index("ClusterExec") < plan.index("WriteFilesExec"), plan
    script = table + insert + "SELECT count(*), count(DISTINCT j->>'did') FROM copy;"
    out = tessera(minio, cluster_two.url, script)
    assert out.returncode == 0, out.stderr
    # One JSON array per statement that returns rows: the INSERT's count, then the check.
    inserted, counted = (json.loads(line) for line in out.stdout.splitlines() if line.strip())
    expected = duck_bluesky.execute(
        "SELECT count(*), count(DISTINCT j->>'did') FROM bluesky WHERE j->>'kind' = 'commit'"
    ).fetchone()
    assert expected[0] > 0
    assert list(inserted[0].values()) == [expected[0]]
    assert list(counted[0].values()) == list(expected)


def test_an_absent_cluster_is_one_sentence(minio):
    out = tessera(minio, f"df://127.0.0.1:{free_port()}", BLUESKY + "SELECT count(*) FROM bluesky")
    assert out.returncode != 0
    errors = [line for line in out.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "the cluster at http://127.0.0.1:" in errors[0], out.stderr


def test_a_bad_cluster_setting_is_refused(minio):
    out = tessera(minio, "127.0.0.1", BLUESKY + "SELECT count(*) FROM bluesky")
    assert out.returncode != 0 and "tessera.cluster must be df://HOST:PORT" in out.stderr, out.stderr


def test_losing_an_executor_mid_query(minio):
    """An executor killed while the query runs: exact rows (its tasks ran again on the
    other) or one sentence, within the time limit."""
    sql = TPCH + queries("tessera", TPCH_SF)[8]  # Q9: six-way join, the longest here.
    expected = normalize(rows(minio, None, sql))
    with Cluster(tessera_binary(), tessera_env(minio), 2) as cluster:
        placement = ["--cluster", cluster.url]
        query = subprocess.Popen(
            [tessera_binary(), "--threads", THREADS, *placement, "sql", "--format", "json", sql],
            env=tessera_env(minio),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)
        victim = cluster.executor_procs[0]
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        stdout, stderr = query.communicate(timeout=QUERY_S_MAX)
    if query.returncode == 0:
        assert same_answer(normalize(json.loads(stdout)), expected)
    else:
        errors = [line for line in stderr.splitlines() if line.startswith("Error")]
        assert len(errors) == 1 and "the cluster at" in errors[0], stderr


# Malformed lines put into every object of s3://data/broken/: a cut-off document, text
# that is not JSON, and an unclosed string.
MALFORMED = [b'{"kind": "commit", "did": ', b"not json at all", b'{"kind": "unclosed']
BROKEN = "CREATE EXTERNAL TABLE broken STORED AS NDJSON LOCATION 's3://data/broken/*.json';\n"
SKIPPING = "SELECT j->>'kind' AS kind, count(*) AS n FROM broken GROUP BY 1 ORDER BY 1"


@pytest.fixture(scope="module")
def broken(minio, data_dir) -> int:
    """s3://data/broken/: the JSONBench objects with MALFORMED lines spread through each;
    the number of lines put in."""
    put = 0
    for piece in sorted((data_dir / "bluesky").glob("*.json")):
        lines = piece.read_bytes().splitlines()
        for i, bad in enumerate(MALFORMED):
            lines.insert((i + 1) * len(lines) // (len(MALFORMED) + 1), bad)
            put += 1
        target = data_dir / f"broken-{piece.name}"
        target.write_bytes(b"\n".join(lines) + b"\n")
        minio.put("data", f"broken/{piece.name}", target)
    return put


def skip_report(minio, cluster: str | None) -> tuple[list, list[str]]:
    """The rows of SKIPPING with lines skipped, and the warning that reports them."""
    placement = ["--cluster", cluster] if cluster else []
    out = subprocess.run(
        [tessera_binary(), "--threads", THREADS, "--on-error", "skip", *placement, "sql", "--format", "json",
         BROKEN + SKIPPING],
        env=tessera_env(minio),
        capture_output=True,
        text=True,
        timeout=QUERY_S_MAX,
    )
    assert out.returncode == 0, out.stderr
    warning = out.stderr[out.stderr.index("warning: skipped"):].splitlines() if "warning: skipped" in out.stderr else []
    return json.loads(out.stdout), warning


def test_skipped_lines_are_reported_as_embedded(minio, broken, cluster):
    """Lines skipped on the executors reach the client's report: every one counted, and
    the same places as embedded, beside the same rows."""
    got, warning = skip_report(minio, cluster)
    assert warning and warning[0] == f"warning: skipped {broken} malformed lines", warning
    # One place per skipped line (fewer than the samples kept), each naming its object.
    places = warning[1:]
    assert len(places) == broken and all(p.strip().startswith("s3://data/broken/") for p in places), warning
    assert (got, warning) == skip_report(minio, None)


def skipping_ingest(minio, cluster: str | None) -> tuple[dict, list]:
    """An ingest of s3://data/broken/ that skips lines, embedded or on `cluster`: its
    report, and the records of its reject file, read back as NDJSON."""
    location = f"s3://data/tables/skipping_{free_port()}"
    placement = ["--cluster", cluster] if cluster else []
    out = subprocess.run(
        [tessera_binary(), "--threads", THREADS, "--on-error", "skip", *placement, "ingest",
         "s3://data/broken/*.json", "--table", location, "--report", "json", "--quiet"],
        env=tessera_env(minio),
        capture_output=True,
        text=True,
        timeout=QUERY_S_MAX,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["reject_file"], report
    records = rows(minio, None, f"SELECT j FROM '{report['reject_file']}'")
    left = minio.keys("data", location.removeprefix("s3://data/") + "/_rejects/parts/")
    assert left == [], f"reject parts left behind: {left}"
    documents = (r["j"] if isinstance(r["j"], dict) else json.loads(r["j"]) for r in records)
    return report, sorted(json.dumps(d, sort_keys=True) for d in documents)


def test_a_write_that_skips_lines_keeps_them_all(minio, broken, cluster):
    """An ingest that skips lines keeps every one, in full, in its one reject file, as
    embedded does, whichever executor read it."""
    report, records = skipping_ingest(minio, cluster)
    assert report["rejected"] == broken and len(records) == broken, (report, records)
    texts = sorted(json.loads(r)["text"].encode() for r in records)
    assert texts == sorted(MALFORMED * (broken // len(MALFORMED))), texts
    embedded_report, embedded_records = skipping_ingest(minio, None)
    assert records == embedded_records
    assert report["documents"] == embedded_report["documents"] > 0, (report, embedded_report)


def test_an_insert_that_skips_lines_reports_them_and_leaves_no_parts(minio, broken, cluster_two):
    """INSERT ... SELECT that skips lines on a cluster: the lines are counted as embedded,
    and the executors' reject parts (no reject file without an ingest) are deleted."""
    location = f"s3://data/tables/insert_skipping_{free_port()}"
    script = (BROKEN + f"CREATE EXTERNAL TABLE copy STORED AS TESSERA LOCATION '{location}';\n"
              "INSERT INTO copy SELECT j FROM broken;")
    out = subprocess.run(
        [tessera_binary(), "--threads", THREADS, "--on-error", "skip", "--cluster", cluster_two.url, "sql",
         "--format", "json", script],
        env=tessera_env(minio),
        capture_output=True,
        text=True,
        timeout=QUERY_S_MAX,
    )
    assert out.returncode == 0, out.stderr
    assert f"warning: skipped {broken} malformed lines" in out.stderr, out.stderr
    prefix = location.removeprefix("s3://data/")
    assert any("/data/" in key for key in minio.keys("data", prefix + "/")), "nothing was written"
    assert minio.keys("data", prefix + "/_rejects/") == []


def test_a_distributed_ingest_commits_one_version(minio, cluster_two, duck_bluesky):
    """`tessera ingest --cluster`: every object shredded on the executors, one version."""
    location = f"s3://data/tables/ingest_{free_port()}"
    out = subprocess.run(
        [tessera_binary(), "--threads", THREADS, "--cluster", cluster_two.url, "ingest",
         "s3://data/bluesky/*.json", "--table", location, "--report", "json", "--quiet"],
        env=tessera_env(minio),
        capture_output=True,
        text=True,
        timeout=QUERY_S_MAX,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    (documents,) = duck_bluesky.execute("SELECT count(*) FROM bluesky").fetchone()
    assert report["documents"] == documents and report["version"] == 1, report
    # Files written by more than one task: the objects were shared out.
    assert report["files"] > 1, report
    query = INGESTED.replace("{name}", "t").replace("s3://data/tables/t", location)
    check = rows(minio, None, query + "SELECT count(*) AS n FROM t")
    assert check == [{"n": documents}]


def test_explain_analyze_reports_the_job(minio, tables, cluster_two):
    """EXPLAIN ANALYZE on a cluster: the job's stages, their tasks per executor, and the
    object-store bytes, requests and price summed over the executors' tasks."""
    query = "EXPLAIN ANALYZE SELECT j->>'kind', count(*) FROM bluesky GROUP BY 1"
    plan = "\n".join(str(r) for r in rows(minio, cluster_two.url, table("ingested", "bluesky") + query))
    line = next(l for l in plan.splitlines() if "ClusterExec" in l)
    assert "job=" in line and "tasks" in line, line

    def metric(name: str) -> int:
        match = re.search(rf"\b{name}=(\d+)", line)
        assert match, f"{name} missing: {line}"
        return int(match.group(1))

    assert metric("stages") >= 2 and metric("tasks") > metric("stages"), line
    stages = re.findall(r"\b\d+: (\d+) tasks \(([^)]*)\)", line)
    assert len(stages) == metric("stages"), f"a stage without its executors: {line}"
    ran = {}
    for tasks, spread in stages:
        counts = dict(part.rsplit(" ", 1) for part in spread.split(", "))
        assert sum(int(n) for n in counts.values()) == int(tasks), line
        for executor, n in counts.items():
            ran[executor] = ran.get(executor, 0) + int(n)
    assert set(ran) == {f"127.0.0.1:{port}" for port in cluster_two.flight_ports}, line
    assert metric("bytes_scanned") > 0 and metric("requests") > 0, line
    assert metric("request_cost_nanodollars") > 0, line


# Joins that keep build rows no probe row matched, over a small build side and a probe
# side cut into OUTER_OBJECTS objects, each holding keys the others lack.
OUTER_KEYS = 100
OUTER_OBJECTS = 4
OUTER = (
    "CREATE EXTERNAL TABLE build STORED AS NDJSON LOCATION 's3://data/outer/build.json';\n"
    "CREATE EXTERNAL TABLE probe STORED AS NDJSON LOCATION 's3://data/outer/probe/*.json';\n"
)
OUTER_JOINS = {
    "not in": "SELECT count(*) AS n FROM build WHERE CAST(j->>'k' AS BIGINT) NOT IN "
    "(SELECT CAST(j->>'k' AS BIGINT) FROM probe)",
    "not exists": "SELECT count(*) AS n FROM build b WHERE NOT EXISTS "
    "(SELECT 1 FROM probe p WHERE p.j->>'k' = b.j->>'k')",
    "left join": "SELECT count(*) AS n, count(p.j) AS matched FROM build b "
    "LEFT JOIN probe p ON p.j->>'k' = b.j->>'k'",
    "full join": "SELECT count(*) AS n, count(b.j) AS built, count(p.j) AS probed FROM build b "
    "FULL JOIN probe p ON p.j->>'k' = b.j->>'k'",
}


@pytest.fixture(scope="module")
def outer(minio, data_dir) -> dict:
    """s3://data/outer/: OUTER_KEYS build keys, the first 80% of them probed, and probe
    keys the build side lacks, each key in one probe object only; the rows each query of
    OUTER_JOINS must give."""
    build = data_dir / "outer-build.json"
    build.write_text("".join(json.dumps({"k": k}) + "\n" for k in range(OUTER_KEYS)))
    minio.put("data", "outer/build.json", build)
    matched, unbuilt = OUTER_KEYS * 8 // 10, 10
    probed = [*range(matched), *range(OUTER_KEYS, OUTER_KEYS + unbuilt)]
    for i in range(OUTER_OBJECTS):
        piece = data_dir / f"outer-probe-{i}.json"
        piece.write_text("".join(json.dumps({"k": k}) + "\n" for k in probed if k % OUTER_OBJECTS == i))
        minio.put("data", f"outer/probe/{piece.name}", piece)
    missed = OUTER_KEYS - matched
    return {
        "not in": [{"n": missed}],
        "not exists": [{"n": missed}],
        "left join": [{"n": OUTER_KEYS, "matched": matched}],
        "full join": [{"n": OUTER_KEYS + unbuilt, "built": OUTER_KEYS, "probed": len(probed)}],
    }


@pytest.mark.parametrize("join", OUTER_JOINS)
def test_unmatched_build_rows_are_kept_once(minio, outer, cluster, join):
    """A join that keeps unmatched build rows gives one answer wherever it runs: a build
    row counts as unmatched only when no probe object matched it, not per task."""
    got = rows(minio, cluster, OUTER + OUTER_JOINS[join])
    assert got == outer[join], f"{join}: {got} != {outer[join]}"


def test_a_not_in_join_runs_here_over_sent_inputs(minio, outer, cluster_two):
    """Ballista shares a null-aware anti join's probe side out whatever the plan says, so
    the join stays in this session and each of its inputs goes to the cluster."""
    script = OUTER + "EXPLAIN " + OUTER_JOINS["not in"]
    plan = "\n".join(str(r) for r in rows(minio, cluster_two.url, script))
    physical = plan[plan.index("physical_plan"):]
    assert physical.count("ClusterExec") == 2, plan
    assert physical.index("null_aware") < physical.index("ClusterExec"), plan
