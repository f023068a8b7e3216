//! Client statements through the session (`TesseraSession::execute`, which runs
//! Tessera's own statements), with parameters bound to DataFusion placeholders.

use std::sync::Arc;

use arrow::array::{Array, Int64Array, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::dataframe::DataFrame;
use datafusion::error::DataFusionError;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::Statement as SqlStatement;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use tonic::Status;

use super::clients::Client;
use super::queries::Planned;

/// Plans the one statement in `sql` with the first row of `parameters`, if any;
/// DDL and `SET` take effect now, queries run when the plan is streamed.
pub(super) async fn plan(
    client: &Client,
    sql: &str,
    parameters: Option<&RecordBatch>,
) -> Result<Planned, Status> {
    let row = match parameters {
        Some(batch) if batch.num_rows() > 1 => {
            return Err(Status::invalid_argument(format!(
                "a query takes one row of parameters, not {}",
                batch.num_rows()
            )));
        }
        Some(batch) if batch.num_rows() == 1 => Some(batch),
        _ => None,
    };
    let planned = async {
        let frame = frame(client, sql, row.map(|batch| (batch, 0))).await?;
        let task = Arc::new(frame.task_ctx());
        let plan = frame.create_physical_plan().await?;
        Ok(Planned { plan, task })
    };
    planned.await.map_err(|e| client.error(&e))
}

/// Runs the statements of `sql` (once per row of `parameters` when given); the rows
/// they changed (-1 when a statement does not say).
pub(super) async fn update(
    client: &Client,
    sql: &str,
    parameters: Option<&RecordBatch>,
) -> Result<i64, Status> {
    let session = &client.open.session;
    let run = async {
        let mut changed = 0;
        match parameters.filter(|batch| batch.num_rows() > 0) {
            Some(batch) => {
                for row in 0..batch.num_rows() {
                    changed += count(frame(client, sql, Some((batch, row))).await?).await?;
                }
            }
            None => {
                for statement in session.parse(sql)? {
                    changed += count(session.execute(statement).await?).await?;
                }
            }
        }
        Ok(changed)
    };
    run.await.map_err(|e: DataFusionError| client.error(&e))
}

/// The result and parameter schemas of the statement in `sql`, as a prepared statement.
/// Only queries are planned now: planning runs DDL, which must wait for the execution.
pub(super) async fn describe(client: &Client, sql: &str) -> Result<(Schema, Schema), Status> {
    let statement = one(client, sql).map_err(|e| client.error(&e))?;
    let is_query =
        matches!(&statement, Statement::Statement(s) if matches!(**s, SqlStatement::Query(_)));
    if !is_query {
        return Ok((Schema::empty(), Schema::empty()));
    }
    let described = async {
        let frame = client.open.session.execute(statement).await?;
        let types = frame.logical_plan().get_parameter_types()?;
        let mut parameters: Vec<(usize, Field)> = types
            .into_iter()
            .map(|(name, data_type)| {
                let position = name.trim_start_matches('$').parse().unwrap_or(usize::MAX);
                (
                    position,
                    Field::new(name, data_type.unwrap_or(DataType::Null), true),
                )
            })
            .collect();
        parameters.sort_by_key(|(position, _)| *position);
        let parameters = Schema::new(parameters.into_iter().map(|(_, f)| f).collect::<Vec<_>>());
        Ok((frame.schema().as_arrow().clone(), parameters))
    };
    described
        .await
        .map_err(|e: DataFusionError| client.error(&e))
}

/// The one statement of `sql`.
fn one(client: &Client, sql: &str) -> Result<Statement, DataFusionError> {
    let mut statements = client.open.session.parse(sql)?;
    match (statements.pop(), statements.is_empty()) {
        (Some(statement), true) => Ok(statement),
        (None, _) => Err(DataFusionError::Plan("the query is empty".to_string())),
        (Some(_), false) => Err(DataFusionError::Plan(
            "send one statement per query (this text has several)".to_string(),
        )),
    }
}

/// The frame of the one statement of `sql`, with the parameters of `row` bound.
async fn frame(
    client: &Client,
    sql: &str,
    row: Option<(&RecordBatch, usize)>,
) -> Result<DataFrame, DataFusionError> {
    let frame = client.open.session.execute(one(client, sql)?).await?;
    match row {
        Some((batch, row)) => bind(frame, batch, row),
        None => Ok(frame),
    }
}

/// `frame` with row `row` of `batch` as the values of `$1`, `$2`, ..., each cast to
/// the type the plan expects there (a client sends Python's int as Int64 where the
/// column may be Int32, and strings as Utf8 where DataFusion plans Utf8View).
fn bind(frame: DataFrame, batch: &RecordBatch, row: usize) -> Result<DataFrame, DataFusionError> {
    assert!(row < batch.num_rows(), "a bound row exists");
    let types = frame.logical_plan().get_parameter_types()?;
    let values = batch
        .columns()
        .iter()
        .enumerate()
        .map(|(i, column)| {
            let value = ScalarValue::try_from_array(column.as_ref(), row)?;
            match types.get(&format!("${}", i + 1)) {
                Some(Some(expected)) if *expected != value.data_type() => value.cast_to(expected),
                _ => Ok(value),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    frame.with_param_values(values)
}

/// Runs `frame`; the rows it changed: DML answers one `count`, DDL and `SET` nothing.
async fn count(frame: DataFrame) -> Result<i64, DataFusionError> {
    let schema = frame.schema().as_arrow().clone();
    let batches = frame.collect().await?;
    if schema.fields().is_empty() {
        return Ok(0);
    }
    if schema.fields().len() != 1 || schema.field(0).name() != "count" {
        return Ok(-1);
    }
    let mut total = 0;
    for batch in &batches {
        let counts = cast(batch.column(0), &DataType::Int64)?;
        let counts = counts
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(|| DataFusionError::Internal("count is not Int64".to_string()))?;
        total += counts.iter().flatten().sum::<i64>();
    }
    Ok(total)
}

/// `sql` with its `?` placeholders numbered `$1`, `$2`, ... in the order they appear:
/// clients (ADBC, JDBC) write `?`, DataFusion binds numbered placeholders. Only
/// prepared statements are numbered, since `?` is also PostgreSQL's JSON key operator.
pub(super) fn number_placeholders(sql: &str) -> String {
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        // The parser reports the error when the statement is planned.
        return sql.to_string();
    };
    let mut next = 0;
    tokens
        .into_iter()
        .map(|token| match token {
            Token::Question => {
                next += 1;
                format!("${next}")
            }
            Token::Placeholder(name) if name == "?" => {
                next += 1;
                format!("${next}")
            }
            token => token.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_marks_are_numbered_outside_strings() {
        assert_eq!(
            number_placeholders("SELECT ?, '?' FROM t WHERE a = ? -- ?\n"),
            "SELECT $1, '?' FROM t WHERE a = $2 -- ?\n"
        );
    }
}
