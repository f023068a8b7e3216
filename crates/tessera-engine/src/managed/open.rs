//! Where a Tessera table lives: a location URL turned into an object store and a prefix.

use std::sync::Arc;

use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use object_store::ObjectStore;
use object_store::path::Path;
use tessera_blob::Location;

/// The store and the key prefix of the table at `location` (`s3://bucket/tables/events`,
/// `file:///data/events` or a plain directory path).
pub fn table_root(state: &dyn Session, location: &str) -> Result<(Arc<dyn ObjectStore>, Path)> {
    let (url, prefix) = parse_root(location)?;
    Ok((state.runtime_env().object_store(&url)?, prefix))
}

/// The URL of the object store holding the table at `location` (`s3://bucket/`,
/// `file:///`), under which scans find the store in the session's registry.
pub fn table_url(location: &str) -> Result<ObjectStoreUrl> {
    parse_root(location).map(|(url, _)| url)
}

fn parse_root(location: &str) -> Result<(ObjectStoreUrl, Path)> {
    if location.contains(['*', '?']) {
        return Err(DataFusionError::Plan(format!(
            "a table location cannot contain a glob: {location}"
        )));
    }
    let parsed = Location::parse(location).map_err(|e| DataFusionError::Plan(e.to_string()))?;
    let (url, prefix) = match &parsed {
        Location::Local(dir) => {
            let prefix = Path::from_absolute_path(dir)
                .map_err(|e| DataFusionError::Plan(format!("{location}: {e}")))?;
            ("file:///".to_string(), prefix)
        }
        Location::S3 { bucket, key } => (
            format!("s3://{bucket}/"),
            Path::from(key.trim_end_matches('/')),
        ),
    };
    Ok((ObjectStoreUrl::parse(url)?, prefix))
}
