//! Logged-in clients: a bearer token maps to one open session, its planned and running
//! queries and its prepared statements. A session ends with CloseSession, when the
//! connection that logged it in closes, or after an idle timeout.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tonic::Status;
use tonic::metadata::MetadataMap;

use super::auth;
use super::prepared::PreparedStatements;
use super::queries::Queries;
use crate::{OpenSession, ServerError, Shared};

/// Identifies one accepted connection (a request extension of every call on it), so a
/// client's session can end when the connection that logged it in closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct ConnectionId(pub(super) u64);

/// One logged-in client.
pub(super) struct Client {
    /// Its session (and session slot).
    pub(super) open: OpenSession,
    connection: Option<ConnectionId>,
    last_used: Mutex<Instant>,
    queries: Mutex<Queries>,
    prepared: Mutex<PreparedStatements>,
}

impl Client {
    /// The client's planned and running queries.
    pub(super) fn queries(&self) -> MutexGuard<'_, Queries> {
        // A panic while holding the lock leaves the map consistent (every change is one
        // insert or remove), so a poisoned lock is still usable.
        self.queries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The client's prepared statements.
    pub(super) fn prepared(&self) -> MutexGuard<'_, PreparedStatements> {
        self.prepared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One sentence for a failed statement of this client.
    pub(super) fn error(&self, error: &datafusion::error::DataFusionError) -> Status {
        Status::invalid_argument(self.open.session.describe_error(error))
    }

    fn idle_since(&self) -> Instant {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn touch(&self) {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }
}

/// Every logged-in client by token; as many as there are session slots.
pub(super) struct Clients {
    shared: Arc<Shared>,
    by_token: Mutex<HashMap<String, Arc<Client>>>,
}

impl Clients {
    /// No clients yet.
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            by_token: Mutex::new(HashMap::new()),
        }
    }

    /// Checks the handshake's basic credentials and opens a session; its token.
    pub(super) fn log_in(
        &self,
        metadata: &MetadataMap,
        connection: Option<ConnectionId>,
    ) -> Result<String, Status> {
        auth::check_basic(metadata, &self.shared.credentials)?;
        let open = self.shared.sessions.open().map_err(|e| match e {
            ServerError::TooManySessions { .. } => Status::resource_exhausted(e.to_string()),
            e => Status::internal(e.to_string()),
        })?;
        let token = auth::new_token()?;
        let client = Arc::new(Client {
            open,
            connection,
            last_used: Mutex::new(Instant::now()),
            queries: Mutex::new(Queries::default()),
            prepared: Mutex::new(PreparedStatements::default()),
        });
        let previous = self.clients().insert(token.clone(), client);
        assert!(previous.is_none(), "random tokens do not repeat");
        Ok(token)
    }

    /// The client whose bearer token the call carries.
    pub(super) fn authenticate(&self, metadata: &MetadataMap) -> Result<Arc<Client>, Status> {
        let token = auth::bearer(metadata)?;
        let client = self.clients().get(token).cloned().ok_or_else(|| {
            Status::unauthenticated(
                "unknown or expired session token: log in again (sessions end when closed, \
                 when their connection closes, or after being idle)",
            )
        })?;
        client.touch();
        Ok(client)
    }

    /// Ends the session of the call's token (CloseSession).
    pub(super) fn log_out(&self, metadata: &MetadataMap) -> Result<(), Status> {
        let token = auth::bearer(metadata)?;
        let removed = self.clients().remove(token);
        removed
            .map(drop)
            .ok_or_else(|| Status::not_found("the session is already closed"))
    }

    /// Ends the sessions logged in over a connection that closed; their running
    /// streams, if any, keep the session until they end.
    pub(super) fn connection_closed(&self, connection: ConnectionId) {
        let closed = self.remove_where(|client| client.connection == Some(connection));
        drop(closed);
    }

    /// Ends the sessions idle for longer than `idle_timeout` and not streaming a result.
    pub(super) fn expire_idle(&self, idle_timeout: Duration) {
        let now = Instant::now();
        let expired = self.remove_where(|client| {
            // Only the map holds an idle client; a running stream holds another Arc.
            now.duration_since(client.idle_since()) > idle_timeout
                && client.queries().running() == 0
        });
        drop(expired);
    }

    /// Removes the clients that `matches`; they are dropped by the caller, outside the
    /// lock (closing a session frees its memory and may take a moment).
    fn remove_where(&self, matches: impl Fn(&Client) -> bool) -> Vec<Arc<Client>> {
        let mut clients = self.clients();
        let tokens: Vec<String> = clients
            .iter()
            .filter(|(_, client)| matches(client))
            .map(|(token, _)| token.clone())
            .collect();
        tokens
            .iter()
            .filter_map(|token| clients.remove(token))
            .collect()
    }

    fn clients(&self) -> MutexGuard<'_, HashMap<String, Arc<Client>>> {
        self.by_token.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
