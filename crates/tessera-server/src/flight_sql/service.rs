//! The Flight SQL service: every call but the handshake authenticates its bearer token
//! and works in that client's session.

use std::pin::Pin;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use arrow::datatypes::{Schema, SchemaRef};
use arrow::ipc::writer::IpcWriteOptions;
use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::FlightService;
use arrow_flight::sql::metadata::{SqlInfoData, XdbcTypeInfoData};
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionCancelQueryRequest, ActionCancelQueryResult, ActionClosePreparedStatementRequest,
    ActionCreatePreparedStatementRequest, ActionCreatePreparedStatementResult, CommandGetCatalogs,
    CommandGetDbSchemas, CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables,
    CommandGetXdbcTypeInfo, CommandPreparedStatementQuery, CommandPreparedStatementUpdate,
    CommandStatementQuery, CommandStatementUpdate, DoPutPreparedStatementResult, ProstMessageExt,
    SqlInfo, TicketStatementQuery,
};
use arrow_flight::{
    Action, ActionType, FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest,
    HandshakeResponse, IpcMessage, SchemaAsIpc, Ticket,
};
use futures::{Stream, StreamExt, TryStreamExt, stream};
use prost::Message;
use tonic::{Request, Response, Status, Streaming};

use super::actions;
use super::clients::ConnectionId;
use super::clients::{Client, Clients};
use super::metadata;
use super::prepared::{Prepared, handle_bytes, parse_handle};
use super::statements;
use super::stream::{self as results, FlightStream};
use crate::Shutdown;

/// Parameter rows one DoPut may bind (they are held in memory).
const PARAMETER_ROWS_MAX: usize = 100_000;

type HandshakeStream = Pin<Box<dyn Stream<Item = Result<HandshakeResponse, Status>> + Send>>;
type DoGetResponse = Result<Response<<Service as FlightService>::DoGetStream>, Status>;

/// Tessera's Flight SQL service.
pub(super) struct Service {
    clients: Arc<Clients>,
    shutdown: Shutdown,
    sql_info: SqlInfoData,
    xdbc_types: XdbcTypeInfoData,
}

impl Service {
    /// A service for `clients`, whose streams end when `shutdown`'s grace period does.
    pub(super) fn new(clients: Arc<Clients>, shutdown: Shutdown) -> Result<Self, Status> {
        Ok(Self {
            clients,
            shutdown,
            sql_info: metadata::sql_info()?,
            xdbc_types: metadata::xdbc_types()?,
        })
    }

    fn client<T>(&self, request: &Request<T>) -> Result<Arc<Client>, Status> {
        self.clients.authenticate(request.metadata())
    }

    /// A FlightInfo whose one endpoint's ticket is `ticket`, for results of `schema`.
    fn flight_info(
        schema: &Schema,
        ticket: &impl ProstMessageExt,
        descriptor: FlightDescriptor,
    ) -> Result<Response<FlightInfo>, Status> {
        let endpoint =
            FlightEndpoint::new().with_ticket(Ticket::new(ticket.as_any().encode_to_vec()));
        let info = FlightInfo::new()
            .try_with_schema(schema)
            .map_err(|e| Status::internal(e.to_string()))?
            .with_endpoint(endpoint)
            .with_descriptor(descriptor)
            .with_ordered(true);
        Ok(Response::new(info))
    }

    /// The FlightInfo of a metadata command: its ticket is the command itself.
    fn metadata_info(
        &self,
        request: Request<FlightDescriptor>,
        command: &impl ProstMessageExt,
        schema: SchemaRef,
    ) -> Result<Response<FlightInfo>, Status> {
        self.client(&request)?;
        Self::flight_info(&schema, command, request.into_inner())
    }

    /// Keeps the plan of `sql` (with `parameters`) for a DoGet; its FlightInfo.
    async fn plan_statement(
        &self,
        client: &Client,
        sql: &str,
        parameters: Option<&RecordBatch>,
        descriptor: FlightDescriptor,
    ) -> Result<Response<FlightInfo>, Status> {
        let planned = statements::plan(client, sql, parameters).await?;
        let schema = planned.plan.schema();
        let handle = client.queries().add(planned)?;
        let ticket = TicketStatementQuery {
            statement_handle: handle_bytes(handle),
        };
        Self::flight_info(&schema, &ticket, descriptor)
    }
}

/// One metadata batch as a DoGet response.
fn one_batch(batch: RecordBatch) -> DoGetResponse {
    let stream = FlightDataEncoderBuilder::new()
        .with_schema(batch.schema())
        .build(stream::once(async { Ok(batch) }))
        .map_err(Status::from);
    Ok(Response::new(Box::pin(stream)))
}

/// The IPC bytes of `schema` (prepared statements describe their schemas so).
fn schema_bytes(schema: &Schema) -> Result<bytes::Bytes, Status> {
    let message: IpcMessage = SchemaAsIpc::new(schema, &IpcWriteOptions::default())
        .try_into()
        .map_err(|e: arrow::error::ArrowError| Status::internal(e.to_string()))?;
    Ok(message.0)
}

/// The parameter rows a DoPut sends, in one batch; `None` when it sends none.
async fn parameter_rows(
    request: Request<PeekableFlightDataStream>,
) -> Result<Option<RecordBatch>, Status> {
    let data = request.into_inner().map_err(FlightError::from);
    let mut batches = FlightRecordBatchStream::new_from_flight_data(data);
    let (mut collected, mut rows) = (Vec::new(), 0);
    while let Some(batch) = batches.next().await {
        let batch = batch?;
        rows += batch.num_rows();
        if rows > PARAMETER_ROWS_MAX {
            return Err(Status::invalid_argument(format!(
                "too many parameter rows: at most {PARAMETER_ROWS_MAX} per call"
            )));
        }
        collected.push(batch);
    }
    let Some(first) = collected.first() else {
        return Ok(None);
    };
    concat_batches(&first.schema(), &collected)
        .map(Some)
        .map_err(|e| Status::invalid_argument(format!("parameters: {e}")))
}

#[tonic::async_trait]
impl FlightSqlService for Service {
    type FlightService = Service;

    async fn do_handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<HandshakeStream>, Status> {
        let connection = request.extensions().get::<ConnectionId>().copied();
        let token = self.clients.log_in(request.metadata(), connection)?;
        let bearer = format!("Bearer {token}")
            .parse()
            .map_err(|_| Status::internal("a token is ASCII"))?;
        let reply = HandshakeResponse {
            protocol_version: 0,
            payload: token.into(),
        };
        let mut response: Response<HandshakeStream> =
            Response::new(Box::pin(stream::iter([Ok(reply)])));
        response.metadata_mut().insert("authorization", bearer);
        Ok(response)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let client = self.client(&request)?;
        self.plan_statement(&client, &query.query, None, request.into_inner())
            .await
    }

    async fn get_flight_info_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let client = self.client(&request)?;
        let handle = parse_handle(&query.prepared_statement_handle)?;
        let (sql, parameters) = {
            let mut prepared = client.prepared();
            let prepared = prepared.get_mut(handle)?;
            (prepared.sql.clone(), prepared.parameters.clone())
        };
        self.plan_statement(&client, &sql, parameters.as_ref(), request.into_inner())
            .await
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> DoGetResponse {
        let client = self.client(&request)?;
        let handle = parse_handle(&ticket.statement_handle)?;
        let (planned, cancelled) = client.queries().start(handle)?;
        let streamed: FlightStream =
            results::run(client, handle, planned, cancelled, self.shutdown.clone());
        Ok(Response::new(streamed))
    }

    async fn do_put_statement_update(
        &self,
        command: CommandStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let client = self.client(&request)?;
        statements::update(&client, &command.query, None).await
    }

    async fn do_put_prepared_statement_query(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<DoPutPreparedStatementResult, Status> {
        let client = self.client(&request)?;
        let handle = parse_handle(&query.prepared_statement_handle)?;
        let parameters = parameter_rows(request).await?;
        client.prepared().get_mut(handle)?.parameters = parameters;
        Ok(DoPutPreparedStatementResult {
            prepared_statement_handle: Some(query.prepared_statement_handle),
        })
    }

    async fn do_put_prepared_statement_update(
        &self,
        query: CommandPreparedStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let client = self.client(&request)?;
        let handle = parse_handle(&query.prepared_statement_handle)?;
        let sent = parameter_rows(request).await?;
        let (sql, bound) = {
            let mut prepared = client.prepared();
            let prepared = prepared.get_mut(handle)?;
            (prepared.sql.clone(), prepared.parameters.clone())
        };
        statements::update(&client, &sql, sent.or(bound).as_ref()).await
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let client = self.client(&request)?;
        let sql = statements::number_placeholders(&query.query);
        let (dataset, parameters) = statements::describe(&client, &sql).await?;
        let handle = client.prepared().add(Prepared {
            sql,
            parameters: None,
        })?;
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: handle_bytes(handle),
            dataset_schema: schema_bytes(&dataset)?,
            parameter_schema: schema_bytes(&parameters)?,
        })
    }

    async fn do_action_close_prepared_statement(
        &self,
        query: ActionClosePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<(), Status> {
        let client = self.client(&request)?;
        let handle = parse_handle(&query.prepared_statement_handle)?;
        client.prepared().remove(handle)
    }

    async fn do_action_cancel_query(
        &self,
        query: ActionCancelQueryRequest,
        request: Request<Action>,
    ) -> Result<ActionCancelQueryResult, Status> {
        let client = self.client(&request)?;
        let info = FlightInfo::decode(query.info)
            .map_err(|_| Status::invalid_argument("the FlightInfo to cancel does not decode"))?;
        actions::cancel(&client, &info)?;
        // CancelResult::Cancelled.
        Ok(ActionCancelQueryResult { result: 1 })
    }

    async fn do_action_fallback(
        &self,
        request: Request<Action>,
    ) -> Result<Response<<Self as FlightService>::DoActionStream>, Status> {
        let client = self.client(&request)?;
        let body = actions::run(&self.clients, &client, &request)?;
        let result = arrow_flight::Result { body };
        Ok(Response::new(Box::pin(stream::iter([Ok(result)]))))
    }

    async fn list_custom_actions(&self) -> Option<Vec<Result<ActionType, Status>>> {
        Some(actions::types().into_iter().map(Ok).collect())
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.into_builder().schema();
        self.metadata_info(request, &query, schema)
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<Ticket>,
    ) -> DoGetResponse {
        let client = self.client(&request)?;
        one_batch(metadata::catalogs(&client, query).await?)
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder().schema();
        self.metadata_info(request, &query, schema)
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<Ticket>,
    ) -> DoGetResponse {
        let client = self.client(&request)?;
        one_batch(metadata::db_schemas(&client, query).await?)
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder().schema();
        self.metadata_info(request, &query, schema)
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        request: Request<Ticket>,
    ) -> DoGetResponse {
        let client = self.client(&request)?;
        one_batch(metadata::tables(&client, query).await?)
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.into_builder().schema();
        self.metadata_info(request, &query, schema)
    }

    async fn do_get_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<Ticket>,
    ) -> DoGetResponse {
        self.client(&request)?;
        one_batch(metadata::table_types(query)?)
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder(&self.sql_info).schema();
        self.metadata_info(request, &query, schema)
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<Ticket>,
    ) -> DoGetResponse {
        self.client(&request)?;
        let batch = query.into_builder(&self.sql_info).build();
        one_batch(batch.map_err(|e| Status::internal(e.to_string()))?)
    }

    async fn get_flight_info_xdbc_type_info(
        &self,
        query: CommandGetXdbcTypeInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = self.xdbc_types.schema();
        self.metadata_info(request, &query, schema)
    }

    async fn do_get_xdbc_type_info(
        &self,
        query: CommandGetXdbcTypeInfo,
        request: Request<Ticket>,
    ) -> DoGetResponse {
        self.client(&request)?;
        let batch = query.into_builder(&self.xdbc_types).build();
        one_batch(batch.map_err(|e| Status::internal(e.to_string()))?)
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {
        // The server's SqlInfo is fixed when it starts (metadata::sql_info).
    }
}
