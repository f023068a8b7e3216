//! `vacuum` racing commits on MinIO: whatever the interleaving, a commit either lands
//! with every row readable or fails with a clear error, and the table stays readable.
//!
//! The writer's store holds the writer at a chosen PUT until the test has run a vacuum
//! with retention 0, so the interleaving is exact without sleeps.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use object_store::path::Path;
use object_store::{ObjectStore, PutOptions, PutPayload, PutResult};
use tessera_table::{Table, TableOptions};
use tessera_testkit::MinioServer;
use tokio::sync::Notify;

mod common;
use common::{PutHook, PutHooked, bounded, data_file, minio_store, try_values};

/// Where the writer is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// At its first PUT after its data files: the commit has begun, nothing of it is
    /// stored yet.
    CommitStart,
    /// At its first manifest PUT: everything before the manifest is done.
    ManifestPut,
}

impl Hold {
    fn matches(self, location: &Path) -> bool {
        let key = location.as_ref();
        match self {
            // Armed once the data files are stored: the next PUT is the commit's.
            Hold::CommitStart => true,
            Hold::ManifestPut => key.contains("/_tessera/"),
        }
    }
}

/// The writer's store's hook: holds the first PUT that `hold` matches until resumed.
#[derive(Debug)]
struct Held {
    hold: Hold,
    armed: AtomicBool,
    reached: Notify,
    resume: Notify,
}

#[async_trait::async_trait]
impl PutHook for Held {
    const NAME: &'static str = "HeldStore";

    async fn put(
        &self,
        inner: &Arc<dyn ObjectStore>,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        if self.hold.matches(location) && self.armed.swap(false, Ordering::SeqCst) {
            self.reached.notify_one();
            self.resume.notified().await;
        }
        inner.put_opts(location, payload, opts).await
    }
}

/// A writer commits two data files and is held at `hold` while a vacuum with
/// retention 0 runs. Either the commit lands and every row is readable, or it fails
/// saying vacuum removed its files and the table holds exactly the old rows.
async fn vacuum_during_a_held_commit(store: Arc<dyn ObjectStore>, prefix: &str, hold: Hold) {
    let table = Table::create(store.clone(), Path::from(prefix), TableOptions::default())
        .await
        .unwrap();
    let first = data_file(&table, &[1, 2]).await.unwrap();
    table.commit_append(vec![first]).await.unwrap();
    let held = Arc::new(PutHooked {
        inner: store.clone(),
        hook: Held {
            hold,
            armed: AtomicBool::new(false),
            reached: Notify::new(),
            resume: Notify::new(),
        },
    });
    let writer = Table::open(held.clone(), Path::from(prefix)).await.unwrap();
    let files = vec![
        data_file(&writer, &[3, 4]).await.unwrap(),
        data_file(&writer, &[5, 6]).await.unwrap(),
    ];
    held.hook.armed.store(true, Ordering::SeqCst);
    let commit = tokio::spawn(async move { writer.commit_append(files).await });
    bounded("the writer reaching its hold", held.hook.reached.notified()).await;
    bounded("vacuum", table.vacuum(Duration::ZERO))
        .await
        .unwrap();
    held.hook.resume.notify_one();
    let outcome = bounded("the commit", commit).await.unwrap();
    let seen = try_values(&table.snapshot().await.unwrap()).await;
    match outcome {
        Ok(_) => assert_eq!(
            seen.map_err(|e| e.to_string()),
            Ok(vec![1, 2, 3, 4, 5, 6]),
            "{hold:?}: the commit succeeded, so all its rows must be readable"
        ),
        Err(e) => {
            assert!(
                e.to_string().contains("vacuum"),
                "{hold:?}: not an error saying vacuum removed the files: {e}"
            );
            assert_eq!(seen.map_err(|e| e.to_string()), Ok(vec![1, 2]), "{hold:?}");
        }
    }
    // Whatever vacuum removes afterwards leaves the table readable.
    table.vacuum(Duration::ZERO).await.unwrap();
    assert!(try_values(&table.snapshot().await.unwrap()).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vacuum_never_removes_what_a_commit_in_progress_references_on_minio() {
    let server = MinioServer::start();
    let store = minio_store(&server, "vacuum-race");
    vacuum_during_a_held_commit(store.clone(), "t/start", Hold::CommitStart).await;
    vacuum_during_a_held_commit(store, "t/manifest", Hold::ManifestPut).await;
}
