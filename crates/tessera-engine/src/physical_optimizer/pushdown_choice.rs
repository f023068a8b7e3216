//! `SET tessera.pushdown = 'auto'`: each sub-plan over a raw NDJSON or CSV scan or a
//! Tessera table scan of S3 goes where it is expected to finish first: read here,
//! filtered by S3 Select, or run by the storage-side worker.
//!
//! The cost model is PushdownDB's ("PushdownDB: Accelerating a DBMS using S3
//! Computation"): time is the larger of what each component can do, the link moving the
//! bytes that cross it at its bandwidth (`tessera.link_mib` per connection, one
//! connection per partition), Tessera's scan parsing at its rate per partition, and S3
//! Select scanning at the store's rate. What crosses the link is the input times the
//! share of it the sub-plan returns, sampled by running the sub-plan over the first
//! [`SAMPLE_BYTES`] of its first file (the filter and projection alone for S3 Select,
//! which cannot aggregate). A Tessera table scan reads only the leaves it needs, so its
//! input is what the sample's scan read of them (footers left out), scaled to the scan's
//! files; the first bytes of a table's file stand for the same share of its rows.
//! To that time each partition adds the link's latency (`tessera.link_latency_ms`) once
//! per request it waits for: here, a table file's footer (unless this process holds
//! it) and its leaves' requests, as many per byte as the sample made, or a raw file's
//! first block; under S3 Select one per object; on the worker, which reads beside the
//! store, one call. Over a link with latency, many small table files cost more in
//! round trips than in bytes.
//!
//! The evidence must cost less than it saves, so each sample runs where it is cheapest
//! to take, and only where it can change the choice: the whole sub-plan on the worker,
//! which reads the sample beside the store and sends back only the size of the
//! sub-plan's output ([`SampleSizeExec`]), and only when the link is slower than
//! parsing; the filtered scan only when S3 Select could still win on its scan rate
//! alone; and the sub-plans of one query at once. An aggregate without groups is not
//! sampled at all: it returns a row per partition whatever it reads. A worker that falls
//! back during its sample (down or saturated, as in FlexPushdownDB) is no candidate. Without a sample (compressed files,
//! no multi-threaded runtime to wait on it) the share is taken as one, so the scan
//! stays local. A sample is taken once: the same sampled plan over the same version of
//! the same object returns the same share, so a query that comes again (a dashboard's)
//! plans from [`SampleMemory`] without the sample's round trip. The choice and its
//! estimates show in `EXPLAIN` on a [`PushdownChoiceExec`].
//!
//! A filter or projection that DataFusion put above a round-robin repartition of a
//! scan's one partition (a table of one object) is moved under it first, so that it is
//! part of the sub-plan that may leave.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Result, internal_datafusion_err};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::{SessionStateBuilder, TaskContext};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::common::collect;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{
    ExecutionPlan, ExecutionPlanProperties, Partitioning, replace_children_if_necessary,
};
use datafusion::prelude::SessionConfig;
use tessera_pushdown::cost::SELECT_BYTES_PER_S;
use tokio::runtime::{Handle, RuntimeFlavor};

use super::storage_scan::{StorageScan, storage_scan};
use super::worker_pushdown::runs_on_worker;
use crate::options::{Pushdown, TesseraOptions};
use crate::physical_plan::pushdown_choice::{Choice, Estimates, PushdownChoiceExec};
use crate::physical_plan::sample_size::SampleSizeExec;
use crate::physical_plan::subtree_metric_sum;
use crate::physical_plan::worker_exec::{WorkerExec, WorkerToken, encode_ticket};

/// Bytes of the first file a sample reads.
pub const SAMPLE_BYTES: u64 = 1 << 20;
/// Bytes of a Tessera table's first file a sample covers: its scan reads only the
/// leaves it needs, so covering more of the file costs it little, and a leaf's pages
/// are then a smaller part of what it reads than when it covers a page's rows.
const TABLE_SAMPLE_BYTES: u64 = 16 * SAMPLE_BYTES;
/// How long a sample may take before the scan is planned without it.
const SAMPLE_TIMEOUT_MS: u64 = 5_000;
/// Tessera's NDJSON scan rate per partition (bytes/s): what one core extracts a few
/// paths at, read from warm local files; taken for DataFusion's CSV reader too.
const PARSE_BYTES_PER_S: f64 = 300e6;

/// Samples remembered, at most; the oldest is forgotten first.
const REMEMBERED_SAMPLES_MAX: usize = 1024;

/// The rule; registered before [`super::SelectPushdown`], which then translates the
/// scans left asking S3 Select.
#[derive(Debug)]
pub struct PushdownChoice {
    runtime: Arc<RuntimeEnv>,
    /// The session's worker token (a worker is a candidate only with one).
    worker_token: Option<WorkerToken>,
    /// The samples this session's queries took.
    memory: SampleMemory,
}

/// What samples found, by what they ran: the sampled plan (its worker ticket, which
/// names the object and the range read), the object's version (entity tag) and where it
/// ran. A worker that was up when its sample was taken may be down later; the query
/// then runs here, as [`WorkerExec`] falls back.
#[derive(Debug, Default)]
struct SampleMemory {
    entries: Mutex<(HashMap<SampleKey, Sampled>, VecDeque<SampleKey>)>,
}

type SampleKey = (Vec<u8>, Option<String>, Option<String>);

impl SampleMemory {
    fn get(&self, key: &SampleKey) -> Option<Sampled> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.0.get(key).copied()
    }

    fn keep(&self, key: SampleKey, sampled: Sampled) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (found, order) = &mut *entries;
        if found.insert(key.clone(), sampled).is_none() {
            order.push_back(key);
        }
        while order.len() > REMEMBERED_SAMPLES_MAX {
            if let Some(oldest) = order.pop_front() {
                found.remove(&oldest);
            }
        }
        debug_assert_eq!(found.len(), order.len());
    }
}

impl PushdownChoice {
    /// The rule of a session whose stores `runtime` holds, presenting `worker_token`
    /// to the worker its samples run on.
    pub fn new(runtime: Arc<RuntimeEnv>, worker_token: Option<WorkerToken>) -> Self {
        Self {
            runtime,
            worker_token,
            memory: SampleMemory::default(),
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
        let plan = under_round_robin(plan)?;
        let mut sent = Vec::new();
        plan.apply(|node| {
            if !runs_on_worker(node) {
                return Ok(TreeNodeRecursion::Continue);
            }
            sent.push(Arc::clone(node));
            Ok(TreeNodeRecursion::Jump)
        })?;
        if sent.is_empty() {
            return Ok(plan);
        }
        let mut estimates = self.estimate_all(&sent, config, options).into_iter();
        // The same walk as the one that found `sent`, so the estimates come in order.
        plan.transform_down(|node| {
            if !runs_on_worker(&node) {
                return Ok(Transformed::no(node));
            }
            let estimates = estimates
                .next()
                .ok_or_else(|| internal_datafusion_err!("a sub-plan found twice"))?;
            let chosen = placed(node, estimates, config)?;
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
    /// The estimates of each of `sent`, their samples taken at once.
    fn estimate_all(
        &self,
        sent: &[Arc<dyn ExecutionPlan>],
        config: &ConfigOptions,
        options: &TesseraOptions,
    ) -> Vec<Estimates> {
        let endpoint = options.worker.trim();
        let worker = (self.worker_token.is_some() && !endpoint.is_empty()).then_some(endpoint);
        let handle = Handle::try_current()
            .ok()
            .filter(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
        let sampler = Sampler {
            ctx: self.task_context(config),
            worker,
            sampling: handle.is_some(),
            memory: &self.memory,
        };
        let link = Link::of(options);
        let all = futures::future::join_all(sent.iter().map(|plan| sampler.estimate(plan, link)));
        match handle {
            Some(handle) => tokio::task::block_in_place(|| handle.block_on(all)),
            // Nothing is sampled, so nothing waits on the runtime.
            None => futures::executor::block_on(all),
        }
    }

    fn task_context(&self, config: &ConfigOptions) -> Arc<TaskContext> {
        let mut session = SessionConfig::from(config.clone());
        if let Some(token) = &self.worker_token {
            session = session.with_extension(Arc::new(token.clone()));
        }
        let state = SessionStateBuilder::new()
            .with_config(session)
            .with_runtime_env(Arc::clone(&self.runtime))
            .build();
        state.task_ctx()
    }
}

/// Takes the samples of one query's sub-plans.
struct Sampler<'a> {
    ctx: Arc<TaskContext>,
    /// The worker's address, if it is a candidate.
    worker: Option<&'a str>,
    /// Whether samples can be waited on.
    sampling: bool,
    /// The samples taken before.
    memory: &'a SampleMemory,
}

/// What a sample found.
#[derive(Debug, Clone, Copy)]
struct Sampled {
    /// The share of the bytes read that the sampled plan returned.
    share: f64,
    /// The bytes the sample's scan read per byte of the file range it covered: one for
    /// raw files, the share of a table's file its leaves take.
    read_per_byte: f64,
    /// The requests for data (footers left out) the sample's scan made per byte of the
    /// file range it covered; zero for raw files, whose blocks are fetched ahead.
    requests_per_byte: f64,
    /// Whether the worker computed it (it was asked and did not fall back).
    on_worker: bool,
}

/// The link between this session and the store (or the worker).
#[derive(Debug, Clone, Copy)]
struct Link {
    /// One connection's bandwidth, bytes/s.
    bytes_per_s: f64,
    /// A request's wait for its first byte, seconds.
    latency_s: f64,
}

impl Link {
    fn of(options: &TesseraOptions) -> Self {
        Self {
            bytes_per_s: options.link_mib.max(0.01) * f64::from(1u32 << 20),
            latency_s: options.link_latency_ms.max(0.0) / 1e3,
        }
    }
}

/// The size of a sub-plan's input and the seconds each candidate needs for it.
struct Model {
    bytes: f64,
    partitions: f64,
    link: Link,
    /// The files' bytes, whatever the scan reads of them.
    file_bytes: f64,
    files: f64,
    /// Footers this process would fetch before the files' data.
    footers: f64,
    /// Requests for data a scan here makes that wait their first byte: at least one per
    /// file, the first block of a raw file or a table file's leaves.
    data_requests: f64,
}

impl Model {
    /// The model of reading what `scan` reads over `link`, taking all of its files'
    /// bytes, `footers` of its files fetching their footer first.
    fn of(scan: &FileScanConfig, link: Link, footers: usize) -> Self {
        let files = scan.file_groups.iter().flat_map(|g| g.files());
        let (count, bytes) = files.fold((0usize, 0.0), |(count, bytes), f| {
            let size = match &f.range {
                Some(r) => (r.end - r.start) as f64,
                None => f.object_meta.size as f64,
            };
            (count + 1, bytes + size)
        });
        Self {
            bytes,
            partitions: scan.file_groups.len().max(1) as f64,
            link,
            file_bytes: bytes,
            files: count as f64,
            footers: footers as f64,
            data_requests: count as f64,
        }
    }

    /// The model of a scan that read as `sampled` found: `read_per_byte` of its files'
    /// bytes, in `requests_per_byte` requests per byte of them.
    fn reading(self, sampled: Option<Sampled>) -> Self {
        let Some(sampled) = sampled else {
            return self;
        };
        Self {
            bytes: self.file_bytes * sampled.read_per_byte,
            data_requests: self.files.max(self.file_bytes * sampled.requests_per_byte),
            ..self
        }
    }

    fn parse_s(&self) -> f64 {
        self.bytes / (self.partitions * PARSE_BYTES_PER_S)
    }

    fn over_link_s(&self, share: f64) -> f64 {
        share * self.bytes / (self.partitions * self.link.bytes_per_s)
    }

    /// What a partition waits for the first bytes of the requests it makes one after
    /// another: footers and data here, one per object under S3 Select, one call on the
    /// worker, which reads beside the store.
    fn waits_s(&self, requests: f64) -> f64 {
        requests / self.partitions * self.link.latency_s
    }

    fn local_s(&self) -> f64 {
        self.parse_s().max(self.over_link_s(1.0)) + self.waits_s(self.footers + self.data_requests)
    }

    fn worker_s(&self, share: f64) -> f64 {
        self.parse_s().max(self.over_link_s(share)) + self.waits_s(self.partitions)
    }

    /// What S3 Select needs at least, whatever the filter keeps: its scan.
    fn select_floor_s(&self) -> f64 {
        self.bytes / SELECT_BYTES_PER_S + self.waits_s(self.files)
    }

    fn select_s(&self, share: f64) -> f64 {
        self.select_floor_s()
            .max(self.over_link_s(share) + self.waits_s(self.files))
            + share * self.parse_s()
    }
}

impl Sampler<'_> {
    /// The seconds each candidate is expected to take for `plan`.
    async fn estimate(&self, plan: &Arc<dyn ExecutionPlan>, link: Link) -> Estimates {
        let Some((scan, source)) = scan_of(plan) else {
            return Estimates::local_only();
        };
        let model = Model::of(scan, link, source.footers_to_fetch(scan));
        let sample = self.sample_of(scan, source);
        // An aggregate without groups returns a row per partition whatever it reads, so
        // what it sends is known without a sample. (A worker that is down then shows
        // when the partitions run, and they are computed here, as after a sample.)
        let ungrouped = ungrouped_aggregate(plan);
        // The worker saves only link time: when reading here takes no longer than the
        // worker's parsing and call, it cannot win.
        let worker = match (self.worker, &sample) {
            (Some(endpoint), Some(file)) if !ungrouped && model.local_s() > model.worker_s(0.0) => {
                self.sample(plan, file, Some(endpoint)).await
            }
            _ => None,
        };
        // Unsampled, a table scan's bytes are its files' whole (an upper bound), read
        // in one request per file (a lower bound).
        let model = model.reading(worker);
        let unsampled_share = if ungrouped { 0.0 } else { 1.0 };
        let worker_up = self.worker.is_some() && worker.is_none_or(|s| s.on_worker);
        let worker_s =
            worker_up.then(|| model.worker_s(worker.map_or(unsampled_share, |s| s.share)));
        let best_s = worker_s.map_or(model.local_s(), |s| s.min(model.local_s()));
        let mut estimates = Estimates {
            local_s: model.local_s(),
            select_s: None,
            select_floor: false,
            worker_s,
            worker_share: worker.filter(|s| s.on_worker).map(|s| s.share),
            select_share: None,
        };
        if !source.can_select() {
            return estimates;
        }
        if model.select_floor_s() >= best_s {
            estimates.select_s = Some(model.select_floor_s());
            estimates.select_floor = true;
            return estimates;
        }
        let at = self.worker.filter(|_| worker_up);
        let select = match &sample {
            Some(file) => self.sample(&filtered_scan(plan), file, at).await,
            None => None,
        };
        estimates.select_share = select.map(|s| s.share);
        estimates.select_s = Some(model.select_s(select.map_or(1.0, |s| s.share)));
        estimates
    }

    /// The first [`SAMPLE_BYTES`] of the first file of `scan` ([`TABLE_SAMPLE_BYTES`] of
    /// a table's), if it can be sampled.
    fn sample_of(&self, scan: &FileScanConfig, source: StorageScan) -> Option<PartitionedFile> {
        let file = scan.file_groups.first()?.files().first()?;
        if !self.sampling || source.is_compressed(scan, file) {
            return None;
        }
        let covered = match source.reads_columns() {
            true => TABLE_SAMPLE_BYTES,
            false => SAMPLE_BYTES,
        };
        Some(source.first_bytes(file, file.object_meta.size.min(covered)))
    }

    /// What `plan` returns of `file`, computed on the worker at `endpoint` or here, or
    /// remembered from when it was.
    async fn sample(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        file: &PartitionedFile,
        endpoint: Option<&str>,
    ) -> Option<Sampled> {
        let sampled = over_sample(plan, file).ok()?;
        let key = (
            encode_ticket(&sampled, 0).ok()?,
            file.object_meta.e_tag.clone(),
            endpoint.map(str::to_string),
        );
        if let Some(remembered) = self.memory.get(&key) {
            return Some(remembered);
        }
        let found = self.run_sample(sampled, file, endpoint).await?;
        // A sample the worker left to this session says nothing of the worker later.
        if endpoint.is_none() || found.on_worker {
            self.memory.keep(key, found);
        }
        Some(found)
    }

    /// Runs the sampled plan `sampled`, over `file`, on the worker at `endpoint` or here.
    /// Either way only the size of its answer comes back ([`SampleSizeExec`]).
    async fn run_sample(
        &self,
        sampled: Arc<dyn ExecutionPlan>,
        file: &PartitionedFile,
        endpoint: Option<&str>,
    ) -> Option<Sampled> {
        let reads_columns = scan_of(&sampled).is_some_and(|(_, scan)| scan.reads_columns());
        let mut sized: Arc<dyn ExecutionPlan> = Arc::new(SampleSizeExec::new(sampled));
        if let Some(endpoint) = endpoint {
            sized = Arc::new(WorkerExec::new(sized, endpoint.to_string()));
        }
        let run = collect(sized.execute(0, Arc::clone(&self.ctx)).ok()?);
        let answer = tokio::time::timeout(Duration::from_millis(SAMPLE_TIMEOUT_MS), run)
            .await
            .ok()?
            .ok()?;
        let bytes = SampleSizeExec::bytes_of(&answer).ok()?;
        let fallbacks = subtree_metric_sum(&sized, "worker_fallbacks");
        let covered = file.range.as_ref().map_or(1, |r| (r.end - r.start).max(1)) as u64;
        // What the scan read, on the worker or here (after a fallback) alike, less the
        // footers, which a process reads once per file.
        let metric = |name| subtree_metric_sum(&sized, name);
        let (read, requests) = match reads_columns {
            true => (
                (metric("worker_store_bytes") + metric("bytes_scanned"))
                    .saturating_sub(metric("worker_footer_bytes") + metric("footer_bytes"))
                    .max(1),
                (metric("worker_store_requests") + metric("requests"))
                    .saturating_sub(metric("worker_footer_requests") + metric("footer_requests")),
            ),
            false => (covered, 0),
        };
        Some(Sampled {
            share: bytes as f64 / read as f64,
            read_per_byte: read as f64 / covered as f64,
            requests_per_byte: requests as f64 / covered as f64,
            on_worker: endpoint.is_some() && fallbacks == 0,
        })
    }
}

/// The scan at the bottom of a chain of per-partition operators.
fn scan_of(plan: &Arc<dyn ExecutionPlan>) -> Option<(&FileScanConfig, StorageScan<'_>)> {
    match storage_scan(plan) {
        Some(found) => Some(found),
        None => scan_of(plan.children().first()?),
    }
}

/// Whether `plan` is a partial aggregate without groups: one row per partition.
fn ungrouped_aggregate(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.downcast_ref::<AggregateExec>()
        .is_some_and(|a| *a.mode() == AggregateMode::Partial && a.group_expr().is_empty())
}

/// The part of `plan` S3 Select could compute: its scan and the filter right above.
fn filtered_scan(plan: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    let mut node = Arc::clone(plan);
    loop {
        if node.is::<FilterExec>() || storage_scan(&node).is_some() {
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
        let config = source
            .without_select(config)
            .unwrap_or_else(|| config.clone());
        Some(
            FileScanConfigBuilder::from(config)
                .with_file_groups(vec![FileGroup::new(vec![file.clone()])])
                .build(),
        )
    })
}

/// `plan` with each filter and projection over a round-robin repartition of a sub-plan
/// that could leave moved under the repartition, into the sub-plan.
///
/// A scan that may ask S3 Select reads whole objects, so a table of one object is read
/// in one partition that DataFusion deals round-robin to the filter above. Dealing rows
/// out keeps every row, so filtering before or after it gives the same rows; before,
/// the filter leaves with the scan and only its rows cross the link.
fn under_round_robin(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let [input] = node.children()[..] else {
            return Ok(Transformed::no(node));
        };
        let Some(repartition) = input.downcast_ref::<RepartitionExec>() else {
            return Ok(Transformed::no(node));
        };
        let per_row = node.is::<FilterExec>() || node.is::<ProjectionExec>();
        let dealt = matches!(repartition.partitioning(), Partitioning::RoundRobinBatch(_));
        if !per_row || !dealt || !runs_on_worker(repartition.input()) {
            return Ok(Transformed::no(node));
        }
        let moved = replace_children_if_necessary(
            Arc::clone(&node),
            vec![Arc::clone(repartition.input())],
        )?;
        let mut above = RepartitionExec::try_new(moved, repartition.partitioning().clone())?;
        if repartition.preserve_order() {
            above = above.with_preserve_order();
        }
        Ok(Transformed::yes(Arc::new(above) as _))
    })
    .map(|t| t.data)
}

/// The sub-plan `sent` where `estimates` expect it to finish first, under the
/// [`PushdownChoiceExec`] that shows why.
///
/// A scan that may ask S3 Select reads objects whole, so a table of one object is one
/// partition. Left to be read here or by the worker, it is cut into byte ranges as
/// DataFusion cuts the files of a scan that never asked, so that more than one
/// connection reads it; its partitions are merged again above, for the plan made for
/// one.
fn placed(
    sent: Arc<dyn ExecutionPlan>,
    estimates: Estimates,
    config: &ConfigOptions,
) -> Result<Arc<dyn ExecutionPlan>> {
    let choice = estimates.fastest();
    if choice == Choice::S3Select {
        return Ok(Arc::new(PushdownChoiceExec::new(sent, choice, estimates)));
    }
    let chain = without_select(sent)?;
    let one = chain.output_partitioning().partition_count() == 1;
    if !one || chain.output_ordering().is_some() {
        return Ok(Arc::new(PushdownChoiceExec::new(chain, choice, estimates)));
    }
    let (target, min_size) = (
        config.execution.target_partitions,
        config.optimizer.repartition_file_min_size,
    );
    // A scan that cannot be cut (compressed) stays whole.
    let cut = map_scans(chain, |scan, _| {
        let source = scan.file_source();
        source
            .repartitioned(target, min_size, None, scan)
            .ok()
            .flatten()
    })?;
    let spread = cut.output_partitioning().partition_count() > 1;
    let chosen = Arc::new(PushdownChoiceExec::new(cut, choice, estimates));
    Ok(match spread {
        true => Arc::new(CoalescePartitionsExec::new(chosen)),
        false => chosen,
    })
}

/// `plan` with its scans no longer asking S3 Select.
fn without_select(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    map_scans(plan, |config, source| source.without_select(config))
}

/// `plan` with each scan for which `f` gives a new configuration scanning that.
fn map_scans(
    plan: Arc<dyn ExecutionPlan>,
    f: impl Fn(&FileScanConfig, StorageScan) -> Option<FileScanConfig>,
) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let Some(config) = storage_scan(&node).and_then(|(config, source)| f(config, source))
        else {
            return Ok(Transformed::no(node));
        };
        Ok(Transformed::yes(
            DataSourceExec::from_data_source(config) as _
        ))
    })
    .map(|t| t.data)
}
