//! Running statements and reporting their results, timings and skipped lines; shared by
//! `tessera sql`, the shell and the demo.

use std::io::Write;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;
use datafusion::sql::parser::Statement;
use tessera_engine::TesseraSession;

use futures::StreamExt;

use crate::output::{Format, ResultWriter};

/// The outcome of one statement.
pub struct StatementResult {
    /// The result schema (empty for DDL and `SET`).
    pub schema: SchemaRef,
    /// The result rows.
    pub batches: Vec<RecordBatch>,
    /// Wall time of planning and execution.
    pub elapsed: Duration,
}

/// Plans and runs one statement to completion.
pub async fn execute(
    session: &TesseraSession,
    statement: Statement,
) -> Result<StatementResult, DataFusionError> {
    let started = Instant::now();
    let frame = session.execute(statement).await?;
    let schema = frame.schema().inner().clone();
    let batches = frame.collect().await?;
    Ok(StatementResult {
        schema,
        batches,
        elapsed: started.elapsed(),
    })
}

/// Tells the user about lines the last statement skipped (nothing is dropped silently).
pub fn report_rejects(session: &TesseraSession) {
    let rejects = session.take_rejects();
    if rejects.count > 0 {
        eprintln!("warning: {rejects}");
    }
}

/// Plans and runs one statement, writing its rows to `sink` as they arrive (nothing is
/// written for a statement without columns, such as `SET`); the wall time taken.
/// A failed query is a [`DataFusionError`] inside the error; a failed write is not.
async fn stream(
    session: &TesseraSession,
    statement: Statement,
    format: Format,
    sink: &mut (dyn Write + Send),
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let frame = session.execute(statement).await?;
    let mut batches = frame.execute_stream().await?;
    let schema = batches.schema();
    let mut writer = match schema.fields().is_empty() {
        true => None,
        false => Some(ResultWriter::new(format, &schema, sink)?),
    };
    while let Some(batch) = batches.next().await {
        let batch = batch?;
        if let Some(writer) = &mut writer {
            writer.write(&batch)?;
        }
    }
    if let Some(writer) = writer {
        writer.finish()?;
    }
    Ok(started.elapsed())
}

/// Runs every statement of `script`, writing results to `sink`; stops at the first
/// failing statement and returns whether all succeeded.
pub async fn run_script(
    session: &TesseraSession,
    script: &str,
    format: Format,
    sink: &mut (dyn Write + Send),
    timer: bool,
) -> anyhow::Result<bool> {
    let statements = match session.parse(script) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("Error: {}", session.describe_error(&e));
            return Ok(false);
        }
    };
    for statement in statements {
        let result = stream(session, statement, format, sink).await;
        report_rejects(session);
        match result {
            Ok(elapsed) => {
                if timer {
                    eprintln!("Run Time: {:.3} s", elapsed.as_secs_f64());
                }
            }
            Err(e) => match e.downcast_ref::<DataFusionError>() {
                Some(e) => {
                    eprintln!("Error: {}", session.describe_error(e));
                    return Ok(false);
                }
                None => return Err(e),
            },
        }
    }
    Ok(true)
}
