//! `TRUNCATE` and `CREATE TABLE ... AS` as DuckDB means them, over DataFusion's plans.
//!
//! DataFusion 55's in-memory tables delete rows but do not truncate, so `TRUNCATE t`
//! becomes a `DELETE FROM t` without a filter (for a Tessera table too: the same
//! deletion). A table created from a query takes its columns' nullability from the
//! query in DataFusion (`range`'s column is NOT NULL), so a later `INSERT` of a NULL
//! fails; DuckDB (and PostgreSQL) create such columns nullable, and so does Tessera.
//! DataFusion 55's leaf-expression extraction moves the JSON accesses of an `UPDATE`'s
//! SET list below a projection the update cannot see (`No field named
//! __datafusion_extracted_1`), so an `UPDATE` is optimized without it.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::datatypes::{Field, Schema};
use datafusion::catalog::MemTable;
use datafusion::common::Result;
use datafusion::dataframe::DataFrame;
use datafusion::execution::context::SessionContext;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::{
    DdlStatement, DmlStatement, LogicalPlan, LogicalPlanBuilder, WriteOp,
};

/// `plan` with a `TRUNCATE` planned as an unfiltered `DELETE`; any other plan unchanged.
pub fn rewrite(plan: LogicalPlan) -> Result<LogicalPlan> {
    match plan {
        LogicalPlan::Dml(dml) if dml.op == WriteOp::Truncate => {
            let scan =
                LogicalPlanBuilder::scan(dml.table_name.clone(), Arc::clone(&dml.target), None)?
                    .build()?;
            Ok(LogicalPlan::Dml(DmlStatement::new(
                dml.table_name,
                dml.target,
                WriteOp::Delete,
                Arc::new(scan),
            )))
        }
        other => Ok(other),
    }
}

/// DataFusion's optimizer rules that extract leaf expressions (see the module docs).
const LEAF_EXTRACTION_RULES: [&str; 2] = ["extract_leaf_expressions", "push_down_leaf_projections"];

/// An `UPDATE`, to be run by a state without [`LEAF_EXTRACTION_RULES`]; `None` for any
/// other plan.
pub fn update(ctx: &SessionContext, plan: &LogicalPlan) -> Option<DataFrame> {
    let LogicalPlan::Dml(dml) = plan else {
        return None;
    };
    if dml.op != WriteOp::Update {
        return None;
    }
    let state = ctx.state();
    let rules = state
        .optimizers()
        .iter()
        .filter(|rule| !LEAF_EXTRACTION_RULES.contains(&rule.name()))
        .cloned()
        .collect();
    let state = SessionStateBuilder::new_from_existing(state)
        .with_optimizer_rules(rules)
        .build();
    Some(DataFrame::new(state, plan.clone()))
}

/// Runs `CREATE [OR REPLACE] TABLE name AS query` as an in-memory table whose columns
/// are all nullable. `None` for any other plan, and for the cases DataFusion reports
/// as errors (the table exists, duplicate column names), which it then reports.
pub async fn create_from_query(
    ctx: &SessionContext,
    plan: &LogicalPlan,
) -> Result<Option<DataFrame>> {
    let LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(create)) = plan else {
        return Ok(None);
    };
    // A table declared with its columns (no query) keeps its NOT NULL constraints.
    if matches!(create.input.as_ref(), LogicalPlan::EmptyRelation(_)) || create.temporary {
        return Ok(None);
    }
    let schema = create.input.schema().inner();
    let mut names = HashSet::new();
    if !schema.fields().iter().all(|f| names.insert(f.name())) {
        return Ok(None);
    }
    let exists = ctx.table_exist(create.name.clone())?;
    match (exists, create.if_not_exists, create.or_replace) {
        (true, true, false) => return Ok(Some(ctx.read_empty()?)),
        (true, false, false) | (_, true, true) => return Ok(None),
        _ => {}
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    let nullable = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let input = ctx.state().optimize(&create.input)?;
    let batches = DataFrame::new(ctx.state(), input)
        .collect_partitioned()
        .await?;
    let table = MemTable::try_new(nullable, batches)?
        .with_constraints(create.constraints.clone())
        .with_column_defaults(create.column_defaults.iter().cloned().collect());
    if exists {
        ctx.deregister_table(create.name.clone())?;
    }
    ctx.register_table(create.name.clone(), Arc::new(table))?;
    Ok(Some(ctx.read_empty()?))
}
