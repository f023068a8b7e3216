//! The objects of an NDJSON scan that an aggregation above it had the store aggregate
//! through S3 Select (the engine's `SelectAggregationExec`), and what the scan still asks
//! of each: nothing, or the documents of the groups the store left.

use std::collections::HashMap;
use std::sync::Mutex;

use tessera_pushdown::select_sql::Condition;

/// What the scan asks of an object the store aggregated.
#[derive(Debug, Clone)]
pub enum Rest {
    /// Nothing: the store aggregated all of its documents.
    Nothing,
    /// The documents for which the condition holds: those of the groups left.
    Where(Condition),
}

/// The objects of one scan that the aggregation above had the store aggregate, shared
/// between the aggregation and its scan.
#[derive(Debug, Default)]
pub struct AggregatedObjects {
    objects: Mutex<HashMap<String, Aggregated>>,
}

#[derive(Debug)]
struct Aggregated {
    rest: Rest,
    read_whole: bool,
}

impl AggregatedObjects {
    /// What the scan asks of the object `key`; `None` when the store did not aggregate
    /// it.
    pub fn rest_of(&self, key: &str) -> Option<Rest> {
        let objects = self.objects.lock().expect("not poisoned");
        objects.get(key).map(|a| a.rest.clone())
    }

    /// The scan read the object `key` whole: the store's aggregates of it are dropped.
    pub fn read_whole(&self, key: &str) {
        let mut objects = self.objects.lock().expect("not poisoned");
        if let Some(aggregated) = objects.get_mut(key) {
            aggregated.read_whole = true;
        }
    }

    /// The store aggregated the object `key`; its scan asks for `rest`.
    pub fn aggregated(&self, key: &str, rest: Rest) {
        let mut objects = self.objects.lock().expect("not poisoned");
        let read_whole = false;
        objects.insert(key.to_string(), Aggregated { rest, read_whole });
    }

    /// Whether the store's aggregates of the object `key` stand: it aggregated the
    /// object and the scan did not read it whole after all.
    pub fn kept(&self, key: &str) -> bool {
        let objects = self.objects.lock().expect("not poisoned");
        objects.get(key).is_some_and(|a| !a.read_whole)
    }
}
