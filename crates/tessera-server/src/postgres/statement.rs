//! Statements as the connection sees them: parsed in the session's grammar (catalog
//! queries of psql and BI tools through the PostgreSQL compatibility rewrites), sorted
//! into those that return rows and those that answer with a command tag.

use std::sync::{Arc, OnceLock};

use arrow_pg::datatypes::{arrow_schema_to_pg_fields, into_pg_type};
use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::dataframe::DataFrame;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast;
use datafusion_pg_catalog::sql::PostgresCompatibilityParser;
use pgwire::api::portal::Format;
use pgwire::api::results::FieldInfo;
use pgwire::api::stmt::QueryParser;
use pgwire::api::{ClientInfo, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use tessera_engine::{TesseraSession, returns_rows};

use super::parameters::client_parameters;
use super::wire_types::wire_schema;
use crate::OpenSession;

/// The most parameters a statement may have (the protocol counts them in 16 bits).
const PARAMETERS_MAX: usize = u16::MAX as usize;

/// A parsed statement kept by Parse for Bind, Describe and Execute.
#[derive(Clone)]
pub(crate) struct Prepared {
    /// The statement, planned again at each Execute with the session's current settings.
    pub(super) statement: Statement,
    /// What Describe reports before anything runs, for statements that return rows.
    described: Option<Described>,
}

/// A row-returning statement's parameter and result types, from its plan at Parse.
#[derive(Clone)]
struct Described {
    /// The plan as written, whose placeholders carry the parameter types.
    plan: LogicalPlan,
    /// The columns as execution produces them (analysis may change a column's type:
    /// Tessera sums integers into a wider type, say).
    columns: SchemaRef,
}

/// Transaction control. Tessera has no transactions (every statement stands alone); the
/// protocol's transaction status is tracked so that clients that open them work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Transaction {
    Begin,
    Commit,
    Rollback,
}

/// Parses statements in the connection's session.
pub(crate) struct Parser {
    session: OnceLock<OpenSession>,
    catalog: Arc<PostgresCompatibilityParser>,
}

impl Parser {
    /// A parser whose session is set once the client authenticated.
    pub(super) fn new(catalog: Arc<PostgresCompatibilityParser>) -> Self {
        Self {
            session: OnceLock::new(),
            catalog,
        }
    }

    /// Gives the connection its session (once).
    pub(super) fn set_session(&self, session: OpenSession) -> Result<(), OpenSession> {
        self.session.set(session)
    }

    /// The connection's session.
    pub(super) fn session(&self) -> PgWireResult<&TesseraSession> {
        // Queries are only read after authentication, which sets the session.
        self.session
            .get()
            .map(|open| &open.session)
            .ok_or(PgWireError::NotReadyForQuery)
    }

    /// The statements of `sql`. Queries over the PostgreSQL catalog go through the
    /// rewrites that make psql's and BI tools' catalog queries plannable; when those
    /// cannot parse a script, the session's own grammar does.
    pub(super) fn parse(&self, sql: &str) -> PgWireResult<Vec<Statement>> {
        if mentions_catalog(sql)
            && let Ok(statements) = self.catalog.parse(sql)
        {
            return Ok(statements
                .into_iter()
                .map(|s| Statement::Statement(Box::new(s)))
                .collect());
        }
        self.session()?.parse(sql).map_err(api_error)
    }
}

impl Parser {
    /// Plans `statement` in the session (DDL and `SET` take effect now, queries run
    /// when the frame is streamed); `SHOW` of a PostgreSQL parameter is answered from
    /// what the client was told at startup.
    pub(super) async fn plan<C: ClientInfo>(
        &self,
        client: &C,
        statement: Statement,
    ) -> PgWireResult<DataFrame> {
        let session = self.session()?;
        let Some((name, value)) = client_parameter(client, &statement) else {
            return session.execute(statement).await.map_err(api_error);
        };
        let schema = Schema::new(vec![Field::new(name, DataType::Utf8, false)]);
        let value: ArrayRef = Arc::new(StringArray::from(vec![value]));
        let batch =
            RecordBatch::try_new(Arc::new(schema), vec![value]).map_err(|e| api_error(e.into()))?;
        session.context().read_batch(batch).map_err(api_error)
    }

    /// Plans `statement` without running it.
    async fn describe<C: ClientInfo>(
        &self,
        client: &C,
        statement: Statement,
    ) -> PgWireResult<Described> {
        let session = self.session()?;
        let frame = self.plan(client, statement).await?;
        let plan = frame.into_unoptimized_plan();
        // Optimizing runs the analysis that fixes the columns' final types; a plan the
        // optimizer cannot take before its parameters are bound keeps its own types.
        let columns = match session.context().state().optimize(&plan) {
            Ok(optimized) => wire_schema(optimized.schema().inner()),
            Err(_) => wire_schema(plan.schema().inner()),
        };
        Ok(Described { plan, columns })
    }
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let mut statements = self.parse(sql)?;
        let statement = match (statements.pop(), statements.is_empty()) {
            (None, _) => return Ok(None),
            (Some(statement), true) => statement,
            (Some(_), false) => {
                return Err(user_error(
                    "42601",
                    "a prepared statement holds one SQL statement; send the others separately",
                ));
            }
        };
        let described = match returns_rows(&statement) {
            true => Some(self.describe(client, statement.clone()).await?),
            false => None,
        };
        Ok(Some(Prepared {
            statement,
            described,
        }))
    }

    fn get_parameter_types(&self, prepared: &Prepared) -> PgWireResult<Vec<Type>> {
        let Some(described) = &prepared.described else {
            return Ok(Vec::new());
        };
        parameter_types(&described.plan)?
            .iter()
            .map(|t| t.as_ref().map_or(Ok(Type::UNKNOWN), into_pg_type))
            .collect()
    }

    fn get_result_schema(
        &self,
        prepared: &Prepared,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        match &prepared.described {
            Some(described) => arrow_schema_to_pg_fields(
                &described.columns,
                format.unwrap_or(&Format::UnifiedText),
                None,
            ),
            None => Ok(Vec::new()),
        }
    }
}

/// The types of `plan`'s parameters `$1`, `$2`, … in order (`None` where the plan does
/// not tell; a parameter the statement skips has no type either).
pub(super) fn parameter_types(plan: &LogicalPlan) -> PgWireResult<Vec<Option<DataType>>> {
    let types = plan.get_parameter_types().map_err(api_error)?;
    let mut ordered = Vec::new();
    for (name, data_type) in types {
        let Some(index) = name
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| (1..=PARAMETERS_MAX).contains(n))
        else {
            return Err(user_error(
                "42P02",
                &format!("parameter {name} is not one of $1 to ${PARAMETERS_MAX}"),
            ));
        };
        if ordered.len() < index {
            ordered.resize(index, None);
        }
        ordered[index - 1] = data_type;
    }
    Ok(ordered)
}

/// `SHOW` of a PostgreSQL parameter drivers ask for (`server_version`, `search_path`,
/// `transaction isolation level`): its name and value.
fn client_parameter<C: ClientInfo>(client: &C, statement: &Statement) -> Option<(String, String)> {
    let Statement::Statement(inner) = statement else {
        return None;
    };
    let ast::Statement::ShowVariable { variable } = inner.as_ref() else {
        return None;
    };
    let name = variable
        .iter()
        .map(|part| part.value.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(" ");
    let value = client_parameters(client)
        .into_iter()
        .find_map(|(known, value)| known.eq_ignore_ascii_case(&name).then_some(value))?;
    Some((name, value))
}

/// Whether `sql` reads the PostgreSQL catalog (or uses its types and functions);
/// string literals do not count, so a JSON path such as `'$.pg_id'` does not.
fn mentions_catalog(sql: &str) -> bool {
    let mut code = String::with_capacity(sql.len());
    for (i, part) in sql.split('\'').enumerate() {
        // Even parts are outside quotes ('' inside a literal splits into an empty part
        // between two odd ones, which keeps the parity right).
        if i % 2 == 0 {
            code.push_str(&part.to_ascii_lowercase());
            code.push(' ');
        }
    }
    ["pg_", "::reg", "information_schema"]
        .iter()
        .any(|word| code.contains(word))
}

/// The transaction control `statement` is, if any.
pub(super) fn transaction(statement: &Statement) -> Option<Transaction> {
    let Statement::Statement(inner) = statement else {
        return None;
    };
    match inner.as_ref() {
        ast::Statement::StartTransaction { .. } => Some(Transaction::Begin),
        ast::Statement::Commit { .. } => Some(Transaction::Commit),
        ast::Statement::Rollback { .. } => Some(Transaction::Rollback),
        _ => None,
    }
}

/// The prepared statement a `DEALLOCATE` names: `Some(None)` for `DEALLOCATE ALL`.
pub(super) fn deallocated(statement: &Statement) -> Option<Option<String>> {
    let Statement::Statement(inner) = statement else {
        return None;
    };
    let ast::Statement::Deallocate { name, .. } = inner.as_ref() else {
        return None;
    };
    let all = name.quote_style.is_none() && name.value.eq_ignore_ascii_case("ALL");
    Some((!all).then(|| name.value.clone()))
}

/// The command tag PostgreSQL answers `statement` with (`CREATE TABLE`, `INSERT`, …).
pub(super) fn command_tag(statement: &Statement) -> String {
    let text = statement.to_string();
    let mut words = text.split_whitespace().map(str::to_ascii_uppercase);
    let first = words.next().unwrap_or_default();
    match first.as_str() {
        "CREATE" | "DROP" | "ALTER" => {
            let object = words.find(|w| {
                matches!(
                    w.as_str(),
                    "TABLE" | "VIEW" | "SCHEMA" | "DATABASE" | "FUNCTION" | "TYPE" | "INDEX"
                )
            });
            match object {
                Some(object) => format!("{first} {object}"),
                None => first,
            }
        }
        _ => first,
    }
}

/// A client `SET` of a PostgreSQL setting Tessera has no use for (`extra_float_digits`,
/// `application_name`, …): accepted, as drivers send them when they connect.
pub(super) fn is_client_setting(statement: &Statement) -> bool {
    let text = statement.to_string();
    let mut words = text.split_whitespace();
    words.next().is_some_and(|w| w.eq_ignore_ascii_case("SET"))
        && words.next().is_some_and(|name| !name.contains('.'))
}

/// A DataFusion error, described in the connection loop with the session's sentence.
pub(super) fn api_error(error: DataFusionError) -> PgWireError {
    PgWireError::ApiError(Box::new(error))
}

/// An error with SQLSTATE `code`.
pub(super) fn user_error(code: &str, message: &str) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".to_string(),
        code.to_string(),
        message.to_string(),
    )))
}

#[cfg(test)]
mod tests {
    use datafusion::sql::parser::DFParser;

    use super::*;

    fn statement(sql: &str) -> Statement {
        let mut statements = DFParser::parse_sql(sql).expect("parses");
        statements.pop_front().expect("one statement")
    }

    #[test]
    fn catalog_queries_are_told_from_string_literals() {
        assert!(mentions_catalog("SELECT * FROM pg_catalog.pg_class"));
        assert!(mentions_catalog("SELECT 'bluesky'::regclass"));
        assert!(mentions_catalog("SELECT * FROM information_schema.tables"));
        assert!(!mentions_catalog("SELECT j->>'$.pg_id' FROM t"));
        assert!(!mentions_catalog("SELECT 'it''s pg_x' FROM t"));
        assert!(mentions_catalog("SELECT 'a''b', pg_backend_pid()"));
    }

    #[test]
    fn command_tags_name_the_object() {
        assert_eq!(
            command_tag(&statement("CREATE TABLE t (a INT)")),
            "CREATE TABLE"
        );
        assert_eq!(
            command_tag(&statement(
                "CREATE EXTERNAL TABLE t STORED AS CSV LOCATION 'x'"
            )),
            "CREATE TABLE"
        );
        assert_eq!(
            command_tag(&statement("DROP VIEW IF EXISTS v")),
            "DROP VIEW"
        );
        assert_eq!(
            command_tag(&statement("INSERT INTO t VALUES (1)")),
            "INSERT"
        );
        assert_eq!(command_tag(&statement("SET a.b = 1")), "SET");
    }

    #[test]
    fn statements_are_sorted_by_answer() {
        assert!(returns_rows(&statement("SELECT 1")));
        assert!(returns_rows(&statement("SHOW search_path")));
        assert!(returns_rows(&statement("EXPLAIN SELECT 1")));
        assert!(!returns_rows(&statement("INSERT INTO t VALUES (1)")));
        assert_eq!(transaction(&statement("BEGIN")), Some(Transaction::Begin));
        assert_eq!(
            transaction(&statement("ROLLBACK")),
            Some(Transaction::Rollback)
        );
        assert!(is_client_setting(&statement("SET extra_float_digits = 3")));
        assert!(!is_client_setting(&statement("SET datafusion.x = 3")));
        assert_eq!(deallocated(&statement("DEALLOCATE ALL")), Some(None));
        assert_eq!(
            deallocated(&statement("DEALLOCATE \"all\"")),
            Some(Some("all".into()))
        );
    }

    #[test]
    fn parameters_come_in_order_and_bounded() {
        let ctx = datafusion::prelude::SessionContext::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let plan = |sql: &str| {
            runtime
                .block_on(ctx.state().create_logical_plan(sql))
                .expect("plans")
        };
        let sql = "SELECT a FROM (VALUES (CAST(1 AS BIGINT), 'x')) t(a, b) WHERE b = $2 AND a > $1";
        let types = parameter_types(&plan(sql)).expect("types");
        assert_eq!(types, vec![Some(DataType::Int64), Some(DataType::Utf8)]);
        assert_eq!(parameter_types(&plan("SELECT $3")).expect("types").len(), 3);
        assert!(parameter_types(&plan("SELECT $70000")).is_err());
    }
}
