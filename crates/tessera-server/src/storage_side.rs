//! `tessera serve --storage-side`: the near-data worker. One process beside the object
//! store runs the sub-plans clients send it (`tessera.pushdown = 'worker'`) over the
//! store's objects, read over its own short link, and streams their output back as
//! Arrow Flight; only that output crosses the client's link.
//!
//! After "Modularis: Modular Relational Analytics over Heterogeneous Distributed
//! Platforms", the storage side is one more platform the same plan runs on: a ticket is
//! a DataFusion physical plan (`datafusion-proto` plus Tessera's codec) and a partition
//! number, decoded in the worker's own Tessera session, so every function and scan
//! means here what it means to the client. The worker reads the files with its own
//! store credentials; plans carry none.
//!
//! Answers are Arrow IPC compressed with zstd: fewer bytes cross the link for a little
//! of the worker's time.
//!
//! Limits: at most `streams_max` partitions run at once; one more is refused as
//! "resource exhausted", which tells the client to compute that partition itself
//! (FlexPushdownDB's fallback). Batches are encoded as the client reads them, so a slow
//! client slows the plan instead of filling memory (HTTP/2 flow control); a client that
//! goes away drops its stream, which cancels the plan's work; the session's memory
//! limit bounds what a plan may hold.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use arrow_flight::encode::{DictionaryHandling, FlightDataEncoderBuilder};
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::{
    Action, ActionType, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo,
    HandshakeRequest, HandshakeResponse, PollInfo, PutResult, SchemaResult, Ticket,
};
use futures::{Stream, StreamExt};
use tessera_engine::TesseraSession;
use tessera_engine::physical_plan::answer_format::answer_options;
use tessera_engine::physical_plan::compact_views::compact_views;
use tessera_engine::physical_plan::worker_exec::{
    MESSAGE_BYTES_MAX, WorkerToken, decode_ticket, partitions_kept,
};
use tessera_engine::physical_plan::worker_spend::WorkerSpend;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status, Streaming};

use crate::ServerError;

/// What `tessera serve --storage-side` admits.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The token clients present.
    pub token: WorkerToken,
    /// Partitions running at once; more are refused so that clients compute them.
    pub streams_max: usize,
}

type Unsupported<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// The worker's Flight service: DoGet of a ticket, and nothing else.
struct Worker {
    session: TesseraSession,
    token: WorkerToken,
    streams: Arc<Semaphore>,
    streams_max: usize,
}

/// Serves sub-plans on `listener` in `session` (its stores read the objects) until
/// `stop` resolves.
pub async fn serve(
    listener: TcpListener,
    config: WorkerConfig,
    session: TesseraSession,
    stop: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    assert!(config.streams_max > 0, "a worker runs at least one stream");
    let worker = Worker {
        session,
        token: config.token,
        streams: Arc::new(Semaphore::new(config.streams_max)),
        streams_max: config.streams_max,
    };
    let service = FlightServiceServer::new(worker)
        .max_decoding_message_size(MESSAGE_BYTES_MAX)
        .max_encoding_message_size(MESSAGE_BYTES_MAX);
    tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener).map(no_delay), stop)
        .await
        .map_err(|e| ServerError::Protocol {
            protocol: "storage-side worker",
            message: e.to_string(),
        })
}

/// `accepted`, with Nagle's algorithm off: tonic sets it only on sockets it accepts
/// itself, and otherwise a reply's last small frame waits for the client's delayed ACK
/// (40 ms on Linux), on every sample and sub-plan a client sends. A socket that refuses
/// the option is still served, only slower.
fn no_delay(accepted: std::io::Result<TcpStream>) -> std::io::Result<TcpStream> {
    let stream = accepted?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

impl Worker {
    fn authenticate<T>(&self, request: &Request<T>) -> Result<(), Status> {
        let presented = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if self.token.admits(presented) {
            Ok(())
        } else {
            Err(Status::unauthenticated(
                "the worker token is missing or wrong (TESSERA_WORKER_TOKEN)",
            ))
        }
    }

    fn stream_slot(&self) -> Result<OwnedSemaphorePermit, Status> {
        Arc::clone(&self.streams).try_acquire_owned().map_err(|_| {
            Status::resource_exhausted(format!(
                "the worker runs {} streams at once",
                self.streams_max
            ))
        })
    }

    /// The Flight messages of `ticket`'s partition, holding `slot` until they end.
    fn answer(
        &self,
        ticket: &[u8],
        slot: OwnedSemaphorePermit,
    ) -> Result<<Self as FlightService>::DoGetStream, Status> {
        let ctx = partitions_kept(&self.session.context().task_ctx());
        let describe = |e: &datafusion::error::DataFusionError| self.session.describe_error(e);
        let (plan, partition) =
            decode_ticket(ticket, &ctx).map_err(|e| Status::invalid_argument(describe(&e)))?;
        let started = Instant::now();
        let batches = plan
            .execute(partition, ctx)
            .map_err(|e| Status::invalid_argument(describe(&e)))?;
        let schema = plan.schema();
        // Polled only once the batches have ended, when the plan's metrics are complete.
        let spend = futures::stream::once(async move {
            Ok(WorkerSpend::of(&plan, started.elapsed()).message())
        });
        let batches = batches.map(|batch| {
            batch
                .and_then(|b| compact_views(&b))
                .map_err(|e| FlightError::ExternalError(Box::new(e)))
        });
        let messages = FlightDataEncoderBuilder::new()
            .with_options(answer_options())
            .with_schema(schema)
            // The client's plan expects the dictionary types the plan has.
            .with_dictionary_handling(DictionaryHandling::Resend)
            .build(batches)
            .chain(spend)
            .map(move |message| {
                let _held = &slot;
                message.map_err(|e| match e {
                    FlightError::ExternalError(e) => Status::internal(e.to_string()),
                    other => Status::internal(other.to_string()),
                })
            });
        Ok(Box::pin(messages))
    }
}

#[tonic::async_trait]
impl FlightService for Worker {
    type HandshakeStream = Unsupported<HandshakeResponse>;
    type ListFlightsStream = Unsupported<FlightInfo>;
    type DoGetStream = Unsupported<FlightData>;
    type DoPutStream = Unsupported<PutResult>;
    type DoActionStream = Unsupported<arrow_flight::Result>;
    type ListActionsStream = Unsupported<ActionType>;
    type DoExchangeStream = Unsupported<FlightData>;

    async fn do_get(
        &self,
        request: Request<Ticket>,
    ) -> Result<Response<Self::DoGetStream>, Status> {
        self.authenticate(&request)?;
        let slot = self.stream_slot()?;
        let answer = self.answer(&request.into_inner().ticket, slot)?;
        Ok(Response::new(answer))
    }

    async fn handshake(
        &self,
        _request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        Err(unsupported("Handshake"))
    }

    async fn list_flights(
        &self,
        _request: Request<Criteria>,
    ) -> Result<Response<Self::ListFlightsStream>, Status> {
        Err(unsupported("ListFlights"))
    }

    async fn get_flight_info(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        Err(unsupported("GetFlightInfo"))
    }

    async fn poll_flight_info(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> Result<Response<PollInfo>, Status> {
        Err(unsupported("PollFlightInfo"))
    }

    async fn get_schema(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> Result<Response<SchemaResult>, Status> {
        Err(unsupported("GetSchema"))
    }

    async fn do_put(
        &self,
        _request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoPutStream>, Status> {
        Err(unsupported("DoPut"))
    }

    async fn do_exchange(
        &self,
        _request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoExchangeStream>, Status> {
        Err(unsupported("DoExchange"))
    }

    async fn do_action(
        &self,
        _request: Request<Action>,
    ) -> Result<Response<Self::DoActionStream>, Status> {
        Err(unsupported("DoAction"))
    }

    async fn list_actions(
        &self,
        _request: Request<Empty>,
    ) -> Result<Response<Self::ListActionsStream>, Status> {
        Err(unsupported("ListActions"))
    }
}

fn unsupported(call: &str) -> Status {
    Status::unimplemented(format!(
        "the storage-side worker answers DoGet of plan tickets only, not {call}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_connections_send_small_frames_at_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let _client = TcpStream::connect(address).await.unwrap();
        let mut accepted = TcpListenerStream::new(listener).map(no_delay);
        let stream = accepted.next().await.unwrap().unwrap();
        assert!(stream.nodelay().unwrap());
    }
}
