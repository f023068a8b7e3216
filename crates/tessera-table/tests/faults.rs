//! Commits to a table on MinIO reached through toxiproxy, with real network faults on
//! chosen PUTs: a data-file PUT that never arrives, a manifest PUT that never arrives,
//! and a manifest PUT that MinIO applied but whose answer was lost (cut, reset or
//! stalled response). Readers, straight to MinIO, must see exactly the old version or
//! exactly the new one; the writer succeeds (retrying what is safe) or gets a clear
//! error; and no commit is ever applied twice, also when it races another writer.
//!
//! A fault is switched on by a store wrapper just before the PUT it targets and off
//! after it (or after a few more calls), so the timing is exact without sleeps; the
//! failure itself is toxiproxy's, on the wire.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    GetOptions, GetResult, ObjectMeta, ObjectStore, ObjectStoreExt, PutOptions, PutPayload,
    PutResult,
};
use tessera_table::{NewFile, Table, TableError, TableOptions};
use tessera_testkit::{Direction, MinioServer, Proxy, Toxic, Toxiproxy, fault_retrieval_options};
use tokio::sync::Notify;

mod common;
use common::{PutHook, PutHooked, bounded, data_file, open_store, values};

const BUCKET: &str = "faults";
const TABLE: &str = "tables/t";
/// The committed version every test starts from (version 1).
const OLD: [i64; 2] = [1, 2];
/// What a writer adds, in three data files.
const ADDED: [[i64; 2]; 3] = [[3, 4], [5, 6], [7, 8]];

/// Which PUTs a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Data files (`data/...`).
    DataFile,
    /// Manifest versions (`_tessera/...`).
    Manifest,
}

impl Target {
    fn matches(self, location: &Path) -> bool {
        let key = location.as_ref();
        match self {
            Target::DataFile => key.contains("/data/"),
            Target::Manifest => key.contains("/_tessera/"),
        }
    }
}

/// A toxic switched on for some PUTs of one writer.
#[derive(Debug, Clone, Copy)]
struct Fault {
    target: Target,
    direction: Direction,
    toxic: Toxic,
    /// Matching PUTs let through before the first faulted one.
    skip: usize,
    /// Matching PUTs faulted (the rest go through clean).
    puts: usize,
    /// Further store calls after a faulted PUT that meet the toxic too (the writer's
    /// first look at the table after the failure).
    linger: usize,
}

impl Fault {
    /// `puts` PUTs to `target` reset before the server sees them, after `skip` clean
    /// ones.
    fn reset(target: Target, skip: usize, puts: usize) -> Self {
        Self {
            target,
            direction: Direction::Upstream,
            toxic: Toxic::ResetPeer { after_ms: 0 },
            skip,
            puts,
            linger: 0,
        }
    }

    /// The answer to the first manifest PUT meets `toxic` (the PUT itself may land),
    /// and so does the writer's next store call.
    fn manifest_answer(toxic: Toxic) -> Self {
        Self {
            target: Target::Manifest,
            direction: Direction::Downstream,
            toxic,
            skip: 0,
            puts: 1,
            linger: 1,
        }
    }
}

/// What happened to one faulted PUT.
#[derive(Debug, Clone)]
struct Faulted {
    key: String,
    /// The error the writer's store returned, if any.
    error: Option<String>,
    /// Whether the object exists afterwards, asked straight from MinIO.
    landed: bool,
}

#[derive(Debug, Default)]
struct Counters {
    matched: usize,
    faulted: usize,
    lingering: usize,
    armed: bool,
    log: Vec<Faulted>,
}

/// A pause after a faulted PUT, so a test can act (commit as another writer) between
/// the lost answer and the writer's next step.
#[derive(Debug, Default)]
struct Pause {
    reached: Notify,
    resume: Notify,
}

/// Shared by a [`Faulty`] hook and the streams it returns.
#[derive(Debug)]
struct Shared {
    proxy: Proxy,
    fault: Fault,
    counters: Mutex<Counters>,
}

impl Shared {
    async fn set_toxic(&self, on: bool) {
        let proxy = self.proxy.clone();
        let fault = self.fault;
        tokio::task::spawn_blocking(move || {
            if on {
                proxy.add("fault", fault.direction, fault.toxic);
            } else {
                proxy.remove("fault");
            }
        })
        .await
        .expect("toxiproxy call");
    }

    /// Counts a call other than a faulted PUT; switches a lingering toxic off after
    /// the last call it was meant for.
    async fn after_call(&self, counted: bool) {
        if !counted {
            return;
        }
        let off = {
            let mut c = self.counters.lock().unwrap();
            c.lingering -= 1;
            let off = c.lingering == 0 && c.armed;
            if off {
                c.armed = false;
            }
            off
        };
        if off {
            self.set_toxic(false).await;
        }
    }

    /// True when the call now starting meets a lingering toxic.
    fn starts_call(&self) -> bool {
        self.counters.lock().unwrap().lingering > 0
    }
}

/// The writer's store's hook, its inner store the S3 store through the proxy:
/// switches the fault's toxic on around the PUTs it targets.
#[derive(Debug)]
struct Faulty {
    /// MinIO itself, to tell whether a faulted PUT landed.
    witness: Arc<dyn ObjectStore>,
    shared: Arc<Shared>,
    pause: Option<Arc<Pause>>,
}

#[async_trait::async_trait]
impl PutHook for Faulty {
    const NAME: &'static str = "FaultyStore";

    async fn put(
        &self,
        inner: &Arc<dyn ObjectStore>,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let fault = self.shared.fault;
        let hit = fault.target.matches(location) && {
            let mut c = self.shared.counters.lock().unwrap();
            c.matched += 1;
            let hit = c.matched > fault.skip && c.faulted < fault.puts;
            if hit {
                c.faulted += 1;
                c.armed = true;
            }
            hit
        };
        if !hit {
            let counted = self.shared.starts_call();
            let result = inner.put_opts(location, payload, opts).await;
            self.shared.after_call(counted).await;
            return result;
        }
        self.shared.set_toxic(true).await;
        let result = inner.put_opts(location, payload, opts).await;
        let landed = self.witness.head(location).await.is_ok();
        let off = {
            let mut c = self.shared.counters.lock().unwrap();
            c.log.push(Faulted {
                key: location.to_string(),
                error: result.as_ref().err().map(|e| e.to_string()),
                landed,
            });
            c.lingering = fault.linger;
            if fault.linger == 0 {
                c.armed = false;
            }
            fault.linger == 0
        };
        if off {
            self.shared.set_toxic(false).await;
        }
        if let Some(pause) = &self.pause {
            pause.reached.notify_one();
            pause.resume.notified().await;
        }
        result
    }

    async fn get(
        &self,
        inner: &Arc<dyn ObjectStore>,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let counted = self.shared.starts_call();
        // The body is read now, so a lingering toxic meets it.
        let result = async {
            let got = inner.get_opts(location, options).await?;
            let (meta, range, attributes) =
                (got.meta.clone(), got.range.clone(), got.attributes.clone());
            let bytes = got.bytes().await?;
            Ok(GetResult {
                payload: object_store::GetResultPayload::Stream(
                    futures::stream::once(async move { Ok(bytes) }).boxed(),
                ),
                meta,
                range,
                attributes,
            })
        }
        .await;
        self.shared.after_call(counted).await;
        result
    }

    fn list(
        &self,
        inner: &Arc<dyn ObjectStore>,
        prefix: Option<&Path>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let inner = Arc::clone(inner);
        let shared = Arc::clone(&self.shared);
        let prefix = prefix.cloned();
        futures::stream::once(async move {
            let counted = shared.starts_call();
            let listed: Vec<_> = inner.list(prefix.as_ref()).collect().await;
            shared.after_call(counted).await;
            futures::stream::iter(listed)
        })
        .flatten()
        .boxed()
    }
}

/// MinIO, toxiproxy with a proxy in front of MinIO, and a table at version 1 holding
/// [`OLD`], created straight on MinIO.
struct Rig {
    minio: MinioServer,
    _toxiproxy: Toxiproxy,
    proxy: Proxy,
    direct: Arc<dyn ObjectStore>,
}

impl Rig {
    async fn start() -> Self {
        let minio = MinioServer::start();
        minio.create_bucket(BUCKET);
        let toxiproxy = Toxiproxy::start();
        let proxy = toxiproxy.proxy("minio", minio.port());
        let direct = open_store(&minio, &minio.endpoint(), BUCKET, fault_retrieval_options());
        let table = Table::create(direct.clone(), Path::from(TABLE), TableOptions::default())
            .await
            .unwrap();
        let first = data_file(&table, &OLD).await.unwrap();
        assert_eq!(table.commit_append(vec![first]).await.unwrap(), 1);
        Self {
            minio,
            _toxiproxy: toxiproxy,
            proxy,
            direct,
        }
    }

    /// A writer whose store goes through the proxy and meets `fault`.
    async fn writer(&self, fault: Fault, pause: Option<Arc<Pause>>) -> (Table, Arc<Shared>) {
        let shared = Arc::new(Shared {
            proxy: self.proxy.clone(),
            fault,
            counters: Mutex::default(),
        });
        let store: Arc<dyn ObjectStore> = Arc::new(PutHooked {
            inner: open_store(
                &self.minio,
                &self.proxy.endpoint(),
                BUCKET,
                fault_retrieval_options(),
            ),
            hook: Faulty {
                witness: self.direct.clone(),
                shared: shared.clone(),
                pause,
            },
        });
        let table = Table::open(store, Path::from(TABLE)).await.unwrap();
        (table, shared)
    }

    /// A writer straight to MinIO, without faults.
    async fn clean_writer(&self) -> Table {
        Table::open(self.direct.clone(), Path::from(TABLE))
            .await
            .unwrap()
    }

    /// The newest version and its values, read straight from MinIO.
    async fn read(&self) -> (u64, Vec<i64>) {
        let table = self.clean_writer().await;
        let snapshot = table.snapshot().await.unwrap();
        (snapshot.version(), values(&snapshot).await)
    }

    /// Every manifest version, read straight from MinIO.
    async fn versions(&self) -> Vec<String> {
        let dir = Path::from(format!("{TABLE}/_tessera"));
        let mut keys: Vec<String> = self
            .direct
            .list(Some(&dir))
            .map_ok(|o| o.location.to_string())
            .try_collect()
            .await
            .unwrap();
        keys.sort();
        keys.into_iter()
            .map(|k| k.rsplit('/').next().unwrap().to_string())
            .collect()
    }
}

/// The manifest keys of versions `0..=last`.
fn expected_versions(last: u64) -> Vec<String> {
    (0..=last).map(|v| format!("{v:020}.json")).collect()
}

/// [`OLD`] plus `added`, sorted.
fn with(added: &[&[i64]]) -> Vec<i64> {
    let mut all: Vec<i64> = OLD.to_vec();
    all.extend(added.iter().flat_map(|a| a.iter().copied()));
    all.sort_unstable();
    all
}

fn added() -> Vec<&'static [i64]> {
    ADDED.iter().map(|a| &a[..]).collect()
}

/// Writes [`ADDED`] as three data files through `table`.
async fn write_files(table: &Table) -> Result<Vec<NewFile>, TableError> {
    let mut files = Vec::new();
    for values in ADDED {
        files.push(data_file(table, &values).await?);
    }
    Ok(files)
}

fn log(shared: &Shared) -> Vec<Faulted> {
    shared.counters.lock().unwrap().log.clone()
}

/// Connections reset as the request starts: the second data file never arrives.
/// Nothing is committed, the writer hears a clear error, and the same writer's retry
/// commits everything once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_data_file_put_commits_nothing_and_a_retry_commits_once() {
    let rig = Rig::start().await;
    let fault = Fault::reset(Target::DataFile, 1, 1);
    let (writer, shared) = rig.writer(fault, None).await;
    let err = bounded("failed data file", async {
        let files = write_files(&writer).await?;
        writer.commit_append(files).await
    })
    .await
    .expect_err("the second data file cannot be written");
    let text = err.to_string();
    assert!(
        text.contains("data/") && (text.contains("reset") || text.contains("closed")),
        "not a clear error: {text}"
    );
    let faulted = log(&shared);
    assert_eq!(faulted.len(), 1);
    assert!(
        faulted[0].key.contains("/data/") && !faulted[0].landed,
        "{faulted:?}"
    );
    assert_eq!(rig.read().await, (1, OLD.to_vec()));

    let files = bounded("retry", write_files(&writer)).await.unwrap();
    let version = bounded("retry", writer.commit_append(files)).await.unwrap();
    assert_eq!(version, 2);
    assert_eq!(rig.read().await, (2, with(&added())));
    assert_eq!(rig.versions().await, expected_versions(2));
    // The failed attempt's first data file is the only orphan.
    let report = rig
        .clean_writer()
        .await
        .vacuum(Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(report.files, 1, "{report:?}");
    assert_eq!(rig.read().await, (2, with(&added())));
}

/// The first manifest PUT is reset before MinIO sees it: the commit retries and lands
/// exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_put_that_never_arrives_is_retried_and_lands_once() {
    let rig = Rig::start().await;
    let fault = Fault::reset(Target::Manifest, 0, 1);
    let (writer, shared) = rig.writer(fault, None).await;
    let files = bounded("data files", write_files(&writer)).await.unwrap();
    let version = bounded("commit", writer.commit_append(files))
        .await
        .unwrap();
    assert_eq!(version, 2);
    let faulted = log(&shared);
    assert_eq!(faulted.len(), 1, "{faulted:?}");
    assert!(
        faulted[0].key.contains("/_tessera/") && faulted[0].error.is_some() && !faulted[0].landed,
        "the fault did not hit: {faulted:?}"
    );
    assert_eq!(rig.read().await, (2, with(&added())));
    assert_eq!(rig.versions().await, expected_versions(2));
    let report = rig
        .clean_writer()
        .await
        .vacuum(Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(report.files, 0, "{report:?}");
}

/// Every manifest PUT is reset: the commit gives up after a bounded number of
/// attempts with an error saying the table is unchanged, and it is; committing the
/// same files again once the network is back succeeds once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifest_puts_that_always_fail_are_a_clear_error_and_commit_nothing() {
    let rig = Rig::start().await;
    let fault = Fault::reset(Target::Manifest, 0, usize::MAX);
    let (writer, shared) = rig.writer(fault, None).await;
    let files = bounded("data files", write_files(&writer)).await.unwrap();
    let err = bounded("commit", writer.commit_append(files.clone()))
        .await
        .expect_err("no manifest PUT gets through");
    assert!(
        matches!(err, TableError::CommitFailed { attempts: 4, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("the table is unchanged"), "{err}");
    let faulted = log(&shared);
    assert_eq!(faulted.len(), 4, "{faulted:?}");
    assert!(faulted.iter().all(|f| f.error.is_some() && !f.landed));
    assert_eq!(rig.read().await, (1, OLD.to_vec()));
    assert_eq!(rig.versions().await, expected_versions(1));

    let retried = rig.clean_writer().await.commit_append(files).await.unwrap();
    assert_eq!(retried, 2);
    assert_eq!(rig.read().await, (2, with(&added())));
}

/// The manifest PUT reaches MinIO and is applied, but its answer is lost (connection
/// closed, reset, or stalled until the client gives up), and the writer's first look
/// at the table afterwards fails too. The writer must recognize its own version: it
/// reports version 2 and the table holds each added row once (a writer that took its
/// own version for someone else's would commit the files again as version 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_put_whose_answer_is_lost_is_committed_exactly_once() {
    let cases = [
        ("closed", Toxic::LimitData { bytes: 0 }, true),
        ("reset", Toxic::ResetPeer { after_ms: 0 }, false),
        ("stalled", Toxic::Timeout { close_after_ms: 0 }, true),
    ];
    for (name, toxic, must_land) in cases {
        let rig = Rig::start().await;
        let fault = Fault::manifest_answer(toxic);
        let (writer, shared) = rig.writer(fault, None).await;
        let files = bounded("data files", write_files(&writer)).await.unwrap();
        let version = bounded("commit", writer.commit_append(files))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let faulted = log(&shared);
        assert_eq!(faulted.len(), 1, "{name}: {faulted:?}");
        assert!(faulted[0].error.is_some(), "{name}: the answer arrived");
        if must_land {
            assert!(faulted[0].landed, "{name}: the PUT did not reach MinIO");
        }
        assert_eq!(version, 2, "{name}");
        assert_eq!(rig.read().await, (2, with(&added())), "{name}");
        assert_eq!(rig.versions().await, expected_versions(2), "{name}");
    }
}

/// Starts writer A's commit with `fault` on its manifest PUT and, while A is held at
/// that PUT, commits writer B (one row, 9). Returns A's pending commit, what A's PUTs
/// did, and B's version.
async fn race_with_b(
    rig: &Rig,
    fault: Fault,
) -> (
    tokio::task::JoinHandle<Result<u64, TableError>>,
    Arc<Shared>,
    u64,
) {
    let pause = Arc::new(Pause::default());
    let (a, shared) = rig.writer(fault, Some(pause.clone())).await;
    let files = bounded("data files", write_files(&a)).await.unwrap();
    let commit_a = tokio::spawn(async move { a.commit_append(files).await });
    bounded("A's faulted PUT", pause.reached.notified()).await;
    let b = rig.clean_writer().await;
    let b_file = data_file(&b, &[9]).await.unwrap();
    let b_version = bounded("B's commit", b.commit_append(vec![b_file]))
        .await
        .unwrap();
    pause.resume.notify_one();
    (commit_a, shared, b_version)
}

/// The rows after A's commit and B's row 9.
fn with_b() -> Vec<i64> {
    let mut expected = with(&added());
    expected.push(9);
    expected.sort_unstable();
    expected
}

/// Writer A's manifest PUT for version 2 lands but its answer is lost; before A looks
/// again, writer B commits (losing version 2 to A, so B's commit becomes version 3).
/// A must still report version 2 and not re-apply its files on top of B's version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_racing_another_writer_is_committed_exactly_once() {
    let rig = Rig::start().await;
    let fault = Fault::manifest_answer(Toxic::LimitData { bytes: 0 });
    let (commit_a, shared, b_version) = race_with_b(&rig, fault).await;
    assert_eq!(b_version, 3, "B lost version 2 to A's landed PUT");
    let a_version = bounded("A's commit", commit_a).await.unwrap().unwrap();
    assert_eq!(a_version, 2);
    assert!(log(&shared)[0].landed);
    assert_eq!(rig.read().await, (3, with_b()));
    assert_eq!(rig.versions().await, expected_versions(3));
    let at_2 = rig.clean_writer().await.snapshot_at(2).await.unwrap();
    assert_eq!(values(&at_2).await, with(&added()));
}

/// Writer A's manifest PUT for version 2 is reset before it arrives, and writer B
/// takes version 2 meanwhile: A, the loser, re-reads and commits once as version 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_put_that_lost_the_race_is_committed_once_on_top() {
    let rig = Rig::start().await;
    let fault = Fault::reset(Target::Manifest, 0, 1);
    let (commit_a, shared, b_version) = race_with_b(&rig, fault).await;
    assert_eq!(b_version, 2);
    assert_eq!(bounded("A's commit", commit_a).await.unwrap().unwrap(), 3);
    assert!(!log(&shared)[0].landed);
    assert_eq!(rig.read().await, (3, with_b()));
    assert_eq!(rig.versions().await, expected_versions(3));
}
