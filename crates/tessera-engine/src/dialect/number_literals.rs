//! DuckDB's types of number literals: `1.2` is `DECIMAL(2,1)` (DataFusion's
//! `parse_float_as_decimal`, set by `dialect::configure`), but a literal with an
//! exponent (`1e99`) is `DOUBLE`, which that setting would read as a decimal too.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{self, VisitorMut};

/// Turns each number literal with an exponent into `CAST('<literal>' AS DOUBLE)`.
pub(super) struct ExponentDoubles;

impl VisitorMut for ExponentDoubles {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        let ast::Expr::Value(value) = expr else {
            return ControlFlow::Continue(());
        };
        let ast::Value::Number(text, _) = &value.value else {
            return ControlFlow::Continue(());
        };
        if !text.contains(['e', 'E']) {
            return ControlFlow::Continue(());
        }
        let literal = ast::Value::SingleQuotedString(text.clone());
        *expr = ast::Expr::Cast {
            kind: ast::CastKind::Cast,
            expr: Box::new(ast::Expr::value(literal)),
            data_type: ast::DataType::Double(ast::ExactNumberInfo::None),
            array: false,
            format: None,
        };
        ControlFlow::Continue(())
    }
}
