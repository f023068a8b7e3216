//! Running statements and reporting their results, timings and skipped lines; shared by
//! `tessera sql`, the shell and the demo.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::common::format::ExplainStatementOptions;
use datafusion::error::DataFusionError;
use datafusion::physical_plan::execute_stream;
use datafusion::sql::parser::{ExplainStatement, Statement};
use datafusion::sql::sqlparser::ast::Statement as SqlStatement;
use tessera_engine::TesseraSession;

use futures::StreamExt;

use crate::output::{Format, ResultWriter};
use crate::progress::ProgressBar;

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

/// How the statements of a script run and print.
#[derive(Debug, Clone, Copy)]
pub struct ScriptOptions {
    /// How results are written.
    pub format: Format,
    /// Print how long each statement took (to stderr).
    pub timer: bool,
    /// Run queries as `EXPLAIN` of themselves (the shell's `.explain on`).
    pub explain: bool,
    /// Results go to the terminal stderr draws progress on: the progress line stops
    /// when rows start streaming there (the table format prints at the end).
    pub output_on_terminal: bool,
}

impl ScriptOptions {
    /// Results in `format`, no timer, no `EXPLAIN`.
    pub fn new(format: Format) -> Self {
        Self {
            format,
            timer: false,
            explain: false,
            output_on_terminal: std::io::stdout().is_terminal(),
        }
    }
}

/// Plans and runs one statement, writing its rows to `sink` as they arrive (nothing is
/// written for a statement without columns, such as `SET`), with a progress line while
/// it runs; the wall time taken. A failed query is a [`DataFusionError`] inside the
/// error; a failed write is not.
async fn stream(
    session: &TesseraSession,
    statement: Statement,
    options: &ScriptOptions,
    sink: &mut (dyn Write + Send),
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let frame = session.execute(statement).await?;
    let task = Arc::new(frame.task_ctx());
    let plan = frame.create_physical_plan().await?;
    let mut batches = execute_stream(Arc::clone(&plan), task)?;
    let schema = batches.schema();
    let mut writer = match schema.fields().is_empty() {
        true => None,
        false => Some(ResultWriter::new(options.format, &schema, sink)?),
    };
    let rows_out = Arc::new(AtomicUsize::new(0));
    let mut progress = Some(ProgressBar::start(plan, Arc::clone(&rows_out), started));
    let streams = options.output_on_terminal && options.format != Format::Table;
    let written = async {
        while let Some(batch) = batches.next().await {
            let batch = batch?;
            if streams
                && batch.num_rows() > 0
                && let Some(progress) = progress.take()
            {
                progress.finish();
            }
            if let Some(writer) = &mut writer {
                writer.write(&batch)?;
            }
            rows_out.fetch_add(batch.num_rows(), Ordering::Relaxed);
        }
        anyhow::Ok(())
    }
    .await;
    if let Some(progress) = progress {
        progress.finish();
    }
    written?;
    if let Some(writer) = writer {
        writer.finish()?;
    }
    Ok(started.elapsed())
}

/// `statement` as the shell runs it: a query under `.explain on` is explained instead.
fn explained(statement: Statement, explain: bool) -> Statement {
    match statement {
        Statement::Statement(inner) if explain && matches!(*inner, SqlStatement::Query(_)) => {
            Statement::Explain(ExplainStatement {
                options: ExplainStatementOptions::default(),
                statement: Box::new(Statement::Statement(inner)),
            })
        }
        other => other,
    }
}

/// Runs every statement of `script`, writing results to `sink` in `format` (with a
/// progress line on a terminal's stderr); stops at the first failing statement and
/// returns whether all succeeded.
pub async fn run_script(
    session: &TesseraSession,
    script: &str,
    format: Format,
    sink: &mut (dyn Write + Send),
    timer: bool,
) -> anyhow::Result<bool> {
    let options = ScriptOptions {
        timer,
        ..ScriptOptions::new(format)
    };
    run_script_with(session, script, &options, sink).await
}

/// Runs every statement of `script` as `options` say, writing results to `sink`; stops
/// at the first failing statement and returns whether all succeeded.
pub async fn run_script_with(
    session: &TesseraSession,
    script: &str,
    options: &ScriptOptions,
    sink: &mut (dyn Write + Send),
) -> anyhow::Result<bool> {
    let statements = match session.parse(script) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("Error: {}", session.describe_error(&e));
            return Ok(false);
        }
    };
    for statement in statements {
        let statement = explained(statement, options.explain);
        let result = stream(session, statement, options, sink).await;
        report_rejects(session);
        match result {
            Ok(elapsed) => {
                if options.timer {
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
