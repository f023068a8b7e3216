//! Expressions over a table rewritten onto a region's columns.
//!
//! A region stores, per column id, the value the table scan computed for that
//! expression; so an expression over the table reads the region once each of its
//! sub-expressions named by a region column becomes a column of the region's schema.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::projection::{ProjectionExpr, ProjectionExprs};
use datafusion::physical_plan::ExecutionPlan;
use tessera_cache::semantic::predicate::ColumnId;

use crate::datasource::tessera::scan::TesseraSource;

/// The columns of one region: position by id, and the names `c0..cn` of its schema.
#[derive(Debug, Clone)]
pub(crate) struct RegionColumns {
    positions: HashMap<String, usize>,
}

impl RegionColumns {
    /// The region columns for `ids`, in their order.
    pub(crate) fn new<'a>(ids: impl IntoIterator<Item = &'a ColumnId>) -> Self {
        let positions = ids
            .into_iter()
            .enumerate()
            .map(|(i, id)| (id.0.clone(), i))
            .collect();
        Self { positions }
    }

    /// The name of the region's column at `position` in its files and schema.
    pub(crate) fn name(position: usize) -> String {
        format!("c{position}")
    }

    /// The table scan `config` (whose source is `source`) computing `exprs` as the
    /// region columns `c0..cn`, with `filters` pushed into it: how a region, or the
    /// oracle's sample, is read from the table.
    pub(crate) fn scan(
        config: &FileScanConfig,
        source: &TesseraSource,
        exprs: impl IntoIterator<Item = Arc<dyn PhysicalExpr>>,
        filters: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Arc<dyn ExecutionPlan> {
        let outputs = exprs
            .into_iter()
            .enumerate()
            .map(|(i, expr)| ProjectionExpr::new(expr, Self::name(i)));
        let source = source.with_scan(ProjectionExprs::new(outputs), filters);
        let config = FileScanConfigBuilder::from(config.clone())
            .with_source(Arc::new(source))
            .build();
        DataSourceExec::from_data_source(config)
    }

    /// `expr` (over the table) over the region: every largest sub-expression whose text
    /// is a region column replaced by that column. `None` when something of the table is
    /// still read (the region lacks a column the expression needs).
    pub(crate) fn rewrite(&self, expr: &Arc<dyn PhysicalExpr>) -> Option<Arc<dyn PhysicalExpr>> {
        let mut missing = false;
        let rewritten = Arc::clone(expr)
            .transform_down(|e| {
                if let Some(&at) = self.positions.get(&e.to_string()) {
                    let column =
                        Arc::new(Column::new(&Self::name(at), at)) as Arc<dyn PhysicalExpr>;
                    return Ok(Transformed::new(column, true, TreeNodeRecursion::Jump));
                }
                missing |= e.downcast_ref::<Column>().is_some();
                Ok(Transformed::no(e))
            })
            .map(|t| t.data);
        match (rewritten, missing) {
            (Ok(expr), false) => Some(expr),
            _ => None,
        }
    }

    /// Every expression of `exprs` rewritten, or `None` if one cannot be.
    pub(crate) fn rewrite_all(
        &self,
        exprs: &[Arc<dyn PhysicalExpr>],
    ) -> Option<Vec<Arc<dyn PhysicalExpr>>> {
        exprs.iter().map(|e| self.rewrite(e)).collect()
    }
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::DataType;
    use datafusion::functions::expr_fn::upper;
    use datafusion::logical_expr::{cast, col, lit, not};
    use tessera_cache::semantic::predicate::ColumnId;

    use super::RegionColumns;
    use crate::region_cache::predicates::tests::physical;

    #[test]
    fn largest_matching_subexpressions_become_region_columns() {
        let ids = [
            ColumnId::new("CAST(j@0 AS Int64)"),
            ColumnId::new("j@0"),
            ColumnId::new("upper(j@0)"),
        ];
        let columns = RegionColumns::new(&ids);
        let filter = physical(
            cast(col("j"), DataType::Int64)
                .gt(lit(3_i64))
                .and(upper(col("j")).like(lit("%A%")))
                .and(not(col("j").is_null())),
        );
        let rewritten = columns.rewrite(&filter).unwrap();
        assert_eq!(
            rewritten.to_string(),
            "c0@0 > 3 AND c2@2 LIKE %A% AND NOT c1@1 IS NULL"
        );
    }

    #[test]
    fn an_expression_reading_a_column_the_region_lacks_is_not_rewritten() {
        let columns = RegionColumns::new(&[ColumnId::new("upper(j@0)")]);
        let filter = physical(upper(col("j")).eq(lit("A")).and(col("n").gt(lit(1_i64))));
        assert!(columns.rewrite(&filter).is_none());
        assert!(columns.rewrite(&physical(lit(1_i64))).is_some());
    }
}
