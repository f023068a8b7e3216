//! Immutable objects kept in memory across the queries of a process: the Parquet footers
//! of data files and the manifests of table versions.
//!
//! Data files are immutable and their names unique, so a footer read once stays right
//! for as long as the file exists: repeated queries skip the footer request and its
//! parsing (with page indexes, the larger part of opening a file). A manifest is
//! immutable once committed; it is keyed by its object's size, modification time and
//! entity tag too, so a table deleted and created again at the same place is read
//! afresh. Each
//! cache is bounded by the memory its entries take and forgets the oldest first; a
//! fresh process starts empty, so cold reads are unaffected.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use parquet::file::metadata::ParquetMetaData;

use crate::manifest::Manifest;

/// Most bytes of parsed footers kept.
pub const MAX_FOOTER_BYTES: usize = 64 << 20;

/// Most bytes of manifests kept (as their JSON took in the store).
pub const MAX_MANIFEST_BYTES: usize = 16 << 20;

/// Which object an entry belongs to: the store's description, the object key, and
/// what tells its versions apart (a data file's size; a manifest's size, time and
/// entity tag).
pub(crate) type ObjectKey = (String, String, String);

/// Entries of one kind, oldest first out once their weights exceed the budget.
struct Bounded<V> {
    entries: HashMap<ObjectKey, (Arc<V>, usize)>,
    /// Keys in insertion order, oldest first.
    order: VecDeque<ObjectKey>,
    bytes: usize,
}

impl<V> Default for Bounded<V> {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
        }
    }
}

impl<V> Bounded<V> {
    fn get(&self, key: &ObjectKey) -> Option<Arc<V>> {
        self.entries.get(key).map(|(value, _)| Arc::clone(value))
    }

    fn put(&mut self, key: ObjectKey, value: Arc<V>, weight: usize, budget: usize) {
        if weight > budget || self.entries.contains_key(&key) {
            return;
        }
        while self.bytes + weight > budget {
            let oldest = self.order.pop_front().expect("bytes held imply entries");
            let (_, evicted) = self.entries.remove(&oldest).expect("ordered keys are held");
            self.bytes -= evicted;
        }
        self.order.push_back(key.clone());
        self.entries.insert(key, (value, weight));
        self.bytes += weight;
        assert_eq!(self.order.len(), self.entries.len());
        assert!(self.bytes <= budget);
    }
}

static FOOTERS: LazyLock<Mutex<Bounded<ParquetMetaData>>> = LazyLock::new(Mutex::default);

static MANIFESTS: LazyLock<Mutex<Bounded<Manifest>>> = LazyLock::new(Mutex::default);

/// The cached footer of a file, if it was read before.
pub(crate) fn footer(key: &ObjectKey) -> Option<Arc<ParquetMetaData>> {
    FOOTERS.lock().get(key)
}

/// Remembers the footer of a file, forgetting the oldest ones beyond the budget.
pub(crate) fn keep_footer(key: ObjectKey, footer: Arc<ParquetMetaData>) {
    let weight = footer.memory_size();
    FOOTERS.lock().put(key, footer, weight, MAX_FOOTER_BYTES);
}

/// The cached manifest of a version, if it was read before.
pub(crate) fn manifest(key: &ObjectKey) -> Option<Arc<Manifest>> {
    MANIFESTS.lock().get(key)
}

/// Remembers a manifest whose JSON took `bytes`, forgetting the oldest ones beyond the
/// budget.
pub(crate) fn keep_manifest(key: ObjectKey, manifest: Arc<Manifest>, bytes: usize) {
    MANIFESTS
        .lock()
        .put(key, manifest, bytes, MAX_MANIFEST_BYTES);
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, RecordBatch};
    use bytes::Bytes;
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::ParquetMetaDataReader;

    fn footer(rows: i64) -> Arc<ParquetMetaData> {
        let batch = RecordBatch::try_from_iter([(
            "n",
            Arc::new(Int64Array::from_iter_values(0..rows)) as _,
        )])
        .unwrap();
        let mut out = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let metadata = ParquetMetaDataReader::new()
            .parse_and_finish(&Bytes::from(out))
            .unwrap();
        Arc::new(metadata)
    }

    fn key(name: &str) -> ObjectKey {
        ("store".into(), name.into(), "1".into())
    }

    #[test]
    fn the_oldest_footers_go_first_when_the_budget_is_spent() {
        let (a, b, c) = (footer(10), footer(20), footer(30));
        let budget = a.memory_size() + b.memory_size() + c.memory_size() - 1;
        let mut footers = Bounded::default();
        for (name, f) in [("a", &a), ("b", &b)] {
            footers.put(key(name), Arc::clone(f), f.memory_size(), budget);
        }
        assert!(Arc::ptr_eq(&footers.get(&key("a")).unwrap(), &a));
        footers.put(key("c"), Arc::clone(&c), c.memory_size(), budget);
        assert!(footers.get(&key("a")).is_none());
        assert!(Arc::ptr_eq(&footers.get(&key("b")).unwrap(), &b));
        assert!(Arc::ptr_eq(&footers.get(&key("c")).unwrap(), &c));
        assert_eq!(footers.bytes, b.memory_size() + c.memory_size());
        // An entry beyond the whole budget is not kept and evicts nothing.
        let huge = footer(40);
        footers.put(key("huge"), Arc::clone(&huge), huge.memory_size(), 1);
        assert_eq!(footers.entries.len(), 2);
    }
}
