//! The raw file scans of S3 that the storage-side rules move ([`super::WorkerPushdown`],
//! [`super::PushdownChoice`]): NDJSON documents, and CSV rows (DataFusion's reader, or
//! [`CsvSelectSource`] when the session may ask S3 Select).

use std::sync::Arc;

use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{CsvSource, FileScanConfig, FileScanConfigBuilder};
use datafusion::physical_plan::ExecutionPlan;

use crate::datasource::csv::select::CsvSelectSource;
use crate::datasource::ndjson::read::Codec;
use crate::datasource::ndjson::source::NdjsonSource;
use crate::options::OnError;

/// The source of a raw file scan.
#[derive(Debug, Clone, Copy)]
pub(super) enum RawScan<'a> {
    /// NDJSON documents.
    Ndjson(&'a NdjsonSource),
    /// CSV rows read by DataFusion.
    Csv,
    /// CSV rows read through S3 Select.
    CsvSelect(&'a CsvSelectSource),
}

/// The configuration and source of `plan` when it is a raw file scan.
pub(super) fn raw_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<(&FileScanConfig, RawScan<'_>)> {
    if let Some((config, source)) = super::file_scan::<NdjsonSource>(plan) {
        return Some((config, RawScan::Ndjson(source)));
    }
    if let Some((config, _)) = super::file_scan::<CsvSource>(plan) {
        return Some((config, RawScan::Csv));
    }
    super::file_scan::<CsvSelectSource>(plan).map(|(c, s)| (c, RawScan::CsvSelect(s)))
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

    /// Whether a bad line fails the query: a scan that skips bad lines must run where
    /// the session's reject report sees them.
    pub(super) fn fails_on_bad_lines(&self) -> bool {
        match self {
            RawScan::Ndjson(source) => source.settings().on_error == OnError::Fail,
            RawScan::Csv | RawScan::CsvSelect(_) => true,
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
                    .with_source(Arc::new(source.inner().clone()))
                    .build(),
            ),
            RawScan::Ndjson(_) | RawScan::Csv => None,
        }
    }
}
