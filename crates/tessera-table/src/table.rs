//! A table under one prefix of an object store: commits, snapshots and vacuum.
//!
//! A commit first writes its data files (unique names, never overwritten), then the next
//! manifest version with a conditional PUT (`PutMode::Create`, `If-None-Match: *` on
//! S3). Exactly one writer wins each version; a loser re-reads the newest version,
//! applies its change on top (appends always apply; deletes apply unless their file is
//! gone) and tries the next number. A writer that dies before its manifest PUT leaves
//! only unreferenced data files, which readers never see and `vacuum` removes. Between
//! the data files and the manifest, an append claims its files against vacuum
//! (the `vacuum` module documents the protocol).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use tessera_tiles::summary::FileSummary;

use crate::cache;
use crate::claims::{self, Holder, MAX_CLAIM_HOLD, Taken};
use crate::error::TableError;
use crate::layout::{DATA, REJECT_PARTS, TABLE_DIRS, VERSIONS, child_key};
use crate::manifest::{
    self, DataFile, DeletionVector, FORMAT, Manifest, SideFile, TableColumn, manifest_key,
    version_of,
};
use crate::snapshot::Snapshot;

/// Attempts at winning a version before a commit gives up.
pub const MAX_COMMIT_ATTEMPTS: usize = 64;

/// Failed manifest PUTs (and failed reads of the table after one) a commit survives
/// before it gives up.
const MAX_FAILED_PUTS: usize = 3;

/// Claims a commit stores or gives back at once.
const MAX_CLAIMS_IN_FLIGHT: usize = 16;

/// Longest pause between attempts; the pause doubles from 10 ms up to this.
const MAX_BACKOFF: Duration = Duration::from_millis(500);

/// How a new table is set up.
#[derive(Debug, Clone)]
pub struct TableOptions {
    /// Name of the JSON document column.
    pub json_column: String,
    /// All columns in order, the document column among them; empty for a table of the
    /// document column alone.
    pub columns: Vec<TableColumn>,
}

impl Default for TableOptions {
    fn default() -> Self {
        Self {
            json_column: "j".to_string(),
            columns: Vec::new(),
        }
    }
}

/// `columns` (empty: the document column alone) checked and completed: exactly one
/// document column, named `json_column`; unique names; relational types Arrow knows;
/// none named like the document column of data files.
fn table_columns(
    json_column: &str,
    columns: Vec<TableColumn>,
) -> Result<Vec<TableColumn>, TableError> {
    if columns.is_empty() {
        return Ok(vec![TableColumn::json(json_column)]);
    }
    let json: Vec<&TableColumn> = columns.iter().filter(|c| c.is_json()).collect();
    if json.len() != 1 || json[0].name != json_column {
        return Err(TableError::Schema(format!(
            "a table has exactly one JSON document column, '{json_column}'"
        )));
    }
    let mut names = HashSet::new();
    for column in &columns {
        if !names.insert(column.name.as_str()) {
            return Err(TableError::Schema(format!(
                "column '{}' appears twice",
                column.name
            )));
        }
        if !column.is_json() && column.name == tessera_tiles::writer::COLUMN {
            return Err(TableError::Schema(format!(
                "'{}' can only name the JSON document column",
                column.name
            )));
        }
        column.data_type().map_err(TableError::Schema)?;
    }
    Ok(columns)
}

/// A data file written by [`Table::write_data_file`], to be committed. It serializes so
/// that files written in other processes (a cluster's executors) are committed by one.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NewFile {
    /// Key relative to the table prefix.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// What the tiles writer said about the file.
    pub summary: FileSummary,
    /// Its side files, written like data files ([`Table::write_data_file`]).
    pub sides: Vec<SideFile>,
}

/// Rows to delete from one file, by position.
pub type FileDeletes = (String, Vec<u64>);

/// A table: an object store and the prefix holding `data/` and `_tessera/`.
#[derive(Debug, Clone)]
pub struct Table {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    json_column: String,
    columns: Vec<TableColumn>,
    /// The directory the store keeps its keys below, when it is a local file system.
    local_root: Option<PathBuf>,
}

impl Table {
    /// Opens the table under `prefix`; [`TableError::NotFound`] when there is none.
    pub async fn open(store: Arc<dyn ObjectStore>, prefix: Path) -> Result<Self, TableError> {
        let table = Self::unread(store, prefix);
        let manifest = table.latest().await?;
        let columns =
            table_columns(&manifest.json_column, manifest.columns.clone()).map_err(|e| {
                TableError::Manifest {
                    path: format!("{}/{}", table.location(), manifest_key(manifest.version)),
                    reason: e.to_string(),
                }
            })?;
        Ok(Self {
            json_column: manifest.json_column.clone(),
            columns,
            ..table
        })
    }

    /// Version `version` of the table under `prefix`, read without looking for newer
    /// ones: a scan sent to another process reads exactly the version its client
    /// planned on, and reads one manifest to find it.
    pub async fn pinned(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        version: u64,
    ) -> Result<Snapshot, TableError> {
        Self::unread(store, prefix).snapshot_at(version).await
    }

    /// The table under `prefix` before its manifest is read: enough to read a manifest.
    fn unread(store: Arc<dyn ObjectStore>, prefix: Path) -> Self {
        Self {
            store,
            prefix,
            json_column: String::new(),
            columns: Vec::new(),
            local_root: None,
        }
    }

    /// Creates an empty table (version 0) under `prefix`; fails if one exists.
    pub async fn create(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        options: TableOptions,
    ) -> Result<Self, TableError> {
        let columns = table_columns(&options.json_column, options.columns)?;
        let table = Self {
            store,
            prefix,
            json_column: options.json_column,
            columns,
            local_root: None,
        };
        match table.latest_version().await? {
            Some(_) => return Err(TableError::AlreadyExists(table.location())),
            None => {
                table.check_no_foreign_objects().await?;
                let manifest = table.manifest(0, Vec::new(), &unique_id());
                match table.put_manifest(&manifest).await {
                    Ok(()) => {}
                    Err(TableError::Store(object_store::Error::AlreadyExists { .. })) => {
                        return Err(TableError::AlreadyExists(table.location()));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(table)
    }

    /// Refuses to create a table where other objects already are (NDJSON files, say):
    /// the table would hide them from `FROM '<location>'`, and vacuum would never see
    /// them. One listing of the prefix's top level; the table's own directories are
    /// expected (another writer may be creating it at the same moment).
    async fn check_no_foreign_objects(&self) -> Result<(), TableError> {
        let top = self.store.list_with_delimiter(Some(&self.prefix)).await?;
        let own = |dir: &Path| {
            dir.filename()
                .is_some_and(|name| TABLE_DIRS.contains(&name))
        };
        let foreign = top
            .objects
            .iter()
            .map(|o| &o.location)
            .chain(top.common_prefixes.iter().filter(|dir| !own(dir)))
            .next();
        match foreign {
            Some(key) => Err(TableError::NotEmpty {
                location: self.location(),
                found: tessera_blob::location::object_url(self.store.as_ref(), key),
            }),
            None => Ok(()),
        }
    }

    /// The table under `prefix`, created as `options` says if there is none yet.
    ///
    /// Writers that find no table race to create it like any commit: the one whose
    /// version 0 lands creates it, the others open it, so that all of them go on to
    /// commit their rows. A table found with other columns than `options` asks for is
    /// [`TableError::AlreadyExists`].
    pub async fn open_or_create(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        options: TableOptions,
    ) -> Result<Self, TableError> {
        let table = match Self::open(Arc::clone(&store), prefix.clone()).await {
            Err(e) if e.is_not_found() => {
                let wanted = table_columns(&options.json_column, options.columns.clone())?;
                match Self::create(Arc::clone(&store), prefix.clone(), options).await {
                    Err(TableError::AlreadyExists(_)) => Self::open(store, prefix).await?,
                    created => return created,
                }
                .same_columns(&wanted)?
            }
            opened => opened?,
        };
        Ok(table)
    }

    /// `self` if its columns are `columns`, else the error that another table is there.
    fn same_columns(self, columns: &[TableColumn]) -> Result<Self, TableError> {
        match self.columns == columns {
            true => Ok(self),
            false => Err(TableError::AlreadyExists(self.location())),
        }
    }

    /// The table on a local file system store whose keys lie below the directory
    /// `root`: vacuum then also removes what killed writers left half-written, which
    /// the store API can neither list nor delete (see [`Table::vacuum`]).
    pub fn with_local_root(self, root: PathBuf) -> Self {
        Self {
            local_root: Some(root),
            ..self
        }
    }

    /// The local directory the store keeps its keys below, if it is a local file
    /// system and the caller said so.
    pub fn local_root(&self) -> Option<&std::path::Path> {
        self.local_root.as_deref()
    }

    /// The name of the JSON document column.
    pub fn json_column(&self) -> &str {
        &self.json_column
    }

    /// The table's columns in order, the JSON document column among them.
    pub fn columns(&self) -> &[TableColumn] {
        &self.columns
    }

    /// The store the table lives in.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The table's prefix.
    pub fn prefix(&self) -> &Path {
        &self.prefix
    }

    /// The newest version, read once: later commits do not change it.
    pub async fn snapshot(&self) -> Result<Snapshot, TableError> {
        Ok(Snapshot::new(
            Arc::clone(&self.store),
            self.prefix.clone(),
            self.latest().await?,
        ))
    }

    /// The version `version`, if it exists (time travel; vacuum keeps manifests).
    pub async fn snapshot_at(&self, version: u64) -> Result<Snapshot, TableError> {
        Ok(Snapshot::new(
            Arc::clone(&self.store),
            self.prefix.clone(),
            Arc::new(self.read_manifest(version).await?),
        ))
    }

    /// Stores a data file under `data/` with a name no other writer can pick, and
    /// returns its key relative to the table prefix. It stays invisible until a commit
    /// lists it.
    pub async fn write_data_file(&self, parquet: Bytes) -> Result<String, TableError> {
        let relative = format!("{DATA}/{}.parquet", unique_id());
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let key = self.key(&relative);
        self.store
            .put_opts(&key, PutPayload::from(parquet), options)
            .await
            .map_err(|source| TableError::DataFile {
                path: tessera_blob::location::object_url(self.store.as_ref(), &key),
                source,
            })?;
        Ok(relative)
    }

    /// Commits `files` as one new version; returns its number.
    ///
    /// The files are claimed first (the `vacuum` module has the rules): a file that
    /// vacuum removed, or holds to remove, fails the commit with
    /// [`TableError::Removed`] before anything is committed, so a version never lists a
    /// missing file.
    pub async fn commit_append(&self, files: Vec<NewFile>) -> Result<u64, TableError> {
        let commit_id = unique_id();
        let paths: Vec<String> = files
            .iter()
            .flat_map(|f| std::iter::once(&f.path).chain(f.sides.iter().map(|s| &s.path)))
            .cloned()
            .collect();
        self.claim(&paths, &commit_id).await?;
        let deadline = Instant::now() + MAX_CLAIM_HOLD;
        let outcome = self
            .commit(&commit_id, Some(deadline), |base| {
                base.extend(files.iter().map(|f| DataFile {
                    path: f.path.clone(),
                    size: f.size,
                    summary: f.summary.clone(),
                    deleted: DeletionVector::default(),
                    sides: f.sides.clone(),
                }));
                Ok(())
            })
            .await;
        // Landed: the files are referenced now. Failed: they are garbage for vacuum.
        // Unknown: the manifest may still be the one that lists them, so the claims stay
        // until vacuum finds them stale. Past the deadline vacuum may own them already.
        let settled = !matches!(outcome, Err(TableError::CommitUnknown { .. }));
        if settled && Instant::now() < deadline {
            self.release(&paths).await;
        }
        outcome
    }

    /// Commits deletion of the given rows (positions in their files) as one new version.
    pub async fn commit_delete(&self, deletes: Vec<FileDeletes>) -> Result<u64, TableError> {
        self.commit(&unique_id(), None, |base| {
            for (path, rows) in &deletes {
                let file = base
                    .iter_mut()
                    .find(|f| &f.path == path)
                    .ok_or_else(|| TableError::Conflict(path.clone()))?;
                let added = DeletionVector::from_rows(rows.iter().copied());
                if added.end() > file.summary.rows {
                    return Err(TableError::RowOutOfRange {
                        path: path.clone(),
                        row: added.end() - 1,
                        rows: file.summary.rows,
                    });
                }
                file.deleted = file.deleted.union(&added);
            }
            Ok(())
        })
        .await
    }

    /// Applies `change` to the newest version and writes the result as the next one,
    /// retrying on lost races.
    ///
    /// Every attempt carries the same commit id, so a manifest PUT that reached the
    /// store without its answer reaching us (connection cut, timeout, or a client that
    /// resent it and met its own write as a conflict) is recognized on the next attempt
    /// and never committed a second time. No manifest PUT starts after `deadline`.
    async fn commit(
        &self,
        commit_id: &str,
        deadline: Option<Instant>,
        change: impl Fn(&mut Vec<DataFile>) -> Result<(), TableError>,
    ) -> Result<u64, TableError> {
        let mut backoff = Duration::from_millis(10);
        let mut failures = 0;
        // Versions our PUT may have written although we did not hear so.
        let mut unsure: Vec<u64> = Vec::new();
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let looked = match self.latest().await {
                Ok(base) => self
                    .landed(&base, &mut unsure, commit_id)
                    .await
                    .map(|landed| (base, landed)),
                Err(e) => Err(e),
            };
            let base = match looked {
                Ok((_, Some(version))) => return Ok(version),
                Ok((base, None)) => base,
                Err(e) if unsure.is_empty() => return Err(e),
                // Our PUT may have landed: the table must be read before trying again.
                Err(e) => {
                    failures += 1;
                    if failures > MAX_FAILED_PUTS {
                        return Err(self.unknown(&unsure, e));
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            let mut files = base.files.clone();
            change(&mut files)?;
            let manifest = self.manifest(base.version + 1, files, commit_id);
            if deadline.is_some_and(|d| Instant::now() >= d) {
                let expired = TableError::ClaimsExpired {
                    location: self.location(),
                    held: MAX_CLAIM_HOLD,
                };
                return Err(self.unknown(&unsure, expired));
            }
            match self.put_manifest(&manifest).await {
                Ok(()) => return Ok(manifest.version),
                // Usually another writer's version; the next round tells.
                Err(TableError::Store(object_store::Error::AlreadyExists { .. })) => {
                    remember(&mut unsure, manifest.version);
                }
                Err(e) => {
                    remember(&mut unsure, manifest.version);
                    failures += 1;
                    // Bounded: the store client has already retried what it safely could.
                    if failures > MAX_FAILED_PUTS {
                        return self.settle(&mut unsure, commit_id, failures, e).await;
                    }
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        Err(TableError::TooManyAttempts {
            location: self.location(),
            attempts: MAX_COMMIT_ATTEMPTS,
        })
    }

    /// Claims the data files `paths` for commit `commit_id` and checks that they exist;
    /// on failure, gives back the claims it took.
    async fn claim(&self, paths: &[String], commit_id: &str) -> Result<(), TableError> {
        let holder = Holder::Commit(commit_id.to_string());
        // Futures made up front: a stream holding a closure over borrowed paths would
        // not be `Send` for every lifetime, as spawned commits need.
        let claims: Vec<_> = paths
            .iter()
            .map(|path| {
                let holder = &holder;
                async move { (path, self.claim_file(path, holder).await) }
            })
            .collect();
        let outcomes: Vec<(&String, Result<(), TableError>)> = futures::stream::iter(claims)
            .buffer_unordered(MAX_CLAIMS_IN_FLIGHT)
            .collect()
            .await;
        let mut taken = Vec::new();
        let mut failure = None;
        for (path, outcome) in outcomes {
            match outcome {
                Ok(()) => taken.push(path.clone()),
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        match failure {
            None => Ok(()),
            Some(e) => {
                self.release(&taken).await;
                Err(e)
            }
        }
    }

    /// Claims one data file for `holder` and checks that it exists (a vacuum that held
    /// it before may have deleted it and let go since).
    async fn claim_file(&self, path: &str, holder: &Holder) -> Result<(), TableError> {
        match claims::take(&self.store, &self.prefix, path, holder).await? {
            Taken::Ours => {}
            Taken::Other(Holder::Vacuum(_), _) => return Err(TableError::Removed(path.into())),
            Taken::Other(Holder::Commit(_), _) => return Err(TableError::Claimed(path.into())),
        }
        let missing = match self.store.head(&self.key(path)).await {
            Ok(_) => return Ok(()),
            Err(object_store::Error::NotFound { .. }) => TableError::Removed(path.into()),
            Err(e) => TableError::Store(e),
        };
        self.release(&[path.to_string()]).await;
        Err(missing)
    }

    /// Gives back the claims of `paths`, as far as the store lets us: a claim left
    /// behind only keeps vacuum from the file until the claim is stale.
    async fn release(&self, paths: &[String]) {
        let releases: Vec<_> = paths
            .iter()
            .map(|path| claims::release(&self.store, &self.prefix, path))
            .collect();
        let _ = futures::stream::iter(releases)
            .buffer_unordered(MAX_CLAIMS_IN_FLIGHT)
            .collect::<Vec<_>>()
            .await;
    }

    /// The version among `unsure` that holds commit `commit_id`, if one does; versions
    /// found to hold another writer's commit are dropped from `unsure`.
    async fn landed(
        &self,
        base: &Manifest,
        unsure: &mut Vec<u64>,
        commit_id: &str,
    ) -> Result<Option<u64>, TableError> {
        let mut pending = Vec::new();
        for &version in unsure.iter() {
            // Not there yet: this attempt writes the same key, which only one PUT wins.
            if version > base.version {
                pending.push(version);
                continue;
            }
            let holder = if version == base.version {
                base.commit_id.clone()
            } else {
                self.read_manifest(version).await?.commit_id
            };
            if holder == commit_id {
                return Ok(Some(version));
            }
        }
        *unsure = pending;
        Ok(None)
    }

    /// After the last failed manifest PUT: one more look at the table decides between
    /// "committed after all", "not committed" and "cannot tell".
    async fn settle(
        &self,
        unsure: &mut Vec<u64>,
        commit_id: &str,
        attempts: usize,
        last: TableError,
    ) -> Result<u64, TableError> {
        let base = match self.latest().await {
            Ok(base) => base,
            Err(_) => return Err(self.unknown(unsure, last)),
        };
        match self.landed(&base, unsure, commit_id).await {
            Ok(Some(version)) => Ok(version),
            Ok(None) => Err(TableError::CommitFailed {
                location: self.location(),
                attempts,
                source: Box::new(last),
            }),
            Err(_) => Err(self.unknown(unsure, last)),
        }
    }

    /// `error`, or when some manifest PUT of this commit may have landed, the error
    /// saying the outcome is unknown.
    fn unknown(&self, unsure: &[u64], error: TableError) -> TableError {
        match unsure.iter().max() {
            Some(&version) => TableError::CommitUnknown {
                location: self.location(),
                version,
                source: Box::new(error),
            },
            None => error,
        }
    }

    fn manifest(&self, version: u64, files: Vec<DataFile>, commit_id: &str) -> Manifest {
        Manifest {
            format: FORMAT,
            version,
            commit_id: commit_id.to_string(),
            json_column: self.json_column.clone(),
            // A table of documents alone keeps the layout readers before relational
            // columns understand.
            columns: match self.columns.as_slice() {
                [only] if only.is_json() => Vec::new(),
                all => all.to_vec(),
            },
            committed_at: chrono::Utc::now().to_rfc3339(),
            files,
        }
    }

    async fn put_manifest(&self, manifest: &Manifest) -> Result<(), TableError> {
        let body = manifest::encode(manifest).map_err(|reason| TableError::Manifest {
            path: manifest_key(manifest.version),
            reason,
        })?;
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        self.store
            .put_opts(
                &self.key(&manifest_key(manifest.version)),
                PutPayload::from(body),
                options,
            )
            .await?;
        Ok(())
    }

    pub(crate) async fn read_manifest(&self, version: u64) -> Result<Manifest, TableError> {
        let relative = manifest_key(version);
        let bytes = self.store.get(&self.key(&relative)).await?.bytes().await?;
        let manifest =
            manifest::decode(&bytes, version).map_err(|reason| TableError::Manifest {
                path: format!("{}/{relative}", self.location()),
                reason,
            })?;
        Ok(manifest)
    }

    /// The committed manifests, by version ascending.
    async fn manifests(&self) -> Result<Vec<(u64, ObjectMeta)>, TableError> {
        let dir = self.key(VERSIONS);
        let objects: Vec<ObjectMeta> = self.store.list(Some(&dir)).try_collect().await?;
        let mut manifests: Vec<(u64, ObjectMeta)> = objects
            .into_iter()
            .filter_map(|o| Some((version_of(o.location.as_ref())?, o)))
            .collect();
        manifests.sort_unstable_by_key(|(version, _)| *version);
        Ok(manifests)
    }

    /// The committed versions, ascending.
    pub(crate) async fn versions(&self) -> Result<Vec<u64>, TableError> {
        Ok(self
            .manifests()
            .await?
            .into_iter()
            .map(|(v, _)| v)
            .collect())
    }

    async fn latest_version(&self) -> Result<Option<u64>, TableError> {
        Ok(self.versions().await?.last().copied())
    }

    /// The newest manifest; parsed once per process and shared (repeated queries of a
    /// table that did not change read only the listing).
    async fn latest(&self) -> Result<Arc<Manifest>, TableError> {
        let (version, meta) = self
            .manifests()
            .await?
            .pop()
            .ok_or_else(|| TableError::NotFound(self.location()))?;
        let key = (
            self.store.to_string(),
            meta.location.to_string(),
            format!(
                "{} {} {}",
                meta.size,
                meta.last_modified.to_rfc3339(),
                meta.e_tag.as_deref().unwrap_or_default()
            ),
        );
        if let Some(manifest) = cache::manifest(&key) {
            return Ok(manifest);
        }
        let manifest = Arc::new(self.read_manifest(version).await?);
        cache::keep_manifest(key, Arc::clone(&manifest), meta.size as usize);
        Ok(manifest)
    }

    /// The store key of `relative` (a data file's path in the manifest) below the
    /// table prefix.
    pub fn key(&self, relative: &str) -> Path {
        child_key(&self.prefix, relative)
    }

    /// The key of a new reject part (see [`REJECT_PARTS`]), named as no other writer
    /// names one.
    pub fn new_reject_part(&self) -> Path {
        self.key(&format!("{REJECT_PARTS}/{}.ndjson", unique_id()))
    }

    /// `key` relative to the table prefix (as manifests name data files).
    pub(crate) fn relative(&self, key: &Path) -> String {
        key.prefix_match(&self.prefix)
            .map(|parts| {
                parts
                    .map(|p| p.as_ref().to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_else(|| key.to_string())
    }

    /// The table for messages: the store and the prefix.
    pub(crate) fn location(&self) -> String {
        tessera_blob::location::object_url(self.store.as_ref(), &self.prefix)
    }
}

/// Adds `version` to the versions a commit's PUT may have written, once.
fn remember(unsure: &mut Vec<u64>, version: u64) {
    if !unsure.contains(&version) {
        unsure.push(version);
    }
}

/// A name no other writer picks: time, process and a per-process counter.
pub(crate) fn unique_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random =
        std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), count);
    format!(
        "{nanos:032x}-{:08x}-{count:x}-{random:016x}",
        std::process::id()
    )
}
