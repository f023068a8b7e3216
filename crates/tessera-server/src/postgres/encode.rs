//! What the client reads: columns in types the wire carries right, errors with a
//! SQLSTATE and the session's one-sentence description, and warnings about skipped
//! input lines.

use std::fmt::Debug;

use datafusion::error::DataFusionError;
use futures::{Sink, SinkExt};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;

use super::connection::Connection;

impl Connection {
    /// `error` as the client should read it: a DataFusion error becomes the session's
    /// one-sentence description with a SQLSTATE; pgwire's own errors stay as they are.
    pub(super) fn describe(&self, error: PgWireError) -> PgWireError {
        let PgWireError::ApiError(source) = error else {
            return error;
        };
        let Some(failure) = source.downcast_ref::<DataFusionError>() else {
            return PgWireError::ApiError(source);
        };
        let message = match self.parser.session() {
            Ok(session) => session.describe_error(failure),
            Err(_) => failure.to_string(),
        };
        PgWireError::UserError(Box::new(ErrorInfo::new(
            "ERROR".to_string(),
            sqlstate(failure).to_string(),
            message,
        )))
    }

    /// Sends a warning about the input lines the last statement skipped, if any
    /// (`tessera.on_error = 'skip'` skips, but never silently).
    pub(super) async fn report_rejects<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Ok(session) = self.parser.session() else {
            return Ok(());
        };
        let rejects = session.take_rejects();
        if rejects.count == 0 {
            return Ok(());
        }
        let warning = ErrorInfo::new(
            "WARNING".to_string(),
            "01000".to_string(),
            rejects.to_string(),
        );
        client
            .feed(PgWireBackendMessage::NoticeResponse(warning.into()))
            .await?;
        Ok(())
    }
}

/// The SQLSTATE of a failed statement.
fn sqlstate(error: &DataFusionError) -> &'static str {
    match error.find_root() {
        DataFusionError::SQL(..) => "42601",
        DataFusionError::SchemaError(..) => "42703",
        DataFusionError::Plan(message) if message.contains("not found") => "42P01",
        DataFusionError::Plan(_) => "42000",
        DataFusionError::NotImplemented(_) => "0A000",
        DataFusionError::Configuration(_) => "22023",
        DataFusionError::ResourcesExhausted(_) => "53200",
        DataFusionError::ArrowError(..) | DataFusionError::Execution(_) => "22000",
        DataFusionError::ObjectStore(_) | DataFusionError::IoError(_) => "58030",
        _ => "XX000",
    }
}
