//! Differential: a table whose long arrays live in side relations (Tiles-*) answers
//! `json_each`, `UNNEST` and every other access to those arrays exactly as the raw
//! NDJSON files do, and as the same table written without side relations and read
//! without typed columns do; with deletes, with a file shared by several partitions, and
//! with filters the reader applies before the elements are taken by row.

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use std::path::Path;

use common::{Rng, analyze, concatenated, metric, rows, session_with_raw, write_parts};
use tessera_engine::TesseraSession;

/// One document: long arrays of tags (strings, now and then a number or null) and of
/// line items (objects of three kinds, none frequent enough for a data file to shred
/// them as a list; fields change type now and then; null and scalar elements), both
/// absent or empty in some documents. Keys are in sorted order, the
/// order in which tables write objects.
fn document(rng: &mut Rng, id: usize) -> String {
    let mut fields = vec![
        format!(r#""id":{id}"#),
        format!(r#""kind":"{}""#, ["a", "b", "c"][rng.below(3) as usize]),
    ];
    if rng.below(10) < 8 {
        let items: Vec<String> = (0..17 + rng.below(30))
            .map(|_| match rng.below(60) {
                0 => "null".to_string(),
                1 => "3".to_string(),
                2 => r#"{"qty":"many","sku":5}"#.to_string(),
                3 => r#"{"extra":[1,{"deep":true}],"sku":"s1"}"#.to_string(),
                4..30 => format!(
                    r#"{{"qty":{},"sku":"s{}","src":{{"u":"u{}"}}}}"#,
                    rng.below(9),
                    rng.below(300),
                    rng.below(4)
                ),
                30..48 => format!(r#"{{"rel":"next","url":"l{}"}}"#, rng.below(50)),
                _ => format!(r#"{{"tag":"t{}"}}"#, rng.below(30)),
            })
            .collect();
        fields.push(format!(
            r#""order":{{"items":[{}],"n":{id}}}"#,
            items.join(",")
        ));
    }
    if rng.below(10) < 9 {
        let tags: Vec<String> = (0..rng.below(40))
            .map(|_| match rng.below(40) {
                0 => "7".to_string(),
                1 => "null".to_string(),
                _ => format!(r#""t{}""#, rng.below(60)),
            })
            .collect();
        fields.push(format!(r#""tags":[{}]"#, tags.join(",")));
    }
    format!("{{{}}}", fields.join(","))
}

/// Two NDJSON files of generated documents.
fn write_files(dir: &Path, rows_per_file: usize) -> Vec<String> {
    let mut rng = Rng(0x51de_5eed_0001);
    write_parts(dir, 2, rows_per_file, |file, row| {
        document(&mut rng, file * rows_per_file + row)
    })
}

/// Queries written against a table named `T`.
const QUERIES: &[&str] = &[
    "SELECT count(*) FROM T AS d, json_each(d.j, '$.tags') AS e",
    "SELECT e.value, count(*) FROM T AS d, json_each(d.j, '$.tags') AS e GROUP BY 1",
    "SELECT d.j->>'kind', count(DISTINCT e.value) FROM T AS d, json_each(d.j, '$.tags') AS e GROUP BY 1",
    "SELECT e.value->>'sku' AS s, count(*), sum(json_get_int(e.value, 'qty')) FROM T AS d, json_each(d.j, '$.order.items') AS e GROUP BY 1",
    "SELECT e.value->>'qty', e.value->'src'->>'u', count(*) FROM T AS d, json_each(d.j, '$.order.items') AS e GROUP BY 1, 2",
    "SELECT e.value->>'url', e.value->>'tag', count(*) FROM T AS d, json_each(d.j, '$.order.items') AS e GROUP BY 1, 2",
    "SELECT e.value->'extra', e.value->>'sku' FROM T AS d, json_each(d.j, '$.order.items') AS e WHERE e.value->'extra' IS NOT NULL",
    "SELECT e.value, count(*) FROM T AS d, json_each(d.j, '$.order.items') AS e GROUP BY 1",
    "SELECT d.j->>'id', count(*) FROM T AS d, json_each(d.j, '$.order.items') AS e WHERE e.value->>'sku' = 's7' GROUP BY 1",
    "SELECT d.j->>'id', e.key, e.value FROM T AS d, json_each(d.j, '$.tags') AS e WHERE json_get_int(d.j, 'id') % 97 = 0",
    "SELECT d.j->>'kind', count(*) FROM T AS d LEFT JOIN LATERAL json_each(d.j, '$.order.items') AS e ON true GROUP BY 1",
    "SELECT count(*) FROM T AS d, json_each(d.j, '$.order.items') AS e WHERE d.j->>'kind' = 'b'",
    "SELECT count(*) FROM (SELECT unnest(TRY_CAST(d.j->'order'->'items' AS JSON[])) AS u FROM T AS d) AS s WHERE (s.u->>'sku') = 's1'",
    "SELECT count(*) FROM T AS d WHERE EXISTS (SELECT 1 FROM json_each(d.j, '$.tags') AS e WHERE e.value = '\"t5\"')",
    "SELECT d.j->>'kind', count(*) FROM T AS d WHERE EXISTS (SELECT 1 FROM json_each(d.j, '$.tags') AS e WHERE e.value->>'$' = 't5') GROUP BY 1",
    "SELECT count(*) FROM T AS d WHERE 't7' IN (SELECT e.value->>'$' FROM json_each(d.j, '$.tags') AS e)",
    "SELECT count(*) FROM T AS d WHERE NOT EXISTS (SELECT 1 FROM json_each(d.j, '$.order.items') AS e WHERE e.value->>'sku' = 's7')",
    "SELECT d.j->>'id' FROM T AS d WHERE EXISTS (SELECT 1 FROM json_each(d.j, '$.order.items') AS e WHERE e.value->>'sku' = 's7' AND json_get_int(e.value, 'qty') > 4)",
    "SELECT d.j->>'kind', EXISTS (SELECT 1 FROM json_each(d.j, '$.tags') AS e WHERE e.value->>'$' = 't9') AS t9, count(*) FROM T AS d GROUP BY 1, 2",
    "SELECT j->>'id', j->'tags'->>3, j->'order'->'items'->0->>'sku', json_array_length(j->'tags') FROM T WHERE json_get_int(j, 'id') % 31 = 0",
    "SELECT j->>'id', j FROM T WHERE json_get_int(j, 'id') % 211 = 0",
    "SELECT j->>'id', j->'order' FROM T WHERE json_get_int(j, 'id') % 301 = 0",
];

/// Queries over a table of deletes and shares: rows, accesses, several accesses, the
/// documents' fields next to the elements, filters before them, and a left join.
const SHARED_QUERIES: [&str; 8] = [
    QUERIES[0],
    QUERIES[3],
    QUERIES[4],
    QUERIES[9],
    QUERIES[10],
    QUERIES[11],
    QUERIES[14],
    QUERIES[17],
];

/// The tables a session ingests the files into: `t` with side relations, and `flat`
/// without them.
const BOTH: &[(&str, bool)] = &[("t", true), ("flat", false)];

/// A session with the files as view `raw` (the rows passing `keep`), ingested into each
/// of `tables` (name, with side relations).
async fn session_over(
    files: &[String],
    dir: &Path,
    keep: &str,
    tables: &[(&str, bool)],
) -> TesseraSession {
    let session = session_with_raw(files, keep).await;
    for &(name, sides) in tables {
        let table = dir.join(name).display().to_string();
        rows(&session, &format!("SET tessera.side_arrays = {sides}")).await;
        rows(
            &session,
            &format!("CREATE EXTERNAL TABLE {name} STORED AS TESSERA LOCATION '{table}'"),
        )
        .await;
        for file in files {
            rows(
                &session,
                &format!("INSERT INTO {name} SELECT j FROM '{file}'"),
            )
            .await;
        }
    }
    rows(&session, "SET tessera.side_arrays = true").await;
    session
}

/// Runs each query over `raw` and over `t` (side relations), and with `every_way` also
/// over `t` without typed reads and over `flat`; fails unless all answer the same rows.
async fn compare(session: &TesseraSession, queries: &[&str], every_way: bool) {
    let mut failures = Vec::new();
    for query in queries {
        let on = |table: &str| query.replace("FROM T", &format!("FROM {table}"));
        let expected = rows(session, &on("raw")).await;
        assert!(!expected.is_empty(), "{query} returns rows");
        let mut answers = vec![("sides", rows(session, &on("t")).await)];
        if every_way {
            answers.push(("flat", rows(session, &on("flat")).await));
            rows(session, "SET tessera.typed_reads = false").await;
            answers.push(("untyped", rows(session, &on("t")).await));
            rows(session, "SET tessera.typed_reads = true").await;
        }
        for (how, answer) in answers {
            if answer != expected {
                let at = (0..expected.len().max(answer.len()))
                    .find(|&i| expected.get(i) != answer.get(i))
                    .unwrap_or(0);
                failures.push(format!(
                    "{query} ({how}), from row {at}:\n  raw: {:?}\n  got: {:?}",
                    expected.get(at),
                    answer.get(at)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_relations_answer_like_the_raw_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_files(dir.path(), 1500);
    let session = session_over(&files, dir.path(), "true", BOTH).await;
    compare(&session, QUERIES, true).await;
    // The elements come from the side files, not from the documents' binaries.
    let plan = analyze(
        &session,
        "SELECT e.value->>'sku' AS s, count(*) FROM t AS d, json_each(d.j, '$.order.items') AS e GROUP BY 1",
    )
    .await;
    assert_eq!(metric(&plan, "side_files_read"), 2, "{plan}");
    let elements = rows(
        &session,
        "SELECT count(*) FROM raw AS d, json_each(d.j, '$.order.items') AS e",
    )
    .await;
    // EXPLAIN ANALYZE rounds counts from a thousand on (`75.27 K`).
    let elements: u64 = elements[0].parse().unwrap();
    assert!(
        metric(&plan, "side_elements").abs_diff(elements) <= elements / 1000,
        "{elements} elements: {plan}"
    );
    assert_eq!(metric(&plan, "values_binary"), 0, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // So do the elements a filter over them reads (EXISTS, IN), with no document read.
    for query in [QUERIES[14], QUERIES[15], QUERIES[17]] {
        let plan = analyze(&session, &query.replace("FROM T", "FROM t")).await;
        assert_eq!(metric(&plan, "side_files_read"), 2, "{plan}");
        assert!(plan.contains("raw_document=false"), "{plan}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_relations_honour_deletes_and_shares() {
    let dir = tempfile::tempdir().unwrap();
    let deleted = "j->>'kind' = 'b' AND json_get_int(j, 'id') % 3 = 0";
    // One file of 18,000 documents: two shares of at least 8,192 rows on 4 partitions.
    let parts = write_files(dir.path(), 9000);
    let one = concatenated(dir.path(), "one.json", &parts);
    let session = session_over(
        std::slice::from_ref(&one),
        dir.path(),
        &format!("NOT ({deleted})"),
        &BOTH[..1],
    )
    .await;
    rows(&session, &format!("DELETE FROM t WHERE {deleted}")).await;
    for partitions in [4, 1] {
        let set = format!("SET datafusion.execution.target_partitions = {partitions}");
        rows(&session, &set).await;
        compare(&session, &SHARED_QUERIES, false).await;
    }
    // The shares of the file, read by different partitions, load its side file once.
    rows(&session, "SET datafusion.execution.target_partitions = 4").await;
    let plan = analyze(&session, &QUERIES[3].replace("FROM T", "FROM t")).await;
    assert!(
        plan.contains("parquet:0.."),
        "the file is read in shares: {plan}"
    );
    assert_eq!(metric(&plan, "side_files_read"), 1, "{plan}");
}
