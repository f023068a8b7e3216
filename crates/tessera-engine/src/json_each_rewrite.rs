//! `json_each`/`json_tree` over columns (`FROM t, json_each(t.j)`, `CROSS JOIN LATERAL`,
//! `LEFT JOIN LATERAL ... ON true`) and `CAST(x AS JSON[])`, planned with DataFusion's
//! own operators.
//!
//! DataFusion's table functions take constant arguments only, and it cannot run a
//! lateral subquery whose outer references sit in a projection. So, before planning, a
//! `json_each(args)` that follows another relation in FROM becomes a lateral derived
//! table of marker calls (`LATERAL (SELECT __tessera_lateral_json('key', 'json_each',
//! args) AS key, ...) AS json_each`): the SQL planner then resolves the arguments
//! against the relations on the left and gives the alias its eight typed columns. After
//! planning, [`plan_laterals`] replaces each join with such a marker on its right by
//! `Unnest(Projection(left.*, __tessera_json_each(args)))` and a projection of the
//! struct fields under the alias. The unnest streams: DataFusion's `UnnestExec` emits
//! batches of at most `batch_size` rows however long a document's array is.
//!
//! `CAST(x AS JSON[])` (and `x::JSON[]`, `TRY_CAST`) becomes `__tessera_json_list(x)`
//! before planning, so `unnest(CAST(j->'a' AS JSON[]))` is DataFusion's UNNEST of a
//! list of JSON texts.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::NullHandling;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{
    Column, DFSchema, DataFusionError, Result, ScalarValue, UnnestOptions, exec_err, plan_err,
};
use datafusion::functions::core::expr_fn::get_field;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, JoinType, LogicalPlan, LogicalPlanBuilder, ReturnFieldArgs,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility, cast,
    expr::ScalarFunction,
};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    self, CastKind, FunctionArg, FunctionArgExpr, Select, SelectItem, SetExpr, TableFactor,
    VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::functions::json_each::{
    ENTRY_COLUMNS, HIDDEN_COLUMNS, JSON_LIST, JsonEntries, ReadColumns, Walk, entry_type,
    hidden_table_name,
};
use crate::hidden_columns::{self, HiddenRef};
use crate::json::path::parse_json_path;
use crate::output_names::normalized;
use crate::statement_walk;

/// The marker function a lateral `json_each`/`json_tree` is planned through.
pub const LATERAL_MARKER: &str = "__tessera_lateral_json";

/// Rewrites lateral `json_each`/`json_tree` relations and `JSON[]` casts in `statement`
/// (see the module documentation).
pub(crate) fn rewrite_statement(statement: &mut Statement) -> Result<()> {
    match statement_walk::walk(statement, &mut Rewriter::default()) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(e) => Err(e),
    }
}

#[derive(Default)]
struct Rewriter {
    /// The hidden columns the ORDER BY of the query whose SELECT comes next reads.
    order: Vec<HiddenRef>,
}

impl VisitorMut for Rewriter {
    type Break = DataFusionError;

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<DataFusionError> {
        self.order = hidden_columns::order_references(query);
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<DataFusionError> {
        let refs = hidden_columns::references(select, &std::mem::take(&mut self.order));
        let only_walks = select
            .from
            .iter()
            .flat_map(|f| std::iter::once(&f.relation).chain(f.joins.iter().map(|j| &j.relation)))
            .all(|r| walk_call(r).is_some());
        let mut added = Vec::new();
        let mut relation = |factor: &mut TableFactor, lateral: bool| {
            match rewrite_relation(factor, lateral, &refs, only_walks) {
                Ok(Some(columns)) => added.push(columns),
                Ok(None) => {}
                Err(e) => return ControlFlow::Break(e),
            }
            ControlFlow::Continue(())
        };
        for (i, from) in select.from.iter_mut().enumerate() {
            relation(&mut from.relation, i > 0)?;
            for join in &mut from.joins {
                relation(&mut join.relation, true)?;
            }
        }
        hidden_columns::exclude_from_wildcards(&mut select.projection, &added);
        name_cast_items(&mut select.projection);
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<DataFusionError> {
        crate::json_each_subquery::rewrite(expr);
        match json_list_call(expr) {
            Ok(Some(call)) => {
                *expr = call;
                ControlFlow::Continue(())
            }
            Ok(None) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }
}

/// Names an unaliased SELECT item that holds a `JSON[]` cast by its text as written, so
/// the rewrite does not show in the output's column names.
fn name_cast_items(items: &mut [SelectItem]) {
    for item in items {
        let SelectItem::UnnamedExpr(expr) = item else {
            continue;
        };
        let mut probe = expr.clone();
        let mut finder = CastFinder(false);
        let _ = probe.visit(&mut finder);
        if finder.0 {
            *item = SelectItem::ExprWithAlias {
                alias: ast::Ident::with_quote('"', expr.to_string()),
                expr: expr.clone(),
            };
        }
    }
}

struct CastFinder(bool);

impl VisitorMut for CastFinder {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if is_json_list_cast(expr) {
            self.0 = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

fn is_json_list_cast(expr: &ast::Expr) -> bool {
    let ast::Expr::Cast { data_type, .. } = expr else {
        return false;
    };
    let ast::DataType::Array(ast::ArrayElemTypeDef::SquareBracket(inner, None)) = data_type else {
        return false;
    };
    match inner.as_ref() {
        ast::DataType::JSON => true,
        ast::DataType::Custom(name, modifiers) => {
            modifiers.is_empty() && name.to_string().eq_ignore_ascii_case("json")
        }
        _ => false,
    }
}

/// `CAST(x AS JSON[])` as a call of the JSON list function (`TRY_CAST` with `true`).
fn json_list_call(expr: &ast::Expr) -> Result<Option<ast::Expr>> {
    if !is_json_list_cast(expr) {
        return Ok(None);
    }
    let ast::Expr::Cast { kind, expr, .. } = expr else {
        return Ok(None);
    };
    let try_cast = matches!(kind, CastKind::TryCast | CastKind::SafeCast);
    // DuckDB casts text to JSON[] keeping `null` elements as JSON, but a JSON value (a
    // JSON access, a JSON column) with them as SQL NULL; Tessera's JSON values are text,
    // so a string literal is taken for text and anything else for JSON.
    let sql_nulls = !matches!(
        expr.as_ref(),
        ast::Expr::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_))
    );
    let text = format!("{JSON_LIST}({expr}, {try_cast}, {sql_nulls})");
    Ok(Some(parse_expr(&text)?))
}

fn parse_expr(text: &str) -> Result<ast::Expr> {
    Ok(Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)?
        .parse_expr()?)
}

/// Rewrites one relation of FROM (`lateral`: it follows another): a lateral
/// `json_each`/`json_tree` into its derived table of markers, and hidden columns added
/// where `refs` read them; answers the relation's qualifier and the hidden columns added.
fn rewrite_relation(
    factor: &mut TableFactor,
    lateral: bool,
    refs: &[HiddenRef],
    only_walks: bool,
) -> Result<Option<(String, Vec<&'static str>)>> {
    let Some((walk, qualifier)) = walk_call(factor) else {
        return Ok(hidden_columns::table_rowid(factor, refs)?.map(|q| (q, vec!["rowid"])));
    };
    let hidden = hidden_columns::wanted(refs, &qualifier, |n| n == "rowid" || only_walks);
    if lateral && let Some(derived) = lateral_relation(factor, &hidden)? {
        *factor = derived;
    } else if !hidden.is_empty() {
        // The table function of the hidden columns answers all of them.
        let TableFactor::Table { name, alias, .. } = factor else {
            return Ok(None);
        };
        *name = ast::ObjectName::from(vec![ast::Ident::new(hidden_table_name(walk))]);
        alias.get_or_insert_with(|| ast::TableAlias {
            explicit: true,
            name: ast::Ident::new(walk.name()),
            columns: Vec::new(),
            at: None,
        });
        return Ok(Some((qualifier, HIDDEN_COLUMNS.to_vec())));
    }
    Ok((!hidden.is_empty()).then_some((qualifier, hidden)))
}

/// The walk a relation calls and the name it goes by (its alias, or the function's).
fn walk_call(factor: &TableFactor) -> Option<(Walk, String)> {
    let (name, alias) = match factor {
        TableFactor::Table {
            name,
            args: Some(_),
            alias,
            ..
        } => (name, alias),
        TableFactor::Function { name, alias, .. } => (name, alias),
        _ => return None,
    };
    let [part] = name.0.as_slice() else {
        return None;
    };
    let walk = Walk::from_name(&normalized(part.as_ident()?))?;
    let qualifier = match alias {
        Some(alias) => normalized(&alias.name),
        None => walk.name().to_string(),
    };
    Some((walk, qualifier))
}

/// If `factor` calls `json_each`/`json_tree` over columns, the lateral derived table of
/// markers that replaces it, with the `hidden` columns too.
fn lateral_relation(factor: &TableFactor, hidden: &[&str]) -> Result<Option<TableFactor>> {
    let (name, args, alias) = match factor {
        TableFactor::Table {
            name,
            args: Some(args),
            alias,
            ..
        } => (name, &args.args, alias),
        TableFactor::Function {
            name, args, alias, ..
        } => (name, args, alias),
        _ => return Ok(None),
    };
    let Some(walk) = name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .and_then(|i| Walk::from_name(&i.value))
    else {
        return Ok(None);
    };
    let constant = matches!(factor, TableFactor::Table { .. })
        && !args.iter().any(crate::statement_walk::reads_columns);
    if name.0.len() != 1 || constant {
        return Ok(None);
    }
    let args = args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e.to_string()),
            other => plan_err!("{}: unsupported argument {other}", walk.name()),
        })
        .collect::<Result<Vec<_>>>()?;
    let columns: Vec<String> = ENTRY_COLUMNS
        .iter()
        .chain(hidden)
        .map(|c| {
            format!(
                "{LATERAL_MARKER}('{c}', '{}', {}) AS \"{c}\"",
                walk.name(),
                args.join(", ")
            )
        })
        .collect();
    let alias = match alias {
        Some(alias) => ast::TableAlias {
            explicit: false,
            ..alias.clone()
        }
        .to_string(),
        None => walk.name().to_string(),
    };
    let sql = format!(
        "SELECT 1 FROM t, LATERAL (SELECT {}) AS {alias}",
        columns.join(", ")
    );
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, &sql)?;
    let Some(ast::Statement::Query(query)) = statements.pop() else {
        return plan_err!("{}: could not plan its lateral form", walk.name());
    };
    let SetExpr::Select(select) = *query.body else {
        return plan_err!("{}: could not plan its lateral form", walk.name());
    };
    let mut from = select.from;
    Ok(from.pop().map(|f| f.relation))
}

/// One lateral `json_each`/`json_tree` found on the right of a join.
struct Marker {
    walk: Walk,
    /// The function's arguments, outer references resolved against the left input.
    args: Vec<Expr>,
    /// For each output column of the right side, which entry column it is.
    columns: Vec<&'static str>,
}

/// Replaces every join with a lateral `json_each`/`json_tree` marker on its right (see
/// the module documentation).
pub(crate) fn plan_laterals(plan: LogicalPlan) -> Result<LogicalPlan> {
    let read = read_columns(&plan)?;
    Ok(plan
        .transform_up_with_subqueries(|node| match &node {
            LogicalPlan::Join(join) => match marker(&join.right)? {
                Some(marker) => Ok(Transformed::yes(unnest_join(join, marker, &read)?)),
                None => Ok(Transformed::no(node)),
            },
            _ => Ok(Transformed::no(node)),
        })?
        .data)
}

/// The columns read anywhere in `plan` (subqueries and join conditions included), as
/// written: qualified or not.
fn read_columns(plan: &LogicalPlan) -> Result<HashSet<Column>> {
    let mut read = HashSet::new();
    plan.apply_with_subqueries(|node| {
        node.apply_expressions(|expr| {
            expr.apply(|e| {
                if let Expr::Column(c) | Expr::OuterReferenceColumn(_, c) = e {
                    read.insert(c.clone());
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    Ok(read)
}

/// The entry columns of `join`'s right side that `read` holds (by qualified or bare
/// name), so the walk fills only those.
fn entry_reads(
    join: &datafusion::logical_expr::Join,
    marker: &Marker,
    read: &HashSet<Column>,
) -> ReadColumns {
    let fields = join.right.schema().iter().zip(&marker.columns);
    ReadColumns::of(fields.filter_map(|((qualifier, field), column)| {
        let qualified = Column::new(qualifier.cloned(), field.name());
        let bare = Column::new_unqualified(field.name());
        (read.contains(&qualified) || read.contains(&bare)).then_some(*column)
    }))
}

/// The marker under `plan` (through an alias and a subquery wrapper), if any.
fn marker(plan: &LogicalPlan) -> Result<Option<Marker>> {
    let plan = match plan {
        LogicalPlan::SubqueryAlias(alias) => alias.input.as_ref(),
        other => other,
    };
    let plan = match plan {
        LogicalPlan::Subquery(subquery) => subquery.subquery.as_ref(),
        other => other,
    };
    let LogicalPlan::Projection(projection) = plan else {
        return Ok(None);
    };
    if !matches!(projection.input.as_ref(), LogicalPlan::EmptyRelation(_)) {
        return Ok(None);
    }
    let mut found: Option<(Walk, Vec<Expr>)> = None;
    let mut columns = Vec::with_capacity(projection.expr.len());
    for expr in &projection.expr {
        let Some((column, walk, args)) = marker_call(expr.clone().unalias()) else {
            return Ok(None);
        };
        columns.push(column);
        found = Some((walk, args));
    }
    let Some((walk, args)) = found else {
        return Ok(None);
    };
    let args = args
        .into_iter()
        .map(|a| {
            a.transform(|e| match e {
                Expr::OuterReferenceColumn(_, column) => Ok(Transformed::yes(Expr::Column(column))),
                e => Ok(Transformed::no(e)),
            })
            .map(|t| t.data)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(Marker {
        walk,
        args,
        columns,
    }))
}

/// The column, walk and arguments of a marker call.
fn marker_call(expr: Expr) -> Option<(&'static str, Walk, Vec<Expr>)> {
    let Expr::ScalarFunction(ScalarFunction { func, args }) = expr else {
        return None;
    };
    if func.name() != LATERAL_MARKER || args.len() < 3 {
        return None;
    }
    let literal = |e: &Expr| match e {
        Expr::Literal(ScalarValue::Utf8(Some(s)), _) => Some(s.clone()),
        _ => None,
    };
    let column = literal(&args[0])?;
    let column = ENTRY_COLUMNS
        .iter()
        .chain(&HIDDEN_COLUMNS)
        .find(|c| **c == column)?;
    let walk = Walk::from_name(&literal(&args[1])?)?;
    Some((column, walk, args[2..].to_vec()))
}

/// `left JOIN LATERAL json_each(args)` as an unnest over `left`.
fn unnest_join(
    join: &datafusion::logical_expr::Join,
    marker: Marker,
    read: &HashSet<Column>,
) -> Result<LogicalPlan> {
    let name = marker.walk.name();
    let on_true = join.on.is_empty()
        && matches!(
            join.filter,
            None | Some(Expr::Literal(ScalarValue::Boolean(Some(true)), _))
        );
    let null_handling = match join.join_type {
        JoinType::Inner => NullHandling::Drop,
        JoinType::Left if on_true => NullHandling::PreserveAndExpandEmpty,
        JoinType::Left => {
            return plan_err!("LEFT JOIN LATERAL {name}(...) is supported with ON true only");
        }
        other => return plan_err!("{other} JOIN LATERAL {name}(...) is not supported"),
    };
    let left = join.left.as_ref().clone();
    let left_columns: Vec<Expr> = left
        .schema()
        .iter()
        .map(|(q, f)| Expr::Column(Column::new(q.cloned(), f.name())))
        .collect();
    let entry = format!("__tessera_entry_{}", left_columns.len());
    let reads = entry_reads(join, &marker, read);
    let args = json_text_args(marker.args, left.schema())?;
    let document = args.first().cloned();
    let entries = JsonEntries::new(marker.walk).reading(reads);
    let (entries, args) = match value_at_path(&args, reads)? {
        Some(args) => (entries.at_path(), args),
        None => (entries, args),
    };
    let entries = Arc::new(ScalarUDF::from(entries));
    let mut listed = left_columns.clone();
    listed.push(Expr::ScalarFunction(ScalarFunction::new_udf(entries, args)).alias(&entry));
    let options = UnnestOptions {
        null_handling,
        ..Default::default()
    };
    let mut output = left_columns;
    for ((qualifier, field), column) in join.right.schema().iter().zip(&marker.columns) {
        let value = match (*column, &document) {
            ("json", Some(document)) => cast(document.clone(), DataType::Utf8View),
            _ => get_field(Expr::Column(Column::from_name(&entry)), *column),
        };
        output.push(value.alias_qualified(qualifier.cloned(), field.name()));
    }
    let mut builder = LogicalPlanBuilder::from(left)
        .project(listed)?
        .unnest_column_with_options(Column::from_name(&entry), options)?
        .project(output)?;
    if join.join_type == JoinType::Inner {
        let equal = join.on.iter().map(|(l, r)| l.clone().eq(r.clone()));
        if let Some(condition) = equal.chain(join.filter.clone()).reduce(Expr::and) {
            builder = builder.filter(condition)?;
        }
    }
    builder.build()
}

/// The arguments of a walk over `json_get(doc, path)` instead of `doc` (see
/// [`JsonEntries::at_path`]) when `args` are a JSON text document and a constant path of
/// keys and indexes, and the walk reads no node numbers; `None` otherwise.
pub(crate) fn value_at_path(args: &[Expr], reads: ReadColumns) -> Result<Option<Vec<Expr>>> {
    let [document, path] = args else {
        return Ok(None);
    };
    let text = match path {
        Expr::Literal(ScalarValue::Utf8(Some(t)) | ScalarValue::Utf8View(Some(t)), _) => t,
        _ => return Ok(None),
    };
    // The walk's own parse reports a bad path; a path to the root gains nothing.
    let plain = text.starts_with('$') && text.len() > 1 && parse_json_path(text).is_ok();
    if reads.ids() || !plain {
        return Ok(None);
    }
    let json_get = crate::functions::json::all_functions()
        .into_iter()
        .find(|f| f.name() == crate::functions::json::JSON_GET)
        .ok_or_else(|| DataFusionError::Internal("json_get is not defined".to_string()))?;
    let value = Expr::ScalarFunction(ScalarFunction::new_udf(
        json_get,
        vec![document.clone(), path.clone()],
    ));
    Ok(Some(vec![value, path.clone()]))
}

/// `args` with a first argument that is not text turned into JSON (`to_json`), as
/// DuckDB casts it (`json_each(t.list)`).
fn json_text_args(mut args: Vec<Expr>, schema: &DFSchema) -> Result<Vec<Expr>> {
    let Some(first) = args.first_mut() else {
        return Ok(args);
    };
    let text = matches!(
        first.get_type(schema)?,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    );
    if !text {
        let to_json = crate::functions::json_build::all_functions()
            .into_iter()
            .find(|f| f.name() == "to_json")
            .ok_or_else(|| DataFusionError::Internal("to_json is not defined".to_string()))?;
        let value = std::mem::replace(first, Expr::Literal(ScalarValue::Null, None));
        *first = Expr::ScalarFunction(ScalarFunction::new_udf(to_json, vec![value]));
    }
    Ok(args)
}

/// Stands for one output column of a lateral `json_each`/`json_tree` until
/// [`plan_laterals`] replaces the join it sits in; its type is that column's type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LateralMarker {
    signature: Signature,
}

impl Default for LateralMarker {
    fn default() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for LateralMarker {
    fn name(&self) -> &str {
        LATERAL_MARKER
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        Ok(arg_types
            .iter()
            .map(|t| match t {
                DataType::Null => DataType::Utf8,
                t => t.clone(),
            })
            .collect())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        plan_err!("{LATERAL_MARKER}: the column is named by its first argument")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let column = match args.scalar_arguments.first() {
            Some(Some(ScalarValue::Utf8(Some(c)))) => c.as_str(),
            _ => return plan_err!("{LATERAL_MARKER}: expected a column name"),
        };
        let Some(data_type) = entry_type(column) else {
            return plan_err!("{LATERAL_MARKER}: no column {column}");
        };
        Ok(Arc::new(arrow::datatypes::Field::new(
            self.name(),
            data_type,
            true,
        )))
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!(
            "json_each/json_tree over a column is supported as a lateral join of the \
             table it reads: FROM t, json_each(t.j) or t CROSS JOIN LATERAL json_each(t.j)"
        )
    }
}

/// Registers the JSON unnesting functions of `functions::json_each` and the marker with
/// `state`.
pub(crate) fn register(
    state: &mut datafusion::execution::session_state::SessionState,
) -> Result<()> {
    use datafusion::execution::FunctionRegistry;
    let marker = Arc::new(ScalarUDF::from(LateralMarker::default()));
    for f in crate::functions::json_each::scalar_functions()
        .into_iter()
        .chain([marker])
    {
        state.register_udf(f)?;
    }
    for (name, function) in crate::functions::json_each::table_functions() {
        state.register_udtf(name, function);
    }
    Ok(())
}
