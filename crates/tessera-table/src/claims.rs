//! Claims: which of a commit and `vacuum` may have an unreferenced data file.
//!
//! A data file that no manifest lists yet is wanted by two parties that cannot see
//! each other: the commit about to list it, and a vacuum about to delete it. Each takes
//! the file's claim, `_claims/<data file key>`, before acting, with a conditional PUT
//! (`PutMode::Create`), so exactly one of them gets it: a commit holds it from before
//! its manifest PUT until its manifest landed (or it gave up); a vacuum holds it (a
//! tombstone) while it deletes the file, and forever after it as far as commits are
//! concerned, because a tombstone is only removed once the file is gone.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use crate::error::TableError;
use crate::layout::{CLAIMS, child_key};

/// Longest a commit holds its data files' claims before its manifest must have been
/// sent; vacuum takes claims over only when they are twice as old ([`CLAIM_LEASE`]),
/// which leaves slack for a manifest PUT under way and for clocks that disagree.
pub const MAX_CLAIM_HOLD: Duration = Duration::from_secs(30 * 60);

/// Age after which a commit's claim is stale: twice the longest a commit holds one.
pub const CLAIM_LEASE: Duration = Duration::from_secs(2 * MAX_CLAIM_HOLD.as_secs());

/// Attempts at storing a claim whose PUT failed (it may have landed; the next attempt
/// finds out) or that was given back while we looked at it.
const MAX_CLAIM_ATTEMPTS: usize = 3;

/// Who holds a claim.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Holder {
    /// The commit with this id, which will list the file in its manifest.
    Commit(String),
    /// The vacuum with this id, which deletes the file.
    Vacuum(String),
}

/// What taking a claim found.
#[derive(Debug)]
pub(crate) enum Taken {
    /// The claim is ours (now, or from an earlier attempt of ours).
    Ours,
    /// Someone else holds it, since the time given.
    Other(Holder, DateTime<Utc>),
}

/// The claim key of the data file `relative` (its key below the table prefix).
pub(crate) fn claim_key(prefix: &Path, relative: &str) -> Path {
    child_key(&child_key(prefix, CLAIMS), relative)
}

/// The data file (relative to the table prefix) that the claim `relative` (below the
/// prefix) is about, if it is a claim.
pub(crate) fn claimed_file(relative: &str) -> Option<&str> {
    relative.strip_prefix(CLAIMS)?.strip_prefix('/')
}

/// Takes the claim of data file `relative` for `holder`, unless someone else has it.
pub(crate) async fn take(
    store: &Arc<dyn ObjectStore>,
    prefix: &Path,
    relative: &str,
    holder: &Holder,
) -> Result<Taken, TableError> {
    let key = claim_key(prefix, relative);
    let body = serde_json::to_vec(holder).expect("a claim serializes");
    let options = PutOptions {
        mode: PutMode::Create,
        ..PutOptions::default()
    };
    let mut last = None;
    for _ in 0..MAX_CLAIM_ATTEMPTS {
        match store
            .put_opts(&key, PutPayload::from(body.clone()), options.clone())
            .await
        {
            Ok(_) => return Ok(Taken::Ours),
            Err(object_store::Error::AlreadyExists { .. }) => match read(store, &key).await {
                Ok((found, _)) if found == *holder => return Ok(Taken::Ours),
                Ok((found, since)) => return Ok(Taken::Other(found, since)),
                // Given back between our PUT and our read: free again.
                Err(TableError::Store(e @ object_store::Error::NotFound { .. })) => {
                    last = Some(e);
                }
                Err(e) => return Err(e),
            },
            Err(e) => last = Some(e),
        }
    }
    Err(TableError::Store(last.expect("at least one attempt")))
}

/// Turns the claim of `relative` into `holder`'s whatever it was (a vacuum taking over
/// the claim of a commit that is over).
pub(crate) async fn overwrite(
    store: &Arc<dyn ObjectStore>,
    prefix: &Path,
    relative: &str,
    holder: &Holder,
) -> Result<(), TableError> {
    let body = serde_json::to_vec(holder).expect("a claim serializes");
    store
        .put(&claim_key(prefix, relative), PutPayload::from(body))
        .await?;
    Ok(())
}

/// Gives up the claim of `relative`; a claim already gone is fine.
pub(crate) async fn release(
    store: &Arc<dyn ObjectStore>,
    prefix: &Path,
    relative: &str,
) -> Result<(), TableError> {
    match store.delete(&claim_key(prefix, relative)).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The holder of the claim at `key` and since when it holds it.
async fn read(
    store: &Arc<dyn ObjectStore>,
    key: &Path,
) -> Result<(Holder, DateTime<Utc>), TableError> {
    let got = store.get(key).await?;
    let since = got.meta.last_modified;
    let bytes = got.bytes().await?;
    let holder = serde_json::from_slice(&bytes).map_err(|e| TableError::Manifest {
        path: key.to_string(),
        reason: format!("not a claim: {e}"),
    })?;
    Ok((holder, since))
}
