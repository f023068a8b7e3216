//! DataFusion's view of object stores: every `s3://bucket` and `file://` URL a query
//! names is opened on first use through `tessera-blob`'s [`StoreFactory`], the one seam
//! behind which the S3 client can change.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use datafusion::common::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreRegistry;
use object_store::ObjectStore;
use tessera_blob::StoreFactory;
use url::Url;

/// Stores opened so far, by `scheme://bucket`; grows by one entry per distinct bucket.
#[derive(Debug)]
pub struct StoreRegistry {
    factory: StoreFactory,
    stores: RwLock<HashMap<String, Arc<dyn ObjectStore>>>,
}

impl StoreRegistry {
    /// A registry opening stores with `factory`.
    pub fn new(factory: StoreFactory) -> Self {
        Self {
            factory,
            stores: RwLock::new(HashMap::new()),
        }
    }

    /// The factory stores are opened with (for explaining their errors).
    pub fn factory(&self) -> &StoreFactory {
        &self.factory
    }

    fn key(url: &Url) -> String {
        format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default())
    }
}

impl ObjectStoreRegistry for StoreRegistry {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        let mut stores = self.stores.write().unwrap_or_else(|e| e.into_inner());
        stores.insert(Self::key(url), store)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        let key = Self::key(url);
        if let Some(store) = self
            .stores
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(Arc::clone(store));
        }
        let store = self
            .factory
            .open(url)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let mut stores = self.stores.write().unwrap_or_else(|e| e.into_inner());
        Ok(Arc::clone(stores.entry(key).or_insert(store)))
    }
}
