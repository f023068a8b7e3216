//! Helpers shared by the table tests: small data files, reading a snapshot's values,
//! stores on MinIO, a store wrapper that intercepts PUTs, and a hang guard.

// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use bytes::Bytes;
use futures::TryStreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
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
    data_file_of(table, bytes, values.len() as u64).await
}

/// `bytes` (a Parquet file of `rows` rows) stored as a data file to commit.
pub async fn data_file_of(table: &Table, bytes: Vec<u8>, rows: u64) -> Result<NewFile, TableError> {
    let size = bytes.len() as u64;
    let path = table.write_data_file(Bytes::from(bytes)).await?;
    Ok(NewFile {
        path,
        size,
        summary: FileSummary {
            rows,
            schema: ShreddingSchema::default(),
            stats: Vec::new(),
            unshredded_paths: PathBloom::with_capacity(0),
            columns: Vec::new(),
        },
        sides: Vec::new(),
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

/// A store for a new `bucket` of `server`, reached directly.
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

/// Far above any correct run: fires only when a pause or a fault turned into a hang.
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// Runs `future`, failing the test if it does not finish within [`HANG_GUARD`].
pub async fn bounded<F: std::future::Future>(what: &str, future: F) -> F::Output {
    match tokio::time::timeout(HANG_GUARD, future).await {
        Ok(out) => out,
        Err(_) => panic!("{what} hung for {HANG_GUARD:?}"),
    }
}

/// What a [`PutHooked`] store does on top of its inner store. The hook makes each PUT
/// itself through `inner`, so it can act before it, after it or instead of it; GETs and
/// LISTs go straight to `inner` unless the hook says otherwise.
#[async_trait::async_trait]
pub trait PutHook: std::fmt::Debug + Send + Sync + 'static {
    /// The store's name in its `Display` form, `NAME(inner)`.
    const NAME: &'static str;

    /// Stores `payload` at `location` through `inner` (or not), as the test wants.
    async fn put(
        &self,
        inner: &Arc<dyn ObjectStore>,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult>;

    /// Reads `location` through `inner`; by default straight.
    async fn get(
        &self,
        inner: &Arc<dyn ObjectStore>,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        inner.get_opts(location, options).await
    }

    /// Lists `prefix` through `inner`; by default straight.
    fn list(
        &self,
        inner: &Arc<dyn ObjectStore>,
        prefix: Option<&Path>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        inner.list(prefix)
    }
}

/// A store that hands PUTs (and GETs and LISTs, where the hook wants them) to `hook`
/// and every other call straight to `inner`.
#[derive(Debug)]
pub struct PutHooked<H> {
    /// The store every call ends up at.
    pub inner: Arc<dyn ObjectStore>,
    /// What happens around each PUT.
    pub hook: H,
}

impl<H: PutHook> std::fmt::Display for PutHooked<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", H::NAME, self.inner)
    }
}

#[async_trait::async_trait]
impl<H: PutHook> ObjectStore for PutHooked<H> {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.hook.put(&self.inner, location, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }
    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.hook.get(&self.inner, location, options).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.hook.list(&self.inner, prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
