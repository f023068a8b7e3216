//! The expressions of an aggregate directly over a Tessera scan, for the rules that move
//! work from the one into the other ([`super::CastPushdown`], [`super::GroupOnCodes`]).
//!
//! After a rule has the scan compute new outputs (a cast, dictionary codes), the scan
//! is narrowed to what the aggregate still reads: an output nothing reads any more (the
//! text of a path now read as a number) is then not computed at all.

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::utils::{collect_columns, reassign_expr_columns};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::{AggregateExec, PhysicalGroupBy};
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};

use crate::datasource::tessera::scan::{SnapshotFile, TesseraSource};
use tessera_tiles::summary::FileSummary;

/// Every expression an aggregate evaluates over its input, by role.
pub(super) struct AggregateParts {
    /// GROUP BY keys with their names.
    pub groups: Vec<(Arc<dyn PhysicalExpr>, String)>,
    /// Per aggregate function, its arguments.
    pub arguments: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    /// Per aggregate function, its ORDER BY expressions.
    pub order_bys: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    /// Per aggregate function, its FILTER.
    pub filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
}

impl AggregateParts {
    /// The parts of `aggregate` (grouping sets are not taken apart: `None`).
    pub fn of(aggregate: &AggregateExec) -> Option<Self> {
        let group_by = aggregate.group_expr();
        if group_by.has_grouping_set() {
            return None;
        }
        Some(Self {
            groups: group_by.expr().to_vec(),
            arguments: aggregate
                .aggr_expr()
                .iter()
                .map(|f| f.expressions())
                .collect(),
            order_bys: aggregate
                .aggr_expr()
                .iter()
                .map(|f| f.order_bys().iter().map(|s| Arc::clone(&s.expr)).collect())
                .collect(),
            filters: aggregate.filter_expr().to_vec(),
        })
    }

    /// The parts with `f` applied to every expression.
    pub fn map(
        self,
        mut f: impl FnMut(Arc<dyn PhysicalExpr>) -> Result<Arc<dyn PhysicalExpr>>,
    ) -> Result<Self> {
        let groups = self
            .groups
            .into_iter()
            .map(|(e, name)| Ok((f(e)?, name)))
            .collect::<Result<_>>()?;
        let mut each = |exprs: Vec<Vec<Arc<dyn PhysicalExpr>>>| {
            exprs
                .into_iter()
                .map(|v| v.into_iter().map(&mut f).collect::<Result<Vec<_>>>())
                .collect::<Result<Vec<_>>>()
        };
        let arguments = each(self.arguments)?;
        let order_bys = each(self.order_bys)?;
        let filters = self
            .filters
            .into_iter()
            .map(|e| e.map(&mut f).transpose())
            .collect::<Result<_>>()?;
        Ok(Self {
            groups,
            arguments,
            order_bys,
            filters,
        })
    }

    /// The aggregate functions of `aggregate` over these arguments and orderings
    /// (`None` when a function does not take new expressions).
    pub fn functions(&self, aggregate: &AggregateExec) -> Option<Vec<Arc<AggregateFunctionExpr>>> {
        aggregate
            .aggr_expr()
            .iter()
            .zip(self.arguments.iter().zip(&self.order_bys))
            .map(|(f, (args, order_bys))| {
                f.with_new_expressions(args.clone(), order_bys.clone())
                    .map(Arc::new)
            })
            .collect()
    }

    /// `aggregate` rebuilt from these parts over `input`.
    pub fn aggregate(
        &self,
        aggregate: &AggregateExec,
        input: Arc<dyn ExecutionPlan>,
    ) -> Result<Option<AggregateExec>> {
        let Some(functions) = self.functions(aggregate) else {
            return Ok(None);
        };
        let group_by = aggregate.group_expr();
        let group_by = PhysicalGroupBy::new(
            self.groups.clone(),
            group_by.null_expr().to_vec(),
            group_by.groups().to_vec(),
            group_by.has_grouping_set(),
        );
        let schema = input.schema();
        let rebuilt = AggregateExec::try_new(
            *aggregate.mode(),
            group_by,
            functions,
            self.filters.clone(),
            input,
            schema,
        )?
        .with_limit_options(aggregate.limit_options());
        Ok(Some(rebuilt))
    }

    fn exprs(&self) -> impl Iterator<Item = &Arc<dyn PhysicalExpr>> {
        self.groups
            .iter()
            .map(|(e, _)| e)
            .chain(self.arguments.iter().flatten())
            .chain(self.order_bys.iter().flatten())
            .chain(self.filters.iter().flatten())
    }

    /// `scan` (a Tessera scan, the input these parts were written over) computing
    /// `outputs` (expressions over its output, with their names) as further columns and
    /// no column these parts no longer read; the parts, which may read the outputs as
    /// columns after the scan's own, with their columns moved to the new scan's.
    /// `None` when the scan does not take the projection.
    pub fn over_scan_with(
        self,
        scan: &Arc<dyn ExecutionPlan>,
        outputs: Vec<(Arc<dyn PhysicalExpr>, String)>,
    ) -> Result<Option<(Arc<dyn ExecutionPlan>, Self)>> {
        let schema = scan.schema();
        let width = schema.fields().len();
        let read: BTreeSet<usize> = self
            .exprs()
            .flat_map(collect_columns)
            .map(|c| c.index())
            .filter(|&i| i < width)
            .collect();
        let mut projection: Vec<ProjectionExpr> = read
            .iter()
            .map(|&i| {
                let name = schema.field(i).name();
                ProjectionExpr::new(Arc::new(Column::new(name, i)), name.clone())
            })
            .collect();
        projection.extend(
            outputs
                .into_iter()
                .map(|(expr, name)| ProjectionExpr::new(expr, name)),
        );
        let projection = ProjectionExec::try_new(projection, Arc::clone(scan))?;
        let Some(narrowed) = scan.try_swapping_with_projection(&projection)? else {
            return Ok(None);
        };
        let narrowed_schema = narrowed.schema();
        let parts = self.map(|e| reassign_expr_columns(e, &narrowed_schema))?;
        Ok(Some((narrowed, parts)))
    }
}

/// `plan` with every aggregate that `rewrite` rewrites (bottom up) replaced by the
/// rewritten plan.
pub(super) fn rewrite_aggregates(
    plan: Arc<dyn ExecutionPlan>,
    rewrite: impl Fn(&AggregateExec) -> Result<Option<Arc<dyn ExecutionPlan>>>,
) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let Some(aggregate) = node.downcast_ref::<AggregateExec>() else {
            return Ok(Transformed::no(node));
        };
        Ok(match rewrite(aggregate)? {
            Some(rewritten) => Transformed::yes(rewritten),
            None => Transformed::no(node),
        })
    })
    .map(|t| t.data)
}

/// The manifest summaries of every file `config` scans (`None` when one is not a file
/// of a Tessera snapshot).
pub(super) fn scanned_summaries(config: &FileScanConfig) -> Option<Vec<&FileSummary>> {
    config
        .file_groups
        .iter()
        .flat_map(|g| g.iter())
        .map(|file| {
            let entry = file.extensions.get::<SnapshotFile>()?;
            Some(&entry.file.summary)
        })
        .collect()
}

/// The file scan configuration and source of `plan` when it scans a Tessera table.
pub(super) fn tessera_scan(
    plan: &Arc<dyn ExecutionPlan>,
) -> Option<(&FileScanConfig, &TesseraSource)> {
    super::file_scan(plan)
}
