//! The scans of S3 that the storage-side rules move ([`super::WorkerPushdown`],
//! [`super::PushdownChoice`]): raw NDJSON documents, raw CSV rows ([`CsvScanSource`],
//! which asks S3 Select first when the session may), and Tessera tables.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder};
use datafusion::physical_plan::ExecutionPlan;

use crate::datasource::csv::source::CsvScanSource;
use crate::datasource::ndjson::read::Codec;
use crate::datasource::ndjson::source::NdjsonSource;
use crate::datasource::tessera::scan::{SnapshotFile, TesseraSource};
use crate::options::OnError;

/// The source of a scan the storage-side rules may move.
#[derive(Debug, Clone, Copy)]
pub(super) enum StorageScan<'a> {
    /// NDJSON documents.
    Ndjson(&'a NdjsonSource),
    /// CSV rows the scan reads itself.
    Csv,
    /// CSV rows the scan asks S3 Select for first.
    CsvSelect(&'a CsvScanSource),
    /// A Tessera table version: its files' typed leaves, a byte range of a file
    /// standing for the same share of its rows.
    Table,
}

/// The configuration and source of `plan` when it is a scan the storage-side rules
/// may move.
pub(super) fn storage_scan(
    plan: &Arc<dyn ExecutionPlan>,
) -> Option<(&FileScanConfig, StorageScan<'_>)> {
    if let Some((config, source)) = super::file_scan::<NdjsonSource>(plan) {
        return Some((config, StorageScan::Ndjson(source)));
    }
    if let Some((config, _)) = super::file_scan::<TesseraSource>(plan) {
        return Some((config, StorageScan::Table));
    }
    let (config, source) = super::file_scan::<CsvScanSource>(plan)?;
    match source.asks_select() {
        true => Some((config, StorageScan::CsvSelect(source))),
        false => Some((config, StorageScan::Csv)),
    }
}

impl StorageScan<'_> {
    /// Whether S3 Select could read the scan's objects (the session lets it, and the
    /// scan reads what a store returns).
    pub(super) fn can_select(&self) -> bool {
        match self {
            StorageScan::Ndjson(source) => source.select_plan().is_some(),
            StorageScan::Csv | StorageScan::Table => false,
            StorageScan::CsvSelect(_) => true,
        }
    }

    /// Whether the scan of `config` reads the same on the storage-side worker: not an
    /// NDJSON scan that skips bad lines (they must reach this session's reject report),
    /// not compressed CSV (DataFusion's plan encoding of a CSV scan drops the
    /// compression, so the worker would read the bytes as text). A Tessera table scan
    /// names the version it reads, which the worker reads with its own credentials.
    pub(super) fn travels_to_worker(&self, config: &FileScanConfig) -> bool {
        match self {
            StorageScan::Ndjson(source) => source.settings().on_error == OnError::Fail,
            StorageScan::Csv | StorageScan::CsvSelect(_) => {
                !config.file_compression_type.is_compressed()
            }
            StorageScan::Table => true,
        }
    }

    /// Whether `file` of `config` is compressed (no range of it can be read alone).
    pub(super) fn is_compressed(&self, config: &FileScanConfig, file: &PartitionedFile) -> bool {
        match self {
            StorageScan::Ndjson(_) => {
                Codec::from_name(file.object_meta.location.as_ref()).is_compressed()
            }
            StorageScan::Csv | StorageScan::CsvSelect(_) => {
                config.file_compression_type.is_compressed()
            }
            StorageScan::Table => false,
        }
    }

    /// `file` read from its start to `end`: for raw files a range of its bytes, for a
    /// table's file the same share of its rows, which still names the table version
    /// it belongs to.
    pub(super) fn first_bytes(&self, file: &PartitionedFile, end: u64) -> PartitionedFile {
        let first = match self {
            StorageScan::Table => file.clone(),
            _ => PartitionedFile::new_from_meta(file.object_meta.clone()),
        };
        first.with_range(0, end as i64)
    }

    /// How many of the scan's files this process would fetch a footer of before their
    /// data: a table's files whose footer it does not hold (those of a version named
    /// by a decoded plan all count), each once however many partitions share it; raw
    /// files have none.
    pub(super) fn footers_to_fetch(&self, config: &FileScanConfig) -> usize {
        if !matches!(self, StorageScan::Table) {
            return 0;
        }
        let files = config.file_groups.iter().flat_map(|g| g.files());
        let fetched: HashSet<_> = files
            .filter(|file| {
                file.extensions
                    .get::<SnapshotFile>()
                    .is_none_or(|entry| !entry.snapshot.footer_cached(&entry.file))
            })
            .map(|file| &file.object_meta.location)
            .collect();
        fetched.len()
    }

    /// Whether the bytes the scan reads are fewer than its files' bytes: a table scan
    /// reads only the leaves it needs.
    pub(super) fn reads_columns(&self) -> bool {
        matches!(self, StorageScan::Table)
    }

    /// `config` with this scan no longer asking S3 Select; `None` when it does not.
    pub(super) fn without_select(&self, config: &FileScanConfig) -> Option<FileScanConfig> {
        let builder = FileScanConfigBuilder::from(config.clone());
        match self {
            StorageScan::Ndjson(source) if source.asks_select() => Some(
                builder
                    .with_source(Arc::new(source.with_select_client(None)))
                    .build(),
            ),
            StorageScan::CsvSelect(source) => Some(
                builder
                    .with_source(Arc::new(source.without_select()))
                    .build(),
            ),
            StorageScan::Ndjson(_) | StorageScan::Csv | StorageScan::Table => None,
        }
    }
}
