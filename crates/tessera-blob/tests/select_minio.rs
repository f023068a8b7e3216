//! S3 Select against a real MinIO: every answer equals the same filter and projection
//! applied locally to the object's records, an expression MinIO refuses is an error, and
//! an answer cut by the network (toxiproxy) is an error, never a short result.

use bytes::Bytes;
use tessera_blob::s3::{S3Client, S3Error};
use tessera_blob::select::{CsvHeader, InputCompression, InputFormat, OutputFormat, SelectRequest};
use tessera_testkit::{Direction, MinioServer, Toxic, Toxiproxy, fault_retrieval_options};

mod common;
use common::bounded;

const BUCKET: &str = "select";
const ROWS: u64 = 20_000;

/// Row `i`'s fields: `(id, k, v, name)`; every 11th row's `v` is null.
fn row(i: u64) -> (u64, u64, Option<u64>, String) {
    let v = (!i.is_multiple_of(11)).then_some(i.wrapping_mul(7919) % 1000);
    (i, i % 7, v, format!("n{}", i * 13 % 97))
}

fn ndjson() -> Bytes {
    let mut out = String::new();
    for i in 0..ROWS {
        let (id, k, v, name) = row(i);
        match v {
            Some(v) => out.push_str(&format!(r#"{{"id":{id},"k":{k},"v":{v},"name":"{name}"}}"#)),
            None => out.push_str(&format!(
                r#"{{"id":{id},"k":{k},"v":null,"name":"{name}"}}"#
            )),
        }
        out.push('\n');
    }
    Bytes::from(out)
}

fn csv() -> Bytes {
    let mut out = String::from("id,k,v,name\n");
    for i in 0..ROWS {
        let (id, k, v, name) = row(i);
        let v = v.map(|v| v.to_string()).unwrap_or_default();
        out.push_str(&format!("{id},{k},{v},{name}\n"));
    }
    Bytes::from(out)
}

async fn upload(minio: &MinioServer) -> S3Client {
    minio.create_bucket(BUCKET);
    let client = common::direct(minio, BUCKET);
    bounded("upload", client.put("rows.json", ndjson(), false))
        .await
        .unwrap();
    bounded("upload", client.put("rows.csv", csv(), false))
        .await
        .unwrap();
    client
}

fn request(expression: &str, input: InputFormat, output: OutputFormat) -> SelectRequest<'_> {
    SelectRequest {
        expression,
        input,
        compression: InputCompression::None,
        output,
    }
}

/// The answer's records as text lines.
async fn lines(client: &S3Client, key: &str, request: &SelectRequest<'_>) -> Vec<String> {
    let answer = bounded("select", client.select(key, request))
        .await
        .unwrap();
    let text = String::from_utf8(answer.records.concat()).unwrap();
    assert!(
        answer
            .stats
            .is_some_and(|s| s.bytes_returned == text.len() as u64)
    );
    text.lines().map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_filters_and_projects_like_a_local_scan() {
    let minio = MinioServer::start();
    let client = upload(&minio).await;
    // MinIO errs on a comparison with a null (`v`), even under `IS NOT NULL AND`: the
    // filters stay on columns without nulls, as a pushdown planner must keep them.
    for threshold in [0, 9_000, 19_990] {
        let expected: Vec<String> = (0..ROWS)
            .map(row)
            .filter(|(id, k, _, _)| *id > threshold && *k < 3)
            .map(|(id, _, _, name)| format!("{id},{name}"))
            .collect();
        let sql =
            format!("SELECT s.id, s.name FROM s3object s WHERE s.id > {threshold} AND s.k < 3");
        let json = request(&sql, InputFormat::JsonLines, OutputFormat::Csv);
        assert_eq!(
            lines(&client, "rows.json", &json).await,
            expected,
            "{sql} over JSON"
        );
        // CSV fields are text: comparisons need casts.
        let sql = format!(
            "SELECT s.id, s.name FROM s3object s \
             WHERE CAST(s.id AS INT) > {threshold} AND CAST(s.k AS INT) < 3"
        );
        let csv = request(
            &sql,
            InputFormat::Csv {
                header: CsvHeader::Use,
            },
            OutputFormat::Csv,
        );
        assert_eq!(
            lines(&client, "rows.csv", &csv).await,
            expected,
            "{sql} over CSV"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_aggregates_and_refuses_bad_sql() {
    let minio = MinioServer::start();
    let client = upload(&minio).await;
    let sql = "SELECT COUNT(*), SUM(s.id) FROM s3object s WHERE s.k = 3";
    let rows = (0..ROWS).map(row).filter(|r| r.1 == 3);
    let (count, sum) = rows.fold((0, 0), |(n, s), r| (n + 1, s + r.0));
    let json = request(sql, InputFormat::JsonLines, OutputFormat::Csv);
    let answer = lines(&client, "rows.json", &json).await;
    let fields: Vec<f64> = answer[0].split(',').map(|f| f.parse().unwrap()).collect();
    // MinIO writes the sum as a float.
    assert_eq!(fields, vec![count as f64, sum as f64], "{answer:?}");

    let bad = request(
        "SELEC nonsense",
        InputFormat::JsonLines,
        OutputFormat::JsonLines,
    );
    let err = bounded("bad select", client.select("rows.json", &bad))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            S3Error::Status { status: 400, .. } | S3Error::Select { .. }
        ),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_answer_is_an_error_not_a_short_result() {
    let minio = MinioServer::start();
    upload(&minio).await;
    let toxiproxy = Toxiproxy::start();
    let proxy = toxiproxy.proxy("minio", minio.port());
    let client = common::client(&minio, &proxy.endpoint(), BUCKET, fault_retrieval_options());
    let all = request(
        "SELECT * FROM s3object s",
        InputFormat::JsonLines,
        OutputFormat::JsonLines,
    );
    let whole = bounded("select", client.select("rows.json", &all))
        .await
        .unwrap();
    let whole_bytes: usize = whole.records.iter().map(Bytes::len).sum();
    proxy.add(
        "cut",
        Direction::Downstream,
        Toxic::LimitData { bytes: 64 * 1024 },
    );
    let cut = bounded("cut select", client.select("rows.json", &all)).await;
    assert!(
        cut.is_err(),
        "a cut answer of {whole_bytes} bytes came back whole"
    );
}
