//! Where data lives: `s3://bucket/key`, `file:///abs/path` or a plain local path.
//!
//! Every user-facing command takes a location string; this module turns it into one
//! canonical [`Location`] so that the rest of Tessera deals in URLs only.

use std::path::{Path, PathBuf};

use url::Url;

use crate::error::BlobError;

/// A parsed data location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An object (or prefix, or glob) in an S3-compatible bucket.
    S3 {
        /// Bucket name.
        bucket: String,
        /// Key, prefix or glob below the bucket, without a leading `/`.
        key: String,
    },
    /// A file, directory or glob on the local file system, as an absolute path.
    Local(PathBuf),
}

impl Location {
    /// Parses a location string.
    ///
    /// Accepts `s3://bucket/key`, `file:///abs/path` and plain paths (relative paths are
    /// resolved against the current directory, so that URLs built from them are absolute).
    pub fn parse(text: &str) -> Result<Self, BlobError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(BlobError::InvalidLocation {
                location: text.to_string(),
                reason: "it is empty".to_string(),
            });
        }
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(BlobError::InvalidLocation {
                    location: text.to_string(),
                    reason: "the bucket name is missing (expected s3://bucket/key)".to_string(),
                });
            }
            return Ok(Location::S3 {
                bucket: bucket.to_string(),
                key: key.to_string(),
            });
        }
        if let Some(rest) = text.strip_prefix("file://") {
            if !rest.starts_with('/') {
                return Err(BlobError::InvalidLocation {
                    location: text.to_string(),
                    reason: "a file:// URL needs an absolute path (file:///dir/file)".to_string(),
                });
            }
            return Ok(Location::Local(PathBuf::from(rest)));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(BlobError::InvalidLocation {
                location: text.to_string(),
                reason: format!(
                    "the scheme '{scheme}' is not supported (use s3://, file:// or a path)"
                ),
            });
        }
        let path = Path::new(text);
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| BlobError::InvalidLocation {
                    location: text.to_string(),
                    reason: format!("the current directory is unknown: {e}"),
                })?
                .join(path)
        };
        Ok(Location::Local(normalize(&absolute)))
    }

    /// The URL form: `s3://bucket/key` or `file:///abs/path`.
    ///
    /// Glob characters are kept verbatim (not percent-encoded) so that DataFusion's
    /// listing can still expand them.
    pub fn to_url_string(&self) -> String {
        match self {
            Location::S3 { bucket, key } => format!("s3://{bucket}/{key}"),
            Location::Local(path) => format!("file://{}", path.display()),
        }
    }

    /// The URL of the store that serves this location: `s3://bucket` or `file:///`.
    pub fn store_url(&self) -> Url {
        let text = match self {
            Location::S3 { bucket, .. } => format!("s3://{bucket}"),
            Location::Local(_) => "file:///".to_string(),
        };
        Url::parse(&text).expect("a bucket name from a parsed location forms a valid URL")
    }

    /// The key inside the store (an object-store path, no leading `/`).
    pub fn key(&self) -> String {
        match self {
            Location::S3 { key, .. } => key.clone(),
            Location::Local(path) => path.to_string_lossy().trim_start_matches('/').to_string(),
        }
    }

    /// True when the location names several objects through `*`, `?` or `[...]`.
    pub fn is_glob(&self) -> bool {
        let text = match self {
            Location::S3 { key, .. } => key.as_str(),
            Location::Local(path) => path.to_str().unwrap_or(""),
        };
        text.contains(['*', '?', '['])
    }

    /// True for locations in object storage (as opposed to the local file system).
    pub fn is_remote(&self) -> bool {
        matches!(self, Location::S3 { .. })
    }
}

/// What a store that keeps its keys on the local file system displays as: keys there
/// are absolute paths without their leading `/`.
pub(crate) const LOCAL_ROOT: &str = "file://";

/// How the object `key` of `store` reads to a user, in errors and plans: an absolute
/// path on the local file system, an `s3://bucket/key` URL in object storage.
///
/// Tessera's stores display as the root of their URLs (`file://`, `s3://bucket`), so a
/// key is named the way the user wrote its location.
pub fn object_url(store: &dyn object_store::ObjectStore, key: &object_store::path::Path) -> String {
    match store.to_string() {
        root if root == LOCAL_ROOT => format!("/{key}"),
        root => format!("{root}/{key}"),
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::S3 { .. } => f.write_str(&self.to_url_string()),
            Location::Local(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Removes `.` and resolves `..` lexically, so that `./a/../b` and `b` name one object.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Errors name objects as users write their locations, never by the client's type.
    #[test]
    fn objects_are_named_by_their_urls() {
        let key = object_store::path::Path::from("tmp/t/data/a.parquet");
        let local = crate::local::local_store();
        assert_eq!(object_url(local.as_ref(), &key), "/tmp/t/data/a.parquet");
        // Opening resolves the endpoint, not the bucket: no server is contacted.
        let env = |name: &str| (name == "AWS_ENDPOINT_URL").then(|| "http://127.0.0.1:9".into());
        let config = crate::S3Config::resolve(&Default::default(), &env).unwrap();
        let factory = crate::StoreFactory::new(config);
        for kind in [crate::S3ClientKind::Uring, crate::S3ClientKind::ObjectStore] {
            let s3 = factory.open_s3("events", kind).unwrap();
            let name = object_url(s3.as_ref(), &key);
            assert_eq!(name, "s3://events/tmp/t/data/a.parquet", "{kind:?}");
        }
    }

    #[test]
    fn parses_s3_locations() {
        let loc = Location::parse("s3://events/2024/*.json.zst").unwrap();
        assert_eq!(
            loc,
            Location::S3 {
                bucket: "events".into(),
                key: "2024/*.json.zst".into()
            }
        );
        assert!(loc.is_glob());
        assert!(loc.is_remote());
        assert_eq!(loc.store_url().as_str(), "s3://events");
        assert_eq!(loc.key(), "2024/*.json.zst");
        assert_eq!(loc.to_url_string(), "s3://events/2024/*.json.zst");
    }

    #[test]
    fn bucket_only_location_has_empty_key() {
        let loc = Location::parse("s3://events").unwrap();
        assert_eq!(loc.key(), "");
        assert!(!loc.is_glob());
    }

    #[test]
    fn parses_local_paths_and_file_urls() {
        let loc = Location::parse("file:///tmp/x/../data.json").unwrap();
        assert_eq!(loc, Location::Local(PathBuf::from("/tmp/x/../data.json")));
        let rel = Location::parse("data/./a.json").unwrap();
        let Location::Local(path) = &rel else {
            panic!("expected a local location")
        };
        assert!(path.is_absolute());
        assert!(path.ends_with("data/a.json"));
        assert_eq!(rel.store_url().as_str(), "file:///");
    }

    #[test]
    fn rejects_bad_locations_with_reasons() {
        for (text, needle) in [
            ("", "empty"),
            ("s3:///key", "bucket name is missing"),
            ("gs://bucket/x", "scheme 'gs'"),
            ("file://relative", "absolute path"),
        ] {
            let err = Location::parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }
}
