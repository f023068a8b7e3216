//! DataFusion's view of object stores: every `s3://bucket` and `file://` URL a query
//! names is opened on first use through `tessera-blob`'s [`StoreFactory`], the one seam
//! behind which the S3 client can change.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use datafusion::common::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreRegistry;
use object_store::ObjectStore;
use tessera_blob::StoreFactory;
use tessera_blob::s3::S3Client;
use url::Url;

/// Stores opened so far, by `scheme://bucket`; grows by one entry per distinct bucket.
#[derive(Debug)]
pub struct StoreRegistry {
    factory: StoreFactory,
    stores: RwLock<HashMap<String, Arc<dyn ObjectStore>>>,
    /// S3 Select clients opened so far, by bucket (`None`: the bucket cannot be asked).
    select_clients: RwLock<HashMap<String, Option<S3Client>>>,
}

impl StoreRegistry {
    /// A registry opening stores with `factory`.
    pub fn new(factory: StoreFactory) -> Self {
        Self {
            factory,
            stores: RwLock::new(HashMap::new()),
            select_clients: RwLock::new(HashMap::new()),
        }
    }

    /// The S3 Select client of `bucket`, opened on first use; `None` when its objects
    /// cannot be selected from (see [`StoreFactory::select_client`]).
    pub fn select_client(&self, bucket: &str) -> Option<S3Client> {
        let read = self
            .select_clients
            .read()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(client) = read.get(bucket) {
            return client.clone();
        }
        drop(read);
        let client = self.factory.select_client(bucket);
        let mut clients = self
            .select_clients
            .write()
            .unwrap_or_else(|e| e.into_inner());
        clients.entry(bucket.to_string()).or_insert(client).clone()
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
