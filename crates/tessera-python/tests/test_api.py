"""The package's API: relations run when fetched, statements, errors as exceptions with
the CLI's sentences, and skipped lines reported as warnings."""

import subprocess

import pyarrow as pa
import pytest

import tessera
from conftest import tessera_binary


def cli_error(sql: str) -> str:
    """The sentence `tessera sql` prints for a failing statement."""
    out = subprocess.run([tessera_binary(), "sql", sql], capture_output=True, text=True)
    assert out.returncode != 0
    return out.stderr.strip().removeprefix("Error: ")


def test_relation_runs_when_fetched_each_time():
    con = tessera.connect()
    con.execute("CREATE TABLE t (x BIGINT); INSERT INTO t VALUES (1), (2)")
    rel = con.sql("SELECT x FROM t ORDER BY x")
    con.execute("INSERT INTO t VALUES (3)")
    assert rel.fetchall() == [(1,), (2,), (3,)]
    con.execute("INSERT INTO t VALUES (4)")
    assert rel.arrow().column("x").to_pylist() == [1, 2, 3, 4]


def test_relation_is_an_arrow_stream():
    rel = tessera.connect().sql("SELECT 1 AS a, 'x' AS b")
    assert pa.table(rel).to_pylist() == [{"a": 1, "b": "x"}]
    assert pa.RecordBatchReader.from_stream(rel).read_all().num_rows == 1
    assert rel.columns == ["a", "b"]
    assert rel.types == ["Int64", "Utf8"]


def test_statements_run_at_once_and_return_none():
    con = tessera.connect()
    assert con.sql("CREATE TABLE t AS VALUES (1), (2), (3)") is None
    assert con.sql("SET tessera.on_error = 'skip'; SELECT count(*) FROM t").fetchall() == [(3,)]
    assert con.sql("SELECT current_setting('tessera.on_error')").fetchall() == [("skip",)]


def test_execute_runs_every_statement_and_returns_the_last_rows():
    con = tessera.connect()
    rel = con.execute("CREATE TABLE t (x BIGINT); INSERT INTO t VALUES (1), (2), (3); SELECT max(x) AS m FROM t")
    assert rel.fetchall() == [(3,)]
    assert con.execute("DROP TABLE t").fetchall() == []


def test_module_level_sql_uses_the_default_connection():
    assert tessera.sql("SELECT 40 + 2 AS answer").fetchall() == [(42,)]
    assert tessera.default_connection() is tessera.default_connection()


def test_show_prints_a_table_and_the_total(capsys):
    tessera.connect().sql("SELECT value AS n FROM generate_series(1, 100)").show(max_rows=5)
    out = capsys.readouterr().out
    assert "| n " in out and "| 5 " in out and "| 6 " not in out
    assert "(100 rows, 5 shown)" in out


def test_explain_returns_the_plans():
    text = tessera.connect().sql("SELECT count(*) FROM generate_series(1, 10)").explain()
    assert "logical plan:" in text and "physical plan:" in text
    assert "AggregateExec" in text


def test_bad_sql_raises_the_clis_sentence():
    query = "SELEC 1"
    with pytest.raises(tessera.SQLError) as error:
        tessera.connect().sql(query)
    assert isinstance(error.value, tessera.Error)
    assert str(error.value) == cli_error(query)
    assert "\n" not in str(error.value)


def test_missing_file_names_the_path(tmp_path):
    path = tmp_path / "no_such_events.json"
    query = f"SELECT count(*) FROM '{path}'"
    with pytest.raises(tessera.Error) as error:
        tessera.connect().sql(query).fetchall()
    assert str(path) in str(error.value)
    assert str(error.value) == cli_error(query)


def test_unknown_column_is_an_sql_error():
    with pytest.raises(tessera.SQLError, match="nope"):
        tessera.connect().sql("SELECT nope FROM (VALUES (1)) AS t(x)")


def test_invalid_settings_raise():
    with pytest.raises(tessera.Error, match="on_error"):
        tessera.connect(on_error="sometimes")
    with pytest.raises(tessera.Error, match="dialect"):
        tessera.connect(dialect="oracle")


def test_closed_connection_raises_but_its_relations_run():
    con = tessera.connect()
    rel = con.sql("SELECT 7")
    with con:
        pass
    with pytest.raises(tessera.Error, match="the connection is closed"):
        con.sql("SELECT 1")
    assert rel.fetchall() == [(7,)]


@pytest.fixture
def malformed_file(tmp_path):
    path = tmp_path / "events.json"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": \n{"a": 3}\n{"a" 4}\n')
    return path


def test_skipped_lines_are_a_warning_with_the_count(malformed_file):
    con = tessera.connect(on_error="skip")
    rel = con.sql(f"SELECT sum((j->>'a')::BIGINT) AS total FROM '{malformed_file}'")
    with pytest.warns(tessera.RejectedLinesWarning, match="skipped 2 malformed lines") as caught:
        assert int(rel.fetchall()[0][0]) == 6
    assert str(malformed_file) in str(caught[0].message)
    # Each fetch reports its own skipped lines, even the same ones from the same place.
    with pytest.warns(tessera.RejectedLinesWarning, match="skipped 2 malformed lines"):
        rel.arrow()


def test_malformed_line_fails_by_default(malformed_file):
    with pytest.raises(tessera.ExecutionError, match="line 3"):
        tessera.connect().sql(f"SELECT count(*) FROM '{malformed_file}'").fetchall()


def test_ingest_with_skip_reports_rejects_and_restores_the_setting(malformed_file, tmp_path):
    con = tessera.connect()
    with pytest.warns(tessera.RejectedLinesWarning, match="skipped 2 malformed lines"):
        summary = con.ingest(malformed_file, table=tmp_path / "t", on_error="skip")
    assert (summary.documents, summary.rejects) == (3, 2)
    assert summary.reject_file is not None
    assert "skipped 2 malformed lines" in str(summary)
    assert con.sql(f"SELECT count(*) FROM '{tmp_path / 't'}'").fetchall() == [(3,)]
    with pytest.raises(tessera.ExecutionError):
        con.sql(f"SELECT count(*) FROM '{malformed_file}'").fetchall()


def test_ingest_of_a_missing_file_raises(tmp_path):
    with pytest.raises(tessera.Error, match="missing.json"):
        tessera.connect().ingest(tmp_path / "missing.json", table=tmp_path / "t")
