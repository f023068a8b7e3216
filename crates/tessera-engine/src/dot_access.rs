//! DuckDB's dot and subscript syntax on `JSON` values: `json(x).a.b`, `j.a[1]`,
//! `(x::JSON)."key"`, `j['a']` mean `json_extract(j, '$.a.b')` and so on, as in DuckDB;
//! a slice `j[1:2]` slices the JSON text.
//!
//! Two halves: `dot_names` (before planning) turns the identifiers after
//! a non-column expression (`json(x).a`) into the quoted names DataFusion plans as field
//! accesses (it refuses identifiers there) and reads `user.name` (sqlparser parses
//! `user` as a function) as a column; [`JsonDotPlanner`] then plans each field access,
//! index or slice on a `JSON` value, and each `column.key...` of a `JSON` column, onto
//! `json_extract`. Struct and list values keep DataFusion's own planning.

use std::sync::Arc;

use datafusion::arrow::datatypes::Field;
use datafusion::common::{Column, DFSchema, Result, ScalarValue, TableReference};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawFieldAccessExpr};
use datafusion::logical_expr::{Expr, ExprSchemable, GetFieldAccess, ScalarUDF, lit};
use tessera_json::path::{PathElem, display_path, parse_json_path};

use crate::json::json_type::is_json;

/// Plans field access, indexes and slices on `JSON` values as DuckDB does; must come
/// before DataFusion's planners, which would plan them as struct or list access.
#[derive(Debug)]
pub struct JsonDotPlanner {
    extract: Arc<ScalarUDF>,
}

impl JsonDotPlanner {
    /// A planner calling `extract` (DuckDB's `json_extract`).
    pub fn new(extract: Arc<ScalarUDF>) -> Self {
        Self { extract }
    }

    /// `json_extract(value, path ++ step)`, merged into the path of `value` when it is
    /// itself such a call with a path of single steps (the same answer: a missing or
    /// non-container value yields NULL either way), so scans see one path.
    fn extract(&self, value: Expr, step: PathElem) -> Expr {
        if let Expr::ScalarFunction(ScalarFunction { func, args }) = &value
            && func.name() == self.extract.name()
            && let [inner, Expr::Literal(ScalarValue::Utf8(Some(path)), _)] = args.as_slice()
            && let Ok(mut elems) = parse_json_path(path)
        {
            elems.push(step);
            return self.call(inner.clone(), &elems);
        }
        self.call(value, &[step])
    }

    /// Whether `expr` is `JSON`: of that type, or a `json_extract` (whose result is
    /// JSON text, although typed as text).
    fn is_json(&self, expr: &Expr, schema: &DFSchema) -> bool {
        match expr {
            Expr::ScalarFunction(ScalarFunction { func, .. })
                if func.name() == self.extract.name() =>
            {
                true
            }
            _ => expr
                .to_field(schema)
                .is_ok_and(|(_, field)| is_json(&field)),
        }
    }

    fn call(&self, value: Expr, path: &[PathElem]) -> Expr {
        Expr::ScalarFunction(ScalarFunction::new_udf(
            Arc::clone(&self.extract),
            vec![value, lit(display_path(path))],
        ))
    }
}

impl ExprPlanner for JsonDotPlanner {
    fn plan_field_access(
        &self,
        access: RawFieldAccessExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawFieldAccessExpr>> {
        if !self.is_json(&access.expr, schema) {
            return Ok(PlannerResult::Original(access));
        }
        let RawFieldAccessExpr { expr, field_access } = access;
        let planned = match field_access {
            GetFieldAccess::NamedStructField { name } => match name {
                ScalarValue::Utf8(Some(key)) => self.extract(expr, PathElem::Key(key)),
                name => {
                    let field_access = GetFieldAccess::NamedStructField { name };
                    return Ok(PlannerResult::Original(RawFieldAccessExpr {
                        expr,
                        field_access,
                    }));
                }
            },
            GetFieldAccess::ListIndex { key } => match integer(&key) {
                Some(index) => self.extract(expr, PathElem::Index(index)),
                None => {
                    let field_access = GetFieldAccess::ListIndex { key };
                    return Ok(PlannerResult::Original(RawFieldAccessExpr {
                        expr,
                        field_access,
                    }));
                }
            },
            GetFieldAccess::ListRange {
                start,
                stop,
                stride,
            } => match (integer(&start), integer(&stop), integer(&stride)) {
                (Some(start), Some(stop), Some(1)) => text_slice(expr, start, stop),
                _ => {
                    let field_access = GetFieldAccess::ListRange {
                        start,
                        stop,
                        stride,
                    };
                    return Ok(PlannerResult::Original(RawFieldAccessExpr {
                        expr,
                        field_access,
                    }));
                }
            },
        };
        Ok(PlannerResult::Planned(planned))
    }

    fn plan_compound_identifier(
        &self,
        field: &Field,
        qualifier: Option<&TableReference>,
        nested_names: &[String],
    ) -> Result<PlannerResult<Vec<Expr>>> {
        if !is_json(field) {
            return Ok(PlannerResult::Original(Vec::new()));
        }
        let path: Vec<PathElem> = nested_names
            .iter()
            .map(|name| PathElem::Key(name.clone()))
            .collect();
        let column = Expr::Column(Column::new(qualifier.cloned(), field.name()));
        Ok(PlannerResult::Planned(self.call(column, &path)))
    }
}

/// The value of an integer constant (`1`, `-1`), if `expr` is one.
fn integer(expr: &Expr) -> Option<i64> {
    match expr {
        Expr::Literal(value, _) => {
            match value.cast_to(&datafusion::arrow::datatypes::DataType::Int64) {
                Ok(ScalarValue::Int64(Some(n))) if value.data_type().is_integer() => Some(n),
                _ => None,
            }
        }
        Expr::Negative(inner) => integer(inner)?.checked_neg(),
        _ => None,
    }
}

/// DuckDB's `text[start:stop]` on JSON text: characters `start` to `stop`, 1-based and
/// inclusive (0 reads as 1), as `VARCHAR`.
fn text_slice(expr: Expr, start: i64, stop: i64) -> Expr {
    let start = start.max(1);
    let length = stop.saturating_sub(start).saturating_add(1).max(0);
    datafusion::functions::unicode::expr_fn::substring(
        datafusion::logical_expr::cast(expr, datafusion::arrow::datatypes::DataType::Utf8),
        lit(start),
        lit(length),
    )
}

/// DataFusion's expression planners with [`JsonDotPlanner`] first.
pub(crate) fn planners_first(
    planner: JsonDotPlanner,
    others: &[Arc<dyn ExprPlanner>],
) -> Vec<Arc<dyn ExprPlanner>> {
    std::iter::once(Arc::new(planner) as Arc<dyn ExprPlanner>)
        .chain(others.iter().cloned())
        .collect()
}
