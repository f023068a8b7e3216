//! Recognizing the JSON accesses a scan can compute while parsing: a JSON access
//! function applied to the document column with a constant path.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::physical_expr::expressions::{CastExpr, Column, Literal, TryCastExpr};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};

use crate::functions::access_output;
use crate::json::Output;
use crate::json::path::{PathElem, parse_json_path};

/// `f(Column 0, literal path...)` for a JSON access function `f`: its path and output.
pub(crate) fn pushable_access(expr: &Arc<dyn PhysicalExpr>) -> Option<(Vec<PathElem>, Output)> {
    let func = expr.downcast_ref::<ScalarFunctionExpr>()?;
    let output = access_output(func.fun())?;
    let (doc, path_args) = func.args().split_first()?;
    if doc.downcast_ref::<Column>()?.index() != 0 {
        return None;
    }
    Some((literal_path(path_args)?, output))
}

/// A string constant's text.
pub(crate) fn string_literal(expr: &Arc<dyn PhysicalExpr>) -> Option<&str> {
    match expr.downcast_ref::<Literal>()?.value() {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => Some(s),
        _ => None,
    }
}

/// `CAST(x AS t)` or `TRY_CAST(x AS t)`: `x`, `t`, and whether it is a `TRY_CAST`.
pub(crate) fn cast_parts(
    expr: &Arc<dyn PhysicalExpr>,
) -> Option<(&Arc<dyn PhysicalExpr>, &DataType, bool)> {
    if let Some(cast) = expr.downcast_ref::<CastExpr>() {
        return Some((cast.expr(), cast.cast_type(), false));
    }
    let cast = expr.downcast_ref::<TryCastExpr>()?;
    Some((cast.expr(), cast.cast_type(), true))
}

/// The path of constant path arguments (keys, indexes, JSONPath strings).
pub(crate) fn literal_path(args: &[Arc<dyn PhysicalExpr>]) -> Option<Vec<PathElem>> {
    let mut path = Vec::with_capacity(args.len());
    for arg in args {
        match arg.downcast_ref::<Literal>()?.value() {
            ScalarValue::Utf8(Some(k))
            | ScalarValue::Utf8View(Some(k))
            | ScalarValue::LargeUtf8(Some(k)) => {
                if k.starts_with('$') {
                    path.extend(parse_json_path(k).ok()?);
                } else {
                    path.push(PathElem::Key(k.clone()));
                }
            }
            ScalarValue::Int64(Some(i)) => path.push(PathElem::Index(*i)),
            _ => return None,
        }
    }
    Some(path)
}
