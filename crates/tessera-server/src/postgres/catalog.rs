//! The PostgreSQL catalog in each session: `pg_catalog` tables and the functions psql's
//! `\d` commands and BI tools call (`current_schema()`, `pg_table_is_visible`, …), and
//! a `version()` that answers like PostgreSQL's.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{Result, ScalarValue};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::planner::TypePlanner;
use datafusion::logical_expr::{ColumnarValue, Volatility, create_udf};
use datafusion::sql::sqlparser::ast;
use datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_pg_catalog::pg_catalog::oid_type_planner::PgOidTypePlanner;
use datafusion_pg_catalog::setup_pg_catalog;
use tessera_engine::TesseraSession;

/// Adds the PostgreSQL catalog to `session`.
pub(super) fn install(session: &TesseraSession) -> Result<()> {
    let context = session.context();
    let catalog = context
        .state()
        .config_options()
        .catalog
        .default_catalog
        .clone();
    let own_types = SessionStateBuilder::new_from_existing(context.state())
        .type_planner()
        .clone();
    setup_pg_catalog(context, &catalog, EmptyContextProvider).map_err(|e| *e)?;
    // The catalog replaced the session's type planner with its own; Tessera's types
    // (JSON, user types) must keep planning, so both are asked, Tessera's first.
    let types = Arc::new(BothTypes {
        own: own_types,
        postgres: PgOidTypePlanner,
    });
    let state = context.state_ref();
    let mut state = state.write();
    *state = SessionStateBuilder::new_from_existing(state.clone())
        .with_type_planner(types)
        .build();
    drop(state);
    context.register_udf(create_udf(
        "version",
        vec![],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(|_| {
            let version = format!(
                "PostgreSQL 16.6 (Tessera {}, Apache DataFusion)",
                env!("CARGO_PKG_VERSION")
            );
            Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(version))))
        }),
    ));
    Ok(())
}

/// Tessera's type planner, then PostgreSQL's type names (`regclass`, `pg_catalog.text`).
#[derive(Debug)]
struct BothTypes {
    own: Option<Arc<dyn TypePlanner>>,
    postgres: PgOidTypePlanner,
}

impl TypePlanner for BothTypes {
    fn plan_type_field(&self, sql_type: &ast::DataType) -> Result<Option<FieldRef>> {
        if let Some(own) = &self.own
            && let Some(field) = own.plan_type_field(sql_type)?
        {
            return Ok(Some(field));
        }
        self.postgres.plan_type_field(sql_type)
    }
}
