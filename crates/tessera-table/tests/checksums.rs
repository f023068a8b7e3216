//! Page checksums on read: a page whose bytes do not match its checksum is read once
//! more from the store (which or whose network may have sent bad bytes) and is an error
//! naming the file if it still does not match; files without checksums (written before
//! Tessera wrote them) read as before.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow::array::{Int64Array, RecordBatch};
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    GetOptions, GetRange, GetResult, GetResultPayload, ObjectStore, PutOptions, PutPayload,
    PutResult,
};
use tessera_table::{FileRead, Table, TableOptions};

mod common;
use common::{PutHook, PutHooked, data_file_of};

/// A Parquet file of `values`, with page checksums when `checksums`.
fn parquet(values: &[i64], checksums: bool) -> Vec<u8> {
    let column = Arc::new(Int64Array::from(values.to_vec()));
    let batch = RecordBatch::try_from_iter([("v", column as _)]).unwrap();
    let mut out = Vec::new();
    let mut writer = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    match checksums {
        true => tessera_tiles::checksum::add_page_checksums(Bytes::from(out))
            .unwrap()
            .to_vec(),
        false => out,
    }
}

/// Flips a bit in the middle of the first `corrupt` ranged reads of a data file's
/// pages (those from byte 4 on: the first column chunk), as a bad disk or network
/// would.
#[derive(Debug)]
struct FlipBits {
    corrupt: usize,
    flipped: AtomicUsize,
}

#[async_trait::async_trait]
impl PutHook for FlipBits {
    const NAME: &'static str = "FlipBits";

    async fn put(
        &self,
        inner: &Arc<dyn ObjectStore>,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        inner.put_opts(location, payload, opts).await
    }

    async fn get(
        &self,
        inner: &Arc<dyn ObjectStore>,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let pages = matches!(&options.range, Some(GetRange::Bounded(r)) if r.start == 4);
        let mut result = inner.get_opts(location, options).await?;
        if !pages || self.flipped.fetch_add(1, Ordering::SeqCst) >= self.corrupt {
            return Ok(result);
        }
        let GetResultPayload::Stream(stream) = result.payload else {
            unreachable!("an in-memory store streams")
        };
        let parts: Vec<Bytes> = stream.try_collect().await?;
        let mut bytes = parts.concat();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x08;
        let once = futures::stream::once(async move { Ok(Bytes::from(bytes)) });
        result.payload = GetResultPayload::Stream(Box::pin(once));
        Ok(result)
    }
}

/// Reads the one file of a table whose reads pass through `FlipBits { corrupt }`:
/// its values or the error, and the ranges read again.
async fn read_through(
    values: &[i64],
    checksums: bool,
    corrupt: usize,
) -> (Result<Vec<i64>, String>, u64, String) {
    let store: Arc<dyn ObjectStore> = Arc::new(PutHooked {
        inner: Arc::new(InMemory::new()),
        hook: FlipBits {
            corrupt,
            flipped: AtomicUsize::new(0),
        },
    });
    let table = Table::create(store, "t".into(), TableOptions::default())
        .await
        .unwrap();
    let file = data_file_of(&table, parquet(values, checksums), values.len() as u64)
        .await
        .unwrap();
    let path = file.path.clone();
    table.commit_append(vec![file]).await.unwrap();
    let snapshot = table.snapshot().await.unwrap();
    let open = snapshot.open_file(&snapshot.files()[0]).await.unwrap();
    let traffic = Arc::clone(open.traffic());
    let read = async {
        let batches: Vec<RecordBatch> = open.read(FileRead::default())?.try_collect().await?;
        Ok::<_, tessera_table::TableError>(
            batches
                .iter()
                .flat_map(|b| {
                    let column = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                    column.values().to_vec()
                })
                .collect(),
        )
    };
    let got = read.await.map_err(|e| e.to_string());
    (got, traffic.checksum_retries.load(Ordering::SeqCst), path)
}

/// Generated values, distinct enough that pages are mostly values.
fn values() -> Vec<i64> {
    (0..5000).map(|i| i * 2_654_435_761 % 1_000_003).collect()
}

#[tokio::test]
async fn bad_bytes_from_the_store_once_are_read_again() {
    let (got, retries, _) = read_through(&values(), true, 1).await;
    assert_eq!(got.unwrap(), values());
    assert_eq!(retries, 1);
}

#[tokio::test]
async fn bad_bytes_every_time_are_an_error_naming_the_file() {
    let (got, retries, path) = read_through(&values(), true, usize::MAX).await;
    let err = got.expect_err("a corrupt file is not read");
    assert!(err.contains("checksum") && err.contains(&path), "{err}");
    assert_eq!(retries, 1, "read again once");
}

#[tokio::test]
async fn files_without_checksums_still_read() {
    let (got, retries, _) = read_through(&values(), false, 0).await;
    assert_eq!(got.unwrap(), values());
    assert_eq!(retries, 0);
}
