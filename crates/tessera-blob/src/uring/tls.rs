//! A TLS session over a ring-driven socket: the ring moves ciphertext between the
//! socket and this session's buffers, rustls decrypts and encrypts in between.

use std::io::BufRead;

use rustls::ClientConnection;
use rustls::pki_types::ServerName;

use super::error::HttpError;
use super::request::TlsTarget;

/// Ciphertext one TLS receive takes: eight full TLS records, so a bulk transfer costs
/// one completion per 128 KiB rather than one per record or TCP segment.
pub(super) const TLS_RECV_BUFFER: usize = 128 * 1024;
/// The most plaintext one TLS record may hold in rustls's buffers before the caller
/// reads it, plus the record's framing: what a body receive must leave out of its
/// `SO_RCVLOWAT` so a partially buffered record cannot make the kernel wait for bytes
/// that never come.
pub(super) const TLS_RECORD_SLACK: usize = 16 * 1024 + 2048;

/// Which operation a TLS exchange has outstanding, so its completion is read right.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum TlsOp {
    Send,
    Recv,
}

/// A TLS session and the ciphertext buffers the ring reads and writes.
pub(super) struct TlsState {
    pub(super) session: ClientConnection,
    /// Ciphertext to send, of which `out_sent` bytes are sent.
    pub(super) out: Vec<u8>,
    pub(super) out_sent: usize,
    /// Received ciphertext; `in_pos..in_len` is not yet given to rustls.
    pub(super) inbuf: Box<[u8]>,
    pub(super) in_pos: usize,
    pub(super) in_len: usize,
    pub(super) op: TlsOp,
    /// The server closed its side of the TCP connection.
    pub(super) eof: bool,
}

impl TlsState {
    pub(super) fn new(target: &TlsTarget) -> Result<Box<Self>, HttpError> {
        let session = ClientConnection::new(target.config.clone(), target.server_name.clone())
            .map_err(|e| HttpError::Tls {
                phase: "starting the session",
                reason: e.to_string(),
            })?;
        Ok(Box::new(Self {
            session,
            out: Vec::new(),
            out_sent: 0,
            inbuf: vec![0; TLS_RECV_BUFFER].into_boxed_slice(),
            in_pos: 0,
            in_len: 0,
            op: TlsOp::Recv,
            eof: false,
        }))
    }

    /// Gives rustls the received ciphertext it can take and decrypts it.
    pub(super) fn feed(&mut self, server: &ServerName<'_>) -> Result<(), HttpError> {
        let mut rest = &self.inbuf[self.in_pos..self.in_len];
        let taken = self
            .session
            .read_tls(&mut rest)
            .map_err(|e| HttpError::Tls {
                phase: "receiving",
                reason: e.to_string(),
            })?;
        self.in_pos += taken;
        self.process(server)
    }

    /// Tells rustls the server closed the connection.
    pub(super) fn close(&mut self, server: &ServerName<'_>) -> Result<(), HttpError> {
        self.eof = true;
        let mut nothing: &[u8] = &[];
        // A read of zero bytes is how rustls learns of the end of the stream.
        let _ = self.session.read_tls(&mut nothing);
        self.process(server)
    }

    fn process(&mut self, server: &ServerName<'_>) -> Result<(), HttpError> {
        match self.session.process_new_packets() {
            Ok(_) => Ok(()),
            Err(
                e @ (rustls::Error::InvalidCertificate(_)
                | rustls::Error::NoCertificatesPresented
                | rustls::Error::InvalidCertRevocationList(_)),
            ) => Err(HttpError::Certificate {
                server: server.to_str().into_owned(),
                reason: e.to_string(),
            }),
            Err(e) => Err(HttpError::Tls {
                phase: "decrypting",
                reason: e.to_string(),
            }),
        }
    }

    /// Whether the session holds nothing unread, so the next response starts clean.
    pub(super) fn is_clean(&mut self, server: &ServerName<'_>) -> bool {
        while self.in_pos < self.in_len {
            let before = self.in_pos;
            if self.feed(server).is_err() || self.in_pos == before {
                return false;
            }
        }
        !self.eof
            && self.out_sent == self.out.len()
            && matches!(self.session.reader().fill_buf(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// Readies a pooled session for the next request.
    pub(super) fn reset(&mut self) {
        self.out.clear();
        self.out_sent = 0;
        self.in_pos = 0;
        self.in_len = 0;
    }
}
