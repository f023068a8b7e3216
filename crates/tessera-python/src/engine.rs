//! A connection's engine: its Tessera session and the Tokio runtime its statements run
//! on. Every statement runs through [`Engine::run`], with the GIL released and Ctrl-C
//! honoured: the wait wakes every [`SIGNAL_CHECK_INTERVAL_MS`] to let Python run its
//! signal handlers, and a `KeyboardInterrupt` drops the statement's future, which makes
//! DataFusion cancel the query's tasks.

use std::ffi::CString;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::dataframe::DataFrame;
use datafusion::error::DataFusionError;
use datafusion::sql::parser::Statement;
use futures::TryStreamExt;
use pyo3::prelude::*;
use tessera_engine::TesseraSession;
use tokio::runtime::Runtime;

use crate::exceptions::{RejectedLinesWarning, statement_error};

/// How often a waiting statement lets Python check for signals (Ctrl-C): often enough
/// to feel immediate, rarely enough to cost nothing.
pub const SIGNAL_CHECK_INTERVAL_MS: u64 = 50;

/// The rows of a statement run to its end.
pub struct Collected {
    /// The result's schema (empty for DDL and `SET`).
    pub schema: SchemaRef,
    /// The result's rows.
    pub batches: Vec<RecordBatch>,
}

/// A session and the runtime that runs it, shared by a connection and its relations.
pub struct Engine {
    session: TesseraSession,
    /// `Some` until dropped; taken to shut down without waiting for blocking tasks.
    runtime: Option<Runtime>,
}

impl Engine {
    /// An engine over `session` whose runtime has `threads` workers (default: cores).
    pub fn new(session: TesseraSession, threads: Option<usize>) -> std::io::Result<Arc<Self>> {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.enable_all().thread_name("tessera-worker");
        if let Some(threads) = threads {
            builder.worker_threads(threads.max(1));
        }
        Ok(Arc::new(Self {
            session,
            runtime: Some(builder.build()?),
        }))
    }

    /// The Tessera session.
    pub fn session(&self) -> &TesseraSession {
        &self.session
    }

    /// Runs `future` to completion on the runtime with the GIL released; raises
    /// `KeyboardInterrupt` (after dropping, and so cancelling, the future) on Ctrl-C.
    pub fn run<F>(&self, py: Python<'_>, future: F) -> PyResult<F::Output>
    where
        F: Future + Send,
        F::Output: Send,
    {
        let runtime = self
            .runtime
            .as_ref()
            .expect("the runtime lives as long as the engine");
        let interval = Duration::from_millis(SIGNAL_CHECK_INTERVAL_MS);
        let mut future = std::pin::pin!(future);
        loop {
            // The timer needs the runtime's context, so it is made inside `block_on`.
            let step = async { tokio::time::timeout(interval, future.as_mut()).await };
            if let Ok(output) = py.detach(|| runtime.block_on(step)) {
                return Ok(output);
            }
            py.check_signals()?;
        }
    }

    /// Runs a statement's future; its error raised as the session describes it.
    pub fn query<T, F>(&self, py: Python<'_>, future: F) -> PyResult<T>
    where
        F: Future<Output = datafusion::error::Result<T>> + Send,
        T: Send,
    {
        self.run(py, future)?
            .map_err(|e| statement_error(&self.session, &e))
    }

    /// Splits `script` into statements in the session's dialect.
    pub fn parse(&self, script: &str) -> PyResult<Vec<Statement>> {
        self.session
            .parse(script)
            .map_err(|e| statement_error(&self.session, &e))
    }

    /// Runs `frame` to its end and warns about the lines its scans skipped.
    pub fn collect(&self, py: Python<'_>, frame: DataFrame) -> PyResult<Collected> {
        let result = self.query(py, async move {
            let stream = frame.execute_stream().await?;
            let schema = stream.schema();
            let batches = stream.try_collect().await?;
            Ok::<_, DataFusionError>(Collected { schema, batches })
        });
        self.report_rejects(py)?;
        result
    }

    /// Warns ([`RejectedLinesWarning`]) about the lines skipped since the last report,
    /// so that nothing is dropped silently.
    pub fn report_rejects(&self, py: Python<'_>) -> PyResult<()> {
        let rejects = self.session.take_rejects();
        if rejects.count == 0 {
            return Ok(());
        }
        warn_rejected(py, &rejects.to_string())
    }
}

/// Raises a [`RejectedLinesWarning`] with `message`.
pub fn warn_rejected(py: Python<'_>, message: &str) -> PyResult<()> {
    let message = CString::new(message.replace('\0', "")).unwrap_or_default();
    PyErr::warn(py, &py.get_type::<RejectedLinesWarning>(), &message, 1)
}

impl Drop for Engine {
    fn drop(&mut self) {
        // The last relation may be dropped anywhere, even on a runtime thread, where a
        // blocking shutdown would panic; queries still running are cancelled either way.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
