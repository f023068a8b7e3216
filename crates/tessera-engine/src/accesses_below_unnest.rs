//! Logical optimizer rule: JSON accesses to a document column that an `UNNEST` only
//! repeats are computed below the `UNNEST`, once per document, where the scan can push
//! them further (into the NDJSON parser or a table's typed columns).
//!
//! `FROM t, json_each(t.j, '$.labels') AS e ... GROUP BY t.j->'repo'->>'name'` plans
//! as an `UNNEST` of `j`'s entries with `j` passed through, and an access to `j` above
//! it. DataFusion's leaf extraction stops at an `UNNEST` (its output columns may share
//! names with its input's), so without this rule the scan hands every whole document
//! up (a table reconstructs each one as text) and the access parses each copy again,
//! once per array element. A column the `UNNEST` does not unnest passes through it
//! unchanged, so an access on such columns alone gives the same value below it.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::alias::AliasGenerator;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema, Result};
use datafusion::logical_expr::{
    Expr, ExpressionPlacement, LogicalPlan, LogicalPlanBuilder, Projection, Unnest,
};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};

/// Name prefix of the columns computed below an `UNNEST` by this rule.
const BELOW_UNNEST_PREFIX: &str = "__tessera_below_unnest_";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct AccessesBelowUnnest;

impl OptimizerRule for AccessesBelowUnnest {
    fn name(&self) -> &str {
        "tessera_accesses_below_unnest"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Projection(projection) = &plan else {
            return Ok(Transformed::no(plan));
        };
        let LogicalPlan::Unnest(unnest) = projection.input.as_ref() else {
            return Ok(Transformed::no(plan));
        };
        let mut moved = Moved::new(unnest, config.alias_generator());
        let exprs = projection
            .expr
            .iter()
            .map(|e| moved.replace(e.clone()))
            .collect::<Result<Vec<_>>>()?;
        if moved.below.is_empty() {
            return Ok(Transformed::no(plan));
        }
        let unnest = with_input_columns(unnest, moved.below)?;
        let projection = Projection::try_new(exprs, Arc::new(LogicalPlan::Unnest(unnest)))?;
        Ok(Transformed::yes(LogicalPlan::Projection(projection)))
    }
}

/// `unnest` over its input with `below` (aliased accesses) appended as columns, which it
/// passes through as its own last columns. The schema is extended, not recomputed:
/// recomputing would lose the names SQL's `unnest()` gives its output columns.
fn with_input_columns(unnest: &Unnest, below: Vec<Expr>) -> Result<Unnest> {
    let input_schema = unnest.input.schema();
    let input = LogicalPlanBuilder::from(Arc::unwrap_or_clone(Arc::clone(&unnest.input)))
        .project(
            input_schema
                .columns()
                .into_iter()
                .map(Expr::Column)
                .chain(below),
        )?
        .build()?;
    let before = input_schema.fields().len();
    let added = input.schema().iter().skip(before);
    let added = DFSchema::new_with_metadata(
        added.map(|(q, f)| (q.cloned(), Arc::clone(f))).collect(),
        HashMap::new(),
    )?;
    let mut dependency_indices = unnest.dependency_indices.clone();
    dependency_indices.extend(before..input.schema().fields().len());
    Ok(Unnest {
        input: Arc::new(input),
        schema: Arc::new(unnest.schema.join(&added)?),
        dependency_indices,
        ..unnest.clone()
    })
}

/// The accesses taken below one `UNNEST` and the names they get there.
struct Moved<'a> {
    /// The columns the `UNNEST` passes through unchanged (its input's, unnested ones
    /// excepted): accesses to these alone can move.
    passed: Vec<Column>,
    /// `access AS name`, for the `UNNEST`'s input.
    below: Vec<Expr>,
    /// Names unique in the whole plan, however many `UNNEST`s it holds.
    names: &'a AliasGenerator,
}

impl<'a> Moved<'a> {
    fn new(unnest: &Unnest, names: &'a AliasGenerator) -> Self {
        Self {
            passed: unnest
                .input
                .schema()
                .columns()
                .into_iter()
                .filter(|c| !unnest.exec_columns.contains(c))
                .collect(),
            below: Vec::new(),
            names,
        }
    }

    /// `expr` with every movable access replaced by a column computed below.
    fn replace(&mut self, expr: Expr) -> Result<Expr> {
        Ok(expr
            .transform_down(|e| {
                if !self.movable(&e) {
                    return Ok(Transformed::no(e));
                }
                let name = self.name_of(e);
                Ok(Transformed::new(
                    Expr::Column(Column::new_unqualified(name)),
                    true,
                    TreeNodeRecursion::Jump,
                ))
            })?
            .data)
    }

    /// Whether `e` is an access (not a bare column) that reads only columns the
    /// `UNNEST` passes through.
    fn movable(&self, e: &Expr) -> bool {
        if matches!(e, Expr::Column(_) | Expr::Alias(_))
            || e.placement() != ExpressionPlacement::MoveTowardsLeafNodes
        {
            return false;
        }
        let columns = e.column_refs();
        !columns.is_empty() && columns.iter().all(|c| self.passed.contains(c))
    }

    /// The name of `access` below the `UNNEST` (one per distinct access).
    fn name_of(&mut self, access: Expr) -> String {
        let existing = self.below.iter().find_map(|b| match b {
            Expr::Alias(alias) if *alias.expr == access => Some(alias.name.clone()),
            _ => None,
        });
        existing.unwrap_or_else(|| {
            let name = self.names.next(BELOW_UNNEST_PREFIX);
            self.below.push(access.alias(&name));
            name
        })
    }
}
