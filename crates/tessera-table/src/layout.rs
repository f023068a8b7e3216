//! Where a table's objects live below its prefix: data files in [`DATA`], numbered
//! manifest versions in [`VERSIONS`], commit/vacuum claims in [`CLAIMS`], and the lines
//! an ingest rejected in [`REJECTS`]. Nothing else belongs there.

use object_store::path::Path;

/// The directory of data files.
pub const DATA: &str = "data";
/// The directory of manifest versions.
pub const VERSIONS: &str = "_tessera";
/// The directory of claims on data files (see the `vacuum` module).
pub const CLAIMS: &str = "_claims";
/// The directory of rejected lines, one file per ingest.
pub const REJECTS: &str = "_rejects";
/// The directory of reject parts: the lines one task of a distributed write rejected,
/// until its commit gathers them into the write's reject file and deletes them.
pub const REJECT_PARTS: &str = "_rejects/parts";
/// Every directory a table keeps below its prefix.
pub const TABLE_DIRS: [&str; 4] = [DATA, VERSIONS, CLAIMS, REJECTS];

/// The key of `relative` (slash-separated) below `prefix`.
pub fn child_key(prefix: &Path, relative: &str) -> Path {
    relative
        .split('/')
        .fold(prefix.clone(), |path, part| path.join(part))
}
