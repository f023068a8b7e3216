//! S3 Select requests as scans send them: one complete answer per request, counted in
//! the scan's metrics (requests, bytes the store read and returned, dollars), or
//! nothing when the request failed, so that the scan reads the object itself.

use bytes::Bytes;
use datafusion::catalog::Session;
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder};
use tessera_blob::s3::S3Client;
use tessera_blob::select::{InputCompression, InputFormat, OutputFormat, SelectRequest};
use tessera_pushdown::cost::select_nanodollars;

use crate::options::{Pushdown, TesseraOptions};
use crate::stores::StoreRegistry;

/// Counters of a scan's S3 Select requests.
#[derive(Debug, Clone)]
pub struct SelectMetrics {
    /// Requests sent (again with robust conditions included).
    pub select_requests: Count,
    /// Bytes the store read for them.
    pub select_store_bytes: Count,
    /// Bytes of records they returned.
    pub select_returned_bytes: Count,
    /// Objects asked again with only the conditions that cannot fail.
    pub select_retries: Count,
    /// Objects asked with a Bloom join's filter of the build side's keys.
    pub select_bloom_requests: Count,
    /// Objects asked with a top-K sort's sampled threshold.
    pub select_top_k_requests: Count,
    /// Objects the scan read itself: S3 Select could not read them (zstd) or answer
    /// them exactly.
    pub select_fallbacks: Count,
    /// What the requests cost (request, scanned and returned bytes), in nanodollars.
    pub select_cost_nanodollars: Count,
    /// The scan's bytes from storage, which answers' records add to: what crossed the
    /// link.
    pub bytes_scanned: Count,
}

impl SelectMetrics {
    /// The counters of `partition` in `set`, answers' bytes also added to
    /// `bytes_scanned`.
    pub fn new(set: &ExecutionPlanMetricsSet, partition: usize, bytes_scanned: Count) -> Self {
        let counter = |name: &'static str| MetricBuilder::new(set).counter(name, partition);
        Self {
            bytes_scanned,
            select_requests: counter("select_requests"),
            select_store_bytes: counter("select_store_bytes"),
            select_returned_bytes: counter("select_returned_bytes"),
            select_retries: counter("select_retries"),
            select_bloom_requests: counter("select_bloom_requests"),
            select_top_k_requests: counter("select_top_k_requests"),
            select_fallbacks: counter("select_fallbacks"),
            select_cost_nanodollars: counter("select_cost_nanodollars"),
        }
    }
}

/// The records of the complete answer to `request` over the object `key`, counted in
/// `metrics`; `None` when the request failed.
pub(crate) async fn ask(
    client: &S3Client,
    metrics: &SelectMetrics,
    key: &str,
    request: &SelectRequest<'_>,
) -> Option<Bytes> {
    metrics.select_requests.add(1);
    let answer = client.select(key, request).await.ok()?;
    let records = Bytes::from(answer.records.concat());
    let stats = answer.stats.unwrap_or_default();
    metrics.select_store_bytes.add(stats.bytes_scanned as usize);
    metrics.select_returned_bytes.add(records.len());
    metrics.bytes_scanned.add(records.len());
    metrics
        .select_cost_nanodollars
        .add(select_nanodollars(stats.bytes_scanned, records.len() as u64) as usize);
    Some(records)
}

/// A request for `sql` over a JSON-lines object, answered in JSON lines.
pub(crate) fn json_lines(sql: &str, compression: InputCompression) -> SelectRequest<'_> {
    SelectRequest {
        expression: sql,
        input: InputFormat::JsonLines,
        compression,
        output: OutputFormat::JsonLines,
    }
}

/// The client a scan over `conf` sends S3 Select requests through, when the session's
/// `tessera.pushdown` is one of `modes` and the files are in S3.
pub(crate) fn select_client(
    state: &dyn Session,
    conf: &FileScanConfig,
    modes: &[Pushdown],
) -> Option<S3Client> {
    let options = state.config_options().extensions.get::<TesseraOptions>()?;
    if !modes.contains(&options.pushdown) {
        return None;
    }
    let url: &url::Url = conf.object_store_url.as_ref();
    if url.scheme() != "s3" {
        return None;
    }
    let stores = state.config().get_extension::<StoreRegistry>()?;
    stores.select_client(url.host_str()?)
}
