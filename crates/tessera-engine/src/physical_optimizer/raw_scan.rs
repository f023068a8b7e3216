//! The raw file scans of S3 that the storage-side rules move ([`super::WorkerPushdown`],
//! [`super::PushdownChoice`]): NDJSON documents, and CSV rows ([`CsvScanSource`], which
//! asks S3 Select first when the session may).

use std::sync::Arc;

use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder};
use datafusion::physical_plan::ExecutionPlan;

use crate::datasource::csv::source::CsvScanSource;
use crate::datasource::ndjson::read::Codec;
use crate::datasource::ndjson::source::NdjsonSource;
use crate::options::OnError;

/// The source of a raw file scan.
#[derive(Debug, Clone, Copy)]
pub(super) enum RawScan<'a> {
    /// NDJSON documents.
    Ndjson(&'a NdjsonSource),
    /// CSV rows the scan reads itself.
    Csv,
    /// CSV rows the scan asks S3 Select for first.
    CsvSelect(&'a CsvScanSource),
}

/// The configuration and source of `plan` when it is a raw file scan.
pub(super) fn raw_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<(&FileScanConfig, RawScan<'_>)> {
    if let Some((config, source)) = super::file_scan::<NdjsonSource>(plan) {
        return Some((config, RawScan::Ndjson(source)));
    }
    let (config, source) = super::file_scan::<CsvScanSource>(plan)?;
    match source.asks_select() {
        true => Some((config, RawScan::CsvSelect(source))),
        false => Some((config, RawScan::Csv)),
    }
}

impl RawScan<'_> {
    /// Whether S3 Select could read the scan's objects (the session lets it, and the
    /// scan reads what a store returns).
    pub(super) fn can_select(&self) -> bool {
        match self {
            RawScan::Ndjson(source) => source.select_plan().is_some(),
            RawScan::Csv => false,
            RawScan::CsvSelect(_) => true,
        }
    }

    /// Whether the scan of `config` reads the same on the storage-side worker: not an
    /// NDJSON scan that skips bad lines (they must reach this session's reject report),
    /// not compressed CSV (DataFusion's plan encoding of a CSV scan drops the
    /// compression, so the worker would read the bytes as text).
    pub(super) fn travels_to_worker(&self, config: &FileScanConfig) -> bool {
        match self {
            RawScan::Ndjson(source) => source.settings().on_error == OnError::Fail,
            RawScan::Csv | RawScan::CsvSelect(_) => !config.file_compression_type.is_compressed(),
        }
    }

    /// Whether `file` of `config` is compressed (no range of it can be read alone).
    pub(super) fn is_compressed(&self, config: &FileScanConfig, file: &PartitionedFile) -> bool {
        match self {
            RawScan::Ndjson(_) => {
                Codec::from_name(file.object_meta.location.as_ref()).is_compressed()
            }
            RawScan::Csv | RawScan::CsvSelect(_) => config.file_compression_type.is_compressed(),
        }
    }

    /// `config` with this scan no longer asking S3 Select; `None` when it does not.
    pub(super) fn without_select(&self, config: &FileScanConfig) -> Option<FileScanConfig> {
        let builder = FileScanConfigBuilder::from(config.clone());
        match self {
            RawScan::Ndjson(source) if source.asks_select() => Some(
                builder
                    .with_source(Arc::new(source.with_select_client(None)))
                    .build(),
            ),
            RawScan::CsvSelect(source) => Some(
                builder
                    .with_source(Arc::new(source.without_select()))
                    .build(),
            ),
            RawScan::Ndjson(_) | RawScan::Csv => None,
        }
    }
}
