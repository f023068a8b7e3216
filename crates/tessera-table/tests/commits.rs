//! The commit protocol against real stores: MinIO (conditional PUTs over S3), the local
//! file system and memory. Crashes are injected by a store wrapper that fails a chosen
//! PUT, before or after the store applied it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use arrow::array::{Int64Array, RecordBatch};
use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, PutOptions, PutPayload, PutResult};
use tessera_table::{
    FileRead, OpenFile, Pacer, ROW_NUMBER, SideFile, Table, TableError, TableOptions,
};
use tessera_testkit::MinioServer;

mod common;
use common::{
    PutHook, PutHooked, data_file, data_file_in_groups, data_file_with, minio_store, values,
};

async fn appends_and_snapshots(store: Arc<dyn ObjectStore>) {
    let table = Table::create(
        store.clone(),
        Path::from("t/events"),
        TableOptions::default(),
    )
    .await
    .unwrap();
    let first = data_file(&table, &[1, 2, 3]).await.unwrap();
    assert_eq!(table.commit_append(vec![first]).await.unwrap(), 1);
    let held = table.snapshot().await.unwrap();
    let second = data_file(&table, &[4, 5]).await.unwrap();
    assert_eq!(table.commit_append(vec![second]).await.unwrap(), 2);
    // The snapshot taken at version 1 keeps seeing version 1.
    assert_eq!(values(&held).await, vec![1, 2, 3]);
    let reopened = Table::open(store.clone(), Path::from("t/events"))
        .await
        .unwrap();
    assert_eq!(
        values(&reopened.snapshot().await.unwrap()).await,
        vec![1, 2, 3, 4, 5]
    );
    assert!(matches!(
        Table::create(
            store.clone(),
            Path::from("t/events"),
            TableOptions::default()
        )
        .await,
        Err(TableError::AlreadyExists(_))
    ));
    assert!(
        Table::open(store, Path::from("t/none"))
            .await
            .unwrap_err()
            .is_not_found()
    );
}

#[tokio::test]
async fn appends_and_snapshots_in_memory_and_on_disk() {
    appends_and_snapshots(Arc::new(InMemory::new())).await;
    let dir = tempfile::tempdir().unwrap();
    let local = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
    appends_and_snapshots(Arc::new(local)).await;
}

/// Manifests are kept in memory across snapshots, yet a table deleted and created again
/// at the same place (same version numbers, manifests of the same size) is read afresh.
async fn a_table_created_again_in_place_is_read_afresh(store: Arc<dyn ObjectStore>) {
    for values_in in [[1, 2, 3], [4, 5, 6]] {
        let prefix = Path::from("t/again");
        let stale: Vec<Path> = store
            .list(Some(&prefix))
            .map_ok(|o| o.location)
            .try_collect()
            .await
            .unwrap();
        for location in stale {
            store.delete(&location).await.unwrap();
        }
        let table = Table::create(store.clone(), prefix, TableOptions::default())
            .await
            .unwrap();
        let file = data_file(&table, &values_in).await.unwrap();
        assert_eq!(table.commit_append(vec![file]).await.unwrap(), 1);
        assert_eq!(values(&table.snapshot().await.unwrap()).await, values_in);
        assert_eq!(values(&table.snapshot().await.unwrap()).await, values_in);
    }
}

#[tokio::test]
async fn tables_created_again_in_place_are_read_afresh() {
    a_table_created_again_in_place_is_read_afresh(Arc::new(InMemory::new())).await;
    let dir = tempfile::tempdir().unwrap();
    let local = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
    a_table_created_again_in_place_is_read_afresh(Arc::new(local)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_and_snapshots_on_minio() {
    let server = MinioServer::start();
    appends_and_snapshots(minio_store(&server, "snapshots")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_lose_nothing_on_minio() {
    const WRITERS: i64 = 6;
    const COMMITS: i64 = 4;
    let server = MinioServer::start();
    let store = minio_store(&server, "race");
    Table::create(store.clone(), Path::from("t"), TableOptions::default())
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let table = Table::open(store, Path::from("t")).await.unwrap();
            for commit in 0..COMMITS {
                let file = data_file(&table, &[writer * 100 + commit]).await.unwrap();
                table.commit_append(vec![file]).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let table = Table::open(store.clone(), Path::from("t")).await.unwrap();
    let snapshot = table.snapshot().await.unwrap();
    assert_eq!(snapshot.version() as i64, WRITERS * COMMITS);
    let expected: Vec<i64> = (0..WRITERS)
        .flat_map(|w| (0..COMMITS).map(move |c| w * 100 + c))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(values(&snapshot).await, expected);
    // Versions are contiguous: every one in between is readable.
    for version in 0..=snapshot.version() {
        assert_eq!(
            table.snapshot_at(version).await.unwrap().files().len() as u64,
            version
        );
    }
}

/// A table is not created over other objects (NDJSON files, a directory of them): it
/// would hide them. A location holding only a table's own directories is fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_is_not_created_over_other_objects_on_minio() {
    let server = MinioServer::start();
    let store = minio_store(&server, "occupied");
    for key in ["raw/a.json", "nested/2024/b.json", "own/_rejects/1.ndjson"] {
        store.put(&Path::from(key), "{}\n".into()).await.unwrap();
    }
    for (prefix, found) in [("raw", "raw/a.json"), ("nested", "nested/2024")] {
        let err = Table::create(store.clone(), Path::from(prefix), TableOptions::default())
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, TableError::NotEmpty { .. }), "{text}");
        // Both named as the user writes them (not as the client's type).
        assert!(
            text.contains(&format!("at s3://occupied/{prefix}:")),
            "{text}"
        );
        assert!(text.contains(&format!("(s3://occupied/{found})")), "{text}");
        assert!(
            Table::open(store.clone(), Path::from(prefix))
                .await
                .is_err()
        );
    }
    for prefix in ["own", "fresh"] {
        Table::create(store.clone(), Path::from(prefix), TableOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{prefix}: {e}"));
    }
}

/// Two writers append to a table that does not exist yet, at the same time, as two
/// ingests into a new location do: each round on a fresh prefix, both writers' rows
/// are there afterwards (creating the table is a race like any commit, not an error
/// for the loser).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_first_writers_both_commit_on_minio() {
    const ROUNDS: i64 = 8;
    let server = MinioServer::start();
    let store = minio_store(&server, "first");
    for round in 0..ROUNDS {
        let prefix = format!("t/{round}");
        let writers: Vec<_> = (0..2)
            .map(|writer| {
                let (store, prefix) = (store.clone(), Path::from(prefix.as_str()));
                tokio::spawn(async move {
                    let table =
                        Table::open_or_create(store, prefix, TableOptions::default()).await?;
                    let file = data_file(&table, &[round * 10 + writer]).await?;
                    table.commit_append(vec![file]).await
                })
            })
            .collect();
        for writer in writers {
            writer
                .await
                .unwrap()
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
        let table = Table::open(store.clone(), Path::from(prefix.as_str()))
            .await
            .unwrap();
        let snapshot = table.snapshot().await.unwrap();
        assert_eq!(values(&snapshot).await, vec![round * 10, round * 10 + 1]);
    }
}

#[tokio::test]
async fn deletes_are_deletion_vectors_that_merge_and_survive_appends() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let table = Table::create(store, Path::from("t"), TableOptions::default())
        .await
        .unwrap();
    let file = data_file(&table, &[10, 11, 12, 13, 14, 15]).await.unwrap();
    let path = file.path.clone();
    table.commit_append(vec![file]).await.unwrap();
    let before_delete = table.snapshot().await.unwrap();
    table
        .commit_delete(vec![(path.clone(), vec![1, 2])])
        .await
        .unwrap();
    // An append that raced the delete (it started from an older version) keeps both.
    let late = data_file(&table, &[20]).await.unwrap();
    table.commit_append(vec![late]).await.unwrap();
    table
        .commit_delete(vec![(path.clone(), vec![2, 5])])
        .await
        .unwrap();
    let snapshot = table.snapshot().await.unwrap();
    assert_eq!(values(&snapshot).await, vec![10, 13, 14, 20]);
    assert_eq!(snapshot.live_rows(), 4);
    assert_eq!(values(&before_delete).await, vec![10, 11, 12, 13, 14, 15]);
    assert!(matches!(
        table.commit_delete(vec![(path.clone(), vec![6])]).await,
        Err(TableError::RowOutOfRange { .. })
    ));
    assert!(matches!(
        table
            .commit_delete(vec![("data/gone.parquet".into(), vec![0])])
            .await,
        Err(TableError::Conflict(_))
    ));
}

/// When the store fails a PUT, relative to applying it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Crash {
    /// The PUT never reaches the store (the writer died before sending it).
    Before,
    /// The store applied the PUT but the writer never heard back.
    After,
}

/// A store's hook that fails its `fail_at`-th PUT (1-based) the way `crash` says.
#[derive(Debug)]
struct Crashing {
    puts: AtomicUsize,
    fail_at: usize,
    crash: Crash,
}

fn injected() -> object_store::Error {
    object_store::Error::Generic {
        store: "crash",
        source: "connection reset (injected)".into(),
    }
}

#[async_trait::async_trait]
impl PutHook for Crashing {
    const NAME: &'static str = "CrashingStore";

    async fn put(
        &self,
        inner: &Arc<dyn ObjectStore>,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let n = self.puts.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.fail_at && self.crash == Crash::Before {
            return Err(injected());
        }
        let result = inner.put_opts(location, payload, opts).await?;
        if n == self.fail_at {
            return Err(injected());
        }
        Ok(result)
    }
}

/// One writer commits three data files; its `step`-th PUT fails. Whatever happens, a
/// reader sees exactly the old version or exactly the new one, and vacuum then removes
/// what the failed commit left behind without touching committed files.
async fn crash_at(step: usize, crash: Crash) {
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let setup = Table::create(inner.clone(), Path::from("t"), TableOptions::default())
        .await
        .unwrap();
    let committed = data_file(&setup, &[1, 2]).await.unwrap();
    setup.commit_append(vec![committed]).await.unwrap();

    let crashing: Arc<dyn ObjectStore> = Arc::new(PutHooked {
        inner: inner.clone(),
        hook: Crashing {
            puts: AtomicUsize::new(0),
            fail_at: step,
            crash,
        },
    });
    let writer = Table::open(crashing, Path::from("t")).await.unwrap();
    let outcome = async {
        let mut files = Vec::new();
        for values in [[3, 4], [5, 6], [7, 8]] {
            files.push(data_file(&writer, &values).await?);
        }
        writer.commit_append(files).await
    }
    .await;

    let reader = Table::open(inner.clone(), Path::from("t")).await.unwrap();
    let seen = values(&reader.snapshot().await.unwrap()).await;
    let old = vec![1, 2];
    let new = vec![1, 2, 3, 4, 5, 6, 7, 8];
    match &outcome {
        Ok(version) => {
            assert_eq!(*version, 2);
            assert_eq!(
                seen, new,
                "step {step} {crash:?}: committed but not visible"
            );
        }
        Err(_) => assert_eq!(seen, old, "step {step} {crash:?}: failed commit is visible"),
    }
    // A claim or manifest PUT that failed is retried; one applied-then-failed is
    // recognized as our own.
    if step >= 4 {
        assert!(outcome.is_ok(), "step {step} {crash:?}: {outcome:?}");
    }
    let report = reader.vacuum(Duration::ZERO).await.unwrap();
    let orphans = match (&outcome, crash, step) {
        (Ok(_), _, _) => 0,
        (Err(_), Crash::Before, step) => step as u64 - 1,
        (Err(_), Crash::After, step) => step as u64,
    };
    assert_eq!(report.files, orphans, "step {step} {crash:?}");
    assert_eq!(values(&reader.snapshot().await.unwrap()).await, seen);
}

#[tokio::test]
async fn a_crash_at_any_step_leaves_the_old_or_the_new_version() {
    // PUTs 1-3 are the data files, PUTs 4-6 their claims, PUT 7 the manifest.
    for step in 1..=7 {
        for crash in [Crash::Before, Crash::After] {
            crash_at(step, crash).await;
        }
    }
}

#[tokio::test]
async fn vacuum_keeps_recent_unreferenced_files() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let table = Table::create(store, Path::from("t"), TableOptions::default())
        .await
        .unwrap();
    // Written but not committed yet: a writer may be about to commit it.
    data_file(&table, &[1]).await.unwrap();
    let report = table.vacuum(Duration::from_secs(3600)).await.unwrap();
    assert_eq!((report.files, report.kept_recent), (0, 1));
    let report = table.vacuum(Duration::ZERO).await.unwrap();
    assert_eq!((report.files, report.kept_recent), (1, 0));
}

/// A reject part is gathered and deleted by its write's commit; one a failed write left
/// is deleted by vacuum once older than the retention, and a reject file never is.
#[tokio::test]
async fn vacuum_removes_the_reject_parts_failed_writes_left() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let table = Table::create(store.clone(), Path::from("t"), TableOptions::default())
        .await
        .unwrap();
    let part = table.new_reject_part();
    assert_ne!(
        part,
        table.new_reject_part(),
        "each part has a name of its own"
    );
    store.put(&part, "{}\n".into()).await.unwrap();
    let reject_file = table.key("_rejects/00000000000000000001.ndjson");
    store.put(&reject_file, "{}\n".into()).await.unwrap();
    let report = table.vacuum(Duration::from_secs(3600)).await.unwrap();
    assert_eq!(report.reject_parts, 0, "a write may still gather it");
    let report = table.vacuum(Duration::ZERO).await.unwrap();
    assert_eq!(report.reject_parts, 1, "{report:?}");
    assert!(matches!(
        store.head(&part).await,
        Err(object_store::Error::NotFound { .. })
    ));
    store.head(&reject_file).await.unwrap();
}

/// Side files are referenced with their data file: vacuum keeps them while a version
/// lists the data file, and a commit claims them with it.
#[tokio::test]
async fn vacuum_keeps_the_side_files_of_referenced_files() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let table = Table::create(store, Path::from("t"), TableOptions::default())
        .await
        .unwrap();
    let mut file = data_file(&table, &[1, 2]).await.unwrap();
    let side = data_file(&table, &[10, 11, 12]).await.unwrap();
    file.sides.push(SideFile {
        array: vec!["tags".into()],
        path: side.path.clone(),
        size: side.size,
        summary: side.summary.clone(),
    });
    table.commit_append(vec![file]).await.unwrap();
    let report = table.vacuum(Duration::ZERO).await.unwrap();
    assert_eq!(report.files, 0, "{report:?}");
    let snapshot = table.snapshot().await.unwrap();
    let listed = &snapshot.files()[0];
    let keys: Vec<&str> = listed.keys().collect();
    assert_eq!(keys, [listed.path.as_str(), side.path.as_str()]);
    let side = listed.side(&["tags".to_string()]).unwrap().as_data_file();
    let batches: Vec<RecordBatch> = snapshot
        .read_file(&side, true)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 3);
}

/// Row numbers are positions in the file, whatever rows the selection and the deletion
/// vector leave.
#[tokio::test]
async fn row_numbers_are_positions_in_the_file() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let table = Table::create(store, Path::from("t"), TableOptions::default())
        .await
        .unwrap();
    let values: Vec<i64> = (0..100).collect();
    let file = data_file_in_groups(&table, &values, Some(30))
        .await
        .unwrap();
    let path = file.path.clone();
    table.commit_append(vec![file]).await.unwrap();
    table
        .commit_delete(vec![(path, vec![0, 31, 32, 99])])
        .await
        .unwrap();
    let snapshot = table.snapshot().await.unwrap();
    let open = snapshot.open_file(&snapshot.files()[0]).await.unwrap();
    let batches: Vec<RecordBatch> = open
        .read(FileRead {
            row_groups: Some(vec![1, 3]),
            skip_deleted: true,
            row_numbers: true,
            ..FileRead::default()
        })
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut pairs = Vec::new();
    for batch in &batches {
        let value = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let row = batch
            .column_by_name(ROW_NUMBER)
            .unwrap()
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        pairs.extend(
            value
                .values()
                .iter()
                .zip(row.values())
                .map(|(v, r)| (*v, *r)),
        );
    }
    let expected: Vec<(i64, i64)> = (30..60)
        .chain(90..100)
        .filter(|r| ![31, 32, 99].contains(r))
        .map(|r| (r, r))
        .collect();
    assert_eq!(pairs, expected);
}

/// A writer killed while storing a data file on a local file system leaves the
/// store's staging file, `data/<name>.parquet#<n>`, which the store API neither lists
/// nor deletes; vacuum removes it once it is older than the retention, and nothing
/// else.
#[tokio::test]
async fn vacuum_removes_what_killed_writers_left_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let local = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
    let table = Table::create(Arc::new(local), Path::from("t"), TableOptions::default())
        .await
        .unwrap()
        .with_local_root(dir.path().to_path_buf());
    let file = data_file(&table, &[1, 2]).await.unwrap();
    table.commit_append(vec![file]).await.unwrap();
    let data = dir.path().join("t").join("data");
    let partial = data.join("0000-killed.parquet#3");
    std::fs::write(&partial, b"PAR1 half a file").unwrap();
    let report = table.vacuum(Duration::from_secs(3600)).await.unwrap();
    assert!(partial.exists(), "{report:?}");
    let report = table.vacuum(Duration::ZERO).await.unwrap();
    assert!(!partial.exists(), "{report:?}");
    assert_eq!(report.files, 0, "{report:?}");
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), 1);
    assert_eq!(values(&table.snapshot().await.unwrap()).await, vec![1, 2]);
}

/// A pacer with a fixed budget that counts the fetches made ahead.
#[derive(Debug)]
struct FixedPace(u64, AtomicUsize);

impl Pacer for FixedPace {
    fn budget(&self) -> u64 {
        self.0
    }
    fn fetched(&self, _bytes: u64, _nanos: u64) {
        self.1.fetch_add(1, Ordering::Relaxed);
    }
    fn processed(&self, _bytes: u64, _nanos: u64) {}
}

/// The values of the Int64 column that `read` decodes from `open`.
async fn read_values(open: &OpenFile, read: FileRead) -> Vec<i64> {
    let batches: Vec<RecordBatch> = open.read(read).unwrap().try_collect().await.unwrap();
    batches
        .iter()
        .flat_map(|b| {
            let c = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            c.values().to_vec()
        })
        .collect()
}

/// Reading ahead changes how column chunks are fetched, never what is read: any budget,
/// with or without deleted rows and chosen row groups, gives the plain read's rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readahead_reads_what_a_plain_read_reads_on_minio() {
    let server = MinioServer::start();
    let store = minio_store(&server, "ahead");
    let table = Table::create(store, Path::from("t"), TableOptions::default())
        .await
        .unwrap();
    let values: Vec<i64> = (0..20_000).map(|v| v * 7 % 1_000).collect();
    let file = data_file_in_groups(&table, &values, Some(1_000))
        .await
        .unwrap();
    table.commit_append(vec![file]).await.unwrap();
    let file = table.snapshot().await.unwrap().files()[0].path.clone();
    table
        .commit_delete(vec![(file, (0..20_000).step_by(3).collect())])
        .await
        .unwrap();
    let snapshot = table.snapshot().await.unwrap();
    let file = &snapshot.files()[0];
    let open = snapshot.open_file(file).await.unwrap();
    assert_eq!(open.metadata().num_row_groups(), 20);
    let read =
        |pacer: Option<Arc<FixedPace>>, skip_deleted: bool, row_groups: Option<Vec<usize>>| {
            read_values(
                &open,
                FileRead {
                    skip_deleted,
                    row_groups,
                    pacer: pacer.map(|p| p as Arc<dyn Pacer>),
                    ..FileRead::default()
                },
            )
        };
    for (skip_deleted, groups) in [(false, None), (true, None), (true, Some(vec![0, 3, 4, 19]))] {
        let plain = read(None, skip_deleted, groups.clone()).await;
        assert!(!plain.is_empty());
        for budget in [0, 1, 16 << 10, 1 << 30] {
            let pace = Arc::new(FixedPace(budget, AtomicUsize::new(0)));
            let ahead = read(Some(Arc::clone(&pace)), skip_deleted, groups.clone()).await;
            assert_eq!(
                ahead, plain,
                "budget {budget}, skip_deleted {skip_deleted}, {groups:?}"
            );
            assert!(
                pace.1.load(Ordering::Relaxed) > 0,
                "nothing was fetched ahead"
            );
        }
    }
}

/// With rows selected, reading ahead fetches the data pages holding them (the file's
/// offset index says where they are), not whole column chunks, and reads the same rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readahead_fetches_only_selected_pages_on_minio() {
    use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
    use parquet::file::properties::WriterProperties;

    let server = MinioServer::start();
    let store = minio_store(&server, "pages");
    let table = Table::create(store, Path::from("t"), TableOptions::default())
        .await
        .unwrap();
    // 400 K distinct values, plain-encoded in 40 pages of 10 K rows (80 KB each).
    let values: Vec<i64> = (0..400_000i64)
        .map(|v| v.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as i64))
        .collect();
    let properties = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_data_page_row_count_limit(10_000)
        .set_write_batch_size(10_000)
        .build();
    let file = data_file_with(&table, &values, properties).await.unwrap();
    table.commit_append(vec![file]).await.unwrap();
    let snapshot = table.snapshot().await.unwrap();
    let open = snapshot.open_file(&snapshot.files()[0]).await.unwrap();
    let chunk = open.metadata().row_group(0).column(0).compressed_size() as u64;
    let selection = || {
        Some(RowSelection::from(vec![
            RowSelector::skip(50_000),
            RowSelector::select(10),
            RowSelector::skip(339_990),
            RowSelector::select(10),
            RowSelector::skip(10_000),
        ]))
    };
    let read = |pacer: Option<Arc<dyn Pacer>>| {
        read_values(
            &open,
            FileRead {
                rows: selection(),
                pacer,
                ..FileRead::default()
            },
        )
    };
    let expected: Vec<i64> = [&values[50_000..50_010], &values[390_000..390_010]].concat();
    assert_eq!(read(None).await, expected);
    let before = open.traffic().bytes.load(Ordering::Relaxed);
    let pace = Arc::new(FixedPace(1 << 30, AtomicUsize::new(0)));
    assert_eq!(read(Some(pace.clone() as Arc<dyn Pacer>)).await, expected);
    let fetched = open.traffic().bytes.load(Ordering::Relaxed) - before;
    assert_eq!(
        pace.1.load(Ordering::Relaxed),
        2,
        "one fetch per selected page"
    );
    assert!(
        fetched * 10 < chunk,
        "fetched {fetched} bytes of a {chunk}-byte column chunk"
    );
}

/// A table's columns are recorded in every manifest and come back on open; invalid
/// schemas are refused with the reason.
#[tokio::test]
async fn tables_record_their_columns() {
    use arrow::datatypes::{DataType, Field};
    use tessera_table::TableColumn;

    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let columns = vec![
        TableColumn::relational(&Field::new("id", DataType::Int64, false)),
        TableColumn::json("j"),
        TableColumn::relational(&Field::new("name", DataType::Utf8View, true)),
    ];
    let options = TableOptions {
        json_column: "j".into(),
        columns: columns.clone(),
    };
    let table = Table::create(store.clone(), Path::from("t"), options)
        .await
        .unwrap();
    let file = data_file(&table, &[1]).await.unwrap();
    table.commit_append(vec![file]).await.unwrap();
    let reopened = Table::open(store.clone(), Path::from("t")).await.unwrap();
    assert_eq!(reopened.columns(), columns.as_slice());
    assert_eq!(
        reopened.snapshot().await.unwrap().manifest().columns,
        columns
    );

    // A table of documents alone keeps the old manifest layout.
    let plain = Table::create(store.clone(), Path::from("plain"), TableOptions::default())
        .await
        .unwrap();
    assert_eq!(plain.columns(), &[TableColumn::json("j")]);
    assert!(
        plain
            .snapshot()
            .await
            .unwrap()
            .manifest()
            .columns
            .is_empty()
    );

    let refused = |columns: Vec<TableColumn>| {
        let store = store.clone();
        async move {
            let options = TableOptions {
                json_column: "j".into(),
                columns,
            };
            Table::create(store, Path::from("refused"), options)
                .await
                .unwrap_err()
                .to_string()
        }
    };
    let id = TableColumn::relational(&Field::new("id", DataType::Int64, false));
    assert_eq!(
        refused(vec![id.clone()]).await,
        "invalid table schema: a table has exactly one JSON document column, 'j'"
    );
    assert_eq!(
        refused(vec![id.clone(), TableColumn::json("j"), id.clone()]).await,
        "invalid table schema: column 'id' appears twice"
    );
    let options = TableOptions {
        json_column: "doc".into(),
        columns: vec![
            TableColumn::json("doc"),
            TableColumn::relational(&Field::new("j", DataType::Int64, false)),
        ],
    };
    assert_eq!(
        Table::create(store.clone(), Path::from("refused"), options)
            .await
            .unwrap_err()
            .to_string(),
        "invalid table schema: 'j' can only name the JSON document column"
    );
}
