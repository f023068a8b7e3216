"""JSONBench through the Python package must give DuckDB's answers, over the raw NDJSON
and over the table `Connection.ingest` wrote; and each way of fetching a relation must
give the same rows."""

import pytest
from common.canon import canon_rows, same_rows

from conftest import DOCS
from support import jsonbench_queries as jsonbench


# The ORDER BY key columns of each query, compared in order (ties may come either way).
KEYS = [[1], [1], [1, 0], [1], [1]]
QUERIES = list(zip(jsonbench("duckdb"), jsonbench("tessera"), KEYS))


@pytest.mark.parametrize("duck_sql,tessera_sql,key", QUERIES, ids=[f"q{i + 1}" for i in range(len(QUERIES))])
def test_jsonbench_gives_duckdbs_rows(duck, bluesky, duck_sql, tessera_sql, key):
    expected = canon_rows(duck.execute(duck_sql).fetchall())
    got = canon_rows(bluesky.sql(tessera_sql).fetchall())
    assert expected, "the query selects nothing, so it tests nothing"
    assert same_rows(got, expected)
    assert [tuple(r[i] for i in key) for r in got] == [tuple(r[i] for i in key) for r in expected]


def test_five_jsonbench_queries():
    assert len(QUERIES) == 5


def test_ingest_summary_counts_every_document(ingested):
    _, summary = ingested
    assert summary.documents == DOCS
    assert summary.files >= 1
    assert summary.rejects == 0 and summary.reject_file is None
    assert summary.bytes_written > 0
    assert f"ingested {DOCS} documents into version" in str(summary)


@pytest.mark.parametrize("query", [q for _, q, _ in QUERIES], ids=[f"q{i + 1}" for i in range(len(QUERIES))])
def test_fetch_methods_agree(bluesky, query):
    rel = bluesky.sql(query)
    rows = canon_rows(rel.fetchall())
    table = rel.arrow()
    assert table.column_names == rel.columns
    assert canon_rows(zip(*(c.to_pylist() for c in table.columns))) == rows
    frame = rel.df()
    assert list(frame.columns) == rel.columns
    # Series.tolist() gives Python scalars, as the other fetches do.
    assert canon_rows(zip(*(frame.iloc[:, i].tolist() for i in range(frame.shape[1])))) == rows
    polars_frame = rel.pl()
    assert polars_frame.columns == rel.columns
    assert canon_rows(polars_frame.iter_rows()) == rows
    assert len(rows) > 0
