//! An io_uring HTTP/1.1 event loop: one retriever thread owns one ring and many TCP
//! connections, so hundreds of outstanding requests cost no thread each.
//!
//! Every request is a small state machine (connect, send, receive headers, receive
//! body). The loop drains new requests from a bounded channel, queues their
//! operations, submits them in one batch and reaps all completions before sleeping
//! again. Bodies with a known `Content-Length` are received straight into one
//! preallocated buffer, so the body is never copied after `recv`.
//!
//! HTTPS runs on the same sockets: a TLS exchange receives ciphertext into a
//! per-connection buffer, hands it to rustls (`read_tls`, `process_new_packets`) and
//! copies the decrypted plaintext into the head or body buffer (rustls's buffered API
//! copies records into its own buffers on the way; kernel TLS, which would receive
//! plaintext in place, is not assumed to be available); outgoing plaintext is
//! encrypted into a send buffer (`write_tls`) that the ring sends.
//! TLS sessions stay with their sockets in the keep-alive pool.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use io_uring::{IoUring, opcode, types};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};
use tokio::sync::oneshot;

/// Submission queue entries per ring: the most operations one batch may queue.
const RING_ENTRIES: u32 = 256;
/// Requests one retriever keeps in flight; more wait in the channel.
const MAX_IN_FLIGHT: usize = 128;
/// Requests waiting in the channel before senders are refused.
const CHANNEL_CAPACITY: usize = 1024;
/// Largest response head accepted; S3 heads are a few hundred bytes.
const MAX_HEAD: usize = 16 * 1024;
/// Largest body without a `Content-Length` (error bodies); bounded so a server cannot
/// make the client allocate without limit.
const MAX_UNSIZED_BODY: usize = 1024 * 1024;
/// Idle keep-alive connections kept per endpoint.
const MAX_IDLE_PER_ENDPOINT: usize = 64;
/// Bytes a body receive waits for in the socket before the kernel wakes the ring
/// (`SO_RCVLOWAT`): one completion per this much data instead of per TCP segment,
/// while a steady transfer still completes one at least this often, so the stall
/// timeout sees progress on links down to `LOW_WATER / stall_timeout`.
const LOW_WATER: usize = 512 * 1024;
/// Bodies at least this large are received into pooled buffers; smaller ones are cheap
/// to allocate.
const POOLED_MIN: usize = 256 * 1024;
/// Most bytes of idle buffers a retriever keeps for reuse.
const POOL_BYTES: usize = 256 * 1024 * 1024;
/// Most idle buffers a retriever keeps for reuse.
const POOL_BUFFERS: usize = 64;
/// How often the loop wakes to check deadlines when nothing completes.
const TICK: Duration = Duration::from_millis(20);
/// `user_data` of the wake-up read on the event fd.
const WAKE_TOKEN: u64 = u64::MAX;
/// Ciphertext one TLS receive takes: eight full TLS records, so a bulk transfer costs
/// one completion per 128 KiB rather than one per record or TCP segment.
const TLS_RECV_BUFFER: usize = 128 * 1024;
/// The most plaintext one TLS record may hold in rustls's buffers before the caller
/// reads it, plus the record's framing: what a body receive must leave out of its
/// `SO_RCVLOWAT` so a partially buffered record cannot make the kernel wait for bytes
/// that never come.
const TLS_RECORD_SLACK: usize = 16 * 1024 + 2048;

/// Where to speak TLS to and with which settings.
#[derive(Debug, Clone)]
pub struct TlsTarget {
    /// The shared client configuration (trusted CAs, protocol versions).
    pub config: Arc<ClientConfig>,
    /// The name the server's certificate must carry (a DNS name or an IP address).
    pub server_name: ServerName<'static>,
}

/// One HTTP/1.1 request for the event loop.
#[derive(Debug)]
pub struct HttpRequest {
    /// The server to connect to.
    pub addr: SocketAddr,
    /// The request line and headers, ending in the blank line.
    pub head: Vec<u8>,
    /// The body, sent after the head.
    pub body: Bytes,
    /// Whether the response carries no body whatever its headers say (HEAD).
    pub head_only: bool,
    /// After this long the request fails with [`HttpError::TimedOut`].
    pub timeout: Duration,
    /// After this long without any byte sent or received the request fails with
    /// [`HttpError::Stalled`]: a stalled connection is detected long before `timeout`,
    /// which must allow for slow but steady large transfers.
    pub stall_timeout: Duration,
    /// Whether to open a new connection instead of reusing an idle one: a retry after
    /// a transport failure must not land on another connection of a failing path.
    pub fresh_connection: bool,
    /// Set when the first response byte arrives, so a hedging caller can tell a request
    /// that has not started answering from one that is still streaming.
    pub first_byte_seen: Option<Arc<AtomicBool>>,
    /// TLS settings for an `https` endpoint; `None` speaks plain HTTP.
    pub tls: Option<TlsTarget>,
}

/// Idle connections are pooled per server address and TLS name: a TLS session is
/// bound to the name its certificate was checked for.
type PoolKey = (SocketAddr, Option<ServerName<'static>>);

impl HttpRequest {
    fn pool_key(&self) -> PoolKey {
        (self.addr, self.tls.as_ref().map(|t| t.server_name.clone()))
    }
}

/// A complete HTTP response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Headers with lower-case names.
    pub headers: Vec<(String, String)>,
    /// The body, exactly `Content-Length` bytes when the server sent that header.
    pub body: Bytes,
    /// Time from admission to the first response byte.
    pub first_byte: Duration,
    /// Time from admission to the last response byte.
    pub elapsed: Duration,
    /// The TCP maximum segment size of a connection opened for this request (read
    /// once, after connecting; `None` on a reused connection): above 1500 bytes the
    /// path carries jumbo frames, which seed 002's MTU-based resolver prefers.
    pub new_connection_segment: Option<u32>,
}

impl HttpResponse {
    /// The first header named `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request failed in transport (HTTP statuses are not errors here).
#[derive(Debug, Clone, thiserror::Error)]
pub enum HttpError {
    /// The TCP connection could not be established.
    #[error("connection to {addr} failed: {reason}")]
    Connect {
        /// The server address.
        addr: SocketAddr,
        /// The operating system's reason (for example "connection refused").
        reason: String,
    },
    /// The connection broke while sending or receiving.
    #[error("connection reset while {phase}: {reason}")]
    Io {
        /// What the request was doing.
        phase: &'static str,
        /// The operating system's reason.
        reason: String,
    },
    /// The server closed the connection before the whole body arrived.
    #[error("truncated response: received {received} of {expected} body bytes")]
    Truncated {
        /// Body bytes received.
        received: usize,
        /// Body bytes announced by `Content-Length`.
        expected: usize,
    },
    /// The response could not be parsed.
    #[error("malformed HTTP response: {0}")]
    Malformed(String),
    /// The request did not finish within its timeout.
    #[error("request timed out after {0:?}")]
    TimedOut(Duration),
    /// No byte moved for the stall timeout.
    #[error("request timed out: no data moved for {0:?}")]
    Stalled(Duration),
    /// The caller stopped waiting (a hedged duplicate finished first).
    #[error("request cancelled by the caller")]
    Cancelled,
    /// The server's TLS certificate is not trusted for its name; retrying cannot help.
    #[error("the TLS certificate of {server} is not trusted: {reason}")]
    Certificate {
        /// The name the certificate was checked for.
        server: String,
        /// rustls's reason (for example "UnknownIssuer").
        reason: String,
    },
    /// The TLS session failed (a protocol error or a corrupted record).
    #[error("TLS failure while {phase}: {reason}")]
    Tls {
        /// What the request was doing.
        phase: &'static str,
        /// rustls's reason.
        reason: String,
    },
    /// The event loop is not running (it failed to start or shut down).
    #[error("the io_uring retriever is not running: {0}")]
    Unavailable(String),
}

impl HttpError {
    /// Whether the request certainly did not reach the server (the connection never
    /// opened), so that sending it again cannot apply it twice.
    pub fn never_sent(&self) -> bool {
        matches!(self, HttpError::Connect { .. })
    }

    /// Whether trying again on a fresh connection may succeed.
    pub fn is_transient(&self) -> bool {
        !matches!(
            self,
            HttpError::Malformed(_)
                | HttpError::Unavailable(_)
                | HttpError::Cancelled
                | HttpError::Certificate { .. }
        )
    }
}

type Reply = oneshot::Sender<Result<HttpResponse, HttpError>>;

/// A handle to a retriever thread. Cloning shares the thread.
#[derive(Clone)]
pub struct Retriever {
    inner: Arc<Handle>,
}

struct Handle {
    sender: SyncSender<(HttpRequest, Reply)>,
    wake: OwnedFd,
}

impl std::fmt::Debug for Retriever {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retriever").finish_non_exhaustive()
    }
}

impl Retriever {
    /// Starts a retriever thread with its own ring.
    pub fn start() -> std::io::Result<Self> {
        let ring = IoUring::new(RING_ENTRIES)?;
        // SAFETY: eventfd returns a new descriptor or -1, checked below.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor owned by nobody else.
        let wake = unsafe { OwnedFd::from_raw_fd(raw) };
        let loop_wake = wake.try_clone()?;
        let (sender, receiver) = std::sync::mpsc::sync_channel(CHANNEL_CAPACITY);
        std::thread::Builder::new()
            .name("tessera-retriever".into())
            .spawn(move || EventLoop::new(ring, loop_wake, receiver).run())?;
        Ok(Self {
            inner: Arc::new(Handle { sender, wake }),
        })
    }

    /// Sends `request` and waits for its response without blocking the async runtime.
    pub async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let (tx, rx) = oneshot::channel();
        let mut pending = (request, tx);
        // The channel is bounded: when it is full the caller waits (asynchronously) for
        // room instead of queueing without limit.
        loop {
            match self.inner.sender.try_send(pending) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) => {
                    pending = back;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                Err(TrySendError::Disconnected(_)) => {
                    return Err(HttpError::Unavailable("the thread exited".into()));
                }
            }
        }
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to the event fd this handle owns.
        unsafe {
            libc::write(
                self.inner.wake.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            );
        }
        rx.await
            .unwrap_or_else(|_| Err(HttpError::Unavailable("the thread exited".into())))
    }
}

/// Where a request is in its life.
enum Phase {
    Connecting,
    Sending { sent: usize },
    Head { filled: usize },
    Body { filled: usize },
}

/// A keep-alive connection: the socket and, for HTTPS, its TLS session.
struct Conn {
    socket: OwnedFd,
    tls: Option<Box<TlsState>>,
}

/// Which operation a TLS exchange has outstanding, so its completion is read right.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TlsOp {
    Send,
    Recv,
}

/// A TLS session and the ciphertext buffers the ring reads and writes.
struct TlsState {
    session: ClientConnection,
    /// Ciphertext to send, of which `out_sent` bytes are sent.
    out: Vec<u8>,
    out_sent: usize,
    /// Received ciphertext; `in_pos..in_len` is not yet given to rustls.
    inbuf: Box<[u8]>,
    in_pos: usize,
    in_len: usize,
    op: TlsOp,
    /// The server closed its side of the TCP connection.
    eof: bool,
}

impl TlsState {
    fn new(target: &TlsTarget) -> Result<Box<Self>, HttpError> {
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
    fn feed(&mut self, server: &ServerName<'_>) -> Result<(), HttpError> {
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
    fn close(&mut self, server: &ServerName<'_>) -> Result<(), HttpError> {
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
    fn is_clean(&mut self, server: &ServerName<'_>) -> bool {
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
    fn reset(&mut self) {
        self.out.clear();
        self.out_sent = 0;
        self.in_pos = 0;
        self.in_len = 0;
    }
}

/// What a TLS exchange does next.
enum TlsStep {
    /// Submit this operation and wait for it.
    Submit(io_uring::squeue::Entry),
    /// Progress was made without the kernel; look again.
    Again,
    /// The response is complete.
    Done,
    /// The exchange failed.
    Fail(HttpError),
}

struct Exchange {
    request: HttpRequest,
    reply: Option<Reply>,
    socket: OwnedFd,
    /// The TLS session of an HTTPS exchange.
    tls: Option<Box<TlsState>>,
    /// Whether the socket came from the pool: a failure before any response byte
    /// then means the server closed an idle connection, and one retry is safe.
    reused: bool,
    phase: Phase,
    /// Operations submitted and not yet completed; the slot is freed only at zero so
    /// the kernel never writes into a freed buffer.
    outstanding: u32,
    started: Instant,
    deadline: Instant,
    last_progress: Instant,
    first_byte: Option<Instant>,
    outbound: Vec<u8>,
    head_buf: Vec<u8>,
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    body_len: Option<usize>,
    keep_alive: bool,
    /// The TCP maximum segment size, read when this exchange opened the connection.
    segment: Option<u32>,
    /// The socket's `SO_RCVLOWAT`; 1 (the default) outside sized bodies.
    low_water: usize,
    failed: Option<HttpError>,
    sockaddr: libc::sockaddr_in6,
}

struct EventLoop {
    ring: IoUring,
    wake: OwnedFd,
    wake_buf: Box<u64>,
    receiver: Receiver<(HttpRequest, Reply)>,
    slots: Vec<Option<Box<Exchange>>>,
    free: Vec<usize>,
    idle: HashMap<PoolKey, Vec<Conn>>,
    disconnected: bool,
    pool: Arc<BufferPool>,
}

impl EventLoop {
    fn new(ring: IoUring, wake: OwnedFd, receiver: Receiver<(HttpRequest, Reply)>) -> Self {
        Self {
            ring,
            wake,
            wake_buf: Box::new(0),
            receiver,
            slots: (0..MAX_IN_FLIGHT).map(|_| None).collect(),
            free: (0..MAX_IN_FLIGHT).rev().collect(),
            idle: HashMap::new(),
            disconnected: false,
            pool: Arc::default(),
        }
    }

    fn run(mut self) {
        self.post_wake_read();
        loop {
            self.admit();
            if self.disconnected && self.free.len() == MAX_IN_FLIGHT {
                return;
            }
            let ts = types::Timespec::new()
                .sec(TICK.as_secs())
                .nsec(TICK.subsec_nanos());
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(_) => return,
            }
            let completions: Vec<(u64, i32)> = self
                .ring
                .completion()
                .map(|c| (c.user_data(), c.result()))
                .collect();
            for (token, result) in completions {
                if token == WAKE_TOKEN {
                    self.post_wake_read();
                } else {
                    self.complete(token as usize, result);
                }
            }
            self.expire();
        }
    }

    fn post_wake_read(&mut self) {
        let entry = opcode::Read::new(
            types::Fd(self.wake.as_raw_fd()),
            (&mut *self.wake_buf as *mut u64).cast(),
            8,
        )
        .build()
        .user_data(WAKE_TOKEN);
        // Without the wake-up read the loop still polls every TICK, so a refused push
        // only delays new requests.
        let _ = self.push(entry);
    }

    /// Queues `entry`; false when the kernel refuses the batch that would make room.
    fn push(&mut self, entry: io_uring::squeue::Entry) -> bool {
        // SAFETY: every buffer an entry points at lives in a boxed exchange (or the
        // boxed wake buffer) that is not freed while the operation is outstanding.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            // The queue is full: hand the batch to the kernel to make room.
            if self.ring.submit().is_err() {
                return false;
            }
        }
        true
    }

    /// Takes new requests from the channel while there are free slots.
    fn admit(&mut self) {
        while let Some(&slot) = self.free.last() {
            let (request, reply) = match self.receiver.try_recv() {
                Ok(item) => item,
                Err(std::sync::mpsc::TryRecvError::Empty) => return,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    self.disconnected = true;
                    return;
                }
            };
            self.free.pop();
            self.start(slot, request, reply);
        }
    }

    fn start(&mut self, slot: usize, request: HttpRequest, reply: Reply) {
        let pooled = if request.fresh_connection {
            None
        } else {
            self.idle.get_mut(&request.pool_key()).and_then(|v| v.pop())
        };
        let reused = pooled.is_some();
        let opened = match pooled {
            Some(conn) => Ok(conn),
            None => new_socket()
                .map_err(|e| HttpError::Connect {
                    addr: request.addr,
                    reason: e.to_string(),
                })
                .and_then(|socket| {
                    let tls = request.tls.as_ref().map(TlsState::new).transpose()?;
                    Ok(Conn { socket, tls })
                }),
        };
        let Conn { socket, mut tls } = match opened {
            Ok(conn) => conn,
            Err(error) => {
                let _ = reply.send(Err(error));
                self.free.push(slot);
                return;
            }
        };
        if let Some(tls) = tls.as_mut() {
            tls.reset();
        }
        let mut outbound = Vec::with_capacity(request.head.len() + request.body.len());
        outbound.extend_from_slice(&request.head);
        outbound.extend_from_slice(&request.body);
        let now = Instant::now();
        let deadline = now + request.timeout;
        let exchange = Box::new(Exchange {
            sockaddr: to_sockaddr(&request.addr),
            request,
            reply: Some(reply),
            socket,
            tls,
            reused,
            phase: if reused {
                Phase::Sending { sent: 0 }
            } else {
                Phase::Connecting
            },
            outstanding: 0,
            started: now,
            deadline,
            last_progress: now,
            first_byte: None,
            outbound,
            head_buf: vec![0; MAX_HEAD],
            status: 0,
            headers: Vec::new(),
            body: Vec::new(),
            body_len: None,
            keep_alive: true,
            low_water: 1,
            segment: None,
            failed: None,
        });
        self.slots[slot] = Some(exchange);
        self.issue(slot);
    }

    /// Queues the operation the exchange's phase needs next.
    fn issue(&mut self, slot: usize) {
        let Some(ex) = self.slots[slot].as_mut() else {
            return;
        };
        if ex.tls.is_some() {
            self.drive_tls(slot);
            return;
        }
        let entry = plain_entry(ex);
        self.submit(slot, entry);
    }

    /// Moves a TLS exchange on until it needs the kernel, completes or fails. Every
    /// turn of the loop consumes ciphertext, produces plaintext or queues ciphertext,
    /// so it ends.
    fn drive_tls(&mut self, slot: usize) {
        loop {
            let Some(ex) = self.slots[slot].as_mut() else {
                return;
            };
            match tls_step(ex, &self.pool) {
                TlsStep::Submit(entry) => return self.submit(slot, entry),
                TlsStep::Again => {}
                TlsStep::Done => return self.finish(slot),
                TlsStep::Fail(error) => return self.fail(slot, error),
            }
        }
    }

    /// Submits the exchange's next operation; a refused submission fails it.
    fn submit(&mut self, slot: usize, entry: io_uring::squeue::Entry) {
        let Some(ex) = self.slots[slot].as_mut() else {
            return;
        };
        ex.outstanding += 1;
        if !self.push(entry.user_data(slot as u64)) {
            let ex = self.slots[slot].as_mut().expect("slot is live");
            ex.outstanding -= 1;
            self.fail(
                slot,
                HttpError::Unavailable("the ring refused a submission".into()),
            );
        }
    }

    /// Ends the exchange with `error` once its operations are done.
    fn fail(&mut self, slot: usize, error: HttpError) {
        if let Some(ex) = self.slots[slot].as_mut() {
            ex.failed = Some(error);
            ex.keep_alive = false;
        }
        self.finish(slot);
    }

    fn complete(&mut self, slot: usize, result: i32) {
        let Some(ex) = self.slots.get_mut(slot).and_then(|s| s.as_mut()) else {
            return;
        };
        assert!(ex.outstanding > 0, "a completion without an operation");
        ex.outstanding -= 1;
        if ex.failed.is_some() {
            self.finish(slot);
            return;
        }
        let now = Instant::now();
        if result > 0 {
            ex.last_progress = now;
        }
        if let (Some(tls), Some(target), false) = (
            ex.tls.as_mut(),
            ex.request.tls.as_ref(),
            matches!(ex.phase, Phase::Connecting),
        ) {
            let os_error = |code: i32| std::io::Error::from_raw_os_error(-code).to_string();
            let outcome = match tls.op {
                TlsOp::Send if result <= 0 => Err(HttpError::Io {
                    phase: "sending over TLS",
                    reason: if result == 0 {
                        "the connection closed".into()
                    } else {
                        os_error(result)
                    },
                }),
                TlsOp::Send => {
                    tls.out_sent += result as usize;
                    Ok(())
                }
                TlsOp::Recv if result < 0 => Err(HttpError::Io {
                    phase: "receiving over TLS",
                    reason: os_error(result),
                }),
                TlsOp::Recv if result == 0 => tls.close(&target.server_name),
                TlsOp::Recv => {
                    tls.in_pos = 0;
                    tls.in_len = result as usize;
                    Ok(())
                }
            };
            match outcome {
                Ok(()) => self.drive_tls(slot),
                Err(error) => self.fail(slot, error),
            }
            return;
        }
        if result > 0 {
            mark_first_byte(ex, now);
        }
        match advance(ex, result, &self.pool) {
            Step::Continue => self.issue(slot),
            Step::Done => self.finish(slot),
            Step::Fail(error) => self.fail(slot, error),
        }
    }

    /// Fails requests past their deadline, stalled, or no longer awaited: shutting the
    /// socket down makes the pending operation complete at once, after which the slot
    /// is freed.
    fn expire(&mut self) {
        let now = Instant::now();
        for ex in self.slots.iter_mut().flatten() {
            if ex.failed.is_some() {
                continue;
            }
            let failure = if now >= ex.deadline {
                HttpError::TimedOut(ex.request.timeout)
            } else if now >= ex.last_progress + ex.request.stall_timeout {
                HttpError::Stalled(ex.request.stall_timeout)
            } else if ex.reply.as_ref().is_none_or(|r| r.is_closed()) {
                HttpError::Cancelled
            } else {
                continue;
            };
            ex.failed = Some(failure);
            ex.keep_alive = false;
            // SAFETY: shutdown on a descriptor this exchange owns.
            unsafe { libc::shutdown(ex.socket.as_raw_fd(), libc::SHUT_RDWR) };
        }
    }

    /// Answers the caller and frees the slot once no operation is outstanding.
    fn finish(&mut self, slot: usize) {
        let Some(ex) = self.slots[slot].as_mut() else {
            return;
        };
        if ex.outstanding > 0 {
            return;
        }
        let ex = self.slots[slot].take().expect("slot is live");
        self.free.push(slot);
        let Exchange {
            request,
            reply,
            socket,
            mut tls,
            reused,
            failed,
            status,
            headers,
            body,
            keep_alive,
            phase,
            started,
            first_byte,
            low_water: ex_low_water,
            segment,
            ..
        } = *ex;
        match failed {
            // A pooled connection the server had already closed fails before any byte
            // of the response: retry once on a fresh connection.
            Some(HttpError::Io { .. }) | Some(HttpError::Truncated { .. })
                if reused && matches!(phase, Phase::Sending { .. } | Phase::Head { filled: 0 }) =>
            {
                if let Some(reply) = reply {
                    // Other pooled sockets to this server are likely stale too.
                    self.idle.remove(&request.pool_key());
                    let slot = self.free.pop().expect("the slot was just freed");
                    self.start(slot, request, reply);
                }
            }
            Some(error) => {
                if let Some(reply) = reply {
                    let _ = reply.send(Err(error));
                }
            }
            None => {
                let mut low_water = ex_low_water;
                // The next response head must wake the ring at its first byte; a socket
                // that cannot be reset to that is not reused.
                // A TLS session with unread data would hand it to the next response.
                let clean = match (tls.as_mut(), request.tls.as_ref()) {
                    (Some(session), Some(target)) => session.is_clean(&target.server_name),
                    _ => true,
                };
                if keep_alive && clean && set_low_water(&socket, &mut low_water, 1) {
                    let pool = self.idle.entry(request.pool_key()).or_default();
                    if pool.len() < MAX_IDLE_PER_ENDPOINT {
                        pool.push(Conn { socket, tls });
                    }
                }
                if let Some(reply) = reply {
                    let _ = reply.send(Ok(HttpResponse {
                        status,
                        headers,
                        body: BufferPool::into_bytes(&self.pool, body),
                        first_byte: first_byte.unwrap_or(started).duration_since(started),
                        elapsed: started.elapsed(),
                        new_connection_segment: segment,
                    }));
                }
            }
        }
    }
}

/// The operation a plain-HTTP exchange's phase needs next (and the TCP connect of a
/// TLS one).
fn plain_entry(ex: &mut Exchange) -> io_uring::squeue::Entry {
    let fd = types::Fd(ex.socket.as_raw_fd());
    match ex.phase {
        Phase::Connecting => opcode::Connect::new(
            fd,
            (&ex.sockaddr as *const libc::sockaddr_in6).cast(),
            std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
        )
        .build(),
        Phase::Sending { sent } => {
            let rest = &ex.outbound[sent..];
            opcode::Send::new(fd, rest.as_ptr(), rest.len() as u32)
                .flags(libc::MSG_NOSIGNAL)
                .build()
        }
        Phase::Head { filled } => {
            let rest = &mut ex.head_buf[filled..];
            opcode::Recv::new(fd, rest.as_mut_ptr(), rest.len() as u32).build()
        }
        Phase::Body { filled } => {
            assert_eq!(
                filled,
                ex.body.len(),
                "the body length tracks what was received"
            );
            // The kernel writes into the spare capacity; `advance` extends the
            // length by what it reports as received.
            let rest = ex.body.spare_capacity_mut();
            let ptr = rest.as_mut_ptr().cast::<u8>();
            // A pooled buffer may be larger than the body: never receive past the
            // announced length, which would take bytes that are not this body's.
            let want = match ex.body_len {
                Some(expected) => {
                    let want = expected - filled;
                    // The kernel wakes the ring only when a good part of the body
                    // has arrived, not per TCP segment; never for more than is
                    // still to come, or the last bytes would not wake it at all.
                    set_low_water(&ex.socket, &mut ex.low_water, want.min(LOW_WATER));
                    want
                }
                None => rest.len(),
            };
            assert!(want <= rest.len(), "the body buffer holds the whole body");
            let len = want.min(u32::MAX as usize) as u32;
            opcode::Recv::new(fd, ptr, len).build()
        }
    }
}

/// Notes the first response byte, for latency accounting and hedging callers.
fn mark_first_byte(ex: &mut Exchange, now: Instant) {
    if ex.first_byte.is_none() && matches!(ex.phase, Phase::Head { .. }) {
        ex.first_byte = Some(now);
        if let Some(seen) = &ex.request.first_byte_seen {
            seen.store(true, Ordering::Relaxed);
        }
    }
}

/// The next move of a TLS exchange: send pending ciphertext, let rustls write
/// (handshake, alerts), encrypt the request, or take plaintext into the head or body
/// buffer, receiving ciphertext when none is left.
fn tls_step(ex: &mut Exchange, pool: &BufferPool) -> TlsStep {
    if matches!(ex.phase, Phase::Connecting) {
        return TlsStep::Submit(plain_entry(ex));
    }
    let fd = types::Fd(ex.socket.as_raw_fd());
    let Some(tls) = ex.tls.as_mut() else {
        return TlsStep::Fail(HttpError::Unavailable(
            "a TLS exchange without a session".into(),
        ));
    };
    if tls.out_sent < tls.out.len() {
        let rest = &tls.out[tls.out_sent..];
        tls.op = TlsOp::Send;
        return TlsStep::Submit(
            opcode::Send::new(fd, rest.as_ptr(), rest.len().min(u32::MAX as usize) as u32)
                .flags(libc::MSG_NOSIGNAL)
                .build(),
        );
    }
    tls.out.clear();
    tls.out_sent = 0;
    if tls.session.wants_write() {
        return match tls.session.write_tls(&mut tls.out) {
            Ok(_) => TlsStep::Again,
            Err(e) => TlsStep::Fail(HttpError::Tls {
                phase: "encrypting",
                reason: e.to_string(),
            }),
        };
    }
    let copied = match ex.phase {
        // Sent to `plain_entry` above; nothing to copy.
        Phase::Connecting => 0,
        Phase::Sending { sent } => {
            if tls.session.is_handshaking() {
                return tls_receive(ex, pool);
            }
            if sent == ex.outbound.len() {
                ex.phase = Phase::Head { filled: 0 };
                return TlsStep::Again;
            }
            // rustls encrypts at once after the handshake and takes what its send
            // buffer holds; the rest goes after that is sent.
            return match tls.session.writer().write(&ex.outbound[sent..]) {
                Ok(0) => TlsStep::Fail(HttpError::Tls {
                    phase: "sending the request",
                    reason: "the session accepts no data".into(),
                }),
                Ok(n) => {
                    ex.phase = Phase::Sending { sent: sent + n };
                    TlsStep::Again
                }
                Err(e) => TlsStep::Fail(HttpError::Tls {
                    phase: "sending the request",
                    reason: e.to_string(),
                }),
            };
        }
        Phase::Head { filled } | Phase::Body { filled } => {
            let mut reader = tls.session.reader();
            match reader.fill_buf() {
                Ok([]) => 0,
                Ok(chunk) => {
                    let taken = match ex.phase {
                        Phase::Head { .. } => {
                            let room = &mut ex.head_buf[filled..];
                            let take = chunk.len().min(room.len());
                            room[..take].copy_from_slice(&chunk[..take]);
                            take
                        }
                        _ => {
                            let want = match ex.body_len {
                                Some(expected) => expected - filled,
                                None => ex.body.capacity() - filled,
                            };
                            let take = chunk.len().min(want);
                            ex.body.extend_from_slice(&chunk[..take]);
                            take
                        }
                    };
                    reader.consume(taken);
                    if taken == 0 {
                        // The buffer is full: `advance` with nothing new decides
                        // (a full head is malformed, a full body is complete).
                        return match advance(ex, 0, pool) {
                            Step::Continue => TlsStep::Fail(HttpError::Malformed(
                                "the response does not fit its buffer".into(),
                            )),
                            Step::Done => TlsStep::Done,
                            Step::Fail(e) => TlsStep::Fail(e),
                        };
                    }
                    mark_first_byte(ex, Instant::now());
                    taken
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    return tls_receive(ex, pool);
                }
                // The server closed with or without close_notify: like a plain close.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
                Err(e) => {
                    return TlsStep::Fail(HttpError::Tls {
                        phase: "receiving",
                        reason: e.to_string(),
                    });
                }
            }
        }
    };
    match advance(ex, copied as i32, pool) {
        Step::Continue => TlsStep::Again,
        Step::Done => TlsStep::Done,
        Step::Fail(e) => TlsStep::Fail(e),
    }
}

/// Gives rustls buffered ciphertext, or receives more when none is left.
fn tls_receive(ex: &mut Exchange, pool: &BufferPool) -> TlsStep {
    let fd = types::Fd(ex.socket.as_raw_fd());
    let Some(target) = ex.request.tls.as_ref() else {
        return TlsStep::Fail(HttpError::Unavailable(
            "a TLS exchange without a target".into(),
        ));
    };
    let Some(tls) = ex.tls.as_mut() else {
        return TlsStep::Fail(HttpError::Unavailable(
            "a TLS exchange without a session".into(),
        ));
    };
    if tls.in_pos < tls.in_len {
        let before = tls.in_pos;
        return match tls.feed(&target.server_name) {
            Ok(()) if tls.in_pos > before => TlsStep::Again,
            Ok(()) => TlsStep::Fail(HttpError::Tls {
                phase: "receiving",
                reason: "the session takes no more data".into(),
            }),
            Err(e) => TlsStep::Fail(e),
        };
    }
    if tls.eof {
        return match ex.phase {
            Phase::Head { .. } | Phase::Body { .. } => match advance(ex, 0, pool) {
                Step::Done => TlsStep::Done,
                Step::Fail(e) => TlsStep::Fail(e),
                Step::Continue => TlsStep::Fail(HttpError::Io {
                    phase: "receiving the response",
                    reason: "the server closed the connection".into(),
                }),
            },
            _ => TlsStep::Fail(HttpError::Io {
                phase: "the TLS handshake",
                reason: "the server closed the connection".into(),
            }),
        };
    }
    // As for plain bodies, the kernel wakes the ring per large chunk of a body, never
    // waiting for bytes a partially buffered record may already hold.
    let low_water = match (&ex.phase, ex.body_len) {
        (Phase::Body { filled }, Some(expected)) => (expected - filled)
            .saturating_sub(TLS_RECORD_SLACK)
            .min(LOW_WATER)
            .min(TLS_RECV_BUFFER),
        _ => 1,
    };
    set_low_water(&ex.socket, &mut ex.low_water, low_water);
    tls.op = TlsOp::Recv;
    TlsStep::Submit(opcode::Recv::new(fd, tls.inbuf.as_mut_ptr(), tls.inbuf.len() as u32).build())
}

enum Step {
    Continue,
    Done,
    Fail(HttpError),
}

/// Moves one exchange forward by the result of its completed operation.
fn advance(ex: &mut Exchange, result: i32, pool: &BufferPool) -> Step {
    let os_error = |code: i32| std::io::Error::from_raw_os_error(-code).to_string();
    match ex.phase {
        Phase::Connecting => {
            if result < 0 {
                return Step::Fail(HttpError::Connect {
                    addr: ex.request.addr,
                    reason: os_error(result),
                });
            }
            ex.segment = segment_size(&ex.socket);
            ex.phase = Phase::Sending { sent: 0 };
            Step::Continue
        }
        Phase::Sending { sent } => {
            if result <= 0 {
                return Step::Fail(HttpError::Io {
                    phase: "sending the request",
                    reason: if result == 0 {
                        "the connection closed".into()
                    } else {
                        os_error(result)
                    },
                });
            }
            let sent = sent + result as usize;
            ex.phase = if sent < ex.outbound.len() {
                Phase::Sending { sent }
            } else {
                Phase::Head { filled: 0 }
            };
            Step::Continue
        }
        Phase::Head { filled } => {
            if result <= 0 {
                return Step::Fail(HttpError::Io {
                    phase: "receiving the response head",
                    reason: if result == 0 {
                        "the server closed the connection".into()
                    } else {
                        os_error(result)
                    },
                });
            }
            let filled = filled + result as usize;
            let Some(end) = find_head_end(&ex.head_buf[..filled]) else {
                if filled == ex.head_buf.len() {
                    return Step::Fail(HttpError::Malformed("response head too large".into()));
                }
                ex.phase = Phase::Head { filled };
                return Step::Continue;
            };
            if let Err(e) = parse_head(ex, end) {
                return Step::Fail(e);
            }
            let tail = &ex.head_buf[end..filled];
            let len = if ex.request.head_only || ex.status == 204 || ex.status == 304 {
                Some(0)
            } else {
                ex.body_len
            };
            match len {
                Some(len) => {
                    // The one buffer of the body; the kernel fills it in place.
                    ex.body = pool.take(len);
                    let take = tail.len().min(len);
                    ex.body.extend_from_slice(&tail[..take]);
                    ex.body_len = Some(len);
                    if take == len {
                        return Step::Done;
                    }
                    ex.phase = Phase::Body { filled: take };
                }
                None => {
                    // No length: read until the server closes (error bodies only).
                    ex.keep_alive = false;
                    ex.body = Vec::with_capacity(MAX_UNSIZED_BODY);
                    let take = tail.len().min(MAX_UNSIZED_BODY);
                    ex.body.extend_from_slice(&tail[..take]);
                    ex.phase = Phase::Body { filled: take };
                }
            }
            Step::Continue
        }
        Phase::Body { filled } => {
            if result < 0 {
                return Step::Fail(HttpError::Io {
                    phase: "receiving the body",
                    reason: os_error(result),
                });
            }
            let filled = filled + result as usize;
            assert!(
                filled <= ex.body.capacity(),
                "the kernel wrote past the buffer"
            );
            // SAFETY: the kernel initialized the `result` bytes after the old length.
            unsafe { ex.body.set_len(filled) };
            match ex.body_len {
                Some(expected) if result == 0 => Step::Fail(HttpError::Truncated {
                    received: filled,
                    expected,
                }),
                Some(expected) if filled >= expected => Step::Done,
                None if result == 0 || filled == ex.body.capacity() => Step::Done,
                _ => {
                    ex.phase = Phase::Body { filled };
                    Step::Continue
                }
            }
        }
    }
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn parse_head(ex: &mut Exchange, end: usize) -> Result<(), HttpError> {
    let text = std::str::from_utf8(&ex.head_buf[..end])
        .map_err(|_| HttpError::Malformed("response head is not UTF-8".into()))?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.split(' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::Malformed(format!(
            "unexpected status line '{status_line}'"
        )));
    }
    ex.status = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| HttpError::Malformed(format!("bad status line '{status_line}'")))?;
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(HttpError::Malformed(format!("bad header line '{line}'")));
        };
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim().to_string();
        match name.as_str() {
            "content-length" => {
                ex.body_len =
                    Some(value.parse().map_err(|_| {
                        HttpError::Malformed(format!("bad content-length '{value}'"))
                    })?);
            }
            "connection" if value.eq_ignore_ascii_case("close") => ex.keep_alive = false,
            "transfer-encoding" if !value.eq_ignore_ascii_case("identity") => {
                return Err(HttpError::Malformed(format!(
                    "transfer-encoding '{value}' is not supported"
                )));
            }
            _ => {}
        }
        ex.headers.push((name, value));
    }
    Ok(())
}

/// Sets the socket's `SO_RCVLOWAT` to `bytes` unless it is already that; returns
/// whether the socket now has that setting. A failure leaves the old setting, which
/// at worst delays a wake-up until the stall timeout ends the attempt.
fn set_low_water(socket: &OwnedFd, current: &mut usize, bytes: usize) -> bool {
    let bytes = bytes.max(1);
    if *current == bytes {
        return true;
    }
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt with a pointer to a live int of the right size.
    let done = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if done == 0 {
        *current = bytes;
    }
    done == 0
}

/// The connected socket's TCP maximum segment size (`TCP_MAXSEG`): the kernel's
/// segment size for the path, from the route MTU and the peer's advertised MSS, so a
/// value above 1500 means jumbo frames end to end without an ICMP probe.
fn segment_size(socket: &OwnedFd) -> Option<u32> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt with pointers to a live int and its length.
    let done = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (done == 0 && value > 0).then_some(value as u32)
}

fn new_socket() -> std::io::Result<OwnedFd> {
    // IPv6 sockets with v4-mapped addresses serve both families with one sockaddr type.
    // SAFETY: plain socket creation; the result is checked.
    let raw = unsafe { libc::socket(libc::AF_INET6, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let one: libc::c_int = 1;
    let zero: libc::c_int = 0;
    // SAFETY: setsockopt with pointers to live ints of the right size.
    unsafe {
        libc::setsockopt(
            raw,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        libc::setsockopt(
            raw,
            libc::IPPROTO_IPV6,
            libc::IPV6_V6ONLY,
            (&zero as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    Ok(fd)
}

fn to_sockaddr(addr: &SocketAddr) -> libc::sockaddr_in6 {
    let v6 = match addr {
        SocketAddr::V4(v4) => {
            std::net::SocketAddrV6::new(v4.ip().to_ipv6_mapped(), v4.port(), 0, 0)
        }
        SocketAddr::V6(v6) => *v6,
    };
    // SAFETY: sockaddr_in6 is plain data; all-zero is a valid value.
    let mut sa: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
    sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
    sa.sin6_port = v6.port().to_be();
    sa.sin6_addr.s6_addr = v6.ip().octets();
    sa.sin6_flowinfo = v6.flowinfo();
    sa.sin6_scope_id = v6.scope_id();
    sa
}

/// Most retriever threads one client starts: seed 002 never runs more download threads
/// than hardware threads, and a few rings already saturate tens of Gbit/s.
pub const MAX_RETRIEVERS: usize = 16;

/// Several retriever threads, each with its own ring, sharing requests round-robin.
#[derive(Clone, Debug)]
pub struct Retrievers {
    threads: Arc<[Retriever]>,
    next: Arc<AtomicUsize>,
}

impl Retrievers {
    /// Starts `count` retriever threads (1 to [`MAX_RETRIEVERS`]).
    pub fn start(count: usize) -> std::io::Result<Self> {
        let count = count.clamp(1, MAX_RETRIEVERS);
        let threads = (0..count)
            .map(|_| Retriever::start())
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Self {
            threads: threads.into(),
            next: Arc::default(),
        })
    }

    /// How many threads serve requests.
    pub fn count(&self) -> usize {
        self.threads.len()
    }

    /// Requests the retrievers keep in flight together before callers wait.
    pub fn capacity(&self) -> usize {
        self.threads.len() * MAX_IN_FLIGHT
    }

    /// Sends `request` on the next thread in turn.
    pub async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        self.threads[turn % self.threads.len()].send(request).await
    }
}

/// Receive buffers that come back when the caller drops a body, so the next body lands
/// in memory that is already mapped: no page faults and no zeroing per request, as
/// seed 002's preallocated receive buffers. Bounded by [`POOL_BUFFERS`] and
/// [`POOL_BYTES`]; beyond that buffers are freed.
#[derive(Debug, Default)]
struct BufferPool {
    idle: std::sync::Mutex<Vec<Vec<u8>>>,
}

/// A body buffer that returns to its pool when the last `Bytes` view of it drops.
struct Pooled {
    buffer: Vec<u8>,
    pool: Arc<BufferPool>,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buffer));
    }
}

impl BufferPool {
    /// An empty buffer with capacity for `len` bytes, reused when one fits (at most
    /// twice the size, so small bodies do not pin large buffers).
    fn take(&self, len: usize) -> Vec<u8> {
        if len >= POOLED_MIN {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = idle
                .iter()
                .position(|b| b.capacity() >= len && b.capacity() <= len.saturating_mul(2))
            {
                let mut buffer = idle.swap_remove(i);
                buffer.clear();
                return buffer;
            }
        }
        Vec::with_capacity(len)
    }

    fn give(&self, buffer: Vec<u8>) {
        if buffer.capacity() < POOLED_MIN {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let held: usize = idle.iter().map(Vec::capacity).sum();
        if idle.len() < POOL_BUFFERS && held + buffer.capacity() <= POOL_BYTES {
            idle.push(buffer);
        }
    }

    /// The body as `Bytes`; a large one returns to `pool` when its last view drops.
    fn into_bytes(pool: &Arc<BufferPool>, buffer: Vec<u8>) -> Bytes {
        if buffer.capacity() < POOLED_MIN {
            return Bytes::from(buffer);
        }
        Bytes::from_owner(Pooled {
            buffer,
            pool: pool.clone(),
        })
    }
}
