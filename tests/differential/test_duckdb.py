"""Differential tests: Tessera over raw NDJSON must give exactly DuckDB's answers.

Each case is a pair of queries (DuckDB's dialect, Tessera's) over the same generated
Bluesky file. Rows are compared as multisets after canonicalizing values (timestamps to
UTC ISO text, floats to 6 decimals), and the ORDER BY key columns are compared in
order, so ties may come out in either order but the ordering itself is checked.
"""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from common.canon import canon_rows, same_rows  # noqa: E402


def rows_of_duckdb(con, sql):
    return canon_rows(con.execute(sql).fetchall())


def rows_of_tessera(tessera, sql):
    return canon_rows(tessera.query(sql))


def jsonbench(dialect):
    text = (REPO / "bench/jsonbench/queries" / f"{dialect}.sql").read_text()
    return [line for line in text.splitlines() if line.strip() and not line.startswith("--")]


# (name, duckdb sql, tessera sql or None when identical, ORDER BY key column indexes)
JSONBENCH_KEYS = [[1], [1], [1, 0], [1], [1]]
CASES = [
    (f"jsonbench_q{i + 1}", d, t, key)
    for i, (d, t, key) in enumerate(zip(jsonbench("duckdb"), jsonbench("tessera"), JSONBENCH_KEYS))
]

POST = "j->>'$.commit.collection' = 'app.bsky.feed.post'"
CASES += [
    ("kinds", "SELECT j->>'$.kind' AS kind, count(*) AS n FROM bluesky GROUP BY kind ORDER BY kind", None, [0]),
    (
        "operations_per_collection",
        "SELECT j->>'$.commit.collection' AS c, j->>'$.commit.operation' AS op, count(*) AS n "
        "FROM bluesky WHERE j->>'$.kind' = 'commit' GROUP BY c, op ORDER BY c, op",
        None,
        [0, 1],
    ),
    (
        "first_language_of_posts",
        f"SELECT j->>'$.commit.record.langs[0]' AS lang, count(*) AS n FROM bluesky WHERE {POST} "
        "GROUP BY lang ORDER BY n DESC, lang NULLS FIRST LIMIT 10",
        None,
        [1, 0],
    ),
    (
        "last_language_of_posts",
        f"SELECT j->>'$.commit.record.langs[#-1]' AS lang, count(*) AS n FROM bluesky WHERE {POST} "
        "GROUP BY lang ORDER BY n DESC, lang NULLS FIRST LIMIT 10",
        None,
        [1, 0],
    ),
    (
        "post_shapes",
        "SELECT count(*) AS posts, "
        "sum(CASE WHEN (j->'$.commit.record.reply') IS NULL THEN 0 ELSE 1 END) AS replies, "
        "sum(CASE WHEN json_exists(j, '$.commit.record.embed') THEN 1 ELSE 0 END) AS embeds, "
        f"count(j->>'$.commit.record.facets[0].index.byteStart') AS facets FROM bluesky WHERE {POST}",
        None,
        [],
    ),
    (
        "image_counts",
        "SELECT json_array_length(j->'$.commit.record.embed.images') AS images, count(*) AS n FROM bluesky "
        f"WHERE {POST} GROUP BY images ORDER BY images NULLS FIRST",
        "SELECT json_length(j, '$.commit.record.embed.images') AS images, count(*) AS n FROM bluesky "
        f"WHERE {POST} GROUP BY images ORDER BY images NULLS FIRST",
        [0],
    ),
    (
        "image_sizes_and_ratios",
        "SELECT sum(CAST(j->>'$.commit.record.embed.images[0].image.size' AS BIGINT)) AS bytes, "
        "avg(CAST(j->>'$.commit.record.embed.images[0].aspectRatio.width' AS DOUBLE)) AS width, "
        "max(j->>'$.commit.record.embed.images[0].image.mimeType') AS mime FROM bluesky",
        None,
        [],
    ),
    (
        "most_active_followers",
        "SELECT j->>'$.did' AS did, count(*) AS n FROM bluesky "
        "WHERE j->>'$.commit.collection' = 'app.bsky.graph.follow' GROUP BY did ORDER BY n DESC, did LIMIT 10",
        None,
        [1, 0],
    ),
    (
        "most_followed_subjects",
        "SELECT j->>'$.commit.record.subject' AS subject, count(*) AS n FROM bluesky "
        "WHERE j->>'$.commit.collection' = 'app.bsky.graph.follow' AND j->>'$.commit.operation' = 'create' "
        "GROUP BY subject ORDER BY n DESC, subject LIMIT 10",
        None,
        [1, 0],
    ),
    (
        "liked_authors_from_nested_refs",
        "SELECT split_part(j->>'$.commit.record.subject.uri', '/', 3) AS author, count(*) AS n FROM bluesky "
        "WHERE j->>'$.commit.collection' = 'app.bsky.feed.like' GROUP BY author ORDER BY n DESC, author LIMIT 10",
        None,
        [1, 0],
    ),
    (
        "text_lengths_with_unicode_and_escapes",
        f"SELECT max(length(j->>'$.commit.record.text')) AS longest, sum(length(j->>'$.commit.record.text')) AS chars, "
        f"count(DISTINCT j->>'$.commit.record.text') AS texts FROM bluesky WHERE {POST}",
        None,
        [],
    ),
    (
        "identity_handles",
        "SELECT j->>'$.identity.handle' AS handle, CAST(j->>'$.identity.seq' AS BIGINT) AS seq FROM bluesky "
        "WHERE j->>'$.kind' = 'identity' ORDER BY seq, handle LIMIT 20",
        None,
        [1, 0],
    ),
    (
        "account_states",
        "SELECT j->>'$.account.active' AS active, j->>'$.account.status' AS status, count(*) AS n "
        "FROM bluesky WHERE j->>'$.kind' = 'account' GROUP BY active, status ORDER BY active, status NULLS FIRST",
        None,
        [0, 1],
    ),
    (
        "events_per_hour_bucket",
        "SELECT CAST(j->>'$.time_us' AS BIGINT) // 3600000000 AS bucket, count(*) AS n FROM bluesky "
        "GROUP BY bucket ORDER BY bucket",
        "SELECT CAST(j->>'$.time_us' AS BIGINT) / 3600000000 AS bucket, count(*) AS n FROM bluesky "
        "GROUP BY bucket ORDER BY bucket",
        [0],
    ),
    (
        "subject_refs_as_json",
        "SELECT j->'$.commit.record.subject' AS subject, count(*) AS n FROM bluesky "
        "WHERE j->>'$.commit.collection' = 'app.bsky.feed.repost' GROUP BY subject ORDER BY n DESC, subject LIMIT 5",
        None,
        [1, 0],
    ),
    (
        "record_key_counts",
        "SELECT j->>'$.commit.collection' AS c, max(len(json_keys(j, '$.commit.record'))) AS k FROM bluesky "
        "WHERE j->>'$.commit.operation' = 'create' GROUP BY c ORDER BY c",
        "SELECT j->>'$.commit.collection' AS c, max(cardinality(json_keys(j, '$.commit.record'))) AS k FROM bluesky "
        "WHERE j->>'$.commit.operation' = 'create' GROUP BY c ORDER BY c",
        [0],
    ),
    (
        "created_at_as_timestamp",
        f"SELECT min(CAST(j->>'$.commit.record.createdAt' AS TIMESTAMP)) AS first, "
        f"max(CAST(j->>'$.commit.record.createdAt' AS TIMESTAMP)) AS last FROM bluesky WHERE {POST}",
        None,
        [],
    ),
    (
        "typed_getters_match_casts",
        "SELECT sum(CAST(j->>'$.time_us' AS BIGINT) % 1000) AS s FROM bluesky",
        "SELECT sum(json_get_int(j, 'time_us') % 1000) AS s FROM bluesky",
        [],
    ),
]


@pytest.mark.parametrize("name,duck_sql,tessera_sql,key", CASES, ids=[c[0] for c in CASES])
def test_same_answer_as_duckdb(duck, tessera, name, duck_sql, tessera_sql, key):
    expected = rows_of_duckdb(duck, duck_sql)
    got = rows_of_tessera(tessera, tessera_sql or duck_sql)
    assert len(expected) > 0, f"{name}: the query selects nothing, so it tests nothing"
    assert same_rows(got, expected), name
    if key:
        assert [tuple(r[i] for i in key) for r in got] == [tuple(r[i] for i in key) for r in expected], name


def test_enough_queries():
    assert len(CASES) >= 15
