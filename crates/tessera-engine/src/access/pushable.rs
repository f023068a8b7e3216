//! Recognizing the JSON accesses a scan can compute while parsing: a JSON access
//! function applied to the document column with a constant path.

use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::physical_expr::expressions::{Column, Literal};
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
