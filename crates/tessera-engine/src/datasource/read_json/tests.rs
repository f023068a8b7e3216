//! read_json over generated files with malformed records: every record is a row or a
//! counted reject with its place, or the statement fails naming the first bad record.

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::Int64Type;

use crate::test_support::session_with;
use crate::{SessionOptions, TesseraSession};

/// A small deterministic generator (xorshift), so that failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// `count` NDJSON records, about one in five malformed; the 1-based lines of those.
fn generated(rng: &mut Rng, count: usize) -> (String, Vec<usize>) {
    let mut text = String::new();
    let mut bad = Vec::new();
    for line in 1..=count {
        let record = match rng.next(5) {
            0 => {
                bad.push(line);
                ["{\"id\":1,\"s\":\"open", "{\"id\":}", "{\"id\" 2}", "[1,"][rng.next(4) as usize]
                    .to_string()
            }
            _ => format!("{{\"id\":{line},\"s\":\"v{}\"}}", rng.next(9)),
        };
        text.push_str(&record);
        text.push('\n');
    }
    (text, bad)
}

fn session() -> TesseraSession {
    session_with(SessionOptions::default())
}

async fn counts(session: &TesseraSession, sql: &str) -> Result<(i64, i64), String> {
    let frame = session.sql(sql).await.map_err(|e| e.to_string())?;
    let batches: Vec<RecordBatch> = frame.collect().await.map_err(|e| e.to_string())?;
    let value = |c: usize| batches[0].column(c).as_primitive::<Int64Type>().value(0);
    Ok((value(0), value(1)))
}

#[tokio::test]
async fn malformed_records_are_null_rows_counted_with_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("generated.ndjson");
    let (text, bad) = generated(&mut Rng(0x2545_f491_4f6c_dd1d), 300);
    std::fs::write(&file, text).unwrap();
    let file = file.display().to_string();
    let session = session();
    let sql = format!("SELECT count(*), count(id) FROM read_ndjson('{file}', ignore_errors=true)");
    let (rows, ids) = counts(&session, &sql).await.unwrap();
    assert_eq!((rows, ids), (300, 300 - bad.len() as i64));
    let rejects = session.take_rejects();
    assert_eq!(rejects.count, bad.len() as u64);
    let lines: Vec<usize> = rejects.samples.iter().map(|r| r.line as usize).collect();
    assert_eq!(lines, bad[..bad.len().min(lines.len())]);

    let strict = format!("SELECT count(*), count(id) FROM read_ndjson('{file}')");
    let error = counts(&session, &strict).await.unwrap_err();
    let first = format!("{file} line {} ", bad[0]);
    assert!(
        error.contains(&first) && error.contains("malformed JSON"),
        "{error}"
    );
}

#[tokio::test]
async fn values_the_sample_did_not_see_are_errors_not_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("late.json");
    let mut text: String = (0..50).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    text.push_str("{\"n\":\"fifty\"}\n");
    std::fs::write(&file, text).unwrap();
    let file = file.display().to_string();
    let session = session();
    let sampled = format!("SELECT count(*), count(n) FROM read_json('{file}', sample_size=10)");
    let error = counts(&session, &sampled).await.unwrap_err();
    assert!(
        error.contains("line 51") && error.contains("\"n\""),
        "{error}"
    );
    let ignored = format!(
        "SELECT count(*), count(n) FROM read_json('{file}', sample_size=10, ignore_errors=true)"
    );
    assert_eq!(counts(&session, &ignored).await.unwrap(), (51, 50));
    let all = format!("SELECT count(*), count(n) FROM read_json('{file}')");
    assert_eq!(counts(&session, &all).await.unwrap(), (51, 51));
}

/// A generated GeoJSON geometry (points and line strings of small integers), or, when
/// `malformed`, a point whose coordinates are strings.
fn geometry(rng: &mut Rng, malformed: bool) -> String {
    let mut number = || rng.next(100) as i64 - 50;
    match (malformed, number() % 2 == 0) {
        (true, _) => r#"{"type":"Point","coordinates":["x","y"]}"#.to_string(),
        (false, true) => format!(
            r#"{{"type":"Point","coordinates":[{},{}]}}"#,
            number(),
            number()
        ),
        (false, false) => format!(
            r#"{{"type":"LineString","coordinates":[[{},{}],[{},{}]]}}"#,
            number(),
            number(),
            number(),
            number()
        ),
    }
}

/// Each row's text in column 0 (NULL as `None`).
async fn texts(session: &TesseraSession, sql: &str) -> Result<Vec<Option<String>>, String> {
    let frame = session.sql(sql).await.map_err(|e| e.to_string())?;
    let batches: Vec<RecordBatch> = frame.collect().await.map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for batch in &batches {
        let column = arrow::compute::cast(batch.column(0), &arrow::datatypes::DataType::Utf8)
            .map_err(|e| e.to_string())?;
        out.extend(
            column
                .as_string::<i32>()
                .iter()
                .map(|v| v.map(str::to_string)),
        );
    }
    Ok(out)
}

/// A generated feature collection reads as one row per feature, its geometry as
/// `ST_GeomFromGeoJSON` reads the same text, its colliding property renamed.
#[tokio::test]
async fn feature_collections_read_as_their_features() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("generated.geojson");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let geometries: Vec<Option<String>> = (0..40)
        .map(|_| (rng.next(6) != 0).then(|| geometry(&mut rng, false)))
        .collect();
    let features: Vec<String> = geometries
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let g = g.as_deref().unwrap_or("null");
            format!(r#"{{"type":"Feature","id":{i},"geometry":{g},"properties":{{"id":"p{i}"}}}}"#)
        })
        .collect();
    let text = format!(
        r#"{{"type":"FeatureCollection","features":[{}]}}"#,
        features.join(",\n")
    );
    std::fs::write(&file, text).unwrap();
    let session = session();
    let sql = format!(
        "SELECT ST_AsText(geometry), id, id_1 FROM read_json('{}') ORDER BY id",
        file.display()
    );
    let got = texts(&session, &sql).await.unwrap();
    for (row, geometry) in geometries.iter().enumerate() {
        let expected = match geometry {
            Some(g) => texts(
                &session,
                &format!("SELECT ST_AsText(ST_GeomFromGeoJSON('{g}'))"),
            )
            .await
            .unwrap()
            .remove(0),
            None => None,
        };
        assert_eq!(got[row], expected, "feature {row}");
    }
    let ids = format!(
        "SELECT id_1 FROM read_json('{}') ORDER BY id",
        file.display()
    );
    let ids = texts(&session, &ids).await.unwrap();
    assert_eq!(ids[7].as_deref(), Some("p7"));
}

/// A malformed geometry in a generated `.geojsonl` fails naming its line, or with
/// `ignore_errors` is NULL and counted in the reject log with its line.
#[tokio::test]
async fn malformed_geometries_fail_or_are_counted_with_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("generated.geojsonl");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut bad = Vec::new();
    let mut text = String::new();
    for line in 1..=60 {
        let malformed = line > 1 && rng.next(5) == 0;
        if malformed {
            bad.push(line);
        }
        let g = geometry(&mut rng, malformed);
        text.push_str(&format!(
            r#"{{"type":"Feature","geometry":{g},"properties":{{"n":{line}}}}}"#
        ));
        text.push('\n');
    }
    std::fs::write(&file, text).unwrap();
    let file = file.display().to_string();
    let session = session();
    let strict = format!("SELECT count(*), count(geometry) FROM read_json('{file}')");
    let error = counts(&session, &strict).await.unwrap_err();
    assert!(
        error.contains(&format!("{file} line {} ", bad[0])) && error.contains("GeoJSON"),
        "{error}"
    );
    let lenient =
        format!("SELECT count(*), count(geometry) FROM read_json('{file}', ignore_errors=true)");
    let (rows, geometries) = counts(&session, &lenient).await.unwrap();
    assert_eq!((rows, geometries), (60, 60 - bad.len() as i64));
    let rejects = session.take_rejects();
    assert_eq!(rejects.count, bad.len() as u64);
    let lines: Vec<usize> = rejects.samples.iter().map(|r| r.line as usize).collect();
    assert_eq!(lines, bad[..bad.len().min(lines.len())]);
}

/// Generated records whose object `m` has more keys than `map_inference_threshold`
/// read back as an Arrow map holding every record's keys and values, in order; with
/// inference of maps off, as a struct.
#[tokio::test]
async fn objects_with_many_keys_read_back_as_maps() {
    use arrow::array::{Array, MapArray};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("maps.ndjson");
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    let records: Vec<Vec<(String, i64)>> = (0..50)
        .map(|_| {
            (0..rng.next(6))
                .map(|_| (format!("k{}", rng.next(40)), rng.next(1000) as i64 - 500))
                .fold(Vec::new(), |mut pairs, (k, v)| {
                    if !pairs.iter().any(|(seen, _)| *seen == k) {
                        pairs.push((k, v));
                    }
                    pairs
                })
        })
        .collect();
    let text: String = records
        .iter()
        .enumerate()
        .map(|(i, pairs)| {
            let members: Vec<String> = pairs.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            format!("{{\"id\":{i},\"m\":{{{}}}}}\n", members.join(","))
        })
        .collect();
    std::fs::write(&file, text).unwrap();
    let session = session();
    let sql = format!(
        "SELECT m FROM read_json('{}', map_inference_threshold=10) ORDER BY id",
        file.display()
    );
    let batches: Vec<RecordBatch> = session.sql(&sql).await.unwrap().collect().await.unwrap();
    let mut got: Vec<Vec<(String, i64)>> = Vec::new();
    for batch in &batches {
        let maps = batch.column(0).as_any().downcast_ref::<MapArray>().unwrap();
        for row in 0..maps.len() {
            let entries = maps.value(row);
            let keys = entries.column(0).as_string::<i32>();
            let values = entries.column(1).as_primitive::<Int64Type>();
            got.push(
                (0..entries.len())
                    .map(|i| (keys.value(i).to_string(), values.value(i)))
                    .collect(),
            );
        }
    }
    assert_eq!(got, records);
    let off = format!(
        "SELECT typeof(m) FROM read_json('{}', map_inference_threshold=-1) LIMIT 1",
        file.display()
    );
    let typed = texts(&session, &off).await.unwrap();
    assert!(
        typed[0].as_deref().unwrap().starts_with("STRUCT("),
        "{typed:?}"
    );
}
