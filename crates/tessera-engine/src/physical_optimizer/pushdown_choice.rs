//! `SET tessera.pushdown = 'auto'`: each sub-plan over a raw NDJSON scan of S3 goes
//! where it is expected to finish first: read here, filtered by S3 Select, or run by the
//! storage-side worker.
//!
//! The cost model is PushdownDB's ("PushdownDB: Accelerating a DBMS using S3
//! Computation"): time is the larger of what each component can do, the link moving the
//! bytes that cross it at its bandwidth (`tessera.link_mib` per connection, one
//! connection per partition), Tessera's scan parsing at its rate per partition, and S3
//! Select scanning at the store's rate. What crosses the link is the input times the
//! share of it the sub-plan returns, sampled by running the sub-plan over the first
//! [`SAMPLE_BYTES`] of its first file here (the filter and projection alone for S3
//! Select, which cannot aggregate). Without a sample (compressed files, no
//! multi-threaded runtime to wait on it) the share is taken as one, so the scan stays
//! local. The choice and its estimates show in `EXPLAIN` on a [`PushdownChoiceExec`].

use std::sync::Arc;
use std::time::Duration;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::{SessionStateBuilder, TaskContext};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::prelude::SessionConfig;
use tokio::runtime::{Handle, RuntimeFlavor};

use super::select_pushdown::ndjson_scan;
use super::worker_pushdown::runs_on_worker;
use crate::datasource::ndjson::read::Codec;
use crate::datasource::ndjson::source::NdjsonSource;
use crate::options::{Pushdown, TesseraOptions};
use crate::physical_plan::pushdown_choice::{Choice, Estimates, PushdownChoiceExec};
use crate::physical_plan::worker_exec::compact_views;

/// Bytes of the first file the sample reads.
pub const SAMPLE_BYTES: u64 = 1 << 20;
/// How long a sample may take before the scan is planned without it.
const SAMPLE_TIMEOUT_MS: u64 = 5_000;
/// Tessera's NDJSON scan rate per partition (bytes/s): what one core extracts a few
/// paths at, read from warm local files.
const PARSE_BYTES_PER_S: f64 = 300e6;
/// The store's S3 Select scan rate over all requests (bytes/s): MinIO's, measured
/// between 60 and 190 MB/s on two cores (docs/BENCHMARKS.md).
const SELECT_BYTES_PER_S: f64 = 100e6;

/// The rule; registered before [`super::SelectPushdown`], which then translates the
/// scans left asking S3 Select.
#[derive(Debug)]
pub struct PushdownChoice {
    runtime: Arc<RuntimeEnv>,
    /// Whether the session has a worker token (a worker is a candidate only then).
    worker_token: bool,
}

impl PushdownChoice {
    /// The rule of a session whose stores `runtime` holds.
    pub fn new(runtime: Arc<RuntimeEnv>, worker_token: bool) -> Self {
        Self {
            runtime,
            worker_token,
        }
    }
}

impl PhysicalOptimizerRule for PushdownChoice {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(options) = config.extensions.get::<TesseraOptions>() else {
            return Ok(plan);
        };
        if options.pushdown != Pushdown::Auto {
            return Ok(plan);
        }
        let link = options.link_mib.max(0.01) * f64::from(1u32 << 20);
        let worker = self.worker_token && !options.worker.trim().is_empty();
        plan.transform_down(|node| {
            if !runs_on_worker(&node) {
                return Ok(Transformed::no(node));
            }
            let estimates = self.estimate(&node, config, link, worker);
            let choice = estimates.fastest();
            let input = match choice {
                Choice::S3Select => node,
                Choice::Local | Choice::Worker => without_select(node)?,
            };
            let chosen = Arc::new(PushdownChoiceExec::new(input, choice, estimates));
            Ok(Transformed::new(chosen, true, TreeNodeRecursion::Jump))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tessera_pushdown_choice"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

impl PushdownChoice {
    /// The seconds each candidate is expected to take for `plan`.
    fn estimate(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
        link: f64,
        worker: bool,
    ) -> Estimates {
        let Some((scan, source)) = scan_of(plan) else {
            return Estimates::local_only();
        };
        let bytes: f64 = scan
            .file_groups
            .iter()
            .flat_map(|g| g.files())
            .map(|f| match &f.range {
                Some(r) => (r.end - r.start) as f64,
                None => f.object_meta.size as f64,
            })
            .sum();
        let partitions = scan.file_groups.len().max(1) as f64;
        let shares = self.sample(plan, config);
        let (worker_share, select_share) = shares.unwrap_or((1.0, 1.0));
        let parse = bytes / (partitions * PARSE_BYTES_PER_S);
        let over_link = |share: f64| share * bytes / (partitions * link);
        Estimates {
            local_s: parse.max(bytes / (partitions * link)),
            select_s: source.select_plan().map(|_| {
                (bytes / SELECT_BYTES_PER_S).max(over_link(select_share)) + select_share * parse
            }),
            worker_s: worker.then(|| parse.max(over_link(worker_share))),
            worker_share: shares.map(|s| s.0),
            select_share: shares.map(|s| s.1),
        }
    }

    /// The shares of its input that `plan` and its filtered scan return over a sample,
    /// if one can be taken.
    fn sample(&self, plan: &Arc<dyn ExecutionPlan>, config: &ConfigOptions) -> Option<(f64, f64)> {
        let handle = Handle::try_current().ok()?;
        if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
            return None;
        }
        let (scan, _) = scan_of(plan)?;
        let file = scan.file_groups.first()?.files().first()?;
        if Codec::from_name(file.object_meta.location.as_ref()).is_compressed() {
            return None;
        }
        let read = file.object_meta.size.min(SAMPLE_BYTES);
        let mut first = PartitionedFile::new_from_meta(file.object_meta.clone());
        first.range = None;
        let first = first.with_range(0, read as i64);
        let sampled = over_sample(plan, &first).ok()?;
        let filtered = over_sample(&filtered_scan(plan), &first).ok()?;
        let ctx = self.task_context(config);
        let run = async {
            let whole = output_bytes(&sampled, &ctx).await?;
            let scan = output_bytes(&filtered, &ctx).await?;
            Ok::<_, DataFusionError>((whole, scan))
        };
        let timed = tokio::time::timeout(Duration::from_millis(SAMPLE_TIMEOUT_MS), run);
        let (whole, scan) = tokio::task::block_in_place(|| handle.block_on(timed))
            .ok()?
            .ok()?;
        let read = read.max(1) as f64;
        Some((whole as f64 / read, scan as f64 / read))
    }

    fn task_context(&self, config: &ConfigOptions) -> Arc<TaskContext> {
        let state = SessionStateBuilder::new()
            .with_config(SessionConfig::from(config.clone()))
            .with_runtime_env(Arc::clone(&self.runtime))
            .build();
        state.task_ctx()
    }
}

/// The NDJSON scan at the bottom of a chain of per-partition operators.
fn scan_of(plan: &Arc<dyn ExecutionPlan>) -> Option<(&FileScanConfig, &NdjsonSource)> {
    match ndjson_scan(plan) {
        Some(found) => Some(found),
        None => scan_of(plan.children().first()?),
    }
}

/// The part of `plan` S3 Select could compute: its scan and the filter right above.
fn filtered_scan(plan: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    let mut node = Arc::clone(plan);
    loop {
        if node.is::<FilterExec>() || ndjson_scan(&node).is_some() {
            return node;
        }
        match node.children().first() {
            Some(child) => node = Arc::clone(child),
            None => return node,
        }
    }
}

/// `plan` with its scan reading only `file`, here, in one partition.
fn over_sample(
    plan: &Arc<dyn ExecutionPlan>,
    file: &PartitionedFile,
) -> Result<Arc<dyn ExecutionPlan>> {
    map_scans(Arc::clone(plan), |config, source| {
        Some(
            FileScanConfigBuilder::from(config.clone())
                .with_file_groups(vec![FileGroup::new(vec![file.clone()])])
                .with_source(Arc::new(source.with_select_client(None)))
                .build(),
        )
    })
}

/// The bytes of the first partition of `plan`'s output, as the worker would send them.
async fn output_bytes(plan: &Arc<dyn ExecutionPlan>, ctx: &Arc<TaskContext>) -> Result<usize> {
    let stream = plan.execute(0, Arc::clone(ctx))?;
    let batches = datafusion::physical_plan::common::collect(stream).await?;
    batches
        .iter()
        .map(|b| compact_views(b).map(|b| b.get_array_memory_size()))
        .sum()
}

/// `plan` with its scans no longer asking S3 Select.
fn without_select(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    map_scans(plan, |config, source| {
        source.asks_select().then(|| {
            FileScanConfigBuilder::from(config.clone())
                .with_source(Arc::new(source.with_select_client(None)))
                .build()
        })
    })
}

/// `plan` with each NDJSON scan for which `f` gives a new configuration scanning that.
fn map_scans(
    plan: Arc<dyn ExecutionPlan>,
    f: impl Fn(&FileScanConfig, &NdjsonSource) -> Option<FileScanConfig>,
) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let Some(config) = ndjson_scan(&node).and_then(|(config, source)| f(config, source)) else {
            return Ok(Transformed::no(node));
        };
        Ok(Transformed::yes(
            DataSourceExec::from_data_source(config) as _
        ))
    })
    .map(|t| t.data)
}
