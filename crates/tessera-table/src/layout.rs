//! Where a table's objects live below its prefix.

use object_store::path::Path;

/// The key of `relative` (slash-separated) below `prefix`.
pub fn child_key(prefix: &Path, relative: &str) -> Path {
    relative
        .split('/')
        .fold(prefix.clone(), |path, part| path.join(part))
}
