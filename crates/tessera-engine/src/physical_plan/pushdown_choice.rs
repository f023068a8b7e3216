//! `PushdownChoiceExec`: where `tessera.pushdown = 'auto'` sent the sub-plan below it,
//! and what each place was expected to cost; it passes its input's rows through.

use std::fmt;
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan};

/// Where a sub-plan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Tessera reads the objects.
    Local,
    /// The store filters them (S3 Select).
    S3Select,
    /// The storage-side worker runs the sub-plan.
    Worker,
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Choice::Local => "local",
            Choice::S3Select => "s3select",
            Choice::Worker => "worker",
        })
    }
}

/// The expected seconds of each candidate (`None`: not a candidate), and the sampled
/// shares of the input that cross the link under each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimates {
    /// Reading every byte here.
    pub local_s: f64,
    /// S3 Select, if the scan can ask it.
    pub select_s: Option<f64>,
    /// Whether `select_s` is only what S3 Select's scan alone needs: not sampled, since
    /// another candidate is faster than that already.
    pub select_floor: bool,
    /// The worker, if one is configured.
    pub worker_s: Option<f64>,
    /// The share of the input the whole sub-plan returns, if sampled.
    pub worker_share: Option<f64>,
    /// The share of the input the filtered scan returns, if sampled.
    pub select_share: Option<f64>,
}

impl Estimates {
    /// Only local reading is possible.
    pub fn local_only() -> Self {
        Self {
            local_s: 0.0,
            select_s: None,
            select_floor: false,
            worker_s: None,
            worker_share: None,
            select_share: None,
        }
    }

    /// The candidate expected to finish first (local on ties).
    pub fn fastest(&self) -> Choice {
        let mut best = (Choice::Local, self.local_s);
        for (choice, seconds) in [
            (Choice::S3Select, self.select_s),
            (Choice::Worker, self.worker_s),
        ] {
            if let Some(s) = seconds.filter(|&s| s < best.1) {
                best = (choice, s);
            }
        }
        best.0
    }
}

impl fmt::Display for Estimates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "estimated_s=[local={:.3}", self.local_s)?;
        if let Some(s) = self.select_s {
            let at_least = if self.select_floor { ">=" } else { "=" };
            write!(f, ", s3select{at_least}{s:.3}")?;
        }
        if let Some(s) = self.worker_s {
            write!(f, ", worker={s:.3}")?;
        }
        let share = |share: Option<f64>| share.map_or("none".to_string(), |s| format!("{s:.4}"));
        write!(
            f,
            "], sampled_share=[plan={}, scan={}]",
            share(self.worker_share),
            share(self.select_share)
        )
    }
}

/// Marks the sub-plan `tessera.pushdown = 'auto'` placed, for `EXPLAIN`.
#[derive(Debug)]
pub struct PushdownChoiceExec {
    input: Arc<dyn ExecutionPlan>,
    choice: Choice,
    estimates: Estimates,
}

impl PushdownChoiceExec {
    /// `input`, placed by `choice` after `estimates`.
    pub fn new(input: Arc<dyn ExecutionPlan>, choice: Choice, estimates: Estimates) -> Self {
        Self {
            input,
            choice,
            estimates,
        }
    }

    /// Where the sub-plan runs.
    pub fn choice(&self) -> Choice {
        self.choice
    }
}

impl DisplayAs for PushdownChoiceExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "PushdownChoiceExec: choice={}, {}",
            self.choice, self.estimates
        )
    }
}

impl ExecutionPlan for PushdownChoiceExec {
    super::over_one_input!("PushdownChoiceExec");

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::only_child(children, self.name())?;
        Ok(Arc::new(Self::new(input, self.choice, self.estimates)))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }
}
