//! Whether a region made at one table version still answers a scan of a later one.
//!
//! A region holds the rows of its version's data files (each minus its deletion
//! vector). A later version that only added files keeps every one of those files with
//! the same deletion vector, so the region still holds exactly their rows, and only the
//! new files need scanning. A version that deleted rows (a changed deletion vector) or
//! removed files (vacuum, compaction) makes the region stale: answering from it would
//! return deleted rows, so it is dropped ("a cached answer is never stale"). So does the
//! same version number of another table made at the same location (the first dropped):
//! a version number names a table's state only together with its files.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use tessera_table::{DataFile, DeletionVector};

/// A data file of the version a region was made from, as its sidecar records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SourceFile {
    /// Key relative to the table prefix.
    pub(crate) path: String,
    /// Rows deleted from the file as of that version.
    pub(crate) deleted: DeletionVector,
}

/// The data files of a version, as a region's sidecar records them.
pub(crate) fn source_files(files: &[DataFile]) -> Vec<SourceFile> {
    files
        .iter()
        .map(|f| SourceFile {
            path: f.path.clone(),
            deleted: f.deleted.clone(),
        })
        .collect()
}

/// What a region of one version is to a scan of another.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Freshness {
    /// Same version: the region holds every row it should.
    Current,
    /// The scan's version only added files (their keys): the region holds the rows of
    /// every other file.
    Appended(HashSet<String>),
    /// The scan's version deleted rows or removed files of the region's: drop it.
    Stale,
    /// The scan reads an older version than the region's: not usable, still valid.
    Older,
}

/// How a region made at `version` from `source` relates to a scan of `scanned` (the
/// data files of `scanned_version`, as [`source_files`] lists them).
pub(crate) fn freshness(
    version: u64,
    source: &[SourceFile],
    scanned_version: u64,
    scanned: &[SourceFile],
) -> Freshness {
    if scanned_version < version {
        return Freshness::Older;
    }
    let now: HashMap<&str, &DeletionVector> = scanned
        .iter()
        .map(|f| (f.path.as_str(), &f.deleted))
        .collect();
    let kept = source
        .iter()
        .all(|f| now.get(f.path.as_str()) == Some(&&f.deleted));
    if !kept {
        return Freshness::Stale;
    }
    if scanned_version == version {
        // Data file names are unique, so a version holding every file of the region's
        // and no other is the region's.
        return if now.len() == source.len() {
            Freshness::Current
        } else {
            Freshness::Stale
        };
    }
    let old: HashSet<&str> = source.iter().map(|f| f.path.as_str()).collect();
    let added = scanned
        .iter()
        .filter(|f| !old.contains(f.path.as_str()))
        .map(|f| f.path.clone())
        .collect();
    Freshness::Appended(added)
}

#[cfg(test)]
mod tests {
    use tessera_table::DeletionVector;

    use super::{Freshness, SourceFile, freshness};

    fn file(path: &str, deleted: &[u64]) -> SourceFile {
        SourceFile {
            path: path.into(),
            deleted: DeletionVector::from_rows(deleted.iter().copied()),
        }
    }

    #[test]
    fn appends_keep_a_region_deletes_and_removals_make_it_stale() {
        let v1 = [file("a", &[]), file("b", &[3])];
        let source = v1.to_vec();
        assert_eq!(freshness(1, &source, 1, &v1), Freshness::Current);
        let v2 = [file("a", &[]), file("b", &[3]), file("c", &[])];
        let added = ["c".to_string()].into();
        assert_eq!(freshness(1, &source, 2, &v2), Freshness::Appended(added));
        assert_eq!(freshness(2, &source, 1, &v1), Freshness::Older);
        let deleted = [file("a", &[0]), file("b", &[3]), file("c", &[])];
        assert_eq!(freshness(1, &source, 3, &deleted), Freshness::Stale);
        let removed = [file("b", &[3]), file("c", &[])];
        assert_eq!(freshness(1, &source, 3, &removed), Freshness::Stale);
    }

    #[test]
    fn the_same_version_of_a_table_made_again_is_stale() {
        let source = [file("a", &[]), file("b", &[3])].to_vec();
        let again = [file("x", &[])];
        assert_eq!(freshness(1, &source, 1, &again), Freshness::Stale);
        let more = [file("a", &[]), file("b", &[3]), file("x", &[])];
        assert_eq!(freshness(1, &source, 1, &more), Freshness::Stale);
        let deleted = [file("a", &[1]), file("b", &[3])];
        assert_eq!(freshness(1, &source, 1, &deleted), Freshness::Stale);
    }
}
