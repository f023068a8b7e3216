//! Cancel requests: a client opens a second connection and sends the backend key of
//! the connection whose running query it wants to stop.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use pgwire::api::cancel::CancelHandler;
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::SecretKey;
use tokio::sync::Notify;

/// The backend keys of authenticated connections; one entry per open session, so it is
/// bounded by the session limit.
#[derive(Default)]
pub(super) struct CancelRegistry {
    connections: Mutex<HashMap<i32, Registered>>,
}

struct Registered {
    secret: SecretKey,
    cancel: Arc<Notify>,
}

/// Removes a connection's key when the connection ends.
pub(super) struct CancelGuard {
    registry: Arc<CancelRegistry>,
    pid: i32,
}

impl CancelRegistry {
    /// Lets cancel requests carrying `pid` and `secret` wake `cancel`'s waiters.
    pub(super) fn register(
        self: &Arc<Self>,
        pid: i32,
        secret: SecretKey,
        cancel: Arc<Notify>,
    ) -> CancelGuard {
        let previous = self.lock().insert(pid, Registered { secret, cancel });
        // Process ids come from one counter, so two live connections never share one.
        assert!(previous.is_none(), "backend process id {pid} is in use");
        CancelGuard {
            registry: Arc::clone(self),
            pid,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i32, Registered>> {
        // The map is consistent after any panic (inserts and removals are single calls).
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.pid);
    }
}

#[async_trait]
impl CancelHandler for CancelRegistry {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let connections = self.lock();
        // A wrong secret is ignored without an answer, as PostgreSQL does: the sender
        // learns nothing about which keys exist.
        if let Some(registered) = connections.get(&request.pid)
            && registered.secret.eq_value(&request.secret_key)
        {
            // Only a query running now is cancelled; an idle connection is left alone.
            registered.cancel.notify_waiters();
        }
    }
}
