//! DoGet of a planned query: a task runs it and hands batches to the response through a
//! small channel, so a slow client slows the query instead of filling memory. The task
//! stops when the client goes away (the response is dropped), when the query is
//! cancelled, or when the shutdown grace period ends; stopping drops DataFusion's stream,
//! which cancels the query's work.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::RecordBatch;
use arrow_flight::FlightData;
use arrow_flight::encode::{FlightDataEncoder, FlightDataEncoderBuilder};
use arrow_flight::error::FlightError;
use datafusion::physical_plan::execute_stream;
use futures::{Stream, StreamExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use super::clients::Client;
use super::queries::Planned;
use crate::Shutdown;

/// Batches computed ahead of what the client has read.
const BATCHES_AHEAD: usize = 2;

/// The response stream of DoGet.
pub(super) type FlightStream = Pin<Box<dyn Stream<Item = Result<FlightData, Status>> + Send>>;

type Batches = mpsc::Sender<Result<RecordBatch, FlightError>>;
type Deadline = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Streams the query `handle` of `client`; what scans skipped (with `on_error =
/// 'skip'`) is reported as the `app_metadata` of the last message.
pub(super) fn run(
    client: Arc<Client>,
    handle: u64,
    planned: Planned,
    cancelled: watch::Receiver<bool>,
    mut shutdown: Shutdown,
) -> FlightStream {
    let schema = planned.plan.schema();
    let (batches, receiver) = mpsc::channel(BATCHES_AHEAD);
    let (skipped, report) = oneshot::channel();
    let deadline: Deadline = Box::pin(async move { shutdown.deadline().await });
    let running = Running {
        client,
        handle,
        cancelled,
        deadline,
        batches,
    };
    tokio::spawn(running.produce(planned, skipped));
    let encoder = FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .build(ReceiverStream::new(receiver));
    Box::pin(WithReport {
        encoder,
        held: None,
        report,
    })
}

/// Why a running query stopped early.
enum Stop {
    /// The client dropped the response: nobody to tell.
    Gone,
    /// The client is told this.
    Failed(Status),
}

/// A query being streamed.
struct Running {
    client: Arc<Client>,
    handle: u64,
    cancelled: watch::Receiver<bool>,
    deadline: Deadline,
    batches: Batches,
}

impl Running {
    async fn produce(mut self, planned: Planned, skipped: oneshot::Sender<String>) {
        match self.stream(planned).await {
            Ok(()) => {
                let rejects = self.client.open.session.take_rejects();
                if rejects.count > 0 {
                    // The response may be gone already; then so is the client.
                    let _ = skipped.send(rejects.to_string());
                }
            }
            Err(Stop::Failed(status)) => {
                let _ = self.batches.send(Err(FlightError::from(status))).await;
            }
            Err(Stop::Gone) => {}
        }
        self.client.queries().finish(self.handle);
    }

    async fn stream(&mut self, planned: Planned) -> Result<(), Stop> {
        let mut stream = execute_stream(planned.plan, planned.task)
            .map_err(|e| Stop::Failed(self.client.error(&e)))?;
        loop {
            let next = self.unless_stopped(stream.next()).await?;
            let Some(batch) = next else {
                return Ok(());
            };
            let batch = batch.map_err(|e| Stop::Failed(self.client.error(&e)))?;
            let batches = self.batches.clone();
            self.unless_stopped(batches.send(Ok(batch)))
                .await?
                .map_err(|_| Stop::Gone)?;
        }
    }

    /// `work`'s output, unless the client goes away, the query is cancelled or the
    /// shutdown grace period ends first.
    async fn unless_stopped<F: Future>(&mut self, work: F) -> Result<F::Output, Stop> {
        tokio::select! {
            output = work => Ok(output),
            () = self.batches.closed() => Err(Stop::Gone),
            Ok(_) = self.cancelled.wait_for(|cancelled| *cancelled) => {
                Err(Stop::Failed(Status::cancelled("the query was cancelled")))
            }
            () = &mut self.deadline => Err(Stop::Failed(Status::unavailable(
                "the server shut down before the query finished",
            ))),
        }
    }
}

/// The encoded stream, holding back one message so that the skipped-lines report can
/// ride on the last one.
struct WithReport {
    encoder: FlightDataEncoder,
    held: Option<FlightData>,
    report: oneshot::Receiver<String>,
}

impl Stream for WithReport {
    type Item = Result<FlightData, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match this.encoder.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(data))) => {
                    if let Some(previous) = this.held.replace(data) {
                        return Poll::Ready(Some(Ok(previous)));
                    }
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e.into()))),
                Poll::Ready(None) => {
                    // The producer sent its report before closing the channel.
                    let report = this.report.try_recv().ok();
                    return Poll::Ready(this.held.take().map(|mut last| {
                        if let Some(report) = report {
                            last.app_metadata = report.into();
                        }
                        Ok(last)
                    }));
                }
            }
        }
    }
}
