//! The counters a Tessera table scan reports in `EXPLAIN ANALYZE`: files, row groups and
//! rows scanned and skipped (by statistics and by the predicate cache), bytes, requests
//! and their cost, and where values came from.

use std::sync::atomic::Ordering;

use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder};
use tessera_table::Traffic;

use crate::block_cache::GET_NANODOLLARS;

/// Counters of one scan partition, shown by `EXPLAIN ANALYZE`.
#[derive(Debug, Clone)]
pub(super) struct TesseraScanMetrics {
    pub(super) files_scanned: Count,
    pub(super) files_pruned: Count,
    pub(super) row_groups_scanned: Count,
    pub(super) row_groups_pruned: Count,
    /// Rows of the scanned row groups on pages the page index excluded.
    pub(super) rows_pruned: Count,
    pub(super) bytes_scanned: Count,
    /// The part of `bytes_scanned` that was files' footers (Parquet metadata), which
    /// a process reads once per file.
    pub(super) footer_bytes: Count,
    pub(super) requests: Count,
    /// The part of `requests` that fetched footers.
    pub(super) footer_requests: Count,
    /// Attempts the store repeated after a failure (io_uring S3 client).
    pub(super) retries: Count,
    /// Duplicate requests the store sent for late ones (io_uring S3 client).
    pub(super) hedges: Count,
    /// What the requests cost at S3 Standard's GET price, in billionths of a dollar.
    pub(super) request_cost_nanodollars: Count,
    pub(super) values_typed: Count,
    pub(super) values_binary: Count,
    pub(super) values_reconstructed: Count,
    /// Typed values handed on as the codes of a stored dictionary (grouping on codes,
    /// filters judged per distinct value).
    pub(super) values_coded: Count,
    /// Outlier columns of read paths left unread: the file's statistics show none.
    pub(super) outlier_columns_skipped: Count,
    /// Ranges read again because a page did not match its checksum.
    pub(super) checksum_retries: Count,
    /// Side files (the elements of high-cardinality arrays, Tiles-*) read for
    /// `json_each`'s rows, and the elements taken from them.
    pub(super) side_files_read: Count,
    pub(super) side_elements: Count,
    /// Row groups left unread because the predicate cache knew that no row of them
    /// satisfies the scan's filters.
    pub(super) row_groups_skipped_by_predicate_cache: Count,
    /// Rows read in row groups the predicate cache answered: those its cached rows
    /// (and the scan's own selection) left.
    pub(super) rows_selected_by_predicate_cache: Count,
}

impl TesseraScanMetrics {
    pub(super) fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        let counter = |name: &'static str| MetricBuilder::new(set).counter(name, partition);
        Self {
            files_scanned: counter("files_scanned"),
            files_pruned: counter("files_pruned"),
            row_groups_scanned: counter("row_groups_scanned"),
            row_groups_pruned: counter("row_groups_pruned"),
            rows_pruned: counter("rows_pruned"),
            bytes_scanned: counter("bytes_scanned"),
            footer_bytes: counter("footer_bytes"),
            requests: counter("requests"),
            footer_requests: counter("footer_requests"),
            retries: counter("retries"),
            hedges: counter("hedges"),
            request_cost_nanodollars: counter("request_cost_nanodollars"),
            values_typed: counter("values_typed"),
            values_binary: counter("values_binary"),
            values_reconstructed: counter("values_reconstructed"),
            values_coded: counter("values_coded"),
            outlier_columns_skipped: counter("outlier_columns_skipped"),
            checksum_retries: counter("checksum_retries"),
            side_files_read: counter("side_files_read"),
            side_elements: counter("side_elements"),
            row_groups_skipped_by_predicate_cache: counter("row_groups_skipped_by_predicate_cache"),
            rows_selected_by_predicate_cache: counter("rows_selected_by_predicate_cache"),
        }
    }
}

impl TesseraScanMetrics {
    /// Adds what reading one file cost. The bill counts what the store really sent
    /// when it tells (each split part, retry and hedge is a GET of its own), else one
    /// GET per ranged read.
    pub(super) fn count_traffic(&self, traffic: &Traffic) {
        let requests = traffic.requests.load(Ordering::Relaxed) as usize;
        let store = traffic.store.snapshot();
        self.requests.add(requests);
        self.retries.add(store.retries as usize);
        self.hedges.add(store.hedges as usize);
        let billed = match store.get_requests {
            0 => requests,
            sent => sent as usize,
        };
        self.request_cost_nanodollars.add(billed * GET_NANODOLLARS);
        self.bytes_scanned
            .add(traffic.bytes.load(Ordering::Relaxed) as usize);
        self.footer_bytes
            .add(traffic.footer_bytes.load(Ordering::Relaxed) as usize);
        self.footer_requests
            .add(traffic.footer_requests.load(Ordering::Relaxed) as usize);
        self.checksum_retries
            .add(traffic.checksum_retries.load(Ordering::Relaxed) as usize);
    }
}
