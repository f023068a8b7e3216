//! One request's life on a connection: connect, send, receive the head, receive the
//! body, as a state machine the event loop moves on by each completion. Plain HTTP
//! exchanges have the kernel receive straight into the head and body buffers; TLS
//! exchanges go through their session ([`super::tls`]).

use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::time::Instant;

use io_uring::{opcode, types};
use tokio::sync::oneshot;

use super::buffers::BufferPool;
use super::error::HttpError;
use super::http::{Chunked, MAX_HEAD, read_head};
use super::request::{HttpRequest, HttpResponse, PoolKey};
use super::socket::{segment_size, set_low_water, to_sockaddr};
use super::tls::{TLS_RECORD_SLACK, TLS_RECV_BUFFER, TlsOp, TlsState};

/// Largest body without a `Content-Length` (error bodies); bounded so a server cannot
/// make the client allocate without limit.
const MAX_UNSIZED_BODY: usize = 1024 * 1024;
/// Bytes a body receive waits for in the socket before the kernel wakes the ring
/// (`SO_RCVLOWAT`): one completion per this much data instead of per TCP segment,
/// while a steady transfer still completes one at least this often, so the stall
/// timeout sees progress on links down to `LOW_WATER / stall_timeout`.
const LOW_WATER: usize = 512 * 1024;

/// Where the caller waits for the outcome of its request.
pub(super) type Reply = oneshot::Sender<Result<HttpResponse, HttpError>>;

/// Where a request is in its life.
enum Phase {
    Connecting,
    Sending { sent: usize },
    Head { filled: usize },
    Body { filled: usize },
}

/// A keep-alive connection: the socket and, for HTTPS, its TLS session.
pub(super) struct Conn {
    pub(super) socket: OwnedFd,
    pub(super) tls: Option<Box<TlsState>>,
}

/// What an exchange needs next from the event loop.
pub(super) enum Next {
    /// Submit this operation and wait for its completion.
    Submit(io_uring::squeue::Entry),
    /// The response is complete.
    Done,
    /// The exchange failed.
    Fail(HttpError),
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

/// How an exchange ended, once none of its operations is outstanding.
pub(super) enum Ended {
    /// A pooled connection the server had already closed failed before any byte of
    /// the response: the request goes again on a fresh connection.
    Retry(HttpRequest, Reply),
    /// The caller gets `outcome`; `idle` is the connection to keep for reuse, with
    /// the key it is pooled under.
    Answered {
        reply: Option<Reply>,
        outcome: Result<HttpResponse, HttpError>,
        idle: Option<(PoolKey, Conn)>,
    },
}

/// One request in flight and everything the kernel reads from or writes into for it;
/// boxed by the event loop so those buffers stay put while operations are outstanding.
pub(super) struct Exchange {
    pub(super) request: HttpRequest,
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
    pub(super) outstanding: u32,
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
    /// The decoder of a chunked body; its pieces are received into `head_buf`.
    chunked: Option<Chunked>,
    keep_alive: bool,
    /// The TCP maximum segment size, read when this exchange opened the connection.
    segment: Option<u32>,
    /// The socket's `SO_RCVLOWAT`; 1 (the default) outside sized bodies.
    low_water: usize,
    failed: Option<HttpError>,
    sockaddr: libc::sockaddr_in6,
}

impl Exchange {
    /// A new exchange of `request` over `conn`, which came from the idle pool when
    /// `reused` (and is then already connected).
    pub(super) fn new(request: HttpRequest, reply: Reply, conn: Conn, reused: bool) -> Box<Self> {
        let Conn { socket, mut tls } = conn;
        if let Some(tls) = tls.as_mut() {
            tls.reset();
        }
        let mut outbound = Vec::with_capacity(request.head.len() + request.body.len());
        outbound.extend_from_slice(&request.head);
        outbound.extend_from_slice(&request.body);
        let now = Instant::now();
        Box::new(Exchange {
            sockaddr: to_sockaddr(&request.addr),
            deadline: now + request.timeout,
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
            last_progress: now,
            first_byte: None,
            outbound,
            head_buf: vec![0; MAX_HEAD],
            status: 0,
            headers: Vec::new(),
            body: Vec::new(),
            body_len: None,
            chunked: None,
            keep_alive: true,
            low_water: 1,
            segment: None,
            failed: None,
        })
    }

    /// Whether the exchange has failed and only waits for its operations to end.
    pub(super) fn has_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// Marks the exchange failed with `error`; its connection is not reused.
    pub(super) fn set_failed(&mut self, error: HttpError) {
        self.failed = Some(error);
        self.keep_alive = false;
    }

    /// The operation the exchange needs next, after any progress that needs no
    /// kernel (a TLS session may move on by itself). Every turn of the TLS loop
    /// consumes ciphertext, produces plaintext or queues ciphertext, so it ends.
    pub(super) fn next(&mut self, pool: &BufferPool) -> Next {
        if self.tls.is_none() {
            return Next::Submit(plain_entry(self));
        }
        loop {
            match tls_step(self, pool) {
                TlsStep::Submit(entry) => return Next::Submit(entry),
                TlsStep::Again => {}
                TlsStep::Done => return Next::Done,
                TlsStep::Fail(error) => return Next::Fail(error),
            }
        }
    }

    /// Moves the exchange on by the `result` of its completed operation.
    pub(super) fn completed(&mut self, result: i32, pool: &BufferPool) -> Next {
        let now = Instant::now();
        if result > 0 {
            self.last_progress = now;
        }
        if self.tls.is_some() && !matches!(self.phase, Phase::Connecting) {
            return match tls_completed(self, result) {
                Ok(()) => self.next(pool),
                Err(error) => Next::Fail(error),
            };
        }
        if result > 0 {
            mark_first_byte(self, now);
        }
        match advance(self, result, pool) {
            Step::Continue => self.next(pool),
            Step::Done => Next::Done,
            Step::Fail(error) => Next::Fail(error),
        }
    }

    /// Takes the caller's reply channel, for a loop that stops without finishing.
    pub(super) fn take_reply(&mut self) -> Option<Reply> {
        self.reply.take()
    }

    /// Ends the connection's traffic so a pending operation completes at once.
    pub(super) fn shut_down(&self) {
        // SAFETY: shutdown takes no pointers and acts on a descriptor this exchange
        // owns; the descriptor stays valid for the pending operation.
        unsafe { libc::shutdown(self.socket.as_raw_fd(), libc::SHUT_RDWR) };
    }

    /// Fails the exchange if it is past its deadline, stalled, or no longer awaited:
    /// shutting the socket down makes the pending operation complete at once.
    pub(super) fn expire(&mut self, now: Instant) {
        if self.failed.is_some() {
            return;
        }
        let failure = if now >= self.deadline {
            HttpError::TimedOut(self.request.timeout)
        } else if now >= self.last_progress + self.request.stall_timeout {
            HttpError::Stalled(self.request.stall_timeout)
        } else if self.reply.as_ref().is_none_or(|r| r.is_closed()) {
            HttpError::Cancelled
        } else {
            return;
        };
        self.set_failed(failure);
        self.shut_down();
    }

    /// How the exchange ended; called once no operation is outstanding.
    pub(super) fn end(self: Box<Self>, pool: &std::sync::Arc<BufferPool>) -> Ended {
        let mut ex = *self;
        if let Some(error) = ex.failed.take() {
            let stale = ex.reused
                && matches!(ex.phase, Phase::Sending { .. } | Phase::Head { filled: 0 })
                && matches!(error, HttpError::Io { .. } | HttpError::Truncated { .. });
            return match (stale, ex.reply) {
                (true, Some(reply)) => Ended::Retry(ex.request, reply),
                (_, reply) => Ended::Answered {
                    reply,
                    outcome: Err(error),
                    idle: None,
                },
            };
        }
        // The next response head must wake the ring at its first byte; a socket that
        // cannot be reset to that is not reused. A TLS session with unread data would
        // hand it to the next response.
        let clean = match (ex.tls.as_mut(), ex.request.tls.as_ref()) {
            (Some(session), Some(target)) => session.is_clean(&target.server_name),
            _ => true,
        };
        let reusable = ex.keep_alive && clean && set_low_water(&ex.socket, &mut ex.low_water, 1);
        let response = HttpResponse {
            status: ex.status,
            headers: ex.headers,
            body: BufferPool::into_bytes(pool, ex.body),
            first_byte: ex
                .first_byte
                .unwrap_or(ex.started)
                .duration_since(ex.started),
            elapsed: ex.started.elapsed(),
            new_connection_segment: ex.segment,
        };
        Ended::Answered {
            reply: ex.reply,
            outcome: Ok(response),
            idle: reusable.then(|| {
                let conn = Conn {
                    socket: ex.socket,
                    tls: ex.tls,
                };
                (ex.request.pool_key(), conn)
            }),
        }
    }
}

/// Takes the result of a TLS exchange's send or receive into its session.
fn tls_completed(ex: &mut Exchange, result: i32) -> Result<(), HttpError> {
    let (Some(tls), Some(target)) = (ex.tls.as_mut(), ex.request.tls.as_ref()) else {
        return Err(HttpError::Unavailable(
            "a TLS exchange without a session".into(),
        ));
    };
    let os_error = |code: i32| std::io::Error::from_raw_os_error(-code).to_string();
    match tls.op {
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
        Phase::Body { .. } if ex.chunked.is_some() => {
            opcode::Recv::new(fd, ex.head_buf.as_mut_ptr(), ex.head_buf.len() as u32).build()
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
    match ex.phase {
        // Sent to `plain_entry` above.
        Phase::Connecting => TlsStep::Submit(plain_entry(ex)),
        Phase::Sending { .. } if tls.session.is_handshaking() => tls_receive(ex, pool),
        Phase::Sending { sent } => tls_send_request(ex, sent),
        Phase::Head { filled } | Phase::Body { filled } => tls_read_plaintext(ex, filled, pool),
    }
}

/// Hands the request's plaintext to rustls once the handshake is done.
fn tls_send_request(ex: &mut Exchange, sent: usize) -> TlsStep {
    if sent == ex.outbound.len() {
        ex.phase = Phase::Head { filled: 0 };
        return TlsStep::Again;
    }
    let Some(tls) = ex.tls.as_mut() else {
        return TlsStep::Fail(HttpError::Unavailable(
            "a TLS exchange without a session".into(),
        ));
    };
    // rustls encrypts at once after the handshake and takes what its send buffer
    // holds; the rest goes after that is sent.
    match tls.session.writer().write(&ex.outbound[sent..]) {
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
    }
}

/// Takes decrypted bytes into the head or body buffer and moves the exchange on by
/// them, receiving more ciphertext when rustls holds no plaintext.
fn tls_read_plaintext(ex: &mut Exchange, filled: usize, pool: &BufferPool) -> TlsStep {
    let Some(tls) = ex.tls.as_mut() else {
        return TlsStep::Fail(HttpError::Unavailable(
            "a TLS exchange without a session".into(),
        ));
    };
    let mut reader = tls.session.reader();
    let copied = match reader.fill_buf() {
        Ok([]) => 0,
        Ok(chunk) => {
            let head = matches!(ex.phase, Phase::Head { .. });
            let taken = if head || ex.chunked.is_some() {
                // Heads and chunked bodies are parsed from the head buffer; a chunked
                // body's pieces start at its beginning each time.
                let room = &mut ex.head_buf[if head { filled } else { 0 }..];
                let take = chunk.len().min(room.len());
                room[..take].copy_from_slice(&chunk[..take]);
                take
            } else {
                let want = match ex.body_len {
                    Some(expected) => expected - filled,
                    None => ex.body.capacity() - filled,
                };
                let take = chunk.len().min(want);
                ex.body.extend_from_slice(&chunk[..take]);
                take
            };
            reader.consume(taken);
            if taken == 0 {
                // The buffer is full: `advance` with nothing new decides (a full head
                // is malformed, a full body is complete).
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
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return tls_receive(ex, pool),
        // The server closed with or without close_notify: like a plain close.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
        Err(e) => {
            return TlsStep::Fail(HttpError::Tls {
                phase: "receiving",
                reason: e.to_string(),
            });
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
            head_received(ex, filled + result as usize, pool)
        }
        Phase::Body { filled } => {
            if result < 0 {
                return Step::Fail(HttpError::Io {
                    phase: "receiving the body",
                    reason: os_error(result),
                });
            }
            body_received(ex, filled, result as usize)
        }
    }
}

/// Takes `received` more body bytes (0: the server closed the connection).
fn body_received(ex: &mut Exchange, filled: usize, received: usize) -> Step {
    if ex.chunked.is_some() {
        return chunk_received(ex, received);
    }
    let filled = filled + received;
    assert!(
        filled <= ex.body.capacity(),
        "the kernel wrote past the buffer"
    );
    // SAFETY: `filled` is within the capacity (checked above); the bytes up to the old
    // length were initialized before, and the `received` bytes after it were written
    // by the kernel's receive into the spare capacity (plain HTTP) or by
    // `extend_from_slice`, which already set that length (TLS).
    unsafe { ex.body.set_len(filled) };
    match ex.body_len {
        Some(expected) if received == 0 => Step::Fail(HttpError::Truncated {
            received: filled,
            expected,
        }),
        Some(expected) if filled >= expected => Step::Done,
        None if received == 0 || filled == ex.body.capacity() => Step::Done,
        _ => {
            ex.phase = Phase::Body { filled };
            Step::Continue
        }
    }
}

/// Takes a piece of a chunked body that was received into `head_buf`.
fn chunk_received(ex: &mut Exchange, received: usize) -> Step {
    if received == 0 {
        return Step::Fail(HttpError::Io {
            phase: "receiving a chunked body",
            reason: "the server closed the connection before the last chunk".into(),
        });
    }
    let Some(mut decoder) = ex.chunked.take() else {
        return Step::Fail(HttpError::Unavailable(
            "a chunked body without its decoder".into(),
        ));
    };
    let step = feed_chunks(ex, &mut decoder, 0..received);
    ex.chunked = Some(decoder);
    step
}

/// Decodes `head_buf[piece]` into the body: done after the last chunk and trailers
/// (bytes after them mean the connection's framing is off, so it is not reused).
fn feed_chunks(ex: &mut Exchange, decoder: &mut Chunked, piece: std::ops::Range<usize>) -> Step {
    let len = piece.len();
    match decoder.feed(&ex.head_buf[piece], &mut ex.body) {
        Err(e) => Step::Fail(e),
        Ok(taken) if decoder.is_done() => {
            if taken < len {
                ex.keep_alive = false;
            }
            Step::Done
        }
        Ok(_) => {
            ex.phase = Phase::Body { filled: 0 };
            Step::Continue
        }
    }
}

/// Parses the head once `filled` bytes of it have arrived, and readies the body
/// buffer with the body bytes that came with the head.
fn head_received(ex: &mut Exchange, filled: usize, pool: &BufferPool) -> Step {
    let head = match read_head(&ex.head_buf[..filled]) {
        Ok(Some(head)) => head,
        Ok(None) => {
            ex.phase = Phase::Head { filled };
            return Step::Continue;
        }
        Err(e) => return Step::Fail(e),
    };
    ex.status = head.status;
    ex.headers = head.headers;
    ex.keep_alive = head.keep_alive;
    ex.body_len = head.content_length;
    let bodiless = ex.request.head_only || ex.status == 204 || ex.status == 304;
    // An error body is not what was asked for: it may be longer than a small range,
    // and is held to the bound of error bodies instead.
    let limit = if (200..300).contains(&ex.status) {
        ex.request.max_body
    } else {
        MAX_UNSIZED_BODY
    };
    if head.chunked && !bodiless {
        let mut decoder = Chunked::new(limit);
        let step = feed_chunks(ex, &mut decoder, head.len..filled);
        ex.chunked = Some(decoder);
        return step;
    }
    let tail = &ex.head_buf[head.len..filled];
    let len = if bodiless { Some(0) } else { ex.body_len };
    if len.is_some_and(|len| tail.len() > len) {
        // Bytes beyond the announced body: the connection's framing is off.
        ex.keep_alive = false;
    }
    match len {
        Some(len) if len > limit => {
            return Step::Fail(HttpError::TooLarge {
                announced: len,
                limit,
            });
        }
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
