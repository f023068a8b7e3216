"""Arrow Flight SQL front end, through the real ADBC Flight SQL driver (and pyarrow's
Flight client where ADBC does not reach: app_metadata, CancelFlightInfo, raw tokens).

Run: TESSERA_BIN=target/debug/tessera python -m pytest -q tests/frontends/test_flight_sql.py
"""

import datetime
import os
import signal
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import pyarrow.flight as flight
import pytest

from conftest import PASSWORD, USER, start_server

import support

# A stream far longer than any test waits for: it is killed, cancelled or shut down.
ENDLESS = "SELECT value FROM range(1000000000000)"
# How long a freed session slot may take to be seen free (the server notices the
# killed client's connection closing); polled, not a threshold on speed.
SLOT_FREED_WAIT_S = 60


def connect(server, password: str = PASSWORD, uri: str | None = None, **db_kwargs):
    uri = uri or f"grpc://127.0.0.1:{server.flight_sql_port}"
    return flight_sql.connect(uri, db_kwargs={"username": USER, "password": password, **db_kwargs})


def rows(conn, sql: str, parameters=None) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(sql, parameters)
        return [tuple(r.values()) for r in cur.fetch_arrow_table().to_pylist()]


def normalized(values: list[tuple]) -> list[tuple]:
    """Rows comparable across engines: timestamps as naive UTC, decimals as ints."""

    def value(v):
        if isinstance(v, datetime.datetime) and v.tzinfo is not None:
            return v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        if isinstance(v, Decimal) and v == int(v):
            return int(v)
        return v

    return sorted((tuple(value(v) for v in row) for row in values), key=repr)


@pytest.fixture(scope="module")
def server():
    server = start_server(postgres=False)
    yield server
    assert server.stop() == 0, server.process.stderr.read()


@pytest.fixture(scope="module")
def duckdb_bluesky(bluesky_file):
    return support.duckdb_bluesky(bluesky_file)


def bluesky_location(source: str, bluesky_file: Path, bluesky_table: Path) -> str:
    if source == "raw":
        return f"CREATE EXTERNAL TABLE bluesky STORED AS NDJSON LOCATION '{bluesky_file}'"
    return f"CREATE EXTERNAL TABLE bluesky STORED AS TESSERA LOCATION '{bluesky_table}'"


@pytest.mark.parametrize("source", ["raw", "table"])
@pytest.mark.parametrize("number", range(1, 6))
def test_jsonbench_matches_duckdb(server, duckdb_bluesky, bluesky_file, bluesky_table, source, number):
    tessera_sql = support.jsonbench_queries("tessera")[number - 1].rstrip(";")
    duckdb_sql = support.jsonbench_queries("duckdb")[number - 1]
    with connect(server) as conn:
        rows(conn, bluesky_location(source, bluesky_file, bluesky_table))
        got = rows(conn, tessera_sql)
    expected = duckdb_bluesky.execute(duckdb_sql).fetchall()
    assert expected, "the reference answers something"
    assert normalized(got) == normalized(expected)


def test_statements_then_queries(server, tmp_path):
    path = tmp_path / "mixed.json"
    path.write_text('{"a": 1}\n{"a": 2\n{"a": 3}\n')
    create = f"CREATE EXTERNAL TABLE mixed STORED AS NDJSON LOCATION '{path}'"
    with connect(server) as conn:
        rows(conn, create)
        with pytest.raises(adbc_driver_manager.Error) as failed:
            rows(conn, "SELECT sum(CAST(j->>'a' AS BIGINT)) FROM mixed")
        assert "line 2" in str(failed.value), failed.value
        rows(conn, "SET tessera.on_error = 'skip'")
        assert rows(conn, "SELECT sum(CAST(j->>'a' AS BIGINT)) FROM mixed") == [(4,)]


def test_prepared_statements_with_parameters(server, bluesky_file, duckdb_bluesky):
    count = "SELECT count(*) AS n FROM bluesky WHERE j->>'$.kind' = ? AND CAST(j->>'$.time_us' AS BIGINT) > ?"
    with connect(server) as conn:
        rows(conn, f"CREATE EXTERNAL TABLE bluesky STORED AS NDJSON LOCATION '{bluesky_file}'")
        for kind in ["commit", "identity"]:
            expected = duckdb_bluesky.execute(
                "SELECT count(*) FROM bluesky WHERE j->>'$.kind' = ? AND CAST(j->>'$.time_us' AS BIGINT) > ?",
                [kind, 0],
            ).fetchall()
            assert rows(conn, count, (kind, 0)) == expected
        rows(conn, "CREATE TEMPORARY TABLE pairs (x BIGINT, s VARCHAR)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO pairs VALUES (?, ?)", [(1, "a"), (2, "b"), (3, "c")])
            assert cur.rowcount == 3
        assert rows(conn, "SELECT s FROM pairs WHERE x >= ? ORDER BY x", (2,)) == [("b",), ("c",)]


def test_metadata(server):
    with connect(server) as conn:
        rows(conn, "CREATE TEMPORARY TABLE described (id BIGINT, name VARCHAR)")
        schema = conn.adbc_get_table_schema("described")
        assert schema.names == ["id", "name"]
        objects = conn.adbc_get_objects(depth="all", table_name_filter="described").read_all().to_pylist()
        tables = [
            table
            for catalog in objects
            for db_schema in catalog["catalog_db_schemas"]
            for table in db_schema["db_schema_tables"] or []
        ]
        assert [t["table_name"] for t in tables] == ["described"]
        assert [c["column_name"] for c in tables[0]["table_columns"]] == ["id", "name"]
        info = conn.adbc_get_info()
        assert info["vendor_name"] == "Tessera"
        assert info["vendor_version"]
        assert "BASE TABLE" in conn.adbc_get_table_types()


def test_wrong_password_is_rejected(server):
    with pytest.raises(adbc_driver_manager.Error) as failed:
        connect(server, password="not-the-password")
    assert "wrong user name or password" in str(failed.value)
    assert "not-the-password" not in str(failed.value)


def raw_client(server) -> tuple[flight.FlightClient, flight.FlightCallOptions]:
    client = flight.FlightClient(f"grpc://127.0.0.1:{server.flight_sql_port}")
    token = client.authenticate_basic_token(USER, PASSWORD)
    return client, flight.FlightCallOptions(headers=[token])


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def length_delimited(field: int, data: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(data)) + data


def statement_query(sql: str) -> flight.FlightDescriptor:
    """A Flight SQL CommandStatementQuery in a protobuf Any."""
    type_url = b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"
    command = length_delimited(1, type_url) + length_delimited(2, length_delimited(1, sql.encode()))
    return flight.FlightDescriptor.for_command(command)


def test_calls_without_a_valid_token_are_rejected(server):
    client = flight.FlightClient(f"grpc://127.0.0.1:{server.flight_sql_port}")
    with pytest.raises(flight.FlightUnauthenticatedError, match="log in first"):
        client.get_flight_info(statement_query("SELECT 1"))
    forged = flight.FlightCallOptions(headers=[(b"authorization", b"Bearer forged")])
    with pytest.raises(flight.FlightUnauthenticatedError, match="unknown or expired session token"):
        client.get_flight_info(statement_query("SELECT 1"), forged)


def test_skipped_lines_are_reported_in_app_metadata(server, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"a": 1}\nnot json\n{"a": 3}\n')
    client, options = raw_client(server)
    for sql in ["SET tessera.on_error = 'skip'", f"CREATE EXTERNAL TABLE broken STORED AS NDJSON LOCATION '{path}'"]:
        info = client.get_flight_info(statement_query(sql), options)
        client.do_get(info.endpoints[0].ticket, options).read_all()
    info = client.get_flight_info(statement_query("SELECT count(*) AS n FROM broken"), options)
    reader = client.do_get(info.endpoints[0].ticket, options)
    chunks = []
    while True:
        try:
            chunks.append(reader.read_chunk())
        except StopIteration:
            break
    assert [c.data.to_pylist() for c in chunks if c.data is not None] == [[{"n": 2}]]
    report = chunks[-1].app_metadata
    assert report is not None and b"skipped 1 malformed line" in report.to_pybytes()


def test_cancel_flight_info_stops_a_running_query(server):
    client, options = raw_client(server)
    info = client.get_flight_info(statement_query(ENDLESS), options)
    reader = client.do_get(info.endpoints[0].ticket, options)
    assert reader.read_chunk().data.num_rows > 0
    request = length_delimited(1, info.serialize())
    list(client.do_action(flight.Action("CancelFlightInfo", request), options))
    with pytest.raises(flight.FlightCancelledError, match="the query was cancelled"):
        while True:
            reader.read_chunk()


def test_concurrent_sessions_keep_their_own_state(server):
    sessions = 16
    barrier = threading.Barrier(sessions)
    answers: dict[int, object] = {}

    def session(i: int) -> None:
        try:
            with connect(server) as conn:
                rows(conn, f"SET datafusion.execution.batch_size = {1000 + i}")
                rows(conn, f"CREATE TEMPORARY TABLE mine AS SELECT {i} AS id")
                barrier.wait()  # every session is open and set up at once
                setting = rows(conn, "SHOW datafusion.execution.batch_size")[0][1]
                answers[i] = (setting, rows(conn, "SELECT id FROM mine"))
        except Exception as e:  # reported by the assertion below
            answers[i] = e
            barrier.abort()

    threads = [threading.Thread(target=session, args=(i,)) for i in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == {i: (str(1000 + i), [(i,)]) for i in range(sessions)}


STREAMING_CLIENT = """
import sys, time
import adbc_driver_flightsql.dbapi as flight_sql
conn = flight_sql.connect(sys.argv[1], db_kwargs={"username": sys.argv[2], "password": sys.argv[3]})
cur = conn.cursor()
cur.execute(sys.argv[4])
reader = cur.fetch_record_batch()
reader.read_next_batch()
print("streaming", flush=True)
time.sleep(3600)
"""


def connect_when_free(server):
    """A connection once a slot is free (the server frees it asynchronously)."""
    deadline = time.monotonic() + SLOT_FREED_WAIT_S
    while True:
        try:
            return connect(server)
        except adbc_driver_manager.Error as e:
            if "too many sessions" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_sessions_max_refuses_and_a_killed_client_frees_its_slot():
    server = start_server("--sessions-max", "2", postgres=False)
    try:
        first = connect(server)
        second = connect(server)
        with pytest.raises(adbc_driver_manager.Error) as refused:
            connect(server)
        assert "too many sessions: the server allows 2 at once" in str(refused.value)
        second.close()
        uri = f"grpc://127.0.0.1:{server.flight_sql_port}"
        client = subprocess.Popen(
            [sys.executable, "-c", STREAMING_CLIENT, uri, USER, PASSWORD, ENDLESS],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert client.stdout.readline().strip() == "streaming"
            with pytest.raises(adbc_driver_manager.Error, match="too many sessions"):
                connect(server)
        finally:
            client.send_signal(signal.SIGKILL)
            client.wait()
        third = connect_when_free(server)
        assert rows(third, "SELECT 1 AS one") == [(1,)]
        third.close()
        first.close()
    finally:
        assert server.stop() == 0, server.process.stderr.read()


def test_sigterm_while_a_query_streams_exits_cleanly():
    server = start_server("--shutdown-grace-secs", "1", postgres=False)
    conn = connect(server)
    cur = conn.cursor()
    cur.execute(ENDLESS)
    reader = cur.fetch_record_batch()
    assert reader.read_next_batch().num_rows > 0
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=60) == 0, server.process.stderr.read()
    with pytest.raises(Exception):
        while True:
            reader.read_next_batch()


def test_tls_with_a_self_signed_certificate(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    server = start_server("--tls-cert", str(cert), "--tls-key", str(key), postgres=False)
    try:
        uri = f"grpc+tls://localhost:{server.flight_sql_port}"
        roots = {"adbc.flight.sql.client_option.tls_root_certs": cert.read_text()}
        with connect(server, uri=uri, **roots) as conn:
            assert rows(conn, "SELECT 41 + 1 AS answer") == [(42,)]
        with pytest.raises(adbc_driver_manager.Error):
            # Without the server's certificate among the roots, the handshake fails.
            connect(server, uri=uri)
    finally:
        assert server.stop() == 0, server.process.stderr.read()
