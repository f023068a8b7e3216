//! A Tessera session: DataFusion configured with JSON functions and operators, raw
//! NDJSON tables, tables named by location, and object stores opened on demand.

use crate::accesses_below_unnest::AccessesBelowUnnest;
use crate::element_accesses::ElementAccesses;
use std::sync::Arc;

use arrow::datatypes::Fields;
use datafusion::catalog::DynamicFileCatalog;
use datafusion::catalog::default_table_source::DefaultTableSource;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result, TableReference};
use datafusion::dataframe::DataFrame;
use datafusion::datasource::provider_as_source;
use datafusion::execution::FunctionRegistry;
use datafusion::execution::memory_pool::{FairSpillPool, MemoryPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{self, WriteOp};
use datafusion::logical_expr::{CreateMemoryTable, DdlStatement, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParser, Statement};
use datafusion::sql::sqlparser::ast;
use tessera_blob::{S3Config, StoreFactory};

use crate::block_cache::StoreEndpoint;
use crate::datasource::location::{ExternalTableFactory, LocationTableFactory};
use crate::datasource::ndjson::NdjsonFormatFactory;
use crate::datasource::tessera::{
    self, IngestOutcome, TesseraTable, TesseraTableFactory, VacuumReport,
};
use crate::dialect::{self, FractionalDivision};
use crate::errors;
use crate::functions::enum_cast::EnumCasts;
use crate::functions::integer_128::WideIntegerShifts;
use crate::functions::json_cast::JsonCasts;
use crate::functions::operators::{JsonOperatorPlanner, check_chains};
use crate::functions::sum::WideIntegerSum;
use crate::functions::{compat, json as json_functions};
use crate::group_keys;
use crate::lambda_join_filter::LambdaJoinFilter;
use crate::options::{MemoryLimit, OnError, SqlDialect, TesseraOptions};
use crate::output_names;
use crate::physical_optimizer::{
    BloomJoin, BloomProbe, CastPushdown, ClusterPlacement, GroupOnCodes, IntegerTextMinMax,
    PushdownChoice, SelectAggregation, SelectPushdown, SelectTopK, TableStatistics, WorkerPushdown,
    with_rule_before,
};
use crate::physical_plan::worker_exec::WorkerToken;
use crate::rejects::{RejectLog, RejectSummary};
use crate::stores::StoreRegistry;
use crate::type_planner::SqlTypePlanner;
use crate::user_types::UserTypes;

/// How to set up a session.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Partitions (threads) per query; defaults to the number of cores.
    pub target_partitions: Option<usize>,
    /// Initial `tessera.on_error`.
    pub on_error: Option<OnError>,
    /// Initial `tessera.memory_limit`.
    pub memory_limit: Option<MemoryLimit>,
    /// Initial `tessera.dialect`.
    pub dialect: Option<SqlDialect>,
    /// Initial `tessera.cache_dir` (the front ends pass [`crate::default_cache_dir`]:
    /// the caches are on unless the user turns them off).
    pub cache_dir: Option<String>,
    /// The token the storage-side worker admits (`tessera.pushdown = 'worker'`); a
    /// session option rather than a setting, so that no statement or log shows it.
    pub worker_token: Option<WorkerToken>,
    /// Initial `tessera.cluster` (the CLI's `--cluster`).
    pub cluster: Option<String>,
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
    user_types: Arc<UserTypes>,
}

impl TesseraSession {
    /// A session whose S3 stores use `s3`.
    pub fn new(s3: S3Config, options: SessionOptions) -> Result<Self> {
        let endpoint = StoreEndpoint(match &s3.endpoint {
            Some(url) => url.clone(),
            None => format!("aws {}", s3.region),
        });
        let stores = Arc::new(StoreRegistry::new(StoreFactory::new(s3)));
        let rejects = Arc::new(RejectLog::default());
        let user_types = UserTypes::new();
        let mut tessera = TesseraOptions::default();
        if let Some(on_error) = options.on_error {
            tessera.on_error = on_error;
        }
        if let Some(limit) = options.memory_limit {
            tessera.memory_limit = limit;
        }
        if let Some(dialect) = options.dialect {
            tessera.dialect = dialect;
        }
        if let Some(dir) = options.cache_dir {
            tessera.cache_dir = dir;
        }
        if let Some(cluster) = options.cluster {
            tessera.cluster = cluster;
        }
        let memory_limit = tessera.memory_limit;
        let mut config = SessionConfig::new()
            .with_information_schema(true)
            .with_option_extension(tessera)
            .with_option_extension(crate::functions::geometry::GeometryOptions::default())
            .with_extension(Arc::clone(&rejects))
            .with_extension(Arc::new(endpoint))
            .with_extension(Arc::clone(&stores));
        let worker_token = options.worker_token.clone();
        if let Some(token) = options.worker_token {
            config = config.with_extension(Arc::new(token));
        }
        dialect::configure(config.options_mut());
        if let Some(n) = options.target_partitions {
            config = config.with_target_partitions(n.max(1));
        }
        let runtime = RuntimeEnvBuilder::new()
            .with_object_store_registry(Arc::clone(&stores) as _)
            .with_memory_pool(memory_pool(memory_limit))
            .build_arc()?;
        let mut state = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(Arc::clone(&runtime))
            .with_default_features()
            .build();
        let json = crate::functions::json_scalar_functions();
        state.register_udf(dialect::divide())?;
        state.register_udf(crate::try_call::try_function())?;
        state.register_udf(crate::functions::union_cast::union_value())?;
        for f in json.iter().cloned().chain(compat::all_functions()) {
            state.register_udf(f)?;
        }
        for f in crate::functions::json_document_functions() {
            state.register_udf(f)?;
        }
        // `max`/`min` replace DataFusion's (same names), whose grouped floats are wrong.
        for f in crate::functions::json_aggregate::all_functions()
            .into_iter()
            .chain(compat::aggregate_functions())
            .chain(crate::functions::min_max::all_functions())
        {
            state.register_udaf(f)?;
        }
        let find = |name: &str| {
            json.iter()
                .find(|f| f.name() == name)
                .cloned()
                .ok_or_else(|| DataFusionError::Internal(format!("{name} is not registered")))
        };
        crate::json_each_rewrite::register(&mut state)?;
        state.register_function_rewrite(Arc::new(WideIntegerSum))?;
        state.register_function_rewrite(Arc::new(WideIntegerShifts))?;
        state.register_function_rewrite(Arc::new(FractionalDivision))?;
        state.register_function_rewrite(Arc::new(EnumCasts))?;
        state.register_function_rewrite(Arc::new(JsonCasts))?;
        state.register_function_rewrite(Arc::new(crate::functions::geometry::GeometryCasts))?;
        state.register_function_rewrite(Arc::new(crate::functions::union_cast::UnionCasts))?;
        state.register_function_rewrite(Arc::new(crate::functions::variant_cast::VariantCasts))?;
        state.add_analyzer_rule(Arc::new(crate::functions::geometry::GeometryInserts));
        state.add_analyzer_rule(Arc::new(crate::element_accesses::ElementAccessesInLambdas));
        state.add_analyzer_rule(Arc::new(crate::single_row_subqueries::SingleRowSubqueries));
        state.register_expr_planner(Arc::new(JsonOperatorPlanner::new(
            find(json_functions::JSON_GET)?,
            find(json_functions::JSON_GET_TEXT)?,
        )))?;
        for ext in ["ndjson", "json"] {
            state.register_file_format(Arc::new(NdjsonFormatFactory::new(ext)), true)?;
        }
        for kind in ["NDJSON", "JSON", "PARQUET", "CSV"] {
            state
                .table_factories_mut()
                .insert(kind.to_string(), Arc::new(ExternalTableFactory));
        }
        state
            .table_factories_mut()
            .insert("TESSERA".to_string(), Arc::new(TesseraTableFactory));
        let locations = Arc::new(LocationTableFactory::new());
        let catalogs = Arc::new(DynamicFileCatalog::new(
            Arc::clone(state.catalog_list()),
            Arc::clone(&locations) as _,
        ));
        let dot = crate::dot_access::JsonDotPlanner::new(find("json_extract")?);
        let planners = crate::dot_access::planners_first(dot, state.expr_planners());
        let rules = with_rule_before(
            state.physical_optimizers(),
            Arc::new(LambdaJoinFilter),
            crate::lambda_join_filter::RUNS_BEFORE,
        );
        let rules = with_rule_before(
            &rules,
            Arc::new(TableStatistics),
            crate::physical_optimizer::table_statistics::RUNS_BEFORE,
        );
        let state = SessionStateBuilder::new_from_existing(state)
            .with_physical_optimizer_rules(rules)
            .with_expr_planners(planners)
            .with_catalog_list(catalogs)
            .with_type_planner(Arc::new(SqlTypePlanner::new(Arc::clone(&user_types))))
            .with_optimizer_rule(Arc::new(AccessesBelowUnnest))
            .with_optimizer_rule(Arc::new(ElementAccesses))
            // After DataFusion's simplifier, which plans `percentile_cont(1.0)`/`(0.0)`
            // as its own `max`/`min` (see functions/min_max.rs).
            .with_optimizer_rule(Arc::new(
                crate::functions::min_max::TotalOrderMinMax::default(),
            ))
            .with_physical_optimizer_rule(Arc::new(IntegerTextMinMax))
            .with_physical_optimizer_rule(Arc::new(CastPushdown))
            .with_physical_optimizer_rule(Arc::new(GroupOnCodes))
            .with_physical_optimizer_rule(Arc::new(PushdownChoice::new(
                Arc::clone(&runtime),
                worker_token,
            )))
            .with_physical_optimizer_rule(Arc::new(SelectPushdown))
            .with_physical_optimizer_rule(Arc::new(BloomJoin))
            .with_physical_optimizer_rule(Arc::new(SelectTopK))
            .with_physical_optimizer_rule(Arc::new(SelectAggregation))
            // Last: it needs the scans' final filters and projections.
            .with_physical_optimizer_rule(Arc::new(crate::region_cache::RegionCacheRule))
            // After the choice, before the sub-plans are sent: their Bloom probes go too.
            .with_physical_optimizer_rule(Arc::new(BloomProbe))
            // After the region cache: a sub-plan the cache answers is not sent.
            .with_physical_optimizer_rule(Arc::new(WorkerPushdown))
            // Very last: the whole finished plan goes to the cluster.
            .with_physical_optimizer_rule(Arc::new(ClusterPlacement))
            .build();
        let ctx = SessionContext::new_with_state(state);
        locations.attach(ctx.state_weak_ref());
        Ok(Self {
            ctx,
            stores,
            rejects,
            user_types,
        })
    }

    /// Plans for a cluster once `tessera.cluster` is set: dynamic filters off, scalar
    /// subqueries as joins. Dynamic filters tie operators of one process together (a join's build side prunes its probe side's scan while it is
    /// built); a plan cut into stages on several executors cannot keep them, and
    /// Ballista's scheduler refuses to reorder the joins that carry them.
    fn plan_for_placement(&self) {
        if self.options().cluster.trim().is_empty() {
            return;
        }
        let state = self.ctx.state_ref();
        let mut state = state.write();
        let optimizer = &mut state.config_mut().options_mut().optimizer;
        optimizer.enable_dynamic_filter_pushdown = false;
        optimizer.enable_join_dynamic_filter_pushdown = false;
        optimizer.enable_topk_dynamic_filter_pushdown = false;
        optimizer.enable_aggregate_dynamic_filter_pushdown = false;
        // Ballista cannot cut `ScalarSubqueryExec` into stages: the subqueries become
        // joins, and `SingleRowSubqueries` refuses those that could repeat rows.
        optimizer.enable_physical_uncorrelated_scalar_subquery = false;
    }

    /// The DataFusion context, for registering tables or running plans directly.
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Plans one SQL statement (DDL and `SET` run at once).
    pub async fn sql(&self, sql: &str) -> Result<DataFrame> {
        let mut statements = self.parse(sql)?;
        match (statements.pop(), statements.is_empty()) {
            (Some(statement), true) => self.execute(statement).await,
            _ => Err(DataFusionError::Plan(
                "expected exactly one SQL statement".to_string(),
            )),
        }
    }

    /// Splits a script into statements with the session's SQL dialect (semicolons inside
    /// strings and comments do not split).
    pub fn parse(&self, script: &str) -> Result<Vec<Statement>> {
        let dialect = self.options().dialect;
        let script = dialect::prepare(script, dialect);
        let grammar = dialect::parser_dialect(dialect);
        let script = crate::user_types::prepare(&script, grammar);
        check_chains(&script, grammar)?;
        Ok(DFParser::parse_sql_with_dialect(&script, grammar)?.into())
    }

    /// Plans one parsed statement; DDL and `SET` take effect at once, queries run when
    /// the returned frame is collected or streamed.
    pub async fn execute(&self, mut statement: Statement) -> Result<DataFrame> {
        self.plan_for_placement();
        if let Some(name) = described_table(&statement)
            && let Some(provider) = self.ctx.table_provider(name).await.ok()
            && let Some(table) = provider.downcast_ref::<TesseraTable>()
        {
            return self.ctx.read_batch(tessera::describe(table).await?);
        }
        if let Some(done) = self.user_types.execute(&statement) {
            return done.and_then(|()| self.ctx.read_empty());
        }
        self.user_types.rewrite_structures(&mut statement);
        let duckdb = self.options().dialect == crate::options::SqlDialect::DuckDb;
        if duckdb {
            crate::describe::describe_statement(&mut statement)?;
        }
        let temporary = crate::temporary_tables::rewrite(&mut statement);
        output_names::name_outputs(&mut statement);
        group_keys::drop_cast_keys(&mut statement);
        dialect::rewrite(&mut statement, self.options().dialect);
        if duckdb {
            crate::struct_constructors::rewrite(&mut statement);
        }
        crate::functions::settings::rewrite_statement(&mut statement);
        if self.options().dialect == crate::options::SqlDialect::DuckDb
            && crate::functions::settings::is_ignored(&statement)
        {
            return self.ctx.read_empty();
        }
        crate::functions::union_cast::rewrite_statement(&mut statement);
        crate::json_each_rewrite::rewrite_statement(&mut statement)?;
        let reads =
            crate::datasource::read_json::resolve(&self.ctx, &mut statement, duckdb).await?;
        if duckdb && let Err(e) = crate::columns_star::expand(&self.ctx, &mut statement).await {
            reads.release(&self.ctx)?;
            return Err(e);
        }
        crate::dot_names::rewrite(&mut statement);
        crate::insert_casts::rewrite(&self.ctx, &mut statement).await?;
        let dialect = self.options().dialect;
        let relations = crate::describe::resolve(&self.ctx, &mut statement, dialect).await;
        let relations = match relations {
            Ok(relations) => relations,
            Err(e) => {
                reads.release(&self.ctx)?;
                return Err(e);
            }
        };
        let plan = crate::select_aliases::plan(&self.ctx.state(), statement, dialect).await;
        reads.release(&self.ctx)?;
        relations.release(&self.ctx)?;
        let plan = plan?;
        let plan = crate::json_each_rewrite::plan_laterals(plan)?;
        let plan = crate::table_statements::rewrite(plan)?;
        if let Some(frame) = self.delete_from_table(&plan).await? {
            return Ok(frame);
        }
        if let LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(create)) = &plan
            && !temporary
            && let Some(frame) = self.create_in_warehouse(create).await?
        {
            return Ok(frame);
        }
        if let Some(frame) = crate::table_statements::create_from_query(&self.ctx, &plan).await? {
            return Ok(frame);
        }
        if let Some(frame) = crate::table_statements::update(&self.ctx, &plan) {
            return Ok(frame);
        }
        let sets_memory_limit = sets(&plan, "tessera.memory_limit");
        let sets_dialect = sets(&plan, "tessera.dialect");
        let frame = self.ctx.execute_logical_plan(plan).await?;
        if sets_memory_limit {
            self.apply_memory_limit()?;
        }
        if sets_dialect {
            dialect::configure(self.ctx.state_ref().write().config_mut().options_mut());
        }
        Ok(frame)
    }

    /// Gives the runtime a memory pool of the current `tessera.memory_limit` (as
    /// DataFusion does for `SET datafusion.runtime.memory_limit`: a new runtime with
    /// the same stores, caches and disk manager).
    fn apply_memory_limit(&self) -> Result<()> {
        let pool = memory_pool(self.options().memory_limit);
        let state = self.ctx.state_ref();
        let mut state = state.write();
        let runtime = RuntimeEnvBuilder::from_runtime_env(state.runtime_env())
            .with_memory_pool(pool)
            .build_arc()?;
        *state = SessionStateBuilder::from(state.clone())
            .with_runtime_env(runtime)
            .build();
        Ok(())
    }

    /// `DELETE FROM` a Tessera table, planned from the statement's own predicates: the
    /// optimizer would move JSON accesses into projections the table cannot evaluate.
    async fn delete_from_table(&self, plan: &LogicalPlan) -> Result<Option<DataFrame>> {
        let LogicalPlan::Dml(dml) = plan else {
            return Ok(None);
        };
        if dml.op != WriteOp::Delete {
            return Ok(None);
        }
        let Some(source) = dml.target.downcast_ref::<DefaultTableSource>() else {
            return Ok(None);
        };
        let Some(table) = source.table_provider.downcast_ref::<TesseraTable>() else {
            return Ok(None);
        };
        let mut predicates = Vec::new();
        dml.input.apply(|node| {
            if let LogicalPlan::Filter(filter) = node {
                predicates.extend(split_conjunction(&filter.predicate).into_iter().cloned());
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        let state = self.ctx.state();
        let count = tessera::delete(&state, table, &dml.table_name, predicates).await?;
        Ok(Some(self.ctx.read_batch(count)?))
    }

    /// `CREATE TABLE name AS ...` as a Tessera table under `tessera.warehouse`, if set.
    async fn create_in_warehouse(&self, create: &CreateMemoryTable) -> Result<Option<DataFrame>> {
        let warehouse = self.options().warehouse;
        if warehouse.is_empty() {
            return Ok(None);
        }
        let name = create.name.table();
        if self.ctx.table_exist(create.name.clone())? {
            return match create.if_not_exists {
                true => Ok(Some(self.ctx.read_empty()?)),
                false => Err(DataFusionError::Plan(format!(
                    "table '{name}' already exists"
                ))),
            };
        }
        let fields = create.input.schema().fields();
        let location = format!("{}/{name}", warehouse.trim_end_matches('/'));
        let table = Arc::new(tessera::open_or_create(&self.ctx.state(), &location, fields).await?);
        self.ctx
            .register_table(create.name.clone(), Arc::clone(&table) as _)?;
        if matches!(create.input.as_ref(), LogicalPlan::EmptyRelation(_)) {
            return Ok(Some(self.ctx.read_empty()?));
        }
        let insert = LogicalPlanBuilder::insert_into(
            create.input.as_ref().clone(),
            create.name.clone(),
            provider_as_source(table),
            InsertOp::Append,
        )?
        .build()?;
        Ok(Some(self.ctx.execute_logical_plan(insert).await?))
    }

    /// Appends the NDJSON documents of `sources` to the Tessera table at `location`
    /// (created when missing) in one commit; `table` is that table, opened with
    /// [`Self::open_table`] so the caller can watch its progress.
    pub async fn ingest(
        &self,
        table: Arc<TesseraTable>,
        location: &str,
        sources: &[String],
    ) -> Result<IngestOutcome> {
        tessera::ingest(&self.ctx, &self.rejects, table, location, sources).await
    }

    /// The Tessera table at `location`, created with document column `j` when missing.
    pub async fn open_table(&self, location: &str) -> Result<Arc<TesseraTable>> {
        Ok(Arc::new(
            tessera::open_or_create(&self.ctx.state(), location, &Fields::empty()).await?,
        ))
    }

    /// Removes the data files of the table at `location` that no version references and
    /// that are older than `retention`.
    pub async fn vacuum(
        &self,
        location: &str,
        retention: std::time::Duration,
    ) -> Result<VacuumReport> {
        tessera::vacuum(&self.ctx.state(), location, retention).await
    }

    /// The current `tessera.*` settings.
    pub fn options(&self) -> TesseraOptions {
        self.ctx
            .state()
            .config_options()
            .extensions
            .get::<TesseraOptions>()
            .cloned()
            .unwrap_or_default()
    }

    /// What scans skipped since the last call (with `on_error = skip`).
    pub fn take_rejects(&self) -> RejectSummary {
        self.rejects.take()
    }

    /// One clear sentence for a failed statement.
    pub fn describe_error(&self, error: &DataFusionError) -> String {
        let limit = match self.ctx.runtime_env().memory_pool.memory_limit() {
            datafusion::execution::memory_pool::MemoryLimit::Finite(n) => Some(n as u64),
            _ => None,
        };
        errors::describe(error, self.stores.factory(), limit)
    }

    /// The store factory behind `s3://` and `file://` locations.
    pub fn stores(&self) -> &StoreFactory {
        self.stores.factory()
    }
}

/// Whether `statement` answers with rows (a query, EXPLAIN, SHOW) rather than changing
/// something: front ends describe the first kind before running it and run the second at
/// once, answering with a command tag.
pub fn returns_rows(statement: &Statement) -> bool {
    match statement {
        Statement::Statement(inner) => matches!(
            inner.as_ref(),
            ast::Statement::Query(_)
                | ast::Statement::Explain { .. }
                | ast::Statement::ExplainTable { .. }
                | ast::Statement::ShowVariable { .. }
                | ast::Statement::ShowVariables { .. }
                | ast::Statement::ShowTables { .. }
                | ast::Statement::ShowColumns { .. }
                | ast::Statement::ShowFunctions { .. }
        ),
        Statement::Explain(_) => true,
        _ => false,
    }
}

/// A pool that shares `limit` fairly among the operators that can spill (so one sort
/// cannot starve another into failing) and gives the rest what remains.
fn memory_pool(limit: MemoryLimit) -> Arc<dyn MemoryPool> {
    Arc::new(FairSpillPool::new(limit.bytes() as usize))
}

/// Whether `plan` sets or resets the setting `name`.
fn sets(plan: &LogicalPlan, name: &str) -> bool {
    let variable = match plan {
        LogicalPlan::Statement(logical_expr::Statement::SetVariable(set)) => &set.variable,
        LogicalPlan::Statement(logical_expr::Statement::ResetVariable(reset)) => &reset.variable,
        _ => return false,
    };
    variable.eq_ignore_ascii_case(name)
}

/// The table a `DESCRIBE name` statement names; a quoted location (`DESCRIBE
/// 's3://b/t'`) names the table there.
fn described_table(statement: &Statement) -> Option<TableReference> {
    let Statement::Statement(inner) = statement else {
        return None;
    };
    let ast::Statement::ExplainTable { table_name, .. } = inner.as_ref() else {
        return None;
    };
    let text = table_name.to_string();
    Some(
        match text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
            Some(location) => TableReference::bare(location),
            None => TableReference::from(text),
        },
    )
}
