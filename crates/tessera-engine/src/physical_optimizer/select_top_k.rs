//! Top-K by sampling over S3 Select ("PushdownDB: Accelerating a DBMS using S3
//! Computation", ICDE 2020, §VII): a sort that keeps its K first rows by a number of
//! the documents of an NDJSON scan asking S3 Select gets a threshold from a sample
//! first, and the scan's requests then return only the documents at or beyond it
//! ([`TopKThresholdExec`]).
//!
//! A sort qualifies when it has a fetch of at most [`K_MAX`] rows and its first key
//! is a numeric JSON access (`json_get_int`, `json_get_float`, a cast of `->>` to
//! `BIGINT` or `DOUBLE`) of a scan reached through projections, filters and
//! repartitions ([`super::select_chain`]). The sort itself is unchanged: the threshold
//! only leaves out documents it would drop anyway.
//!
//! The sample size follows the paper's analysis (§VII-B): a sample of S records and a
//! second phase returning about K·N/S of the N records cost least in bytes at
//! S = sqrt(K·N) when both return the same fields, as here. N is estimated from the
//! scan's bytes ([`super::select_chain::over_sample`]), the sample taken as the first S documents of the first
//! object that the store's conditions keep (the paper's "first records" for data in no
//! particular order).

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::datasource::physical_plan::FileScanConfigBuilder;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::{ExecutionPlan, replace_children_if_necessary};

use super::select_chain::{numeric_access, over_sample, rewrite_in_process, scan_path, with_scan};
use crate::datasource::ndjson::select::TopKBound;
use crate::datasource::ndjson::source::NdjsonSource;
use crate::physical_plan::top_k_threshold::{TopKThreshold, TopKThresholdExec};

/// The largest K sampled for: beyond it the sample is a large share of any object.
pub const K_MAX: usize = 100_000;
/// The most documents a sample asks for.
const SAMPLE_ROWS_MAX: u64 = 1 << 20;

/// The rule; registered after [`super::SelectPushdown`], over the scans' final
/// projections.
#[derive(Debug, Default)]
pub struct SelectTopK;

impl PhysicalOptimizerRule for SelectTopK {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let rewrite = |node: &Arc<dyn ExecutionPlan>| match node.downcast_ref::<SortExec>() {
            Some(sort) => sampled(node, sort),
            None => Ok(None),
        };
        rewrite_in_process(plan, config, |o| o.top_k_sampling.0, &rewrite)
    }

    fn name(&self) -> &str {
        "tessera_select_top_k"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `sort` (the plan `node`) over an input whose scan asks S3 Select for the documents at
/// or beyond a sampled threshold, when it qualifies.
fn sampled(
    node: &Arc<dyn ExecutionPlan>,
    sort: &SortExec,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(k) = sort.fetch().filter(|k| (1..=K_MAX).contains(k)) else {
        return Ok(None);
    };
    let key = sort.expr().first().clone();
    let open = |source: &NdjsonSource| !source.in_top_k();
    let Some(path) = scan_path(sort.input(), &key.expr, &open, &numeric_access) else {
        return Ok(None);
    };
    let Some(sample) = sample_of(sort.input(), k)? else {
        return Ok(None);
    };
    let threshold = Arc::new(TopKThreshold::new(sample, key, k));
    let bound = TopKBound {
        path,
        threshold: Arc::clone(&threshold),
    };
    let bounded = |config: FileScanConfigBuilder, source: &NdjsonSource| {
        config.with_source(Arc::new(source.with_top_k(bound.clone())))
    };
    let Some(input) = with_scan(sort.input(), &bounded)? else {
        return Ok(None);
    };
    let sort = replace_children_if_necessary(Arc::clone(node), vec![input])?;
    Ok(Some(Arc::new(TopKThresholdExec::new(sort, threshold))))
}

/// `input` (a chain over a scan) over the first documents of the scan's first object:
/// sqrt(K·N) of them, N estimated from the scan's bytes.
fn sample_of(input: &Arc<dyn ExecutionPlan>, k: usize) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let rows = |documents: u64| {
        ((k as f64 * documents as f64).sqrt().ceil() as u64).clamp(k as u64, SAMPLE_ROWS_MAX)
    };
    over_sample(input, &rows)
}
