"""The PostgreSQL wire server with real clients: psycopg (extended protocol, server-side
parameters, binary results, cancel) and psql (simple protocol, `\\dt`, `\\d`), against
DuckDB's answers, with authentication, TLS, session limits and shutdown."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest
from conftest import PASSWORD, USER, start_server

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from common.canon import canon_rows, same_rows  # noqa: E402
from support import duckdb_bluesky, jsonbench_queries  # noqa: E402

# A query that runs far longer than any test waits (a sum over 10^12 generated rows):
# tests that need a running query cancel, kill or shut it down.
LONG_QUERY = "SELECT sum(value % 7) AS s FROM range(1000000000000)"
# Generous bounds against hangs only; no test measures time.
HANG_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def server():
    """A server of the PostgreSQL wire protocol alone, so that these tests do not
    depend on the Flight SQL server (tests that stop a server start their own)."""
    server = start_server(flight_sql=False)
    yield server
    assert server.stop() == 0, server.process.stderr.read()


def connect(server, **options) -> psycopg.Connection:
    settings = dict(
        host="127.0.0.1",
        port=server.postgres_port,
        user=USER,
        password=PASSWORD,
        dbname="tessera",
        autocommit=True,
        sslmode="disable",
        connect_timeout=30,
    )
    settings.update(options)
    return psycopg.connect(**settings)


def psql(server, *commands: str, password: str = PASSWORD) -> subprocess.CompletedProcess:
    args = ["psql", "-X", "-h", "127.0.0.1", "-p", str(server.postgres_port), "-U", USER, "-d", "tessera"]
    for command in commands:
        args += ["-c", command]
    env = {**os.environ, "PGPASSWORD": password, "PGSSLMODE": "disable", "PGCONNECT_TIMEOUT": "30"}
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=HANG_TIMEOUT_S)


def external_table(location: Path, stored_as: str) -> str:
    return f"CREATE EXTERNAL TABLE bluesky STORED AS {stored_as} LOCATION '{location}'"


@pytest.fixture(scope="module")
def duck(bluesky_file):
    return duckdb_bluesky(bluesky_file)


@pytest.fixture(params=["raw", "table"])
def bluesky(request, server, bluesky_file):
    """A connection whose session reads the Bluesky documents as `bluesky`: the raw
    NDJSON in place, or the ingested table."""
    location, stored_as = (
        (bluesky_file, "NDJSON") if request.param == "raw" else (request.getfixturevalue("bluesky_table"), "TESSERA")
    )
    with connect(server) as conn:
        conn.execute(external_table(location, stored_as))
        yield conn


JSONBENCH = list(zip(jsonbench_queries("duckdb"), jsonbench_queries("tessera")))


@pytest.mark.parametrize("duck_sql,tessera_sql", JSONBENCH, ids=[f"q{i + 1}" for i in range(len(JSONBENCH))])
def test_jsonbench_rows_are_duckdbs(duck, bluesky, duck_sql, tessera_sql):
    expected = canon_rows(duck.execute(duck_sql).fetchall())
    got = canon_rows(bluesky.execute(tessera_sql).fetchall())
    assert expected, "the query selects nothing, so it tests nothing"
    assert same_rows(got, expected)


def test_jsonbench_over_simple_protocol(duck, bluesky):
    """ClientCursor sends the query text in a simple Query message."""
    duck_sql, tessera_sql = JSONBENCH[1]
    cursor = psycopg.ClientCursor(bluesky)
    cursor.execute(tessera_sql)
    assert same_rows(canon_rows(cursor.fetchall()), canon_rows(duck.execute(duck_sql).fetchall()))


def test_server_side_parameters(duck, bluesky):
    sql = "SELECT count(*) FROM bluesky WHERE j->>'$.kind' = %s AND CAST(j->>'$.time_us' AS BIGINT) > %s"
    expected = duck.execute(sql.replace("%s", "?"), ["commit", 0]).fetchall()
    for _ in range(3):  # psycopg prepares a statement once and executes it again
        assert bluesky.execute(sql, ("commit", 0), prepare=True).fetchall() == expected
    assert expected[0][0] > 0
    assert bluesky.execute("SELECT %s::BIGINT + 1 AS n, %s AS t", (41, "text"), prepare=True).fetchone() == (42, "text")


def test_describe_before_execute(server):
    with connect(server) as conn:
        cursor = conn.cursor()
        cursor.execute("SELECT 1::INT AS a, 'x' AS b, 2.5::DOUBLE AS c WHERE 1 = 0", prepare=True)
        assert [c.name for c in cursor.description] == ["a", "b", "c"]
        assert cursor.fetchall() == []


def test_binary_results(server):
    sql = (
        "SELECT 7::BIGINT AS i, 2.5::DOUBLE AS f, 'héllo' AS t, true AS b, "
        "CAST('2024-05-06 07:08:09' AS TIMESTAMP) AS ts, NULL::BIGINT AS n, "
        "arrow_cast(-3, 'Int8') AS i8, arrow_cast(1.5, 'Float16') AS f16, make_array(1, 2) AS l"
    )
    with connect(server) as conn:
        text = conn.cursor().execute(sql).fetchone()
        binary = conn.cursor(binary=True).execute(sql).fetchone()
    assert binary == text
    assert binary[:4] == (7, 2.5, "héllo", True) and binary[5] is None
    assert binary[6:] == (-3, 1.5, [1, 2])


def test_psql_queries_and_describe(server, bluesky_file):
    out = psql(server, "SELECT 1 + 1 AS two")
    assert out.returncode == 0, out.stderr
    assert " two \n" in out.stdout and "   2\n" in out.stdout
    out = psql(server, external_table(bluesky_file, "NDJSON"), "\\dt", "\\d bluesky")
    assert out.returncode == 0, out.stderr
    listing, description = out.stdout.split('Table "public.bluesky"')
    assert "bluesky" in listing and "table" in listing
    assert " j " in description


def test_catalog_functions(server):
    with connect(server) as conn:
        version, schema, database = conn.execute("SELECT version(), current_schema(), current_database()").fetchone()
        assert version.startswith("PostgreSQL ") and "Tessera" in version
        assert schema == "public" and database
        conn.execute("CREATE TEMPORARY TABLE listed AS SELECT 1 AS a")
        names = [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables")]
        assert "listed" in names


def test_driver_settings_and_parameters(server):
    """What JDBC, DBeaver and Metabase send when they connect."""
    with connect(server) as conn:
        conn.execute("SET extra_float_digits = 3")
        conn.execute("SET application_name = 'PostgreSQL JDBC Driver'")
        assert conn.execute("SHOW search_path").fetchone() == ("public",)
        assert conn.execute("SHOW TRANSACTION ISOLATION LEVEL", prepare=True).fetchone() == ("read committed",)
        assert conn.execute("SHOW server_version").fetchone() == ("16.6",)
        assert conn.info.server_version == 160006


def test_prepared_statements_are_evicted_and_bounded(server):
    with connect(server) as conn:
        conn.prepared_max = 2  # psycopg deallocates the least recently used ones
        for i in range(5):
            assert conn.execute(f"SELECT {i} AS v", prepare=True).fetchone() == (i,)
        conn.execute("DEALLOCATE ALL")
    with connect(server) as conn:
        conn.prepared_max = 5000
        for i in range(1000):
            conn.execute(f"SELECT {i} AS v", prepare=True)
        with pytest.raises(psycopg.errors.ConfigurationLimitExceeded, match="at most 1000 named prepared statements"):
            conn.execute("SELECT 1000 AS v", prepare=True)
        assert conn.execute("SELECT 1 AS v").fetchone() == (1,)


@pytest.mark.parametrize("user,password", [(USER, "wrong-password"), ("nobody", PASSWORD)])
def test_wrong_credentials_are_refused(server, user, password):
    with pytest.raises(psycopg.OperationalError, match="(?i)password authentication failed"):
        connect(server, user=user, password=password)
    out = psql(server, "SELECT 1", password=password) if user == USER else None
    if out is not None:
        assert out.returncode != 0
        assert "password authentication failed" in out.stderr.lower()


def test_errors_have_sqlstate_and_one_sentence(server):
    with connect(server) as conn:
        with pytest.raises(psycopg.errors.SyntaxError):
            conn.execute("SELEC 1")
        with pytest.raises(psycopg.errors.UndefinedTable) as missing:
            conn.execute("SELECT * FROM no_such_table")
        assert "no_such_table" in str(missing.value) and "\n" not in missing.value.diag.message_primary
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_transactions_of_drivers(server):
    """psycopg without autocommit opens a transaction; a failure aborts it until rollback."""
    with connect(server, autocommit=False) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        conn.commit()
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("SELECT * FROM no_such_table")
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            conn.execute("SELECT 1")
        conn.rollback()
        assert conn.execute("SELECT 2").fetchone() == (2,)


def test_skipped_lines_are_reported(server, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"a": 1}\n{"a": \n{"a": 3}\n')
    notices = []
    with connect(server) as conn:
        conn.add_notice_handler(lambda d: notices.append((d.severity, d.message_primary)))
        conn.execute("SET tessera.on_error = 'skip'")
        conn.execute(f"CREATE EXTERNAL TABLE docs STORED AS NDJSON LOCATION '{path}'")
        assert conn.execute("SELECT count(*) FROM docs").fetchone() == (2,)
    assert any(severity == "WARNING" and "skipped 1 malformed line" in message for severity, message in notices), notices


def test_concurrent_sessions_keep_their_own_state(server):
    sessions = 16
    barrier = threading.Barrier(sessions)
    answers, failures = {}, []

    def session(i: int):
        try:
            with connect(server) as conn:
                conn.execute(f"SET datafusion.execution.batch_size = {1000 + i}")
                conn.execute(f"CREATE TEMPORARY TABLE mine AS SELECT {i} AS v")
                barrier.wait(timeout=HANG_TIMEOUT_S)
                value = conn.execute("SELECT v FROM mine").fetchone()[0]
                setting = conn.execute("SHOW datafusion.execution.batch_size").fetchone()[1]
                answers[i] = (value, setting)
        except Exception as e:  # reported below, with the session it happened in
            failures.append((i, repr(e)))

    threads = [threading.Thread(target=session, args=(i,)) for i in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG_TIMEOUT_S)
    assert not failures
    assert answers == {i: (i, str(1000 + i)) for i in range(sessions)}


def run_long_query(conn) -> dict:
    """Starts LONG_QUERY on `conn` in a thread; the dict gets its exception."""
    outcome = {}

    def run():
        try:
            conn.execute(LONG_QUERY)
            outcome["error"] = None
        except Exception as e:  # the test inspects it
            outcome["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    outcome["thread"] = thread
    return outcome


def test_cancel_request_cancels_the_running_query(server):
    with connect(server) as conn:
        outcome = run_long_query(conn)
        thread = outcome["thread"]
        # A cancel that arrives before the query started is ignored (as PostgreSQL
        # does), so it is sent again until the query ends.
        for _ in range(HANG_TIMEOUT_S):
            conn.cancel()
            thread.join(1)
            if not thread.is_alive():
                break
        assert not thread.is_alive(), "the query was not cancelled"
        assert isinstance(outcome["error"], psycopg.errors.QueryCanceled), outcome["error"]
        assert conn.execute("SELECT 1").fetchone() == (1,)


KILLED_CLIENT = f"""
import psycopg, sys
conn = psycopg.connect(host="127.0.0.1", port={{port}}, user="{USER}", password="{PASSWORD}",
                       dbname="tessera", autocommit=True, sslmode="disable")
print("connected", flush=True)
conn.execute("{LONG_QUERY}")
"""


def test_session_limit_and_killed_client(bluesky_file):
    server = start_server("--sessions-max", "2", flight_sql=False)
    try:
        first = connect(server)
        second = connect(server)
        with pytest.raises(psycopg.OperationalError, match="too many sessions: the server allows 2 at once"):
            connect(server)
        second.close()
        client = subprocess.Popen(
            [sys.executable, "-c", KILLED_CLIENT.replace("{port}", str(server.postgres_port))],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert client.stdout.readline().strip() == "connected"
        with pytest.raises(psycopg.OperationalError, match="too many sessions"):
            connect(server)
        # The killed client's query never ends by itself: its slot comes back only if
        # the server notices the hang-up and drops the query.
        threading.Event().wait(2)  # lets the client send its query
        client.send_signal(signal.SIGKILL)
        client.wait(HANG_TIMEOUT_S)
        third = None
        for _ in range(HANG_TIMEOUT_S):
            try:
                third = connect(server)
                break
            except psycopg.OperationalError as e:
                assert "too many sessions" in str(e)
                threading.Event().wait(1)
        assert third is not None, "the killed client's session was not freed"
        assert third.execute("SELECT 1").fetchone() == (1,)
        third.close()
        first.close()
    finally:
        assert server.stop() == 0


def test_shutdown_cancels_running_query_after_grace():
    server = start_server("--shutdown-grace-secs", "2", flight_sql=False)
    try:
        conn = connect(server)
        outcome = run_long_query(conn)
        threading.Event().wait(1)  # lets the query start
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(HANG_TIMEOUT_S) == 0, server.process.stderr.read()
        outcome["thread"].join(HANG_TIMEOUT_S)
        assert isinstance(outcome["error"], psycopg.OperationalError), outcome["error"]
        assert "shutting down" in str(outcome["error"])
    finally:
        server.process.kill()


def test_shutdown_lets_running_query_finish():
    server = start_server("--shutdown-grace-secs", "600", flight_sql=False)
    try:
        conn = connect(server)
        sql = "SELECT sum(value % 7) AS s FROM range(20000000)"
        result = {}
        def run():
            try:
                result["rows"] = conn.execute(sql).fetchall()
            except Exception as e:  # the assertion below shows it
                result["error"] = e

        thread = threading.Thread(target=run)
        thread.start()
        threading.Event().wait(0.5)  # lets the query start
        server.process.send_signal(signal.SIGTERM)
        thread.join(HANG_TIMEOUT_S)
        assert "error" not in result, result
        assert result.get("rows") == [(sum(v % 7 for v in range(7)) * (20000000 // 7) + sum(range(20000000 % 7)),)]
        assert server.process.wait(HANG_TIMEOUT_S) == 0, server.process.stderr.read()
    finally:
        server.process.kill()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls(certificate):
    cert, key = certificate
    server = start_server("--tls-cert", str(cert), "--tls-key", str(key), flight_sql=False)
    try:
        with connect(server, sslmode="require") as conn:
            assert conn.pgconn.ssl_in_use
            assert conn.execute("SELECT 40 + 2").fetchone() == (42,)
    finally:
        assert server.stop() == 0


def test_tls_refused_cleanly_without_a_certificate(server):
    with pytest.raises(psycopg.OperationalError, match="(?i)server does not support SSL"):
        connect(server, sslmode="require")
    with connect(server, sslmode="prefer") as conn:
        assert not conn.pgconn.ssl_in_use
