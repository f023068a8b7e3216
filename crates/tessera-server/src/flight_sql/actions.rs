//! Flight RPC actions beyond Flight SQL's own: CancelFlightInfo (cancels a query by the
//! FlightInfo that announced it) and CloseSession (ends the client's session and frees
//! its slot at once).

use arrow_flight::sql::{Any, TicketStatementQuery};
use arrow_flight::{
    Action, ActionType, CancelFlightInfoRequest, CancelFlightInfoResult, CancelStatus, FlightInfo,
};
use bytes::Bytes;
use prost::Message;
use tonic::{Request, Status};

use super::clients::{Client, Clients};
use super::prepared::parse_handle;

const CANCEL_FLIGHT_INFO: &str = "CancelFlightInfo";
const CLOSE_SESSION: &str = "CloseSession";

/// Flight's CloseSessionResult (arrow-flight 59 does not generate the session messages).
#[derive(Clone, PartialEq, Message)]
struct CloseSessionResult {
    /// CloseSessionStatus: 1 is CLOSED.
    #[prost(int32, tag = "1")]
    status: i32,
}

/// The actions this module adds to Flight SQL's.
pub(super) fn types() -> Vec<ActionType> {
    vec![
        ActionType {
            r#type: CANCEL_FLIGHT_INFO.to_string(),
            description: "Cancels the query of a FlightInfo".to_string(),
        },
        ActionType {
            r#type: CLOSE_SESSION.to_string(),
            description: "Closes the session and frees its slot".to_string(),
        },
    ]
}

/// Runs the action of `request` for `client`; its result body.
pub(super) fn run(
    clients: &Clients,
    client: &Client,
    request: &Request<Action>,
) -> Result<Bytes, Status> {
    let action = request.get_ref();
    match action.r#type.as_str() {
        CANCEL_FLIGHT_INFO => {
            let request = CancelFlightInfoRequest::decode(action.body.clone()).map_err(|_| {
                Status::invalid_argument("the CancelFlightInfo request does not decode")
            })?;
            let info = request
                .info
                .ok_or_else(|| Status::invalid_argument("CancelFlightInfo names no FlightInfo"))?;
            cancel(client, &info)?;
            Ok(CancelFlightInfoResult::new(CancelStatus::Cancelled)
                .encode_to_vec()
                .into())
        }
        CLOSE_SESSION => {
            clients.log_out(request.metadata())?;
            Ok(CloseSessionResult { status: 1 }.encode_to_vec().into())
        }
        other => Err(Status::unimplemented(format!(
            "no action {other:?} on this server"
        ))),
    }
}

/// Cancels the queries whose tickets `info` holds.
pub(super) fn cancel(client: &Client, info: &FlightInfo) -> Result<(), Status> {
    let mut found = false;
    for ticket in info.endpoint.iter().filter_map(|e| e.ticket.as_ref()) {
        let query = Any::decode(ticket.ticket.clone())
            .ok()
            .and_then(|any| any.unpack::<TicketStatementQuery>().ok().flatten());
        if let Some(query) = query {
            client
                .queries()
                .cancel(parse_handle(&query.statement_handle)?)?;
            found = true;
        }
    }
    match found {
        true => Ok(()),
        false => Err(Status::not_found(
            "the FlightInfo holds no query of this server",
        )),
    }
}
