//! Helpers shared by the table tests: small data files, reading a snapshot's values,
//! and stores on MinIO.

#![allow(dead_code)]

use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::ObjectStore;
use parquet::arrow::ArrowWriter;
use tessera_table::{NewFile, Snapshot, Table, TableError};
use tessera_testkit::MinioServer;
use tessera_tiles::summary::{FileSummary, PathBloom, ShreddingSchema};

/// A Parquet file of `values` in one Int64 column, as a data file to commit.
pub async fn data_file(table: &Table, values: &[i64]) -> Result<NewFile, TableError> {
    data_file_in_groups(table, values, None).await
}

/// Like [`data_file`], with row groups of at most `group_rows` rows.
pub async fn data_file_in_groups(
    table: &Table,
    values: &[i64],
    group_rows: Option<usize>,
) -> Result<NewFile, TableError> {
    let properties = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(group_rows)
        .build();
    data_file_with(table, values, properties).await
}

/// Like [`data_file`], written with `properties`.
pub async fn data_file_with(
    table: &Table,
    values: &[i64],
    properties: parquet::file::properties::WriterProperties,
) -> Result<NewFile, TableError> {
    let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from(values.to_vec()))],
    )
    .unwrap();
    let mut bytes = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut bytes, schema, Some(properties)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let size = bytes.len() as u64;
    let path = table.write_data_file(Bytes::from(bytes)).await?;
    Ok(NewFile {
        path,
        size,
        summary: FileSummary {
            rows: values.len() as u64,
            schema: ShreddingSchema::default(),
            stats: Vec::new(),
            unshredded_paths: PathBloom::with_capacity(0),
            columns: Vec::new(),
        },
    })
}

/// Every value the snapshot holds (deleted rows left out), sorted.
pub async fn values(snapshot: &Snapshot) -> Vec<i64> {
    try_values(snapshot).await.unwrap()
}

/// Like [`values`], or the error that reading some file met.
pub async fn try_values(snapshot: &Snapshot) -> Result<Vec<i64>, TableError> {
    let mut out = Vec::new();
    for file in snapshot.files() {
        let batches: Vec<RecordBatch> = snapshot.read_file(file, true).await?.try_collect().await?;
        for batch in batches {
            let column = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            out.extend(column.values().iter().copied());
        }
    }
    out.sort_unstable();
    Ok(out)
}

pub fn minio_store(server: &MinioServer, bucket: &str) -> Arc<dyn ObjectStore> {
    server.create_bucket(bucket);
    open_store(
        server,
        &server.endpoint(),
        bucket,
        tessera_blob::RetrievalOptions::default(),
    )
}

/// A store for `bucket` of `server` reached at `endpoint` (MinIO itself or a proxy in
/// front of it), with the retrieval `options`.
pub fn open_store(
    server: &MinioServer,
    endpoint: &str,
    bucket: &str,
    options: tessera_blob::RetrievalOptions,
) -> Arc<dyn ObjectStore> {
    let env = server.env();
    let lookup = |name: &str| match name {
        "AWS_ENDPOINT_URL" => Some(endpoint.to_string()),
        _ => env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()),
    };
    let config = tessera_blob::S3Config::resolve(&Default::default(), &lookup).unwrap();
    let url = url::Url::parse(&format!("s3://{bucket}/")).unwrap();
    tessera_blob::StoreFactory::with_options(config, options)
        .open(&url)
        .unwrap()
}
