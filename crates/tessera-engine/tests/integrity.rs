//! Bad bytes end in errors that name the file, never in wrong answers or crashes:
//! Parquet files whose footers lie about their size, and table data files whose pages
//! had bits flipped (on a local disk and on MinIO).

use std::path::Path;
use std::sync::Arc;

use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tessera_engine::{SessionOptions, TesseraSession};
use tessera_testkit::MinioServer;
use tessera_tiles::checksum::parse_header;

// This test uses a part of the shared helpers.
#[allow(dead_code)]
mod common;

use common::rows;

/// Documents in the generated input.
const DOCS: i64 = 1000;

fn new_session(s3: tessera_blob::S3Config) -> TesseraSession {
    let options = SessionOptions {
        target_partitions: Some(2),
        ..Default::default()
    };
    TesseraSession::new(s3, options).unwrap()
}

fn local_session() -> TesseraSession {
    new_session(tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap())
}

/// `sql`'s error, or a panic naming the answer it gave instead.
async fn error_of(session: &TesseraSession, sql: &str) -> String {
    let answer = match session.sql(sql).await {
        Ok(frame) => frame.collect().await,
        Err(e) => return e.to_string(),
    };
    match answer {
        Ok(batches) => panic!(
            "{sql} answered instead of failing:\n{}",
            arrow::util::pretty::pretty_format_batches(&batches).unwrap()
        ),
        Err(e) => e.to_string(),
    }
}

/// An NDJSON file of [`DOCS`] documents with distinct ids; returns its path.
fn write_documents(dir: &Path) -> String {
    let text: String = (0..DOCS)
        .map(|id| {
            format!(
                r#"{{"id":{},"name":"n{}","v":{}}}"#,
                id * 7919,
                id % 13,
                id * 3
            ) + "\n"
        })
        .collect();
    let path = dir.join("docs.json");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Fills table `t` at `location` from the documents at `documents`.
async fn fill_table(session: &TesseraSession, location: &str, documents: &str) {
    rows(
        session,
        &format!("CREATE EXTERNAL TABLE t (j VARCHAR) STORED AS TESSERA LOCATION '{location}'"),
    )
    .await;
    rows(
        session,
        &format!("INSERT INTO t SELECT j FROM '{documents}'"),
    )
    .await;
}

const DISTINCT_IDS: &str = "SELECT count(DISTINCT json_get_int(j, 'id')) FROM t";

/// `file` (a Parquet file) with one bit flipped in the middle of every page's data,
/// found by walking the column chunks the footer lists, not the footer itself.
fn flip_page_bits(file: &[u8]) -> Vec<u8> {
    let bytes = bytes::Bytes::copy_from_slice(file);
    let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes)
        .unwrap();
    let mut out = file.to_vec();
    let mut flipped = 0;
    for column in metadata.row_groups().iter().flat_map(|g| g.columns()) {
        let (start, len) = column.byte_range();
        let mut at = start as usize;
        while at < (start + len) as usize {
            let header = parse_header(&file[at..]).unwrap();
            out[at + header.len + header.body_len / 2] ^= 0x04;
            flipped += 1;
            at += header.len + header.body_len;
        }
    }
    assert!(flipped > 0);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flipped_bits_in_a_local_table_are_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let documents = write_documents(dir.path());
    let table = dir.path().join("table").display().to_string();
    let session = local_session();
    fill_table(&session, &table, &documents).await;
    assert_eq!(rows(&session, DISTINCT_IDS).await, [DOCS.to_string()]);
    let data = dir.path().join("table/data");
    let files: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for file in &files {
        std::fs::write(file, flip_page_bits(&std::fs::read(file).unwrap())).unwrap();
    }
    let err = error_of(&session, DISTINCT_IDS).await;
    assert!(err.contains("checksum"), "{err}");
    assert!(
        files
            .iter()
            .any(|f| err.contains(f.file_name().unwrap().to_str().unwrap())),
        "the error names the file: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flipped_bits_in_a_table_on_minio_are_an_error_naming_the_file() {
    let minio = MinioServer::start();
    minio.create_bucket("integrity");
    let env = minio.env();
    let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &lookup).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let documents = write_documents(dir.path());
    let session = new_session(s3.clone());
    fill_table(&session, "s3://integrity/t/", &documents).await;
    assert_eq!(rows(&session, DISTINCT_IDS).await, [DOCS.to_string()]);
    let store: Arc<dyn ObjectStore> = tessera_blob::StoreFactory::new(s3.clone())
        .open(&url::Url::parse("s3://integrity/").unwrap())
        .unwrap();
    let listed: Vec<_> = futures::TryStreamExt::try_collect(store.list(Some(&"t/data".into())))
        .await
        .unwrap();
    assert!(!listed.is_empty());
    for object in &listed {
        let file = store
            .get(&object.location)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let flipped = PutPayload::from(flip_page_bits(&file));
        store.put(&object.location, flipped).await.unwrap();
    }
    let err = error_of(&session, DISTINCT_IDS).await;
    assert!(err.contains("checksum"), "{err}");
    assert!(
        listed
            .iter()
            .any(|o| err.contains(o.location.filename().unwrap())),
        "the error names the file: {err}"
    );
}

/// A valid Parquet file of [`DOCS`] rows.
fn parquet_file() -> Vec<u8> {
    let ids = arrow::array::Int64Array::from_iter_values(0..DOCS);
    let batch =
        arrow::array::RecordBatch::try_from_iter([("id", Arc::new(ids) as arrow::array::ArrayRef)])
            .unwrap();
    let mut out = Vec::new();
    let mut writer = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    out
}

/// `file` with its last 8 bytes' footer length set to `length`.
fn with_footer_length(file: &[u8], length: u32) -> Vec<u8> {
    let mut out = file.to_vec();
    let at = out.len() - 8;
    out[at..at + 4].copy_from_slice(&length.to_le_bytes());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_parquet_files_are_errors_naming_the_file_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let good = parquet_file();
    let size = good.len();
    let mut garbage_metadata = good.clone();
    let footer_length = u32::from_le_bytes(good[size - 8..size - 4].try_into().unwrap());
    for at in (size - 8 - footer_length as usize..size - 8).step_by(3) {
        garbage_metadata[at] = 0xa5 ^ (at as u8);
    }
    let mut bad_magic = good.clone();
    bad_magic[size - 1] = b'X';
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("huge_footer", with_footer_length(&good, u32::MAX)),
        ("footer_beyond_size", with_footer_length(&good, size as u32)),
        ("footer_zero", with_footer_length(&good, 0)),
        ("truncated", good[..size / 2].to_vec()),
        ("tail_only", good[size - 8..].to_vec()),
        ("bad_magic", bad_magic),
        ("garbage_metadata", garbage_metadata),
    ];
    let session = local_session();
    for (name, bytes) in cases {
        let path = dir.path().join(format!("{name}.parquet"));
        std::fs::write(&path, bytes).unwrap();
        for sql in [
            format!("SELECT * FROM '{}'", path.display()),
            format!("SELECT count(*) FROM '{}'", path.display()),
        ] {
            let err = error_of(&session, &sql).await;
            assert!(err.contains(&format!("{name}.parquet")), "{sql}: {err}");
        }
    }
    let path = dir.path().join("good.parquet");
    std::fs::write(&path, &good).unwrap();
    let sql = format!("SELECT count(*) FROM '{}'", path.display());
    assert_eq!(rows(&session, &sql).await, [DOCS.to_string()]);
}
