//! What the analyzer rewrites giving casts DuckDB's meaning share (`json_cast`,
//! `enum_cast`, `union_cast`, `variant_cast`, `geometry`): each takes a `CAST` or
//! `TRY_CAST` apart, decides whether the cast is its own, and replaces it by the call of
//! the function computing it.

use std::sync::Arc;

use arrow::datatypes::FieldRef;
use datafusion::common::tree_node::Transformed;
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::{Expr, ScalarUDF, ScalarUDFImpl};

/// `expr` taken apart when it is a `CAST` or a `TRY_CAST`: the value cast, the field it
/// is cast to, and whether a value that does not convert is an error (`CAST`, strict)
/// or NULL (`TRY_CAST`).
pub fn cast_parts(expr: &Expr) -> Option<(&Expr, &FieldRef, bool)> {
    match expr {
        Expr::Cast(Cast { expr, field }) => Some((expr, field, true)),
        Expr::TryCast(TryCast { expr, field }) => Some((expr, field, false)),
        _ => None,
    }
}

/// The rewrite of an expression into the call of `udf` on `args`.
pub fn rewritten_to(udf: impl ScalarUDFImpl + 'static, args: Vec<Expr>) -> Transformed<Expr> {
    let call = ScalarFunction::new_udf(Arc::new(ScalarUDF::from(udf)), args);
    Transformed::yes(Expr::ScalarFunction(call))
}
