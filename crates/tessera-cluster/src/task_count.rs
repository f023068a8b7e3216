//! What a task tells the client beyond Ballista's own metrics, as counters in its
//! stage's metrics (summed by name per stage at the scheduler): which executor ran it
//! (`tasks@HOST:PORT`, so the job's metrics say how many of a stage's tasks each
//! executor ran, which `EXPLAIN ANALYZE` on a cluster shows), and the lines its scans
//! skipped as malformed, so the client reports them as an embedded query would. A task's
//! end is also signalled, so the executor's loop reports it at once (see `crate::wake`).
//! A stage that writes its input's partitions through (a join's build side, a merge's
//! input, the job's result) has its view columns compacted first: Ballista's
//! pass-through shuffle writer writes every buffer a view references, so twenty rows of
//! a top-K would carry the whole scan's strings to disk and to the client.

use std::fmt;
use std::sync::Arc;

use ballista_core::JobId;
use ballista_core::execution_plans::ShuffleWriterExec;
use ballista_core::serde::protobuf::{
    RuntimeStatsReport, ShuffleWritePartition, TaskColumnStats, WindowStateReport,
};
use ballista_executor::execution_engine::{
    DefaultExecutionEngine, ExecutionEngine, QueryStageExecutor,
};
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::metrics::{Count, Metric, MetricValue, MetricsSet};
use datafusion::physical_plan::{ExecutionPlan, replace_children_if_necessary};
use datafusion::prelude::SessionConfig;
use tessera_engine::physical_plan::cluster_job::{TASKS_ON, reject_counters};
use tessera_engine::physical_plan::compact_views::{CompactViewsExec, has_views};
use tessera_engine::rejects::RejectLog;
use tokio::sync::Notify;

/// Ballista's stage executor, with every task counted under this executor's address, its
/// skipped lines added, and its end signalled.
/// Its shuffle readers connect once per fetch: the pool of Flight clients that
/// Ballista's own default keeps is private to its executor crate.
pub(crate) struct CountingEngine {
    inner: DefaultExecutionEngine,
    counter: String,
    task_ended: Arc<Notify>,
}

impl CountingEngine {
    /// Counts tasks under `address` (the host and Flight port others fetch from) and
    /// notifies `task_ended` as each one ends.
    pub(crate) fn new(address: &str, task_ended: Arc<Notify>) -> Self {
        Self {
            inner: DefaultExecutionEngine::new(),
            counter: format!("{TASKS_ON}{address}"),
            task_ended,
        }
    }
}

impl ExecutionEngine for CountingEngine {
    fn create_query_stage_exec(
        &self,
        job_id: JobId,
        stage_id: usize,
        task_id: usize,
        global_output_partition_ids: Vec<usize>,
        plan: Arc<dyn ExecutionPlan>,
        work_dir: &str,
        config: &SessionConfig,
    ) -> Result<Arc<dyn QueryStageExecutor>> {
        let stage = self.inner.create_query_stage_exec(
            job_id,
            stage_id,
            task_id,
            global_output_partition_ids,
            compacted_before_writing(plan)?,
            work_dir,
            config,
        )?;
        Ok(Arc::new(CountedStage {
            stage,
            counter: self.counter.clone(),
            rejects: config.get_extension::<RejectLog>(),
            task_ended: Arc::clone(&self.task_ended),
        }))
    }
}

/// The stage `plan` with the input of a pass-through shuffle writer compacted (the
/// sort-based writer of hash shuffles compacts what it writes itself).
fn compacted_before_writing(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    let Some(writer) = plan.downcast_ref::<ShuffleWriterExec>() else {
        return Ok(plan);
    };
    let input = Arc::clone(writer.children()[0]);
    if !has_views(&input.schema()) {
        return Ok(plan);
    }
    replace_children_if_necessary(plan, vec![Arc::new(CompactViewsExec::new(input))])
}

/// One task's stage: Ballista's, plus the count of 1 and the skipped lines in its root
/// operator's metrics.
#[derive(Debug)]
struct CountedStage {
    stage: Arc<dyn QueryStageExecutor>,
    counter: String,
    /// The task's own log (see `parts::settings`), which its scans were decoded with.
    rejects: Option<Arc<RejectLog>>,
    task_ended: Arc<Notify>,
}

impl fmt::Display for CountedStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.stage.fmt(f)
    }
}

#[async_trait::async_trait]
impl QueryStageExecutor for CountedStage {
    async fn execute_query_stage(
        &self,
        task_id: usize,
        context: Arc<TaskContext>,
    ) -> Result<Vec<ShuffleWritePartition>> {
        let written = self.stage.execute_query_stage(task_id, context).await;
        self.task_ended.notify_one();
        written
    }

    /// The metric sets stay one per operator (the scheduler matches them to the stage's
    /// operators by position); the counters join the first, the shuffle writer's.
    fn collect_plan_metrics(&self) -> Vec<MetricsSet> {
        let mut sets = self.stage.collect_plan_metrics();
        if let Some(root) = sets.first_mut() {
            let skipped = self.rejects.as_ref().map(|log| log.summary());
            let rejects = skipped
                .iter()
                .filter(|s| s.count > 0)
                .flat_map(reject_counters);
            for (name, value) in std::iter::once((self.counter.clone(), 1)).chain(rejects) {
                let count = Count::new();
                count.add(usize::try_from(value).unwrap_or(usize::MAX));
                let value = MetricValue::Count {
                    name: name.into(),
                    count,
                };
                root.push(Arc::new(Metric::new(value, None)));
            }
        }
        sets
    }

    fn collect_runtime_stats_reports(&self) -> Vec<RuntimeStatsReport> {
        self.stage.collect_runtime_stats_reports()
    }

    fn collect_window_state_reports(&self) -> Result<Vec<WindowStateReport>> {
        self.stage.collect_window_state_reports()
    }

    fn collect_column_stats(&self) -> Vec<TaskColumnStats> {
        self.stage.collect_column_stats()
    }
}

#[cfg(test)]
mod tests {
    use ballista_core::execution_plans::SortShuffleWriterExec;
    use ballista_core::execution_plans::sort_shuffle::SortShuffleConfig;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::expressions::col;
    use datafusion::physical_plan::Partitioning;
    use datafusion::physical_plan::empty::EmptyExec;

    use super::*;

    fn scan(data_type: DataType) -> Arc<dyn ExecutionPlan> {
        let schema = Schema::new(vec![Field::new("s", data_type, true)]);
        Arc::new(EmptyExec::new(Arc::new(schema)))
    }

    fn written(input: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        let writer = ShuffleWriterExec::try_new(JobId::new("j"), 1, input, "/tmp".into());
        Arc::new(writer.unwrap())
    }

    fn below_writer(plan: &Arc<dyn ExecutionPlan>) -> String {
        plan.children()[0].name().to_string()
    }

    #[test]
    fn views_written_through_are_compacted_first() {
        let plan = compacted_before_writing(written(scan(DataType::Utf8View))).unwrap();
        assert!(plan.is::<ShuffleWriterExec>());
        assert_eq!(below_writer(&plan), "CompactViewsExec");
        // Nothing to compact without views.
        let plan = compacted_before_writing(written(scan(DataType::Utf8))).unwrap();
        assert_eq!(below_writer(&plan), "EmptyExec");
    }

    #[test]
    fn hash_shuffles_compact_what_they_write_themselves() {
        let input = scan(DataType::Utf8View);
        let hashed = Partitioning::Hash(vec![col("s", &input.schema()).unwrap()], 2);
        let config = SortShuffleConfig::new(true, 4096);
        let writer = SortShuffleWriterExec::try_new(
            JobId::new("j"),
            1,
            input,
            "/tmp".into(),
            hashed,
            config,
        );
        let plan: Arc<dyn ExecutionPlan> = Arc::new(writer.unwrap());
        let plan = compacted_before_writing(plan).unwrap();
        assert_eq!(below_writer(&plan), "EmptyExec");
    }
}
