//! Running statements: the simple protocol (a script, answered statement by statement)
//! and the extended one (Parse, Bind, Describe, Execute with parameters).

use std::fmt::Debug;
use std::sync::Arc;

use arrow_pg::datatypes::df::deserialize_parameters;
use arrow_pg::datatypes::{arrow_schema_to_pg_fields, encode_recordbatch};
use datafusion::arrow::array::{Array, UInt64Array};
use datafusion::dataframe::DataFrame;
use datafusion::sql::parser::Statement;
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{
    ExtendedQueryHandler, SimpleQueryHandler, send_execution_response, send_query_response,
    send_ready_for_query,
};
use pgwire::api::results::{QueryResponse, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::data::DataRow;
use pgwire::messages::extendedquery::Execute;
use pgwire::messages::response::{EmptyQueryResponse, TransactionStatus};
use pgwire::messages::simplequery::Query;
use pgwire::types::format::FormatOptions;
use tessera_engine::returns_rows;

use super::connection::Connection;
use super::statement::{
    Parser, Prepared, Transaction, api_error, command_tag, deallocated, is_client_setting,
    parameter_types, transaction, user_error,
};
use super::wire_types::{to_wire, wire_schema};

#[async_trait::async_trait]
impl SimpleQueryHandler for Connection {
    /// Runs a script statement by statement, each answered before the next one is
    /// planned (a statement may depend on what the previous one created); the first
    /// failure ends the script.
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        let statements = self.parser.parse(&query.query)?;
        if statements.is_empty() {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
        }
        for statement in statements {
            let response = self
                .run(client, statement, &Format::UnifiedText, None)
                .await?;
            match response {
                Response::Query(rows) => send_query_response(client, rows, true).await?,
                Response::Execution(tag)
                | Response::TransactionStart(tag)
                | Response::TransactionEnd(tag) => send_execution_response(client, tag).await?,
                _ => {}
            }
            self.report_rejects(client).await?;
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        send_ready_for_query(client, client.transaction_status()).await
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // `on_query` answers each statement as it runs; nothing calls this.
        Err(PgWireError::NotReadyForQuery)
    }
}

#[async_trait::async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Prepared;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        Arc::clone(&self.parser)
    }

    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self._on_execute(client, message).await?;
        self.report_rejects(client).await
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement = portal.statement.statement.statement.clone();
        let format = portal.result_column_format.clone();
        self.run(client, statement, &format, Some(portal)).await
    }
}

impl Connection {
    /// Runs one statement: transaction control is answered here, the rest goes through
    /// the session. Rows come back as a stream encoded in `format`; `portal` binds the
    /// statement's parameters.
    async fn run<C>(
        &self,
        client: &mut C,
        statement: Statement,
        format: &Format,
        portal: Option<&Portal<Prepared>>,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
    {
        if let Some(action) = transaction(&statement) {
            return Ok(end_or_begin(client, action));
        }
        if let Some(name) = deallocated(&statement) {
            // Drivers such as psycopg evict their prepared statements this way.
            let forgotten = self.named().deallocate(name.as_deref());
            for name in name.into_iter().chain(forgotten) {
                client.portal_store().rm_statement(&name);
            }
            return Ok(Response::Execution(Tag::new("DEALLOCATE")));
        }
        if client.transaction_status() == TransactionStatus::Error {
            return Err(user_error(
                "25P02",
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        let rows = returns_rows(&statement);
        let tag = command_tag(&statement);
        let setting = is_client_setting(&statement);
        let frame = match self.parser.plan(client, statement).await {
            Ok(frame) => frame,
            Err(_) if setting => return Ok(Response::Execution(Tag::new(&tag))),
            Err(e) => return Err(e),
        };
        let frame = match portal {
            Some(portal) => bind(frame, portal)?,
            None => frame,
        };
        if rows {
            let options = FormatOptions::from_client_metadata(client.metadata());
            return encode_rows(frame, format, options)
                .await
                .map(Response::Query);
        }
        complete(frame, &tag).await.map(Response::Execution)
    }
}

/// Begins or ends the (nominal) transaction.
fn end_or_begin<C: ClientInfo>(client: &mut C, action: Transaction) -> Response {
    let status = client.transaction_status();
    match action {
        Transaction::Begin => {
            client.set_transaction_status(status.to_in_transaction_state());
            Response::TransactionStart(Tag::new("BEGIN"))
        }
        Transaction::Commit | Transaction::Rollback => {
            client.set_transaction_status(TransactionStatus::Idle);
            // Committing a failed transaction rolls it back, and PostgreSQL says so.
            let tag = match action == Transaction::Commit && status != TransactionStatus::Error {
                true => "COMMIT",
                false => "ROLLBACK",
            };
            Response::TransactionEnd(Tag::new(tag))
        }
    }
}

/// Runs `frame`, its rows encoded in `format` as they come. The columns are those of
/// the executed plan, whose types may differ from the frame's logical schema (Tessera
/// sums integers into a wider type).
async fn encode_rows(
    frame: DataFrame,
    format: &Format,
    options: FormatOptions,
) -> PgWireResult<QueryResponse> {
    let batches = frame.execute_stream().await.map_err(api_error)?;
    let schema = wire_schema(&batches.schema());
    let fields = arrow_schema_to_pg_fields(&schema, format, Some(Arc::new(options)))?;
    let fields = Arc::new(fields);
    let columns = Arc::clone(&fields);
    let rows = batches
        .map(move |batch| {
            let batch = batch.and_then(|batch| to_wire(batch, &schema));
            let rows: Box<dyn Iterator<Item = PgWireResult<DataRow>> + Send + Sync> = match batch {
                Ok(batch) => encode_recordbatch(Arc::clone(&columns), batch),
                Err(e) => Box::new(std::iter::once(Err(api_error(e)))),
            };
            futures::stream::iter(rows)
        })
        .flatten();
    Ok(QueryResponse::new(fields, rows))
}

/// `frame` with the portal's parameter values bound to its placeholders.
fn bind(frame: DataFrame, portal: &Portal<Prepared>) -> PgWireResult<DataFrame> {
    if portal.parameter_len() == 0 {
        return Ok(frame);
    }
    let types = parameter_types(frame.logical_plan())?;
    let types: Vec<_> = types.iter().map(Option::as_ref).collect();
    let values = deserialize_parameters(portal, &types)?;
    frame.with_param_values(values).map_err(api_error)
}

/// Runs a statement that answers with a command tag; `INSERT`, `UPDATE`, `DELETE` and
/// `CREATE TABLE … AS` report how many rows they wrote.
async fn complete(frame: DataFrame, tag: &str) -> PgWireResult<Tag> {
    let mut batches = frame.execute_stream().await.map_err(api_error)?;
    let mut written = 0;
    while let Some(batch) = batches.next().await {
        let batch = batch.map_err(api_error)?;
        if let Some(counts) = batch
            .columns()
            .first()
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
        {
            written += counts.iter().flatten().sum::<u64>() as usize;
        }
    }
    Ok(match tag {
        "INSERT" => Tag::new(tag).with_oid(0).with_rows(written),
        "UPDATE" | "DELETE" => Tag::new(tag).with_rows(written),
        "CREATE TABLE" if written > 0 => Tag::new("SELECT").with_rows(written),
        _ => Tag::new(tag),
    })
}
