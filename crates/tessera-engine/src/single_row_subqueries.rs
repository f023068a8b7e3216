//! On a cluster, an uncorrelated scalar subquery that may return more than one row is an
//! error before planning.
//!
//! Embedded, DataFusion runs such a subquery once (`ScalarSubqueryExec`) and fails when
//! it returns several rows. Ballista cannot cut that operator into stages, so a session
//! with `tessera.cluster` set plans scalar subqueries as left joins, which would repeat
//! the outer rows instead of failing. Only subqueries whose form returns at most one
//! row (an aggregate without GROUP BY, a LIMIT 1) are planned so; the others are
//! refused with a sentence saying what to do.

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::logical_plan::FetchType;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

use crate::options::TesseraOptions;

/// The analyzer rule; a no-op while `tessera.cluster` is empty.
#[derive(Debug, Default)]
pub struct SingleRowSubqueries;

impl AnalyzerRule for SingleRowSubqueries {
    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let clustered = config
            .extensions
            .get::<TesseraOptions>()
            .is_some_and(|o| !o.cluster.trim().is_empty());
        if !clustered {
            return Ok(plan);
        }
        plan.apply_with_subqueries(|node| {
            for expr in node.expressions() {
                expr.apply(|e| match e {
                    Expr::ScalarSubquery(subquery)
                        if subquery.outer_ref_columns.is_empty()
                            && !at_most_one_row(&subquery.subquery) =>
                    {
                        Err(DataFusionError::Plan(
                            "on a cluster a scalar subquery runs as a join, so its form must \
                             return at most one row (an aggregate without GROUP BY, or \
                             LIMIT 1); add one, or run the query embedded \
                             (SET tessera.cluster = '')"
                                .into(),
                        ))
                    }
                    _ => Ok(TreeNodeRecursion::Continue),
                })?;
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        Ok(plan)
    }

    fn name(&self) -> &str {
        "tessera_single_row_subqueries"
    }
}

/// Whether `plan` returns at most one row whatever its input.
fn at_most_one_row(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Aggregate(aggregate) => aggregate.group_expr.is_empty(),
        LogicalPlan::Limit(limit) => {
            matches!(limit.get_fetch_type(), Ok(FetchType::Literal(Some(0 | 1))))
                || at_most_one_row(&limit.input)
        }
        LogicalPlan::Projection(_)
        | LogicalPlan::Filter(_)
        | LogicalPlan::Sort(_)
        | LogicalPlan::SubqueryAlias(_) => plan.inputs().iter().all(|i| at_most_one_row(i)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::SessionOptions;
    use crate::test_support::session_with;

    /// The error of optimizing `sql` in a session on a cluster (or embedded), if any.
    async fn refusal(cluster: Option<&str>, sql: &str) -> Option<String> {
        let session = session_with(SessionOptions {
            cluster: cluster.map(str::to_string),
            ..Default::default()
        });
        let values = "CREATE TABLE t AS VALUES (1, 'a'), (2, 'b'), (2, 'c')";
        session.sql(values).await.unwrap().collect().await.unwrap();
        let frame = session.sql(sql).await.unwrap();
        frame.into_optimized_plan().err().map(|e| e.to_string())
    }

    #[tokio::test]
    async fn subqueries_that_may_repeat_rows_are_refused_on_a_cluster() {
        let cluster = Some("df://127.0.0.1:50050");
        let several = "SELECT column2, (SELECT column1 FROM t WHERE column1 = 2) FROM t";
        let refused = refusal(cluster, several).await.expect("refused");
        assert!(refused.contains("at most one row"), "{refused}");
        assert_eq!(refusal(None, several).await, None, "embedded it plans");
        for single in [
            "SELECT column2 FROM t WHERE column1 = (SELECT max(column1) FROM t)",
            "SELECT (SELECT column2 FROM t ORDER BY column2 LIMIT 1), count(*) FROM t",
            "SELECT column2, (SELECT count(*) FROM t AS u WHERE u.column1 = t.column1) FROM t",
        ] {
            assert_eq!(refusal(cluster, single).await, None, "{single}");
        }
    }
}
