//! `vacuum`: deleting data files that no version references, without ever deleting one
//! that a commit under way or to come will reference.
//!
//! Commits and vacuum meet at a data file's claim, `_claims/<data file key>`, which
//! each takes with a conditional PUT (`PutMode::Create`) before acting on the file, so
//! exactly one of them has it. The rules:
//!
//! 1. A commit takes the claim of each of its data files and then checks that the file
//!    exists, before its first manifest PUT; it fails with [`TableError::Removed`],
//!    committing nothing, if a vacuum holds a claim or the file is gone. It sends no
//!    manifest PUT later than [`MAX_CLAIM_HOLD`] after claiming, and gives its claims
//!    back once its manifest landed or it definitely failed (an unknown outcome keeps
//!    them).
//! 2. Vacuum reads every version, then for each unreferenced data file older than the
//!    retention takes its claim (a tombstone). A claim a commit holds keeps the file,
//!    unless it is older than [`CLAIM_LEASE`] (that commit is over), in which case
//!    vacuum overwrites it with its tombstone. A tombstone of another vacuum is as good
//!    as its own: the file is doomed either way.
//! 3. After taking its tombstones, vacuum reads the versions committed meanwhile: a
//!    commit that claimed a file before the tombstone and landed since lists it there,
//!    and such a file is kept (its tombstone given back).
//! 4. Vacuum deletes the file, then its tombstone: a commit claiming the file after
//!    that finds it missing (rule 1).
//! 5. Claims of referenced files (commits that landed but died before giving them
//!    back), and stale claims of files that are gone, are deleted.
//!
//! So a file is deleted only while a tombstone excludes every commit that has not
//! claimed it yet, and every commit that had claimed it has landed (rule 3 sees it),
//! given up, or passed its deadline. The one assumption is about time: a manifest PUT
//! sent before a commit's deadline arrives within the other half of the lease, as
//! measured by the store's and the vacuum's clocks. Manifests are never deleted (time
//! travel).
//!
//! A write that takes longer than the retention between storing a data file and
//! committing it may find the file removed: its commit then fails cleanly (rule 1)
//! instead of listing a missing file. On local file systems vacuum also removes the
//! staging files of killed writers (see [`Table::vacuum`]).

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use futures::TryStreamExt;
use object_store::{ObjectMeta, ObjectStoreExt};

pub use crate::claims::{CLAIM_LEASE, MAX_CLAIM_HOLD};

use crate::claims::{self, Holder, Taken, claimed_file};
use crate::error::TableError;
use crate::layout::{CLAIMS, DATA, REJECT_PARTS};
use crate::manifest::DataFile;
use crate::table::{Table, unique_id};

/// What `vacuum` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VacuumReport {
    /// Unreferenced data files removed.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Unreferenced files kept because they are younger than the retention period.
    pub kept_recent: u64,
    /// Unreferenced files kept because a commit under way holds them.
    pub kept_claimed: u64,
    /// Half-written data files of killed writers removed (local file systems, see
    /// [`Table::with_local_root`]).
    pub partial: u64,
    /// Reject parts of distributed writes that never gathered them (see
    /// [`REJECT_PARTS`](crate::REJECT_PARTS)) removed.
    pub reject_parts: u64,
}

impl std::fmt::Display for VacuumReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "removed {} unreferenced data files ({} bytes), {} half-written ones and {} reject parts of failed writes; kept {} younger than the retention period and {} being committed",
            self.files,
            self.bytes,
            self.partial,
            self.reject_parts,
            self.kept_recent,
            self.kept_claimed
        )
    }
}

/// The data files the versions read so far reference, and the newest version read.
#[derive(Debug, Default)]
struct Referenced {
    files: HashSet<String>,
    through: Option<u64>,
}

impl Table {
    /// Removes data files that no manifest version references and that are older than
    /// `retention`, never one that a commit under way will reference (see the module
    /// documentation for how). On a local file system named by
    /// [`Table::with_local_root`], it also removes the staging files of data files
    /// whose writer was killed (`data/<name>.parquet#<n>`) once they are older than
    /// `retention`; a writer still storing one fails cleanly.
    pub async fn vacuum(&self, retention: Duration) -> Result<VacuumReport, TableError> {
        let vacuum = Holder::Vacuum(unique_id());
        let now = chrono::Utc::now();
        // A retention beyond the calendar keeps everything.
        let cutoff = chrono::Duration::from_std(retention)
            .ok()
            .and_then(|retention| now.checked_sub_signed(retention))
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC);
        let mut referenced = Referenced::default();
        self.read_references(&mut referenced).await?;
        let data = self.key(DATA);
        let objects: Vec<ObjectMeta> = self.store().list(Some(&data)).try_collect().await?;
        let mut report = VacuumReport::default();
        let mut doomed = Vec::new();
        for object in objects {
            let relative = self.relative(&object.location);
            if referenced.files.contains(&relative) {
                continue;
            }
            if object.last_modified > cutoff {
                report.kept_recent += 1;
                continue;
            }
            match self.tombstone(&relative, &vacuum).await? {
                true => doomed.push((relative, object)),
                false => report.kept_claimed += 1,
            }
        }
        self.read_references(&mut referenced).await?;
        for (relative, object) in doomed {
            if !referenced.files.contains(&relative) {
                match self.store().delete(&object.location).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
                report.files += 1;
                report.bytes += object.size;
            }
            claims::release(self.store(), self.prefix(), &relative).await?;
        }
        self.sweep_claims(&referenced).await?;
        report.partial = self.sweep_partials(cutoff.into()).await?;
        report.reject_parts = self.sweep_reject_parts(cutoff).await?;
        Ok(report)
    }

    /// Takes the claim of the unreferenced file `relative` for `vacuum`; false when a
    /// commit under way holds it.
    async fn tombstone(&self, relative: &str, vacuum: &Holder) -> Result<bool, TableError> {
        match claims::take(self.store(), self.prefix(), relative, vacuum).await? {
            Taken::Ours | Taken::Other(Holder::Vacuum(_), _) => Ok(true),
            Taken::Other(Holder::Commit(_), since) if is_stale(since) => {
                claims::overwrite(self.store(), self.prefix(), relative, vacuum).await?;
                Ok(true)
            }
            Taken::Other(Holder::Commit(_), _) => Ok(false),
        }
    }

    /// Adds the files of the versions newer than `referenced.through`.
    async fn read_references(&self, referenced: &mut Referenced) -> Result<(), TableError> {
        for version in self.versions().await? {
            if referenced.through.is_some_and(|through| version <= through) {
                continue;
            }
            let manifest = self.read_manifest(version).await?;
            referenced.files.extend(
                manifest
                    .files
                    .iter()
                    .flat_map(DataFile::keys)
                    .map(String::from),
            );
            referenced.through = Some(version);
        }
        Ok(())
    }

    /// Deletes claims nobody needs: those of referenced files, and stale ones of files
    /// that are gone.
    async fn sweep_claims(&self, referenced: &Referenced) -> Result<(), TableError> {
        let dir = self.key(CLAIMS);
        let all: Vec<ObjectMeta> = self.store().list(Some(&dir)).try_collect().await?;
        for claim in all {
            let relative = self.relative(&claim.location);
            let Some(file) = claimed_file(&relative) else {
                continue;
            };
            let unneeded = referenced.files.contains(file)
                || (is_stale(claim.last_modified) && self.is_gone(file).await?);
            if unneeded {
                claims::release(self.store(), self.prefix(), file).await?;
            }
        }
        Ok(())
    }

    /// Deletes the reject parts older than `cutoff`: a distributed write gathers and
    /// deletes its own as it commits, so an old one is left by a write that failed.
    async fn sweep_reject_parts(
        &self,
        cutoff: chrono::DateTime<chrono::Utc>,
    ) -> Result<u64, TableError> {
        let dir = self.key(REJECT_PARTS);
        let parts: Vec<ObjectMeta> = self.store().list(Some(&dir)).try_collect().await?;
        let mut removed = 0;
        for part in parts.iter().filter(|part| part.last_modified <= cutoff) {
            match self.store().delete(&part.location).await {
                Ok(()) => removed += 1,
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(removed)
    }

    async fn is_gone(&self, file: &str) -> Result<bool, TableError> {
        match self.store().head(&self.key(file)).await {
            Ok(_) => Ok(false),
            Err(object_store::Error::NotFound { .. }) => Ok(true),
            Err(e) => Err(e.into()),
        }
    }
}

impl Table {
    /// Removes the staging files below the local `data/` directory last modified
    /// before `cutoff`; how many.
    async fn sweep_partials(&self, cutoff: SystemTime) -> Result<u64, TableError> {
        let Some(root) = self.local_root() else {
            return Ok(0);
        };
        let dir = self
            .prefix()
            .parts()
            .fold(root.to_path_buf(), |dir, part| dir.join(part.as_ref()))
            .join(DATA);
        tokio::task::spawn_blocking(move || remove_partials(&dir, cutoff))
            .await
            .map_err(|e| TableError::Store(object_store::Error::JoinError { source: e }))?
    }
}

/// Removes the staging files in `dir` last modified before `cutoff`.
fn remove_partials(dir: &std::path::Path, cutoff: SystemTime) -> Result<u64, TableError> {
    let local = |path: &std::path::Path| {
        let path = path.display().to_string();
        move |source| TableError::Local { path, source }
    };
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        entries => entries.map_err(local(dir))?,
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(local(dir))?;
        let path = entry.path();
        let partial = entry.file_name().to_str().is_some_and(is_staging);
        if !partial
            || entry
                .metadata()
                .and_then(|m| m.modified())
                .map_err(local(&path))?
                > cutoff
        {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(local(&path)(e)),
        }
    }
    Ok(removed)
}

/// True for the name of a local file system store's staging file of a data file
/// (`<name>.parquet#<n>`), which a killed writer leaves behind.
fn is_staging(name: &str) -> bool {
    name.rsplit_once('#').is_some_and(|(file, n)| {
        file.ends_with(".parquet") && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// True for a claim taken before the lease's length ago.
fn is_stale(since: chrono::DateTime<chrono::Utc>) -> bool {
    let lease = chrono::Duration::from_std(CLAIM_LEASE).unwrap_or(chrono::TimeDelta::MAX);
    since < chrono::Utc::now() - lease
}
