//! A Tessera session: DataFusion configured with JSON functions and operators, raw
//! NDJSON tables, tables named by location, and object stores opened on demand.

use std::sync::Arc;

use datafusion::catalog::DynamicFileCatalog;
use datafusion::common::config::Dialect;
use datafusion::common::{DataFusionError, Result};
use datafusion::dataframe::DataFrame;
use datafusion::execution::FunctionRegistry;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParser, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use tessera_blob::{S3Config, StoreFactory};

use crate::json::operators::JsonOperatorPlanner;
use crate::json::{all_functions, functions};
use crate::ndjson::NdjsonFormatFactory;
use crate::options::{OnError, TesseraOptions};
use crate::rejects::{RejectLog, RejectSummary};
use crate::stores::StoreRegistry;
use crate::tables::{ExternalTableFactory, LocationTableFactory};
use crate::{compat, errors};

/// How to set up a session.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Partitions (threads) per query; defaults to the number of cores.
    pub target_partitions: Option<usize>,
    /// Initial `tessera.on_error`.
    pub on_error: Option<OnError>,
}

/// A SQL session over JSON and tables in object storage.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> datafusion::common::Result<()> {
/// use tessera_engine::{SessionOptions, TesseraSession};
/// let session = TesseraSession::new(tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap(), SessionOptions::default())?;
/// let batches = session
///     .sql(r#"SELECT '{"a":{"b":[10,20]}}'->'a'->'b'->>1 AS v"#)
///     .await?
///     .collect()
///     .await?;
/// assert_eq!(batches[0].num_rows(), 1);
/// # Ok(())
/// # }
/// ```
pub struct TesseraSession {
    ctx: SessionContext,
    stores: Arc<StoreRegistry>,
    rejects: Arc<RejectLog>,
}

impl TesseraSession {
    /// A session whose S3 stores use `s3`.
    pub fn new(s3: S3Config, options: SessionOptions) -> Result<Self> {
        let stores = Arc::new(StoreRegistry::new(StoreFactory::new(s3)));
        let rejects = Arc::new(RejectLog::default());
        let mut tessera = TesseraOptions::default();
        if let Some(on_error) = options.on_error {
            tessera.on_error = on_error;
        }
        let mut config = SessionConfig::new()
            .with_information_schema(true)
            .with_option_extension(tessera)
            .with_extension(Arc::clone(&rejects));
        // PostgreSQL's grammar binds `->>` tighter than `=` (as PostgreSQL and DuckDB do),
        // so `j->>'kind' = 'commit'` compares the extracted value.
        config.options_mut().sql_parser.dialect = Dialect::PostgreSQL;
        if let Some(n) = options.target_partitions {
            config = config.with_target_partitions(n.max(1));
        }
        let runtime = RuntimeEnvBuilder::new()
            .with_object_store_registry(Arc::clone(&stores) as _)
            .build_arc()?;
        let mut state = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(runtime)
            .with_default_features()
            .build();
        let json = all_functions();
        for f in json.iter().cloned().chain(compat::all_functions()) {
            state.register_udf(f)?;
        }
        let find = |name: &str| {
            json.iter()
                .find(|f| f.name() == name)
                .cloned()
                .ok_or_else(|| DataFusionError::Internal(format!("{name} is not registered")))
        };
        state.register_expr_planner(Arc::new(JsonOperatorPlanner::new(
            find(functions::JSON_GET)?,
            find(functions::JSON_GET_TEXT)?,
        )))?;
        for ext in ["ndjson", "json"] {
            state.register_file_format(Arc::new(NdjsonFormatFactory::new(ext)), true)?;
        }
        for kind in ["NDJSON", "JSON", "PARQUET", "CSV"] {
            state
                .table_factories_mut()
                .insert(kind.to_string(), Arc::new(ExternalTableFactory));
        }
        let locations = Arc::new(LocationTableFactory::new());
        let catalogs = Arc::new(DynamicFileCatalog::new(
            Arc::clone(state.catalog_list()),
            Arc::clone(&locations) as _,
        ));
        let state = SessionStateBuilder::new_from_existing(state)
            .with_catalog_list(catalogs)
            .build();
        let ctx = SessionContext::new_with_state(state);
        locations.attach(ctx.state_weak_ref());
        Ok(Self {
            ctx,
            stores,
            rejects,
        })
    }

    /// The DataFusion context, for registering tables or running plans directly.
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Plans one SQL statement (DDL and `SET` run at once).
    pub async fn sql(&self, sql: &str) -> Result<DataFrame> {
        self.ctx.sql(sql).await
    }

    /// Splits a script into statements with the session's SQL dialect (semicolons inside
    /// strings and comments do not split).
    pub fn parse(&self, script: &str) -> Result<Vec<Statement>> {
        Ok(DFParser::parse_sql_with_dialect(script, &PostgreSqlDialect {})?.into())
    }

    /// Plans one parsed statement; DDL and `SET` take effect at once, queries run when
    /// the returned frame is collected or streamed.
    pub async fn execute(&self, statement: Statement) -> Result<DataFrame> {
        let plan = self.ctx.state().statement_to_plan(statement).await?;
        self.ctx.execute_logical_plan(plan).await
    }

    /// What scans skipped since the last call (with `on_error = skip`).
    pub fn take_rejects(&self) -> RejectSummary {
        self.rejects.take()
    }

    /// One clear sentence for a failed statement.
    pub fn describe_error(&self, error: &DataFusionError) -> String {
        errors::describe(error, self.stores.factory())
    }

    /// The store factory behind `s3://` and `file://` locations.
    pub fn stores(&self) -> &StoreFactory {
        self.stores.factory()
    }
}
