//! Typed reads of Tessera tables give exactly the answers of reading whole documents.
//!
//! A table is filled from several NDJSON files whose documents are heterogeneous on
//! purpose: a path changes type in the middle of a file, a path exists in some files
//! only, values of another type (outliers) and JSON nulls are scattered among typed
//! ones, objects sometimes are strings. Every query runs three ways: over the raw NDJSON
//! files, over the table with typed reads and file skipping (the default), and over the
//! table with `tessera.typed_reads = false` (every access from reconstructed
//! documents). All three must return the same rows. The plan's metrics must show that
//! the typed run really read typed columns and skipped files, so a silent fallback
//! fails the test.

use std::fmt::Write as _;
use std::path::Path;

use tessera_engine::{SessionOptions, TesseraSession};

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::{analyze, concatenated, metric, rows, session_with_raw, write_parts};

/// A deterministic xorshift generator, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// One document of file `file` (0, 1 or 2), row `row` of `rows`.
fn document(rng: &mut Rng, file: usize, row: usize, rows: usize) -> String {
    let id = file * 100_000 + row;
    let mut doc = format!(
        r#"{{"id":{id},"kind":"{}""#,
        ["a", "b", "c"][rng.below(3) as usize]
    );
    // `n`: integers; in file 1 strings from the middle on; ~3% outliers everywhere.
    let n = match rng.below(100) {
        0 => "null".to_string(),
        1 => format!("{}.5", rng.below(100)),
        2 => format!(r#""s{}""#, rng.below(10)),
        _ if file == 1 && row >= rows / 2 => format!(r#""t{}""#, rng.below(50)),
        _ => format!("{}", rng.below(200) as i64 - 20),
    };
    write!(doc, r#","n":{n}"#).unwrap();
    if rng.below(4) > 0 {
        write!(doc, r#","f":{}.{}"#, rng.below(40), 125 * rng.below(8) + 1).unwrap();
    }
    if rng.below(3) == 0 {
        write!(doc, r#","flag":{}"#, rng.below(2) == 0).unwrap();
    }
    match rng.below(10) {
        0 => doc.push_str(r#","nested":"flat""#),
        1..=7 => write!(
            doc,
            // Keys in sorted order: tables render objects with sorted keys.
            r#","nested":{{"d":"2023-01-{:02}T10:00:00.{:03}Z","x":{},"y":"{}"}}"#,
            1 + rng.below(28),
            rng.below(1000),
            rng.below(1000),
            ["p", "q", "r", "s"][rng.below(4) as usize]
        )
        .unwrap(),
        _ => {}
    }
    if file == 2 {
        write!(
            doc,
            r#","only_here":"{}""#,
            ["yes", "no"][rng.below(2) as usize]
        )
        .unwrap();
    }
    if rng.below(5) == 0 {
        write!(doc, r#","arr":[{},{},"z"]"#, rng.below(9), rng.below(9)).unwrap();
    }
    if rng.below(7) == 0 {
        doc.push_str(r#","s":"quote \" and é""#);
    }
    // `at`: timestamps in milliseconds with `Z` and ~3% other renderings or null; in
    // file 2 only seconds at +02:00, so casts there read the typed values themselves.
    // `day`: dates, ~2% free text.
    let (month, day, hour) = (1 + rng.below(12), 1 + rng.below(28), rng.below(24));
    let at = match (rng.below(100), file) {
        (_, 2) => format!(r#""2024-{month:02}-{day:02}T{hour:02}:30:00+02:00""#),
        (0, _) => "null".to_string(),
        (1 | 2, _) => format!(r#""2024-{month:02}-{day:02} {hour:02}:00:00""#),
        _ => format!(
            r#""2024-{month:02}-{day:02}T{hour:02}:{:02}:00.{:03}Z""#,
            rng.below(60),
            rng.below(1000)
        ),
    };
    let date = match rng.below(50) {
        0 => "n/a".to_string(),
        _ => format!("2023-{:02}-{:02}", 1 + rng.below(12), 1 + rng.below(28)),
    };
    write!(doc, r#","at":{at},"day":"{date}""#).unwrap();
    write!(doc, r#","nums":[{},{}]"#, rng.below(50), rng.below(50)).unwrap();
    // `tags`: short arrays of strings (shredded as a list), with elements of other
    // types, empty arrays, values that are no array, or missing; in file 2 long
    // arrays, which stay whole in the binary.
    match rng.below(20) {
        0 => {}
        1 => doc.push_str(r#","tags":"none""#),
        2 => doc.push_str(r#","tags":{"0":"x"}"#),
        3 => doc.push_str(r#","tags":[]"#),
        4 => doc.push_str(r#","tags":[null,7,{"t":1},[2],1.5,true]"#),
        _ => {
            let len = if file == 2 { 30 } else { 1 + rng.below(4) };
            let tags: Vec<String> = (0..len)
                .map(|k| match rng.below(15) {
                    0 => "null".to_string(),
                    1 => format!("{k}"),
                    _ => format!(r#""t{}""#, rng.below(6)),
                })
                .collect();
            write!(doc, r#","tags":[{}]"#, tags.join(",")).unwrap();
        }
    }
    write!(doc, r#","deps":{}"#, dependencies(rng, file)).unwrap();
    // `meta.note`: a rare key of a shredded object, read from that object's binary.
    let note = match rng.below(40) {
        0 => r#","note":{"n":1}"#.to_string(),
        1 => format!(r#","note":"n{}""#, rng.below(3)),
        _ => String::new(),
    };
    write!(doc, r#","meta":{{"kind":"m{}"{note}}}"#, rng.below(3)).unwrap();
    write!(doc, r#","attrs":{}"#, attributes(id)).unwrap();
    doc.push('}');
    doc
}

/// What a document holds at `attrs`: a map-like object keyed by names, one frequent
/// (`common`, shredded) and the rest drawn from 400 (each too rare to shred, so in the
/// object's binary), valued by small objects, sometimes by a scalar; rarely a value that
/// is no object. Its own generator, seeded by the document's id, leaves the other keys'
/// values as they were.
fn attributes(id: usize) -> String {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (id as u64 + 1).wrapping_mul(0x2545_f491));
    match rng.below(40) {
        0 => return r#""none""#.to_string(),
        1 => return r#"[{"v":1}]"#.to_string(),
        _ => {}
    }
    let mut names: Vec<String> = (0..rng.below(4))
        .map(|_| format!("k{:03}", rng.below(400)))
        .collect();
    if rng.below(10) < 7 {
        names.push("common".to_string());
    }
    // Keys in sorted order: tables render objects with sorted keys.
    names.sort();
    names.dedup();
    let members: Vec<String> = names
        .iter()
        .map(|name| match rng.below(12) {
            0 => format!(r#""{name}":{}"#, rng.below(9)),
            1 => format!(r#""{name}":null"#),
            _ => format!(
                r#""{name}":{{"v":{},"w":"w{}"}}"#,
                rng.below(50),
                rng.below(4)
            ),
        })
        .collect();
    format!("{{{}}}", members.join(","))
}

/// What a document holds at `deps`: mostly short arrays of `{name, v, src: {u}}`
/// objects (shredded as a list of objects), with element keys missing, of another type
/// or null, elements that are no object, values that are no array; in file 1 a few
/// long arrays, which stay whole in the binary where they are frequent.
fn dependencies(rng: &mut Rng, file: usize) -> String {
    let element = |rng: &mut Rng, k: u64| match rng.below(25) {
        0 => "null".to_string(),
        1 => format!(r#""d{k}""#),
        2 => format!(r#"{{"name":{k},"v":"x{k}"}}"#),
        // Keys in sorted order: tables render objects with sorted keys.
        3 => format!(r#"{{"extra":[{k}],"src":"flat","v":{k}}}"#),
        _ => format!(
            r#"{{"name":"p{}","src":{{"u":"u{}"}},"v":{}}}"#,
            rng.below(12),
            rng.below(5),
            rng.below(100)
        ),
    };
    match rng.below(30) {
        0 => r#""none""#.to_string(),
        1 => r#"{"name":"p1"}"#.to_string(),
        2 => "[]".to_string(),
        n => {
            let len = if file == 1 && n == 3 {
                40
            } else {
                1 + rng.below(4)
            };
            let deps: Vec<String> = (0..len).map(|k| element(rng, k)).collect();
            format!("[{}]", deps.join(","))
        }
    }
}

fn write_files(dir: &Path) -> Vec<String> {
    write_files_of(dir, 3000)
}

/// Three files of `rows` generated documents each.
fn write_files_of(dir: &Path, rows: usize) -> Vec<String> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    write_parts(dir, 3, rows, |file, row| {
        document(&mut rng, file, row, rows)
    })
}

/// Queries written against a table named `T`.
const QUERIES: &[&str] = &[
    "SELECT count(*) FROM T",
    "SELECT j->>'kind', count(*) FROM T GROUP BY 1",
    "SELECT sum(json_get_int(j, 'n')), count(j->>'n'), count(json_get_str(j, 'n')) FROM T",
    "SELECT j->>'id', j->>'n', json_typeof(j->'n') FROM T WHERE j->>'kind' = 'a'",
    "SELECT j->>'id', j->'n' FROM T WHERE json_get_int(j, 'n') > 150",
    "SELECT count(*) FROM T WHERE json_get_int(j, 'n') < -10",
    "SELECT j->>'id' FROM T WHERE json_get_str(j, 'n') = 't7'",
    "SELECT j->>'id', j->>'f', json_get_float(j, 'f') FROM T WHERE json_get_float(j, 'f') BETWEEN 10 AND 12",
    "SELECT json_get_int(j, 'f'), count(*) FROM T GROUP BY 1",
    "SELECT json_get_bool(j, 'flag'), j->>'flag', count(*) FROM T GROUP BY 1, 2",
    "SELECT j->'nested'->>'x', j->'nested'->>'y', j->>'nested' FROM T WHERE j->'nested'->>'y' IN ('p', 'q')",
    "SELECT j->'nested'->>'d', j->'nested', j->'nested'->>'zz', j->'nested'->'y'->>0 FROM T",
    "SELECT count(*), count(j->'nested'), count(j->'nested'->'x') FROM T",
    "SELECT count(*) FROM T WHERE j->>'only_here' = 'yes'",
    "SELECT count(*) FROM T WHERE j->>'only_here' IS NULL",
    "SELECT j->>'id', j->'arr'->>1, j->'arr'->> -1, j->'arr'->> -4, json_length(j->'arr') FROM T WHERE j->'arr' IS NOT NULL",
    "SELECT j->>'id', j->>'s' FROM T WHERE j->>'s' IS NOT NULL",
    "SELECT json_get_int(j, 'id'), json_length(j) FROM T WHERE json_get_int(j, 'id') IN (7, 100007, 200007)",
    "SELECT (j->>'id')::BIGINT % 7, max(j->>'kind') FROM T WHERE (j->>'id')::BIGINT > 200100 GROUP BY 1",
    "SELECT (j->>'f')::DOUBLE AS fd, j->>'f' AS ft FROM T WHERE (j->>'f')::DOUBLE > 38",
    "SELECT sum((j->'nested'->>'x')::BIGINT), avg((j->'nested'->>'x')::DOUBLE) FROM T",
    "SELECT j->>'id', j->>'at', j->'at', json_get_str(j, 'at'), j->>'day', j->'day' FROM T WHERE j->>'kind' = 'b'",
    "SELECT CAST(j->>'at' AS TIMESTAMP) AS ts, j->>'at' FROM T WHERE CAST(j->>'at' AS TIMESTAMP) > TIMESTAMP '2024-06-01 00:00:00'",
    "SELECT date_trunc('month', CAST(j->>'at' AS TIMESTAMP)) AS m, count(*) FROM T GROUP BY 1",
    "SELECT max(j->>'at'), min(j->>'day'), count(j->>'day'), count(json_get_int(j, 'at')) FROM T",
    "SELECT j->>'id', j->>'at' FROM T WHERE j->>'at' < '2024-01-31' OR j->>'at' >= '2024-12-28T21'",
    "SELECT count(*) FROM T WHERE j->>'at' BETWEEN '2024-03-01' AND '2024-03-02T23' AND json_get_str(j, 'at') IS NOT NULL",
    "SELECT j->>'day', count(*) FROM T WHERE j->>'day' LIKE '2023-02%' OR j->>'day' = 'n/a' GROUP BY 1",
    // Casts see only the rows the filters keep (here filters on the whole document,
    // which the scan applies itself): non-integer `n` would fail the cast.
    "SELECT j->>'id', CAST(j->>'n' AS BIGINT) FROM T WHERE json_get_int(j, 'n') IS NOT NULL AND json_length(j) > 3",
    "SELECT sum(CAST(j->>'n' AS BIGINT)) FROM T WHERE json_get_int(j, 'n') IS NOT NULL AND json_length(j) > 3",
    "SELECT j->>'id', j->'tags'->>0, j->'tags'->1, j->'tags'->> -1, j->'tags'-> -2, j->>'$.tags[2]', j->'tags'->>9, j->'tags'->> -40 FROM T",
    "SELECT j->'tags'->>0, json_typeof(j->'tags'->0), count(*) FROM T GROUP BY 1, 2",
    "SELECT json_get_str(j, 'tags', 1), json_get_int(j, 'tags', 0), json_get_bool(j, 'tags', -1), count(*) FROM T GROUP BY 1, 2, 3",
    "SELECT j->>'id', j->'tags' FROM T WHERE j->'tags'->>0 = 't3' AND j->'tags'->>1 IS NOT NULL",
    "SELECT sum(json_get_int(j, 'nums', 1)), sum((j->'nums'->> -1)::BIGINT), sum(json_get_float(j, 'nums', 0)) FROM T",
    "SELECT j->'nums'->>0, count(*) FROM T WHERE json_get_int(j, 'nums', 0) < 3 GROUP BY 1",
    "SELECT count(*), count(j->'tags'->>0) FROM T WHERE j->'tags' IS NOT NULL AND j->>'tags' >= '['",
    "SELECT j->>'id', j->'tags', json_length(j->'tags'), j->'tags'->2->>'t', j->>'$.tags[2].t', j->'tags'->>'0' FROM T",
    "SELECT j->>'id', j->'deps'->0->>'name', j->'deps'->1->'v', j->'deps'-> -1->'src'->>'u', j->>'$.deps[2].src', j->'deps'->0->'extra', j->'deps'->>39 FROM T",
    "SELECT j->'deps'->0->>'name' AS n, count(*), sum(TRY_CAST(j->'deps'->0->>'v' AS BIGINT)) FROM T GROUP BY n",
    "SELECT count(*) FROM T WHERE j->'deps'->0->'src'->>'u' = 'u3' OR j->'deps'->1->>'name' IN ('p1', '2')",
    "SELECT j->>'id', j->'deps', j->'deps'->0, j->'deps'-> -1->'src', json_length(j->'deps') FROM T",
    "SELECT e.key, e.value->>'name' AS n, e.type, count(*) FROM T AS d, json_each(d.j, '$.deps') AS e GROUP BY 1, 2, 3",
    "SELECT j->>'id', j->'meta'->>'note', j->'meta'->'note'->>'n', j->'meta' FROM T WHERE j->'meta'->'note' IS NOT NULL",
    "SELECT d.j->>'id', e.fullkey, e.path, e.value FROM T AS d, json_tree(d.j, '$.deps[1]') AS e",
    "SELECT j->>'id', json_array_length(j->'tags'), json_array_length(j, '$.deps'), json_array_length(j->'nested'), json_array_length(j->'n'), json_array_length(j->'nope'), json_array_length(j->'deps'->0->'extra'), json_array_length(j->'meta'->'note') FROM T",
    "SELECT json_array_length(j->'tags') AS n, count(*), sum(json_array_length(j->'arr')) FROM T WHERE json_array_length(j, 'deps') > 2 GROUP BY n",
    "SELECT d.j->'meta'->>'kind' AS k, e.value->>'name' AS n, count(*), max(d.j->>'id'), sum(json_get_int(d.j, 'n')) FROM T AS d, json_each(d.j, '$.deps') AS e WHERE d.j->>'kind' <> 'c' GROUP BY 1, 2",
    "SELECT d.j->>'id', d.j->'deps'->0->>'name', e.key, e.value FROM T AS d LEFT JOIN LATERAL json_each(d.j, '$.tags') AS e ON true WHERE json_get_int(d.j, 'id') % 97 = 0",
    "SELECT json_get_int(e.value, 'v') AS v, count(*) FROM T AS d, json_each(d.j, '$.deps') AS e GROUP BY 1",
    "SELECT e.value->'v' AS v, count(*) FROM T AS d, json_each(d.j, '$.deps') AS e GROUP BY 1",
    "SELECT e.value->'src' AS s, count(*) FROM T AS d, json_each(d.j, '$.deps') AS e GROUP BY 1",
    "SELECT sum(json_get_float(e.value, 'v')) FROM T AS d, json_each(d.j, '$.deps') AS e",
    "SELECT count(json_get_str(e.value, 'v')) FROM T AS d, json_each(d.j, '$.deps') AS e",
    "SELECT e.value->>'name' AS n, json_get_int(e.value, 'v') AS v, e.value->'src'->>'u' AS u, count(*) FROM T AS d, json_each(d.j, '$.deps') AS e GROUP BY 1, 2, 3",
    "SELECT d.j->>'id', json_get_bool(e.value, 'u') FROM T AS d LEFT JOIN LATERAL json_each(d.j, '$.deps[0].src') AS e ON true WHERE json_get_int(d.j, 'id') % 13 = 0",
    "SELECT count(e.value->>0) FROM T AS d, json_each(d.j, '$.tags') AS e",
    "SELECT count(*) FROM T AS d, json_each(d.j, '$.tags') AS e",
    "SELECT d.j->>'id', count(*) FROM T AS d, json_each(d.j, '$.deps') AS e WHERE e.value->'src'->>'u' = 'u3' GROUP BY 1",
    "SELECT json_get_int(d.j, 'id') % 5 AS k, count(*) FROM T AS d LEFT JOIN LATERAL json_each(d.j, '$.deps') AS e ON true GROUP BY k",
    // Rows counted over objects shredded with some keys typed and the rest (`note`) in
    // their binary, over values that are no object, and over missing values.
    "SELECT count(*) FROM T AS d, json_each(d.j, '$.meta') AS e",
    "SELECT json_get_int(d.j, 'id') % 3 AS k, count(*) FROM T AS d, json_each(d.j, '$.nested') AS e GROUP BY 1",
    "SELECT d.j->>'kind' AS k, count(*) FROM T AS d LEFT JOIN LATERAL json_each(d.j, '$.nested') AS e ON true GROUP BY 1",
    // What is read of json_each's rows over map-like objects (a shredded member, the
    // rest in the object's binary, values that are no object) and over paths inside a
    // binary, members visited without writing the object as text.
    "SELECT e.value->>'w' AS w, count(*), sum(json_get_int(e.value, 'v')) FROM T AS d, json_each(d.j, '$.attrs') AS e GROUP BY 1",
    "SELECT d.j->>'id', e.value FROM T AS d, json_each(d.j, '$.attrs') AS e WHERE json_get_int(d.j, 'id') % 7 = 0",
    "SELECT count(*) FROM T AS d, json_each(d.j, '$.attrs') AS e WHERE e.value->>'v' IS NOT NULL",
    "SELECT e.value, count(*) FROM T AS d, json_each(d.j, '$.attrs.k007') AS e GROUP BY 1",
    "SELECT d.j->>'id', e.value, e.value->>'n' FROM T AS d, json_each(d.j, '$.meta.note') AS e",
    "SELECT e.value, count(*) FROM T AS d, json_each(d.j, '$.nested') AS e GROUP BY 1",
    "SELECT d.j->>'kind', e.value, count(*) FROM T AS d LEFT JOIN LATERAL json_each(d.j, '$.meta') AS e ON true GROUP BY 1, 2",
    // The elements of `CAST(x AS JSON[])`: arrays only (TRY_CAST: no rows for anything
    // else), `null` elements as SQL NULL.
    "SELECT s.u->>'name' AS n, count(*) FROM (SELECT unnest(TRY_CAST(j->'deps' AS JSON[])) AS u FROM T) AS s GROUP BY 1",
    "SELECT count(*) FROM (SELECT unnest(TRY_CAST(j->'deps' AS JSON[])) AS u FROM T) AS s WHERE s.u->'src'->>'u' = 'u3'",
    "SELECT count(*), count(s.u->>0) FROM (SELECT unnest(TRY_CAST(j->'tags' AS JSON[])) AS u FROM T) AS s",
    "SELECT s.id, json_get_int(s.u, 'v') FROM (SELECT j->>'id' AS id, unnest(TRY_CAST(j->'deps' AS JSON[])) AS u FROM T WHERE json_get_int(j, 'id') % 7 = 0) AS s",
    "SELECT s.id, s.u FROM (SELECT j->>'id' AS id, unnest(TRY_CAST(j->'deps' AS JSON[])) AS u FROM T WHERE json_get_int(j, 'id') % 11 = 0) AS s",
    "SELECT s.u->'src' AS src, count(*) FROM (SELECT unnest(CAST(j->'deps' AS JSON[])) AS u FROM T WHERE json_type(j->'deps') = 'ARRAY') AS s GROUP BY 1",
];

/// Casts that fail on some value fail the same way everywhere.
const FAILING: &[&str] = &[
    "SELECT sum((j->>'n')::BIGINT) FROM T",
    "SELECT count(*) FROM T WHERE (j->>'nested')::DOUBLE > 1",
    "SELECT count(*) FROM T WHERE CAST(j->>'day' AS DATE) > DATE '2023-06-01'",
];

/// A session with the generated files in `dir` as view `raw` (each file's rows that pass
/// `keep`) and ingested, one INSERT per file, into the Tessera table `t`.
async fn session_with_table(dir: &Path, keep: &str) -> TesseraSession {
    session_over(&write_files(dir), dir, keep).await
}

/// A session with `files` as view `raw` (the rows that pass `keep`) and ingested, one
/// INSERT per file, into the Tessera table `t` in `dir`.
async fn session_over(files: &[String], dir: &Path, keep: &str) -> TesseraSession {
    let table = dir.join("table").display().to_string();
    let session = session_with_raw(files, keep).await;
    session
        .sql(&format!(
            "CREATE EXTERNAL TABLE t STORED AS TESSERA LOCATION '{table}'"
        ))
        .await
        .unwrap();
    for file in files {
        rows(&session, &format!("INSERT INTO t SELECT j FROM '{file}'")).await;
    }
    session
}

/// A table of one file is one scan partition, so a round-robin repartition spreads its
/// rows before the json_each: the json_each and its path still move into the scan,
/// which reads that path alone instead of handing up whole documents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_each_over_one_file_reads_its_path_alone() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_files(dir.path());
    let session = session_over(&files[..1], dir.path(), "true").await;
    let query = "SELECT e.value->>'name' AS n, count(*) FROM T AS d, json_each(d.j, '$.deps') AS e GROUP BY n ORDER BY 2 DESC, n LIMIT 5";
    compare_three_ways(&session, &[query]).await;
    // Unaliased, no projection sits between the scan and the json_each's input.
    let plan = analyze(
        &session,
        "SELECT e.value->>'name' AS n, count(*) FROM t, json_each(t.j, '$.deps') AS e GROUP BY n",
    )
    .await;
    assert!(plan.contains("RoundRobinBatch"), "{plan}");
    assert!(plan.contains("raw_document=false"), "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_reads_answer_like_documents() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_with_table(dir.path(), "true").await;
    compare_three_ways(&session, QUERIES).await;
    for query in FAILING {
        for (table, typed) in [("raw", true), ("t", true), ("t", false)] {
            session
                .sql(&format!("SET tessera.typed_reads = {typed}"))
                .await
                .unwrap();
            let result = match session
                .sql(&query.replace("FROM T", &format!("FROM {table}")))
                .await
            {
                Ok(frame) => frame.collect().await.map(|_| ()),
                Err(e) => Err(e),
            };
            let error = result.expect_err(query).to_string();
            assert!(error.contains("Cannot cast"), "{query} on {table}: {error}");
        }
    }
    session.sql("SET tessera.typed_reads = true").await.unwrap();

    // The typed run reads typed columns and skips the files without `only_here`.
    let plan = analyze(
        &session,
        "SELECT count(*) FROM t WHERE j->>'only_here' = 'yes'",
    )
    .await;
    assert_eq!(metric(&plan, "files_pruned"), 2, "{plan}");
    assert!(metric(&plan, "values_typed") > 0, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    let plan = analyze(
        &session,
        "SELECT count(*) FROM t WHERE json_get_int(j, 'n') > 1000",
    )
    .await;
    assert_eq!(
        metric(&plan, "files_pruned") + metric(&plan, "files_scanned"),
        3,
        "{plan}"
    );
    // `n` mixes types: its majority is typed, the rest are outliers patched in from the
    // Variant binary.
    let plan = analyze(&session, "SELECT sum(json_get_int(j, 'n')) FROM t").await;
    assert!(metric(&plan, "values_typed") > 0, "{plan}");
    assert!(metric(&plan, "values_binary") > 0, "{plan}");
    // Rare paths are not shredded: they are read from the documents' binary, not from
    // reconstructed text.
    let plan = analyze(
        &session,
        "SELECT count(j->>'s'), count(j->'arr'->> -1) FROM t",
    )
    .await;
    assert!(metric(&plan, "values_binary") > 0, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // A cast an aggregate applies to a JSON access is computed by the scan, which
    // reads typed integers as integers instead of rendering and parsing them.
    let plan = analyze(
        &session,
        "SELECT sum(CAST(j->'nested'->>'x' AS BIGINT)) FROM t WHERE j->'nested'->>'y' = 'p'",
    )
    .await;
    assert!(plan.contains("__tessera_pushed_cast_0"), "{plan}");
    // Dates and times are stored typed, each file in its own rendering, and a cast to
    // TIMESTAMP reads the typed values themselves.
    let described = rows(&session, "DESCRIBE t").await;
    for format in ["%Y-%m-%dT%H:%M:%S%.3fZ", "%Y-%m-%dT%H:%M:%S+02:00"] {
        let at = format!("$.at | date_time '{format}'");
        assert!(
            described.iter().any(|row| row.starts_with(&at)),
            "{at} in {described:?}"
        );
    }
    // Their texts sort as their values do, so statistics skip files by text bounds:
    // file 2 holds only 2024 timestamps and no outlier.
    let plan = analyze(
        &session,
        "SELECT count(*) FROM t WHERE j->>'at' < '2024-01-01'",
    )
    .await;
    assert_eq!(metric(&plan, "files_pruned"), 1, "{plan}");
    let plan = analyze(
        &session,
        "SELECT count(CAST(j->>'at' AS TIMESTAMP)), count(j->>'day') FROM t",
    )
    .await;
    assert!(metric(&plan, "values_typed") > 15_000, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // Elements of short arrays come from the typed list; element outliers, values
    // that are no array, and the long arrays of file 2 from the binary.
    let plan = analyze(
        &session,
        "SELECT count(j->'tags'->>0), count(j->'tags'->> -1) FROM t",
    )
    .await;
    assert!(metric(&plan, "values_typed") > 4000, "{plan}");
    assert!(metric(&plan, "values_binary") > 3000, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // Whole objects and keys an object does not shred are rebuilt from that object's
    // columns (its typed dates as their text), not from whole documents.
    let plan = analyze(
        &session,
        "SELECT count(j->'nested'), count(j->'nested'->>'zz'), max(j->>'nested') FROM t",
    )
    .await;
    assert!(metric(&plan, "values_binary") > 7000, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // Whole arrays and paths below an element are rebuilt from the list's columns.
    let plan = analyze(
        &session,
        "SELECT count(j->'tags'), sum(json_length(j->'tags')), count(j->'tags'->2->>'t') FROM t",
    )
    .await;
    assert!(metric(&plan, "values_binary") > 8000, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // Keys of the elements of an array of objects come from their typed columns; their
    // outliers, elements that are no object and values that are no array from binaries.
    let plan = analyze(
        &session,
        "SELECT count(j->'deps'->0->>'name'), count(j->'deps'-> -1->'src'->>'u') FROM t",
    )
    .await;
    assert!(metric(&plan, "values_typed") > 10_000, "{plan}");
    assert!(metric(&plan, "values_binary") > 300, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // json_each at a path walks the value there, which the scan reads alone (the
    // shredded list, not whole documents).
    let plan = analyze(
        &session,
        "SELECT count(e.value) FROM t AS d, json_each(d.j, '$.deps') AS e",
    )
    .await;
    assert!(metric(&plan, "values_binary") > 8000, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // What a query reads of json_each's rows over a list of objects comes from the
    // elements' typed columns: no element is written as text, only outliers and values
    // that are no array come from binaries.
    let plan = analyze(
        &session,
        "SELECT e.value->>'name' AS n, count(*) FROM t AS d, json_each(d.j, '$.deps') AS e GROUP BY n",
    )
    .await;
    assert!(plan.contains("__tessera_json_each_json_get_text"), "{plan}");
    assert!(metric(&plan, "values_typed") > 20_000, "{plan}");
    assert!(metric(&plan, "values_binary") < 2000, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    let plan = analyze(
        &session,
        "SELECT count(*) FROM t AS d, json_each(d.j, '$.deps') AS e",
    )
    .await;
    assert!(plan.contains("__tessera_json_each_rows"), "{plan}");
    assert!(metric(&plan, "values_binary") < 1000, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // Several accesses to the rows are the fields of one list, each read from the
    // elements' typed column at its key path.
    let plan = analyze(
        &session,
        "SELECT e.value->>'name' AS n, count(e.value->'src'->>'u') FROM t AS d, json_each(d.j, '$.deps') AS e GROUP BY n",
    )
    .await;
    assert!(plan.contains("__tessera_json_each_fields"), "{plan}");
    assert!(metric(&plan, "values_typed") > 40_000, "{plan}");
    assert!(metric(&plan, "values_binary") < 4000, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // The rows of objects are counted from their typed fields and their binary's
    // object, not written as text.
    let plan = analyze(
        &session,
        "SELECT count(*) FROM t AS d, json_each(d.j, '$.meta') AS e",
    )
    .await;
    assert!(plan.contains("__tessera_json_each_rows"), "{plan}");
    let typed = metric(&plan, "values_typed");
    assert!(typed > 5000, "{plan}");
    assert!(metric(&plan, "values_binary") < typed / 5, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // So does what it reads of the elements of `CAST(x AS JSON[])`.
    let plan = analyze(
        &session,
        "SELECT count(*) FROM (SELECT unnest(TRY_CAST(j->'deps' AS JSON[])) AS u FROM t) AS s WHERE s.u->>'name' = 'p3'",
    )
    .await;
    assert!(
        plan.contains("__tessera_try_json_list_json_get_text"),
        "{plan}"
    );
    assert!(metric(&plan, "values_typed") > 20_000, "{plan}");
    assert!(metric(&plan, "values_binary") < 2000, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // Array lengths come from the lists' offsets, not from their text: only values
    // that are no typed list (file 2's long tags, outliers) are counted from binaries.
    let plan = analyze(
        &session,
        "SELECT sum(json_array_length(j->'deps')), sum(json_array_length(j, '$.tags')) FROM t",
    )
    .await;
    assert!(plan.contains("ArrayLength"), "{plan}");
    assert!(metric(&plan, "values_typed") > 12_000, "{plan}");
    assert!(metric(&plan, "values_binary") < 4500, "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    // The lengths of a shredded list come from its offsets: the reader decodes one leaf
    // below the elements, not the elements' columns the whole list reads.
    let lengths = analyze(&session, "SELECT sum(json_array_length(j->'deps')) FROM t").await;
    let whole = analyze(&session, "SELECT count(j->'deps') FROM t").await;
    let (lengths, whole) = (
        metric(&lengths, "bytes_scanned"),
        metric(&whole, "bytes_scanned"),
    );
    assert!(
        lengths < whole,
        "{lengths} bytes for lengths, {whole} for whole lists"
    );
    // Accesses to the document above a json_each are computed below its UNNEST: the
    // scan reads their typed columns instead of handing up whole documents.
    let plan = analyze(
        &session,
        "SELECT d.j->'meta'->>'kind' AS k, count(*) FROM t AS d, json_each(d.j, '$.deps') AS e GROUP BY k",
    )
    .await;
    assert!(plan.contains("raw_document=false"), "{plan}");
    assert_eq!(metric(&plan, "values_reconstructed"), 0, "{plan}");
    let plan = analyze(&session, "SELECT sum(json_get_int(j, 'nums', 1)) FROM t").await;
    assert_eq!(metric(&plan, "values_typed"), 9000, "{plan}");
    assert_eq!(metric(&plan, "values_binary"), 0, "{plan}");
    session
        .sql("SET tessera.typed_reads = false")
        .await
        .unwrap();
    let plan = analyze(
        &session,
        "SELECT count(*) FROM t WHERE j->>'only_here' = 'yes'",
    )
    .await;
    assert_eq!(metric(&plan, "files_pruned"), 0, "{plan}");
    assert_eq!(metric(&plan, "values_typed"), 0, "{plan}");
}

/// Runs each query (written against `T`) over `raw`, over `t` and over `t` without
/// typed reads, and fails unless all three answer the same rows.
async fn compare_three_ways(session: &TesseraSession, queries: &[&str]) {
    let mut failures = Vec::new();
    for query in queries {
        let expected = rows(session, &query.replace("FROM T", "FROM raw")).await;
        let typed = rows(session, &query.replace("FROM T", "FROM t")).await;
        session
            .sql("SET tessera.typed_reads = false")
            .await
            .unwrap();
        let untyped = rows(session, &query.replace("FROM T", "FROM t")).await;
        session.sql("SET tessera.typed_reads = true").await.unwrap();
        assert!(!expected.is_empty(), "{query} returns rows");
        if typed != expected || untyped != expected {
            // The first rows where the answers part.
            let at = (0..expected.len().max(typed.len()).max(untyped.len()))
                .find(|&i| expected.get(i) != typed.get(i) || expected.get(i) != untyped.get(i))
                .unwrap_or(0);
            let rows = |r: &[String]| r[at.min(r.len())..(at + 3).min(r.len())].to_vec();
            failures.push(format!(
                "{query}\n  from row {at}:\n  raw:     {:?}\n  typed:   {:?}\n  untyped: {:?}",
                rows(&expected),
                rows(&typed),
                rows(&untyped),
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Filters on low-cardinality paths, written against a table named `T`: on one path
/// alone (judged once per distinct value of a file's dictionary), on a path with
/// outliers in some files (judged per row there), on several paths at once (per row).
const CODED_FILTERS: &[&str] = &[
    "SELECT j->>'id' FROM T WHERE j->>'kind' = 'a'",
    "SELECT count(*) FROM T WHERE j->>'kind' IN ('a', 'c') AND j->'nested'->>'y' <> 'q'",
    "SELECT count(*) FROM T WHERE j->'nested'->>'y' IS NULL",
    "SELECT j->>'id', j->'nested'->>'y' FROM T WHERE j->'nested'->>'y' LIKE 'p%' OR j->'nested'->>'y' IS NULL",
    "SELECT count(*) FROM T WHERE j->>'only_here' = 'yes' AND j->>'kind' = 'b'",
    "SELECT count(*) FROM T WHERE upper(j->>'kind') = 'B' AND length(j->'nested'->>'y') = 1",
    "SELECT j->>'id', j->>'n' FROM T WHERE json_get_str(j, 'n') IN ('t7', 's3')",
    "SELECT j->>'id' FROM T WHERE j->>'n' = '7' AND j->>'kind' <> 'b'",
    "SELECT count(*) FROM T WHERE j->>'kind' = 'a' OR json_get_int(j, 'n') > 100",
    "SELECT j->>'kind', count(*) FROM T WHERE j->>'kind' <> 'c' GROUP BY 1",
    "SELECT j->>'kind', j->>'id' FROM T WHERE j->>'kind' = 'a' AND json_get_int(j, 'id') % 10 = 3",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_on_codes_answer_like_strings() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_with_table(dir.path(), "true").await;
    compare_three_ways(&session, CODED_FILTERS).await;
    // Small batches: each file's dictionary comes with several batches, whose verdicts
    // are reused, and the next file's with its own.
    session
        .sql("SET datafusion.execution.batch_size = 512")
        .await
        .unwrap();
    compare_three_ways(&session, CODED_FILTERS).await;
    session
        .sql("SET datafusion.execution.batch_size = 8192")
        .await
        .unwrap();
    // `kind` is a string in every document: its filter is judged on the codes, and no
    // file reads its (empty) outlier column.
    let plan = analyze(&session, "SELECT count(*) FROM t WHERE j->>'kind' = 'a'").await;
    assert!(metric(&plan, "values_coded") > 0, "{plan}");
    assert_eq!(metric(&plan, "outlier_columns_skipped"), 3, "{plan}");
    assert_eq!(metric(&plan, "values_binary"), 0, "{plan}");
    // `n` has outliers in every file: they are read and patched in.
    let plan = analyze(&session, "SELECT count(*) FROM t WHERE j->>'n' = '7'").await;
    assert_eq!(metric(&plan, "outlier_columns_skipped"), 0, "{plan}");
    assert!(metric(&plan, "values_binary") > 0, "{plan}");
}

/// Aggregates grouped on text paths, written against a table named `T`, and whether
/// they are grouped on dictionary codes over the table.
const GROUPED: &[(&str, bool)] = &[
    ("SELECT j->>'kind', count(*) FROM T GROUP BY 1", true),
    // `n` is typed as integers with string outliers (and strings in half of file 1):
    // its texts are rendered, then grouped on codes.
    (
        "SELECT j->>'n', count(*), sum(json_get_int(j, 'n')) FROM T GROUP BY 1",
        true,
    ),
    (
        "SELECT j->'nested'->>'y', j->>'kind', count(*), max(j->>'id') FROM T GROUP BY 1, 2",
        true,
    ),
    (
        "SELECT j->>'only_here', count(*), min(json_get_float(j, 'f')) FROM T GROUP BY 1",
        true,
    ),
    (
        "SELECT j->>'kind', hour(CAST(j->>'at' AS TIMESTAMP)) AS h, count(*) FROM T WHERE j->>'flag' = 'true' GROUP BY 1, 2",
        true,
    ),
    (
        "SELECT j->>'kind', json_get_bool(j, 'flag'), count(*) FILTER (WHERE json_get_int(j, 'n') > 100), round(avg(json_get_float(j, 'f')), 6) FROM T GROUP BY 1, 2",
        true,
    ),
    // DataFusion groups on (kind, n) first, on codes, then counts the pairs.
    (
        "SELECT j->>'kind', count(DISTINCT j->>'n') FROM T GROUP BY 1",
        true,
    ),
    // With other aggregates, the distinct values are collected per code.
    (
        "SELECT j->>'kind', count(*), count(DISTINCT j->>'n'), count(DISTINCT j->'nested'->>'y') FILTER (WHERE json_get_int(j, 'id') % 2 = 0) FROM T GROUP BY 1",
        true,
    ),
    // Distinct values met as codes (`kind` repeats) and as strings (`id` does not).
    (
        "SELECT j->'nested'->>'y', count(DISTINCT j->>'kind'), count(DISTINCT j->>'id') FROM T GROUP BY 1",
        true,
    ),
    // 9000 distinct ids: more than codes pay for.
    ("SELECT j->>'id', count(*) FROM T GROUP BY 1", false),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouping_on_codes_answers_like_strings() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_with_table(dir.path(), "true").await;
    let set = |option: &str| {
        let session = &session;
        let option = option.to_string();
        async move { session.sql(&format!("SET {option}")).await.unwrap() }
    };
    let mut failures = Vec::new();
    for &(query, on_codes) in GROUPED {
        let on_table = query.replace("FROM T", "FROM t");
        let expected = rows(&session, &query.replace("FROM T", "FROM raw")).await;
        let coded = rows(&session, &on_table).await;
        let plan = analyze(&session, &on_table).await;
        set("tessera.group_on_codes = false").await;
        let strings = rows(&session, &on_table).await;
        set("tessera.group_on_codes = true").await;
        set("tessera.typed_reads = false").await;
        let untyped = rows(&session, &on_table).await;
        set("tessera.typed_reads = true").await;
        assert!(expected.len() > 1, "{query} returns groups");
        if coded != expected || strings != expected || untyped != expected {
            failures.push(format!(
                "{query}\n  raw:     {:?}\n  coded:   {:?}\n  strings: {:?}\n  untyped: {:?}",
                &expected[..expected.len().min(5)],
                &coded[..coded.len().min(5)],
                &strings[..strings.len().min(5)],
                &untyped[..untyped.len().min(5)],
            ));
        }
        assert_eq!(plan.contains("CodeAggregateExec"), on_codes, "{plan}");
        if on_codes {
            assert!(metric(&plan, "dictionaries") > 0, "{plan}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The distinct values of a path whose values repeat are met as codes too.
    let plan = analyze(
        &session,
        "SELECT j->'nested'->>'y', count(DISTINCT j->>'kind'), count(DISTINCT j->>'id') FROM t GROUP BY 1",
    )
    .await;
    assert!(
        plan.contains("CAST(json_get_text(j@0, kind) AS Dictionary"),
        "{plan}"
    );
    assert!(
        !plan.contains("CAST(json_get_text(j@0, id) AS Dictionary"),
        "{plan}"
    );
    // `kind` is a string in every document: every value is handed on as a code of the
    // dictionaries the files store, none as a string.
    let plan = analyze(&session, "SELECT j->>'kind', count(*) FROM t GROUP BY 1").await;
    assert_eq!(metric(&plan, "values_coded"), 9000, "{plan}");
    set("tessera.group_on_codes = false").await;
    let plan = analyze(&session, "SELECT j->>'kind', count(*) FROM t GROUP BY 1").await;
    assert!(!plan.contains("CodeAggregateExec"), "{plan}");
    assert_eq!(metric(&plan, "values_coded"), 0, "{plan}");
}

/// MIN and MAX of the text of an integer path equal the texts of the integers' MIN and
/// MAX when every file holds only non-negative integers of one number of digits there;
/// the table then aggregates the integers. Otherwise (other digit counts, an outlier)
/// texts are compared as texts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_max_of_integer_texts_read_integers() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let files: Vec<String> = (0..3)
        .map(|file| {
            let text: String = (0..2000)
                .map(|_| {
                    // `t`: 16 digits everywhere; `u`: 2 or 3 digits, so "100" < "95".
                    format!(
                        "{{\"g\":\"{}\",\"t\":{},\"u\":{}}}\n",
                        ["a", "b", "c"][rng.below(3) as usize],
                        1_700_000_000_000_000 + rng.below(1_000_000_000),
                        10 + rng.below(200)
                    )
                })
                .collect();
            let path = dir.path().join(format!("part{file}.json"));
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        })
        .collect();
    let session = session_over(&files, dir.path(), "true").await;
    let table = dir.path().join("table").display().to_string();
    let queries = [
        (
            "SELECT j->>'g', min(j->>'t'), max(j->>'t'), count(*) FROM T GROUP BY 1",
            true,
        ),
        (
            "SELECT min(j->>'t'), max(j->>'u'), min(j->>'u') FROM T",
            true,
        ),
        ("SELECT j->>'g', max(j->>'u') FROM T GROUP BY 1", false),
    ];
    compare_min_max(&session, &queries).await;
    // A text among the integers: every text is compared as text again.
    let outlier = dir.path().join("outlier.json");
    std::fs::write(&outlier, "{\"g\":\"a\",\"t\":\"1\",\"u\":5}\n").unwrap();
    rows(
        &session,
        &format!("INSERT INTO t SELECT j FROM '{}'", outlier.display()),
    )
    .await;
    let files = [files, vec![outlier.display().to_string()]].concat();
    let session = session_with_raw(&files, "true").await;
    session
        .sql(&format!(
            "CREATE EXTERNAL TABLE t STORED AS TESSERA LOCATION '{table}'"
        ))
        .await
        .unwrap();
    compare_min_max(&session, &queries.map(|(query, _)| (query, false))).await;
}

/// Runs each query over `raw` and `t`, compares the answers and checks whether the
/// table's plan aggregated integers (a cast pushed into the scan).
async fn compare_min_max(session: &TesseraSession, queries: &[(&str, bool)]) {
    for &(query, on_integers) in queries {
        let on_table = query.replace("FROM T", "FROM t");
        let expected = rows(session, &query.replace("FROM T", "FROM raw")).await;
        assert_eq!(rows(session, &on_table).await, expected, "{query}");
        let plan = analyze(session, &on_table).await;
        let pushed = plan.contains("__tessera_pushed_cast_");
        assert_eq!(pushed, on_integers, "{query}\n{plan}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_reads_honour_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let deleted = "j->>'kind' = 'b' AND json_get_int(j, 'id') % 3 = 0";
    let session = session_with_table(dir.path(), &format!("NOT ({deleted})")).await;
    rows(&session, &format!("DELETE FROM t WHERE {deleted}")).await;
    for query in QUERIES {
        let expected = rows(&session, &query.replace("FROM T", "FROM raw")).await;
        let typed = rows(&session, &query.replace("FROM T", "FROM t")).await;
        assert_eq!(typed, expected, "{query}");
    }
}

/// A table of one file scanned by more partitions than it has files: each partition
/// reads a share of the file's rows (with deletes applied), and together they answer
/// as one partition reading the whole file does, and as the raw files do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shares_of_one_file_answer_like_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let deleted = "j->>'kind' = 'b' AND json_get_int(j, 'id') % 3 = 0";
    let parts = write_files_of(dir.path(), 6000);
    let one = concatenated(dir.path(), "one.json", &parts);
    let session = session_over(
        std::slice::from_ref(&one),
        dir.path(),
        &format!("NOT ({deleted})"),
    )
    .await;
    rows(&session, &format!("DELETE FROM t WHERE {deleted}")).await;
    let set = |n: usize| format!("SET datafusion.execution.target_partitions = {n}");
    rows(&session, &set(4)).await;
    let plan = rows(&session, "EXPLAIN SELECT count(*) FROM t")
        .await
        .join("\n");
    // 18,000 rows make two shares of at least 8,192 rows, as two byte ranges.
    assert_eq!(plan.matches(".parquet:").count(), 2, "{plan}");
    let mut failures = Vec::new();
    for query in QUERIES {
        let expected = rows(&session, &query.replace("FROM T", "FROM raw")).await;
        rows(&session, &set(4)).await;
        let shared = rows(&session, &query.replace("FROM T", "FROM t")).await;
        rows(&session, &set(1)).await;
        let whole = rows(&session, &query.replace("FROM T", "FROM t")).await;
        if shared != expected || whole != expected {
            failures.push(format!(
                "{query}: raw {} rows, shares {}, whole {}",
                expected.len(),
                shared.len(),
                whole.len()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Queries over a table big enough for several pages per column, written against `T`:
/// the writer clusters rows by `kind` (4 values) and then `op` (6 values), so tests of
/// them skip pages.
const PAGE_QUERIES: &[&str] = &[
    "SELECT count(*), sum(json_get_int(j, 'id')) FROM T WHERE j->>'kind' = 'beta'",
    "SELECT j->>'op', count(*), min(j->>'id') FROM T WHERE j->>'kind' = 'gamma' AND j->>'op' IN ('x', 'z') GROUP BY 1",
    "SELECT count(*) FROM T WHERE j->>'kind' = '7'",
    "SELECT j->>'id', j->'kind' FROM T WHERE j->>'kind' >= 'gamma'",
    "SELECT count(*) FROM T WHERE j->>'kind' IS NULL",
    "SELECT count(*) FROM T WHERE j->>'op' = 'y' AND json_get_int(j, 'id') < 50000",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_skipping_keeps_answers_exact() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let text: String = (0..120_000)
        .map(|id| {
            // A few outliers (a number, a null, absent) among the clustered strings.
            let kind = match rng.below(1000) {
                0 => "7".to_string(),
                1 => "null".to_string(),
                r => format!(
                    r#""{}""#,
                    ["alpha", "beta", "gamma", "delta"][r as usize % 4]
                ),
            };
            let kind = match rng.below(500) {
                0 => String::new(),
                _ => format!(r#""kind":{kind},"#),
            };
            let op = ["u", "v", "w", "x", "y", "z"][rng.below(6) as usize];
            format!(r#"{{{kind}"op":"{op}","id":{id}}}"#) + "\n"
        })
        .collect();
    let file = dir.path().join("events.json");
    std::fs::write(&file, text).unwrap();
    let file = file.display().to_string();
    let table = dir.path().join("table").display().to_string();
    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap();
    let session = TesseraSession::new(s3, SessionOptions::default()).unwrap();
    for sql in [
        format!("CREATE EXTERNAL TABLE t STORED AS TESSERA LOCATION '{table}'"),
        format!("INSERT INTO t SELECT j FROM '{file}'"),
    ] {
        rows(&session, &sql).await;
    }
    for query in PAGE_QUERIES {
        let expected = rows(
            &session,
            &query.replace("FROM T", &format!("FROM '{file}'")),
        )
        .await;
        let typed = rows(&session, &query.replace("FROM T", "FROM t")).await;
        assert!(!expected.is_empty(), "{query} returns rows");
        assert_eq!(typed, expected, "{query}");
    }
    let plan = analyze(&session, "SELECT count(*) FROM t WHERE j->>'kind' = 'beta'").await;
    // A quarter of the rows are 'beta': pages holding only other kinds are skipped.
    assert!(metric(&plan, "rows_pruned") > 40_000, "{plan}");
    // A short IN list (which DataFusion turns into ORs) skips pages too.
    let short_list = "SELECT count(*) FROM t WHERE j->>'kind' IN ('alpha', 'beta')";
    let plan = analyze(&session, short_list).await;
    assert!(metric(&plan, "rows_pruned") > 40_000, "{plan}");
    assert_eq!(
        rows(&session, short_list).await,
        rows(
            &session,
            &short_list.replace("FROM t", &format!("FROM '{file}'"))
        )
        .await
    );
    // Outliers of `kind` keep their pages; so does every page without a typed kind.
    let plan = analyze(&session, "SELECT count(*) FROM t WHERE j->>'kind' = '7'").await;
    assert!(metric(&plan, "rows_pruned") > 0, "{plan}");
}
