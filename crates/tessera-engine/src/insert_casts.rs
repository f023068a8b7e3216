//! Inserts of `JSON` values into `STRUCT`/`MAP`/list columns, and of such values into
//! `JSON` columns, converted as DuckDB converts them (`CAST`, so `JsonCasts` reads or
//! writes the JSON). DataFusion checks an insert's types while planning it, before any
//! analyzer rewrite, and has no cast between text and a struct or map (and casts a list
//! to text in Arrow's form, not as JSON); so the statement gets the casts first: in
//! each row of a `VALUES` source, around any other source as `SELECT CAST(c1 AS <column
//! type>), c2, ... FROM (<source>) AS s(c1, c2, ...)`.
//!
//! Text inserted into a `JSON` or `ENUM` column gets the same cast, so it is checked as
//! DuckDB checks it (valid JSON; one of the labels): both types are text underneath,
//! which DataFusion would insert as it is.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field};
use datafusion::common::Result;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast;
use datafusion::sql::sqlparser::dialect::DuckDbDialect;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};

use crate::json::enum_type::enum_name;
use crate::json::json_type::is_json;
use crate::json::sql_types::duckdb_type_name;

/// The derived table the rewritten source reads the original from.
const SOURCE_ALIAS: &str = "__tessera_insert_source";

/// Adds to an `INSERT` the casts its JSON columns (or values) need (see the module
/// documentation); any other statement, and an insert whose source does not plan on
/// its own, is left for DataFusion (which then reports what is wrong).
pub(crate) async fn rewrite(ctx: &SessionContext, statement: &mut Statement) -> Result<()> {
    let Statement::Statement(inner) = statement else {
        return Ok(());
    };
    let ast::Statement::Insert(insert) = inner.as_mut() else {
        return Ok(());
    };
    let (ast::TableObject::TableName(name), Some(source)) = (&insert.table, &insert.source) else {
        return Ok(());
    };
    let Ok(table) = ctx.table_provider(name.to_string()).await else {
        return Ok(());
    };
    let schema = table.schema();
    if !schema
        .fields()
        .iter()
        .any(|f| converts(f) || is_json(f) || enum_name(f).is_some())
    {
        return Ok(());
    }
    let targets: Option<Vec<Arc<Field>>> = match insert.columns.as_slice() {
        [] => Some(schema.fields().iter().cloned().collect()),
        columns => columns
            .iter()
            .map(|c| schema.field_with_name(&c.to_string()).ok().cloned())
            .map(|f| f.map(Arc::new))
            .collect(),
    };
    let Some(targets) = targets else {
        return Ok(());
    };
    let casts = match source.body.as_ref() {
        // A VALUES list's own types are of no use: its rows' fields lose the JSON mark,
        // and rows of JSON and NULL need not plan alone.
        ast::SetExpr::Values(_) => targets
            .iter()
            .map(|to| through_json(to).or_else(|| checked_text(to)))
            .collect(),
        _ => match source_casts(ctx, source, &targets).await {
            Some(casts) => casts,
            None => return Ok(()),
        },
    };
    if casts.iter().all(Option::is_none) {
        return Ok(());
    }
    if let Some(query) = cast_source(source, &casts) {
        insert.source = Some(query);
    }
    Ok(())
}

/// The casts the columns of a query `source` inserted into `targets` need; `None` when
/// it does not plan on its own.
async fn source_casts(
    ctx: &SessionContext,
    source: &ast::Query,
    targets: &[Arc<Field>],
) -> Option<Vec<Option<Vec<String>>>> {
    let query = Statement::Statement(Box::new(ast::Statement::Query(Box::new(source.clone()))));
    let plan = ctx.state().statement_to_plan(query).await.ok()?;
    let sources = plan.schema().fields();
    (sources.len() == targets.len()).then(|| {
        sources
            .iter()
            .zip(targets)
            .map(|(from, to)| cast_type(from, to))
            .collect()
    })
}

/// Text (or JSON) into a struct or map column is read as JSON: `CAST(CAST(x AS JSON)
/// AS t)`; `None` for other columns.
fn through_json(to: &Field) -> Option<Vec<String>> {
    matches!(to.data_type(), DataType::Struct(_) | DataType::Map(..))
        .then(|| vec!["JSON".to_string(), duckdb_type_name(to)])
}

/// A value for a `JSON` or `ENUM` column is cast to the column's type, which checks it;
/// `None` for other columns.
fn checked_text(to: &Field) -> Option<Vec<String>> {
    (is_json(to) || enum_name(to).is_some()).then(|| vec![duckdb_type_name(to)])
}

/// Whether a column of `field`'s type takes a JSON value by a conversion DataFusion
/// lacks.
fn converts(field: &Field) -> bool {
    matches!(
        field.data_type(),
        DataType::Struct(_) | DataType::Map(..) | DataType::List(_) | DataType::LargeList(_)
    )
}

/// The SQL types (cast to in turn) a value of `from` inserted into a column `to` is
/// cast to first, if it needs a cast: JSON into a nested column, a nested value into a
/// JSON column; text into a struct or map column is read as JSON (DataFusion casts no
/// text to a struct).
fn cast_type(from: &Field, to: &Field) -> Option<Vec<String>> {
    let text = matches!(
        from.data_type(),
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    );
    if (is_json(from) && converts(to) && !is_json(to)) || (is_json(to) && converts(from)) {
        Some(vec![duckdb_type_name(to)])
    } else if text {
        through_json(to).or_else(|| checked_text(to))
    } else {
        None
    }
}

/// The insert's source with the casts of `casts` (each column's types, cast to in
/// turn): in each row when it is a `VALUES` list (DataFusion types a `VALUES` list in an
/// insert as the table's columns, even inside a subquery), otherwise around it as `SELECT
/// CAST(c1 AS t1), c2, ... FROM (source) AS s(c1, c2, ...)`. `None` if a type's name
/// does not parse.
fn cast_source(source: &ast::Query, casts: &[Option<Vec<String>>]) -> Option<Box<ast::Query>> {
    let types = casts
        .iter()
        .map(|types| match types {
            Some(names) => names.iter().map(|n| parse_type(n)).collect(),
            None => Some(Vec::new()),
        })
        .collect::<Option<Vec<Vec<ast::DataType>>>>()?;
    let mut query = Box::new(source.clone());
    if let ast::SetExpr::Values(values) = query.body.as_mut() {
        for row in &mut values.rows {
            for (value, types) in row.iter_mut().zip(&types) {
                let plain = std::mem::replace(value, ast::Expr::value(ast::Value::Null));
                *value = cast_to(plain, types);
            }
        }
        return Some(query);
    }
    let names: Vec<String> = (0..casts.len()).map(|i| format!("c{i}")).collect();
    let text = format!(
        "SELECT * FROM (SELECT 1) AS {SOURCE_ALIAS}({})",
        names.join(", ")
    );
    let mut outer = parse(&text, |p| p.parse_query())?;
    let ast::SetExpr::Select(select) = outer.body.as_mut() else {
        return None;
    };
    select.projection = names
        .iter()
        .zip(&types)
        .map(|(name, types)| {
            let column = ast::Expr::CompoundIdentifier(vec![
                ast::Ident::new(SOURCE_ALIAS),
                ast::Ident::new(name),
            ]);
            ast::SelectItem::ExprWithAlias {
                expr: cast_to(column, types),
                alias: ast::Ident::new(name),
            }
        })
        .collect();
    let ast::TableFactor::Derived { subquery, .. } = &mut select.from.first_mut()?.relation else {
        return None;
    };
    *subquery = query;
    Some(outer)
}

/// `expr` cast to each of `types` in turn.
fn cast_to(expr: ast::Expr, types: &[ast::DataType]) -> ast::Expr {
    types.iter().fold(expr, |expr, data_type| ast::Expr::Cast {
        kind: ast::CastKind::Cast,
        expr: Box::new(expr),
        data_type: data_type.clone(),
        array: false,
        format: None,
    })
}

fn parse_type(name: &str) -> Option<ast::DataType> {
    parse(name, |p| p.parse_data_type())
}

/// `text` read by `read` with DuckDB's grammar (the type names are DuckDB's).
fn parse<T>(
    text: &str,
    read: impl FnOnce(&mut Parser<'_>) -> std::result::Result<T, ParserError>,
) -> Option<T> {
    let mut parser = Parser::new(&DuckDbDialect {}).try_with_sql(text).ok()?;
    read(&mut parser).ok()
}
