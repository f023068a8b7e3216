//! Appends, deletes and vacuums (retention 0) running in parallel on MinIO, round after
//! round. The test keeps its own ledger of what each successful operation added and
//! removed; after every round the table holds exactly the ledger's rows, and every data
//! file the newest version lists exists.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use tessera_table::{Table, TableError, TableOptions};
use tessera_testkit::MinioServer;

mod common;
use common::{data_file, minio_store, values};

const ROUNDS: i64 = 6;
const APPENDERS: i64 = 3;
const DELETERS: u64 = 2;
const VACUUMS: usize = 2;
/// Rows per appended file.
const ROWS: i64 = 4;

/// What the test knows the table holds: each committed file's values by position,
/// and the positions deleted from it.
#[derive(Debug, Default)]
struct Ledger {
    files: BTreeMap<String, Vec<i64>>,
    deleted: BTreeSet<(String, u64)>,
}

impl Ledger {
    fn rows(&self) -> Vec<i64> {
        let mut rows: Vec<i64> = self
            .files
            .iter()
            .flat_map(|(path, values)| {
                values
                    .iter()
                    .enumerate()
                    .filter(|(row, _)| !self.deleted.contains(&(path.clone(), *row as u64)))
                    .map(|(_, v)| *v)
            })
            .collect();
        rows.sort_unstable();
        rows
    }

    /// A live row of some file whose position is `lane` modulo [`DELETERS`], so
    /// deleters of one round never pick the same row.
    fn row_for(&self, lane: u64) -> Option<(String, u64)> {
        self.files.iter().find_map(|(path, values)| {
            (0..values.len() as u64)
                .filter(|row| row % DELETERS == lane)
                .find(|row| !self.deleted.contains(&(path.clone(), *row)))
                .map(|row| (path.clone(), row))
        })
    }
}

/// What one operation of a round did, if it succeeded.
enum Done {
    Appended(String, Vec<i64>),
    Deleted(String, u64),
    Vacuumed,
    /// An append whose file vacuum removed before it could be committed: nothing
    /// changed.
    Refused,
}

async fn append(store: Arc<dyn ObjectStore>, values: Vec<i64>) -> Done {
    let table = Table::open(store, Path::from("t")).await.unwrap();
    let file = data_file(&table, &values).await.unwrap();
    let path = file.path.clone();
    match table.commit_append(vec![file]).await {
        Ok(_) => Done::Appended(path, values),
        Err(TableError::Removed(_)) => Done::Refused,
        Err(e) => panic!("append: {e}"),
    }
}

async fn delete(store: Arc<dyn ObjectStore>, path: String, row: u64) -> Done {
    let table = Table::open(store, Path::from("t")).await.unwrap();
    table
        .commit_delete(vec![(path.clone(), vec![row])])
        .await
        .unwrap_or_else(|e| panic!("delete: {e}"));
    Done::Deleted(path, row)
}

async fn vacuum(store: Arc<dyn ObjectStore>) -> Done {
    let table = Table::open(store, Path::from("t")).await.unwrap();
    table.vacuum(Duration::ZERO).await.unwrap();
    Done::Vacuumed
}

/// Runs one round's operations at once and books the successful ones.
async fn round(store: &Arc<dyn ObjectStore>, ledger: &mut Ledger, round: i64) -> usize {
    let mut tasks = tokio::task::JoinSet::new();
    for appender in 0..APPENDERS {
        let first = (round * APPENDERS + appender) * ROWS;
        tasks.spawn(append(store.clone(), (first..first + ROWS).collect()));
    }
    for lane in 0..DELETERS {
        if let Some((path, row)) = ledger.row_for(lane) {
            tasks.spawn(delete(store.clone(), path, row));
        }
    }
    for _ in 0..VACUUMS {
        tasks.spawn(vacuum(store.clone()));
    }
    let mut appended = 0;
    while let Some(done) = tasks.join_next().await {
        match done.unwrap() {
            Done::Appended(path, values) => {
                ledger.files.insert(path, values);
                appended += 1;
            }
            Done::Deleted(path, row) => {
                ledger.deleted.insert((path, row));
            }
            Done::Vacuumed | Done::Refused => {}
        }
    }
    appended
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_deletes_and_vacuums_in_parallel_lose_nothing_on_minio() {
    let server = MinioServer::start();
    let store = minio_store(&server, "parallel");
    Table::create(store.clone(), Path::from("t"), TableOptions::default())
        .await
        .unwrap();
    let mut ledger = Ledger::default();
    let mut appended = 0;
    for r in 0..ROUNDS {
        appended += round(&store, &mut ledger, r).await;
        let table = Table::open(store.clone(), Path::from("t")).await.unwrap();
        let snapshot = table.snapshot().await.unwrap();
        for file in snapshot.files() {
            let key = table.prefix().clone().join("data").join(
                file.path
                    .strip_prefix("data/")
                    .expect("data files live under data/"),
            );
            assert!(
                store.head(&key).await.is_ok(),
                "round {r}: version {} lists {}, which is gone",
                snapshot.version(),
                file.path
            );
        }
        let expected = ledger.rows();
        assert_eq!(snapshot.live_rows(), expected.len() as u64, "round {r}");
        assert_eq!(values(&snapshot).await, expected, "round {r}");
    }
    eprintln!("{appended} of {} appends committed", ROUNDS * APPENDERS);
}
