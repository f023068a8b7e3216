//! A client's prepared statements: the SQL text and the parameters bound to it. Each
//! execution plans the text again, so it sees the session's settings and tables as
//! they are then.

use std::collections::HashMap;

use arrow::array::RecordBatch;
use tonic::Status;

/// Prepared statements a client may keep open at once.
pub(super) const PREPARED_MAX: usize = 64;

/// One prepared statement.
pub(super) struct Prepared {
    /// One SQL statement, its `?` placeholders numbered.
    pub(super) sql: String,
    /// The last parameter rows bound with DoPut.
    pub(super) parameters: Option<RecordBatch>,
}

/// A client's prepared statements by handle.
#[derive(Default)]
pub(super) struct PreparedStatements {
    by_handle: HashMap<u64, Prepared>,
    next_handle: u64,
}

impl PreparedStatements {
    /// Keeps `prepared`; its handle.
    pub(super) fn add(&mut self, prepared: Prepared) -> Result<u64, Status> {
        if self.by_handle.len() >= PREPARED_MAX {
            return Err(Status::resource_exhausted(format!(
                "too many prepared statements in this session: close some (at most \
                 {PREPARED_MAX} at once)"
            )));
        }
        let handle = self.next_handle;
        self.next_handle += 1;
        self.by_handle.insert(handle, prepared);
        Ok(handle)
    }

    /// The prepared statement `handle`.
    pub(super) fn get_mut(&mut self, handle: u64) -> Result<&mut Prepared, Status> {
        self.by_handle.get_mut(&handle).ok_or_else(unknown)
    }

    /// Closes the prepared statement `handle`.
    pub(super) fn remove(&mut self, handle: u64) -> Result<(), Status> {
        self.by_handle.remove(&handle).map(drop).ok_or_else(unknown)
    }
}

/// The handle in a ticket or command: the decimal number this server gave out.
pub(super) fn parse_handle(bytes: &[u8]) -> Result<u64, Status> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| Status::invalid_argument("the handle is not one this server gave out"))
}

/// The bytes of `handle` in a ticket or command.
pub(super) fn handle_bytes(handle: u64) -> bytes::Bytes {
    bytes::Bytes::from(handle.to_string())
}

fn unknown() -> Status {
    Status::not_found("no such prepared statement in this session: it was closed")
}
