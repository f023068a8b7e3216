//! Parquet footers of data files kept in memory across the queries of a process.
//!
//! Data files are immutable and their names unique, so a footer read once stays right
//! for as long as the file exists: repeated queries skip the footer request and its
//! parsing (with page indexes, the larger part of opening a file). The cache is bounded
//! by the memory the footers take and forgets the oldest first; a fresh process starts
//! empty, so cold reads are unaffected.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use parquet::file::metadata::ParquetMetaData;

/// Most bytes of parsed footers kept.
pub const MAX_FOOTER_BYTES: usize = 64 << 20;

/// Which file a footer belongs to: the store's description, the object key and size.
pub(crate) type FooterKey = (String, String, u64);

#[derive(Default)]
struct Footers {
    entries: HashMap<FooterKey, Arc<ParquetMetaData>>,
    /// Keys in insertion order, oldest first.
    order: VecDeque<FooterKey>,
    bytes: usize,
}

static FOOTERS: LazyLock<Mutex<Footers>> = LazyLock::new(Mutex::default);

/// The cached footer of a file, if it was read before.
pub(crate) fn get(key: &FooterKey) -> Option<Arc<ParquetMetaData>> {
    FOOTERS.lock().entries.get(key).cloned()
}

/// Remembers the footer of a file, forgetting the oldest ones beyond the budget.
pub(crate) fn put(key: FooterKey, footer: Arc<ParquetMetaData>) {
    FOOTERS.lock().put(key, footer, MAX_FOOTER_BYTES);
}

impl Footers {
    fn put(&mut self, key: FooterKey, footer: Arc<ParquetMetaData>, budget: usize) {
        let size = footer.memory_size();
        if size > budget || self.entries.contains_key(&key) {
            return;
        }
        while self.bytes + size > budget {
            let oldest = self.order.pop_front().expect("bytes held imply entries");
            let evicted = self.entries.remove(&oldest).expect("ordered keys are held");
            self.bytes -= evicted.memory_size();
        }
        self.order.push_back(key.clone());
        self.entries.insert(key, footer);
        self.bytes += size;
        assert_eq!(self.order.len(), self.entries.len());
        assert!(self.bytes <= budget);
    }
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

    fn key(name: &str) -> FooterKey {
        ("store".into(), name.into(), 1)
    }

    #[test]
    fn the_oldest_footers_go_first_when_the_budget_is_spent() {
        let (a, b, c) = (footer(10), footer(20), footer(30));
        let budget = a.memory_size() + b.memory_size() + c.memory_size() - 1;
        let mut footers = Footers::default();
        footers.put(key("a"), Arc::clone(&a), budget);
        footers.put(key("b"), Arc::clone(&b), budget);
        assert!(Arc::ptr_eq(&footers.entries[&key("a")], &a));
        footers.put(key("c"), Arc::clone(&c), budget);
        assert!(!footers.entries.contains_key(&key("a")));
        assert!(Arc::ptr_eq(&footers.entries[&key("b")], &b));
        assert!(Arc::ptr_eq(&footers.entries[&key("c")], &c));
        assert_eq!(footers.bytes, b.memory_size() + c.memory_size());
        // A footer beyond the whole budget is not kept and evicts nothing.
        footers.put(key("huge"), footer(40), 1);
        assert_eq!(footers.entries.len(), 2);
    }
}
