//! `tessera.connect()`: a connection owns a session and its runtime; it plans and runs
//! statements, registers Arrow data by name and ingests NDJSON into tables.

use std::sync::{Arc, RwLock};

use datafusion::common::TableReference;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::MemTable;
use datafusion::sql::parser::Statement;
use pyo3::prelude::*;
use tessera_blob::{S3Config, S3Overrides};
use tessera_engine::options::{MemoryLimit, SqlDialect};
use tessera_engine::{OnError, SessionOptions, TesseraSession, returns_rows};

use crate::arrow_input::{Borrowed, table_of};
use crate::engine::Engine;
use crate::exceptions::Failure;
use crate::ingest::{IngestSummary, ingest};
use crate::relation::Relation;

/// A connection: a Tessera session with its settings, tables and thread pool.
#[pyclass(frozen, module = "tessera")]
pub struct Connection {
    /// `None` once closed; relations keep the engine alive on their own.
    engine: RwLock<Option<Arc<Engine>>>,
}

#[pymethods]
impl Connection {
    /// Opens a session; S3 settings not given come from the environment and the shared
    /// AWS files, as for the CLI.
    #[new]
    #[pyo3(signature = (threads=None, memory_limit=None, on_error=None, dialect=None, endpoint_url=None, region=None, profile=None))]
    fn new(
        threads: Option<usize>,
        memory_limit: Option<&str>,
        on_error: Option<&str>,
        dialect: Option<&str>,
        endpoint_url: Option<String>,
        region: Option<String>,
        profile: Option<String>,
    ) -> PyResult<Self> {
        let options = SessionOptions {
            target_partitions: threads,
            on_error: setting::<OnError>(on_error)?,
            memory_limit: setting::<MemoryLimit>(memory_limit)?,
            dialect: setting::<SqlDialect>(dialect)?,
            cache_dir: tessera_engine::default_cache_dir(&|k| std::env::var(k).ok()),
            worker_token: tessera_engine::default_worker_token(&|k| std::env::var(k).ok()),
            cluster: None,
        };
        let overrides = S3Overrides {
            endpoint: endpoint_url,
            region,
            profile,
        };
        let s3 =
            S3Config::from_environment(&overrides).map_err(|e| Failure::Setting(e.to_string()))?;
        let session =
            TesseraSession::new(s3, options).map_err(|e| Failure::Setting(e.to_string()))?;
        let engine = Engine::new(session, threads).map_err(Failure::Runtime)?;
        Ok(Self {
            engine: RwLock::new(Some(engine)),
        })
    }

    /// Runs the statements of `query` (separated by ';'); the last one, if a query, as
    /// a lazy relation, else run at once (and `None`). Table names the session does not
    /// know are looked up with `variables(name)` (the caller's variables).
    #[pyo3(signature = (query, variables=None))]
    fn sql(
        &self,
        py: Python<'_>,
        query: &str,
        variables: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Option<Relation>> {
        let engine = self.engine()?;
        let mut statements = engine.parse(query)?;
        let Some(last) = statements.pop() else {
            return Ok(None);
        };
        for statement in statements {
            let frame = plan(&engine, py, &statement, variables.as_ref())?;
            engine.collect(py, frame)?;
        }
        let lazy = returns_rows(&last);
        let frame = plan(&engine, py, &last, variables.as_ref())?;
        if lazy {
            return Ok(Some(Relation::new(engine, frame)));
        }
        engine.collect(py, frame)?;
        Ok(None)
    }

    /// Runs every statement of `query` (separated by ';') to its end; the last one's
    /// result as a relation over its rows.
    #[pyo3(signature = (query, variables=None))]
    fn execute(
        &self,
        py: Python<'_>,
        query: &str,
        variables: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Relation> {
        let engine = self.engine()?;
        let mut last = None;
        for statement in engine.parse(query)? {
            let frame = plan(&engine, py, &statement, variables.as_ref())?;
            last = Some(engine.collect(py, frame)?);
        }
        let ctx = engine.session().context();
        let frame = match last {
            Some(rows) => MemTable::try_new(rows.schema, vec![rows.batches])
                .and_then(|table| ctx.read_table(Arc::new(table))),
            None => ctx.read_empty(),
        };
        let frame = frame.map_err(Failure::Catalog)?;
        Ok(Relation::new(engine, frame))
    }

    /// Makes `data` (any object with `__arrow_c_stream__`: a pyarrow table, a pandas or
    /// polars data frame) a table called `name`, replacing a table of that name.
    fn register(&self, name: &str, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let engine = self.engine()?;
        let ctx = engine.session().context();
        let partitions = ctx.copied_config().target_partitions();
        let table = table_of(name, data, partitions)?;
        let name = TableReference::bare(name);
        ctx.deregister_table(name.clone())
            .map_err(Failure::Catalog)?;
        ctx.register_table(name, Arc::new(table))
            .map_err(Failure::Catalog)?;
        Ok(())
    }

    /// Removes the table called `name` (registered or created); nothing if none.
    fn unregister(&self, name: &str) -> PyResult<()> {
        let engine = self.engine()?;
        let ctx = engine.session().context();
        ctx.deregister_table(TableReference::bare(name))
            .map_err(Failure::Catalog)?;
        Ok(())
    }

    /// Appends the NDJSON documents of `sources` (files, globs, `s3://` URLs; `.gz` and
    /// `.zst` decompressed) to the Tessera table at `table` in one commit, creating it
    /// when missing; `on_error` ('fail' or 'skip') for this ingest only.
    #[pyo3(signature = (sources, table, on_error=None))]
    fn ingest(
        &self,
        py: Python<'_>,
        sources: Vec<String>,
        table: &str,
        on_error: Option<&str>,
    ) -> PyResult<IngestSummary> {
        let engine = self.engine()?;
        ingest(&engine, py, sources, table, on_error)
    }

    /// Closes the connection; relations made from it still run.
    fn close(&self) {
        self.engine
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }
}

impl Connection {
    fn engine(&self) -> PyResult<Arc<Engine>> {
        let engine = self.engine.read().unwrap_or_else(|e| e.into_inner());
        Ok(Arc::clone(engine.as_ref().ok_or(Failure::Closed)?))
    }
}

/// A setting given as text, parsed as the CLI parses it.
fn setting<T>(text: Option<&str>) -> PyResult<Option<T>>
where
    T: std::str::FromStr<Err = datafusion::error::DataFusionError>,
{
    let parsed = text.map(str::parse::<T>).transpose();
    parsed.map_err(|e| Failure::Setting(e.to_string()).into())
}

/// Plans `statement` (DDL and `SET` take effect), with the caller's Arrow variables
/// that it names registered while it is planned.
fn plan(
    engine: &Engine,
    py: Python<'_>,
    statement: &Statement,
    variables: Option<&Bound<'_, PyAny>>,
) -> PyResult<DataFrame> {
    let session = engine.session();
    let borrowed = Borrowed::register(session.context(), statement, variables)?;
    let statement = statement.clone();
    let frame = engine.query(py, async move { session.execute(statement).await });
    borrowed.release(session.context());
    frame
}
