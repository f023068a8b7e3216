//! Running statements and reporting their results, timings and skipped lines; shared by
//! `tessera sql`, the shell and the demo.

use std::io::Write;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;
use datafusion::sql::parser::Statement;
use tessera_engine::TesseraSession;

use crate::output::{self, Format};

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
        let result = execute(session, statement).await;
        report_rejects(session);
        match result {
            Ok(result) => {
                if !result.schema.fields().is_empty() {
                    output::write(format, &result.schema, &result.batches, sink)?;
                }
                if timer {
                    eprintln!("Run Time: {:.3} s", result.elapsed.as_secs_f64());
                }
            }
            Err(e) => {
                eprintln!("Error: {}", session.describe_error(&e));
                return Ok(false);
            }
        }
    }
    Ok(true)
}
