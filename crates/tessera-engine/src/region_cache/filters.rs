//! A cover's residuals and remainder, `semantic::Predicate`s, back as physical filters
//! over the table, so that pieces read from regions and the remote scan of what no
//! region holds stay disjoint ("Crystal: A Unified Cache Storage System for Analytical
//! Databases", Algorithm 1: pieces "A and B − A", here with a remote remainder).
//!
//! Each column id becomes the expression it was translated from (`predicates`), each
//! literal a scalar of that expression's type. Only the kinds translation accepts come
//! back (text, integers, booleans), and only onto a type of the same family: a value is
//! never reinterpreted (an integer compared as text would order differently).

use std::sync::Arc;

use arrow::datatypes::{DataType, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{
    BinaryExpr, IsNotNullExpr, IsNullExpr, Literal, NotExpr, in_list,
};
use tessera_cache::semantic::predicate::{CmpOp, ColumnId, Predicate, Value};

use super::predicates::Columns;

/// `predicate` as a filter over `schema` (the table the scan reads): every column id
/// the expression `columns` names for it. `None` when a column is unknown or a literal
/// does not fit its column's type (the caller then leaves the scan as it was).
pub(crate) fn physical_filter(
    predicate: &Predicate,
    columns: &Columns,
    schema: &Schema,
) -> Option<Arc<dyn PhysicalExpr>> {
    let column = |id: &ColumnId| columns.get(id).map(Arc::clone);
    Some(match predicate {
        Predicate::True => boolean(true),
        Predicate::And(children) => fold(children, Operator::And, columns, schema)?,
        Predicate::Or(children) => fold(children, Operator::Or, columns, schema)?,
        Predicate::Not(child) => Arc::new(NotExpr::new(physical_filter(child, columns, schema)?)),
        // `p IS NOT TRUE` is `p IS DISTINCT FROM TRUE`: TRUE where p is FALSE or NULL,
        // which is how DataFusion plans `Expr::IsNotTrue`.
        Predicate::IsNotTrue(child) => Arc::new(BinaryExpr::new(
            physical_filter(child, columns, schema)?,
            Operator::IsDistinctFrom,
            boolean(true),
        )),
        Predicate::Compare {
            column: id,
            op,
            value,
        } => {
            let column = column(id)?;
            let value = literal(value, &column.data_type(schema).ok()?)?;
            Arc::new(BinaryExpr::new(column, operator(*op), value))
        }
        Predicate::IsNull(id) => Arc::new(IsNullExpr::new(column(id)?)),
        Predicate::IsNotNull(id) => Arc::new(IsNotNullExpr::new(column(id)?)),
        // The semantic module reads an empty list as FALSE (TRUE negated), even on NULL.
        Predicate::InList {
            values, negated, ..
        } if values.is_empty() => boolean(*negated),
        Predicate::InList {
            column: id,
            values,
            negated,
        } => {
            let column = column(id)?;
            let data_type = column.data_type(schema).ok()?;
            let list = values
                .iter()
                .map(|v| literal(v, &data_type))
                .collect::<Option<Vec<_>>>()?;
            in_list(column, list, negated, schema).ok()?
        }
    })
}

/// `children` joined by `op` (`And` or `Or`); an empty `And` is TRUE, an empty `Or`
/// FALSE, as in the semantic grammar.
fn fold(
    children: &[Predicate],
    op: Operator,
    columns: &Columns,
    schema: &Schema,
) -> Option<Arc<dyn PhysicalExpr>> {
    let mut exprs = children
        .iter()
        .map(|c| physical_filter(c, columns, schema))
        .collect::<Option<Vec<_>>>()?
        .into_iter();
    let Some(first) = exprs.next() else {
        return Some(boolean(op == Operator::And));
    };
    Some(exprs.fold(first, |acc, e| Arc::new(BinaryExpr::new(acc, op, e))))
}

fn boolean(value: bool) -> Arc<dyn PhysicalExpr> {
    Arc::new(Literal::new(ScalarValue::Boolean(Some(value))))
}

fn operator(op: CmpOp) -> Operator {
    match op {
        CmpOp::Lt => Operator::Lt,
        CmpOp::LtEq => Operator::LtEq,
        CmpOp::Eq => Operator::Eq,
        CmpOp::NotEq => Operator::NotEq,
        CmpOp::Gt => Operator::Gt,
        CmpOp::GtEq => Operator::GtEq,
    }
}

/// `value` as a literal of `data_type`, when that type is of the value's family and
/// holds it exactly (a cast that overflows fails rather than wraps).
fn literal(value: &Value, data_type: &DataType) -> Option<Arc<dyn PhysicalExpr>> {
    let scalar = match (value, data_type) {
        (Value::Bool(b), DataType::Boolean) => ScalarValue::Boolean(Some(*b)),
        (Value::Int(i), t) if t.is_integer() => match i64::try_from(*i) {
            Ok(v) => ScalarValue::Int64(Some(v)),
            Err(_) => ScalarValue::UInt64(Some(u64::try_from(*i).ok()?)),
        },
        (Value::Text(s), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => {
            ScalarValue::Utf8(Some(s.clone()))
        }
        _ => return None,
    };
    let scalar = match scalar.data_type() == *data_type {
        true => scalar,
        false => scalar.cast_to(data_type).ok()?,
    };
    Some(Arc::new(Literal::new(scalar)))
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::logical_expr::{col, lit};
    use tessera_cache::semantic::predicate::{CmpOp, ColumnId, Predicate, Value};

    use super::physical_filter;
    use crate::region_cache::predicates::tests::physical;
    use crate::region_cache::predicates::{Columns, translate};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("j", DataType::Utf8, true),
            Field::new("n", DataType::Int64, true),
        ])
    }

    #[test]
    fn translated_filters_come_back_as_the_same_filters() {
        let filter = physical(
            col("n")
                .gt(lit(3_i64))
                .or(col("j").in_list(vec![lit("a"), lit("b")], true))
                .and(col("j").is_not_null()),
        );
        let mut columns = Columns::new();
        let predicate = translate(&filter, &mut columns).unwrap();
        let back = physical_filter(&predicate, &columns, &schema()).unwrap();
        assert_eq!(back.to_string(), filter.to_string());
    }

    #[test]
    fn is_not_true_and_empty_connectives() {
        let mut columns = Columns::new();
        translate(&physical(col("n").gt(lit(1_i64))), &mut columns).unwrap();
        let n = ColumnId::new("n@1");
        let compare = |value| Predicate::Compare {
            column: n.clone(),
            op: CmpOp::Lt,
            value,
        };
        let p = Predicate::And(vec![
            Predicate::IsNotTrue(Box::new(compare(Value::Int(5)))),
            Predicate::Or(vec![]),
        ]);
        let back = physical_filter(&p, &columns, &schema())
            .unwrap()
            .to_string();
        assert!(back.contains("IS DISTINCT FROM true"), "{back}");
        assert!(back.ends_with("AND false"), "{back}");
        // A literal of another family, or a column translation never saw, does not.
        assert!(physical_filter(&compare(Value::Text("5".into())), &columns, &schema()).is_none());
        let unknown = Predicate::IsNull(ColumnId::new("x@7"));
        assert!(physical_filter(&unknown, &columns, &schema()).is_none());
    }
}
