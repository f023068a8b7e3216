//! A scan's pushed filters as the semantic cache's predicates, and the "columns" a
//! region stores for them.
//!
//! "Crystal: A Unified Cache Storage System for Analytical Databases" (Section 3.1)
//! describes a region by `column op literal` atoms under AND/OR/NOT. Here a column is any
//! deterministic, non-literal expression over the table's columns (a JSON access, a
//! cast of one, a relational column), named by its display text, so equal text means the
//! same value per row. A filter that does not translate still runs, as a residual over
//! the region's rows; it only narrows nothing in the region's predicate.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::{Operator, Volatility};
use datafusion::physical_expr::expressions::{
    BinaryExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, Literal, NotExpr,
};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use tessera_cache::semantic::predicate::{CmpOp, ColumnId, Predicate, Value};

/// Column ids and the expressions they name, in id order (the order of a region's
/// columns `c0..cn`).
pub(crate) type Columns = BTreeMap<ColumnId, Arc<dyn PhysicalExpr>>;

/// What a scan's filters mean to the cache.
#[derive(Debug, Default)]
pub(crate) struct Translated {
    /// The filters that translated, as one predicate each (their AND is the region's).
    pub(crate) predicates: Vec<Predicate>,
    /// The filters that translated, as pushed.
    pub(crate) exact: Vec<Arc<dyn PhysicalExpr>>,
    /// The filters that did not: they run over the region's rows only.
    pub(crate) residual: Vec<Arc<dyn PhysicalExpr>>,
    /// Every column any filter reads (a region holds them all, so that the query's
    /// filters can run over it).
    pub(crate) columns: Columns,
}

/// Splits `filters` (a conjunction) into translated and residual ones.
pub(crate) fn translate_filters(filters: &[Arc<dyn PhysicalExpr>]) -> Translated {
    let mut out = Translated::default();
    for filter in filters {
        let mut columns = Columns::new();
        match translate(filter, &mut columns) {
            Some(predicate) => {
                out.predicates.push(predicate);
                out.exact.push(Arc::clone(filter));
                out.columns.append(&mut columns);
            }
            None => {
                leaf_accesses(filter, &mut out.columns);
                out.residual.push(Arc::clone(filter));
            }
        }
    }
    out
}

/// `expr` as a predicate, recording the columns it tests; `None` when any part of it
/// does not translate exactly (same TRUE rows).
pub(crate) fn translate(expr: &Arc<dyn PhysicalExpr>, columns: &mut Columns) -> Option<Predicate> {
    if let Some(binary) = expr.downcast_ref::<BinaryExpr>() {
        return translate_binary(binary, columns);
    }
    if let Some(not) = expr.downcast_ref::<NotExpr>() {
        return Some(Predicate::Not(Box::new(translate(not.arg(), columns)?)));
    }
    if let Some(is_null) = expr.downcast_ref::<IsNullExpr>() {
        return Some(Predicate::IsNull(column(is_null.arg(), columns)?));
    }
    if let Some(is_not_null) = expr.downcast_ref::<IsNotNullExpr>() {
        return Some(Predicate::IsNotNull(column(is_not_null.arg(), columns)?));
    }
    if let Some(in_list) = expr.downcast_ref::<InListExpr>() {
        let values = in_list.list().iter().map(literal).collect::<Option<_>>()?;
        return Some(Predicate::InList {
            column: column(in_list.expr(), columns)?,
            values,
            negated: in_list.negated(),
        });
    }
    None
}

fn translate_binary(binary: &BinaryExpr, columns: &mut Columns) -> Option<Predicate> {
    let (left, right) = (binary.left(), binary.right());
    match binary.op() {
        Operator::And => Some(Predicate::And(vec![
            translate(left, columns)?,
            translate(right, columns)?,
        ])),
        Operator::Or => Some(Predicate::Or(vec![
            translate(left, columns)?,
            translate(right, columns)?,
        ])),
        op => {
            let op = comparison(*op)?;
            // `5 < x` is `x > 5`: the literal may stand on either side.
            let (column_side, value, op) = match literal(right) {
                Some(value) => (left, value, op),
                None => (right, literal(left)?, flip(op)),
            };
            Some(Predicate::Compare {
                column: column(column_side, columns)?,
                op,
                value,
            })
        }
    }
}

fn comparison(op: Operator) -> Option<CmpOp> {
    Some(match op {
        Operator::Lt => CmpOp::Lt,
        Operator::LtEq => CmpOp::LtEq,
        Operator::Eq => CmpOp::Eq,
        Operator::NotEq => CmpOp::NotEq,
        Operator::Gt => CmpOp::Gt,
        Operator::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}

/// The operator with its operands swapped (`a < b` is `b > a`).
fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::LtEq => CmpOp::GtEq,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::GtEq => CmpOp::LtEq,
        CmpOp::Eq | CmpOp::NotEq => op,
    }
}

/// A literal the semantic cache orders as Arrow's comparison kernels do: text (bytewise),
/// integers and booleans. Floats are left out on purpose: Arrow's kernels order floats
/// by IEEE total order (`-0.0 < 0.0`, NaN above everything, NaNs of either sign apart),
/// while the semantic module treats `-0.0 == 0.0`, so a region `x > -0.0` would be taken
/// to contain `x > 0.0`'s rows and answer wrong. Decimals, times and NULL stay out too.
fn literal(expr: &Arc<dyn PhysicalExpr>) -> Option<Value> {
    Some(match expr.downcast_ref::<Literal>()?.value() {
        ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => Value::Text(s.clone()),
        ScalarValue::LargeUtf8(Some(s)) => Value::Text(s.clone()),
        ScalarValue::Boolean(Some(b)) => Value::Bool(*b),
        ScalarValue::Int8(Some(v)) => Value::Int((*v).into()),
        ScalarValue::Int16(Some(v)) => Value::Int((*v).into()),
        ScalarValue::Int32(Some(v)) => Value::Int((*v).into()),
        ScalarValue::Int64(Some(v)) => Value::Int((*v).into()),
        ScalarValue::UInt8(Some(v)) => Value::Int((*v).into()),
        ScalarValue::UInt16(Some(v)) => Value::Int((*v).into()),
        ScalarValue::UInt32(Some(v)) => Value::Int((*v).into()),
        ScalarValue::UInt64(Some(v)) => Value::Int((*v).into()),
        _ => return None,
    })
}

/// `expr` as a column: not a literal, reading at least one of the table's columns
/// (a constant expression is no column). Records it in `columns`.
fn column(expr: &Arc<dyn PhysicalExpr>, columns: &mut Columns) -> Option<ColumnId> {
    if expr.downcast_ref::<Literal>().is_some() || !reads_columns(expr) {
        return None;
    }
    let id = column_id(expr);
    columns.insert(id.clone(), Arc::clone(expr));
    Some(id)
}

/// The id of a column expression: its display text.
pub(crate) fn column_id(expr: &Arc<dyn PhysicalExpr>) -> ColumnId {
    ColumnId::new(expr.to_string())
}

/// Whether `expr` reads one of the scan's columns.
pub(crate) fn reads_columns(expr: &Arc<dyn PhysicalExpr>) -> bool {
    let mut found = false;
    let _ = expr.apply(|e| {
        found = e.downcast_ref::<Column>().is_some();
        Ok(match found {
            true => TreeNodeRecursion::Stop,
            false => TreeNodeRecursion::Continue,
        })
    });
    found
}

/// Whether `expr` gives the same value for the same row in every query: no volatile
/// or stable function (`random()`, `now()`) anywhere in it.
pub(crate) fn is_deterministic(expr: &Arc<dyn PhysicalExpr>) -> bool {
    let mut deterministic = true;
    let _ = expr.apply(|e| {
        if let Some(call) = e.downcast_ref::<ScalarFunctionExpr>() {
            deterministic = call.fun().signature().volatility == Volatility::Immutable;
        }
        Ok(match deterministic {
            true => TreeNodeRecursion::Continue,
            false => TreeNodeRecursion::Stop,
        })
    });
    deterministic
}

/// The smallest columns a residual filter reads: each call whose arguments are only
/// table columns and literals (a JSON access such as `json_get_text(j@0, a)`), and each
/// table column read otherwise. A region holding these can run the filter.
fn leaf_accesses(expr: &Arc<dyn PhysicalExpr>, columns: &mut Columns) {
    let _ = expr.apply(|e| {
        let leaf = e.downcast_ref::<Column>().is_some()
            || e.downcast_ref::<ScalarFunctionExpr>().is_some_and(|call| {
                call.args().iter().all(|a| {
                    a.downcast_ref::<Column>().is_some() || a.downcast_ref::<Literal>().is_some()
                }) && reads_columns(e)
            });
        if !leaf {
            return Ok(TreeNodeRecursion::Continue);
        }
        columns.insert(column_id(e), Arc::clone(e));
        Ok(TreeNodeRecursion::Jump)
    });
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::common::DFSchema;
    use datafusion::execution::context::ExecutionProps;
    use datafusion::functions::expr_fn::upper;
    use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
    use datafusion::logical_expr::{Expr, cast, col, lit, not};
    use datafusion::physical_expr::{PhysicalExpr, create_physical_expr};
    use tessera_cache::semantic::predicate::{CmpOp, ColumnId, Predicate, Value};

    use super::{Columns, is_deterministic, translate, translate_filters};

    /// `expr` planned over the table `(j VARCHAR, n BIGINT)`.
    pub(crate) fn physical(expr: Expr) -> Arc<dyn PhysicalExpr> {
        let schema = Schema::new(vec![
            Field::new("j", DataType::Utf8, true),
            Field::new("n", DataType::Int64, true),
        ]);
        let schema = DFSchema::try_from(schema).unwrap();
        let context = PhysicalPlanningContext::default();
        create_physical_expr(&expr, &schema, &ExecutionProps::new(), &context).unwrap()
    }

    fn translated(expr: Expr) -> Option<Predicate> {
        translate(&physical(expr), &mut Columns::new())
    }

    fn compare(column: &str, op: CmpOp, value: Value) -> Predicate {
        Predicate::Compare {
            column: ColumnId::new(column),
            op,
            value,
        }
    }

    #[test]
    fn a_literal_on_the_left_flips_the_operator() {
        let p = translated(lit(5_i64).lt(col("n"))).unwrap();
        assert_eq!(p, compare("n@1", CmpOp::Gt, Value::Int(5)));
        let p = translated(lit("a").gt_eq(upper(col("j")))).unwrap();
        assert_eq!(
            p,
            compare("upper(j@0)", CmpOp::LtEq, Value::Text("a".into()))
        );
    }

    #[test]
    fn connectives_null_tests_and_lists_translate() {
        let expr = col("n")
            .eq(lit(1_i64))
            .or(not(col("j").is_null()))
            .and(col("j").in_list(vec![lit("x"), lit("y")], true));
        let p = translated(expr).unwrap();
        let expected = Predicate::And(vec![
            Predicate::Or(vec![
                compare("n@1", CmpOp::Eq, Value::Int(1)),
                Predicate::Not(Box::new(Predicate::IsNull(ColumnId::new("j@0")))),
            ]),
            Predicate::InList {
                column: ColumnId::new("j@0"),
                values: vec![Value::Text("x".into()), Value::Text("y".into())],
                negated: true,
            },
        ]);
        assert_eq!(p, expected);
        let cast_id = "CAST(j@0 AS Int64)";
        let p = translated(cast(col("j"), DataType::Int64).not_eq(lit(7_i64))).unwrap();
        assert_eq!(p, compare(cast_id, CmpOp::NotEq, Value::Int(7)));
        let p = translated(col("j").is_not_null().eq(lit(true))).unwrap();
        assert_eq!(p, compare("j@0 IS NOT NULL", CmpOp::Eq, Value::Bool(true)));
    }

    #[test]
    fn floats_constants_and_other_operators_stay_residual() {
        let float = cast(col("n"), DataType::Float64).gt(lit(0.0_f64));
        assert_eq!(translated(float), None);
        assert_eq!(translated(lit(1_i64).lt(lit(2_i64))), None);
        let like = upper(col("j")).like(lit("%A%"));
        let out = translate_filters(&[physical(like), physical(col("n").gt(lit(3_i64)))]);
        assert_eq!(out.predicates, [compare("n@1", CmpOp::Gt, Value::Int(3))]);
        assert_eq!(out.residual.len(), 1);
        let ids: Vec<&str> = out.columns.keys().map(|c| c.0.as_str()).collect();
        // The residual LIKE needs its access, not the whole comparison.
        assert_eq!(ids, ["n@1", "upper(j@0)"]);
    }

    #[test]
    fn volatile_functions_are_not_deterministic() {
        let random = physical(datafusion::functions::expr_fn::random().gt(lit(0.5_f64)));
        assert!(!is_deterministic(&random));
        assert!(is_deterministic(&physical(upper(col("j")).eq(lit("A")))));
    }
}
