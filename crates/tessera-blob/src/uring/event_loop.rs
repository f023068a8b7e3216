//! The retriever threads: each owns one io_uring ring, drains new requests from a
//! bounded channel, queues their operations, submits them in one batch and reaps all
//! completions before sleeping again, and keeps idle keep-alive connections.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use io_uring::{IoUring, opcode, types};
use tokio::sync::oneshot;

use super::buffers::BufferPool;
use super::error::HttpError;
use super::exchange::{Conn, Ended, Exchange, Next, Reply};
use super::request::{HttpRequest, HttpResponse, PoolKey};
use super::socket::new_socket;
use super::tls::TlsState;

/// Submission queue entries per ring: the most operations one batch may queue.
const RING_ENTRIES: u32 = 256;
/// Requests one retriever keeps in flight; more wait in the channel.
const MAX_IN_FLIGHT: usize = 128;
/// Requests waiting in the channel before senders are refused.
const CHANNEL_CAPACITY: usize = 1024;
/// Idle keep-alive connections kept per endpoint.
const MAX_IDLE_PER_ENDPOINT: usize = 64;
/// How often the loop wakes to check deadlines when nothing completes.
const TICK: Duration = Duration::from_millis(20);
/// `user_data` of the wake-up read on the event fd.
const WAKE_TOKEN: u64 = u64::MAX;
/// `user_data` of the cancellations a stopping loop submits.
const CANCEL_TOKEN: u64 = u64::MAX - 1;
/// Ticks a stopping loop waits for cancelled operations to complete; whatever is
/// still in flight after that is leaked rather than freed under the kernel.
const DRAIN_TICKS: usize = 100;

/// Most retriever threads one client starts: AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023)
/// never runs more download threads
/// than hardware threads, and a few rings already saturate tens of Gbit/s.
pub const MAX_RETRIEVERS: usize = 16;

/// A handle to a retriever thread. Cloning shares the thread.
#[derive(Clone)]
struct Retriever {
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
    fn start() -> std::io::Result<Self> {
        let ring = IoUring::new(RING_ENTRIES)?;
        // SAFETY: eventfd takes no pointers; it returns a new descriptor or -1,
        // checked below.
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
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
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

/// One retriever's ring, its exchanges (one slot each) and its idle connections.
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
    /// Whether the wake-up read is queued or in flight.
    wake_pending: bool,
    /// Batches submitted before an injected submit error (tests of the error exit).
    #[cfg(test)]
    submits_before_error: Option<usize>,
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
            wake_pending: false,
            #[cfg(test)]
            submits_before_error: None,
        }
    }

    /// Serves requests until every sender is gone and nothing is in flight, or the
    /// ring fails; then stops, answering whoever still waits.
    fn run(&mut self) {
        self.post_wake_read();
        loop {
            self.admit();
            if self.disconnected && self.free.len() == MAX_IN_FLIGHT {
                break;
            }
            if let Err(e) = self.submit_and_wait() {
                self.stop(&format!("its ring failed: {e}"));
                return;
            }
            self.reap();
            self.expire();
        }
        self.stop("it shut down");
    }

    /// Ends the loop safely: cancels every operation in flight and waits for them, so
    /// no buffer is freed while the kernel may still write into it, then fails every
    /// waiting request with `why` the retriever stopped.
    fn stop(&mut self, why: &str) {
        self.cancel_all();
        self.drain();
        let error = HttpError::Unavailable(format!("the retriever thread stopped: {why}"));
        let leaked = self.in_flight() > 0;
        for ex in self.slots.iter_mut().flatten() {
            if let Some(reply) = ex.take_reply() {
                let _ = reply.send(Err(error.clone()));
            }
        }
        while let Ok((_, reply)) = self.receiver.try_recv() {
            let _ = reply.send(Err(error.clone()));
        }
        if leaked {
            // The kernel did not give these buffers back in time: leaking them is
            // the only way to be sure it never writes into freed memory.
            std::mem::forget(std::mem::take(&mut self.slots));
            std::mem::forget(std::mem::replace(&mut self.wake_buf, Box::new(0)));
        }
        self.slots.clear();
        self.disconnected = true;
    }

    /// Asks the kernel to cancel every operation in flight (`IORING_OP_ASYNC_CANCEL`)
    /// and shuts their sockets down, which ends the operations a cancel cannot.
    fn cancel_all(&mut self) {
        let mut tokens: Vec<u64> = Vec::new();
        for (slot, ex) in self.slots.iter_mut().enumerate() {
            if let Some(ex) = ex.as_mut().filter(|ex| ex.outstanding > 0) {
                ex.shut_down();
                tokens.push(slot as u64);
            }
        }
        if self.wake_pending {
            tokens.push(WAKE_TOKEN);
        }
        for token in tokens {
            let cancel = opcode::AsyncCancel::new(token)
                .build()
                .user_data(CANCEL_TOKEN);
            let _ = self.push(cancel);
        }
    }

    /// Takes completions until nothing is in flight, for at most [`DRAIN_TICKS`].
    fn drain(&mut self) {
        let ts = types::Timespec::new()
            .sec(TICK.as_secs())
            .nsec(TICK.subsec_nanos());
        for _ in 0..DRAIN_TICKS {
            if self.in_flight() == 0 {
                return;
            }
            let args = types::SubmitArgs::new().timespec(&ts);
            if let Err(e) = self.ring.submitter().submit_with_args(1, &args)
                && !matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR))
            {
                std::thread::sleep(TICK);
            }
            let tokens: Vec<u64> = self.ring.completion().map(|c| c.user_data()).collect();
            for token in tokens {
                match token {
                    WAKE_TOKEN => self.wake_pending = false,
                    CANCEL_TOKEN => {}
                    slot => {
                        let live = self.slots.get_mut(slot as usize).and_then(|s| s.as_mut());
                        if let Some(ex) = live {
                            ex.outstanding = ex.outstanding.saturating_sub(1);
                        }
                    }
                }
            }
        }
    }

    /// Submits the queued operations and waits up to a [`TICK`] for a completion;
    /// the errors that only mean "nothing happened" are not errors.
    fn submit_and_wait(&mut self) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(left) = self.submits_before_error.as_mut() {
            if *left == 0 {
                return Err(std::io::Error::from_raw_os_error(libc::EBADF));
            }
            *left -= 1;
        }
        let ts = types::Timespec::new()
            .sec(TICK.as_secs())
            .nsec(TICK.subsec_nanos());
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Takes every completion the ring holds.
    fn reap(&mut self) {
        let completions: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (token, result) in completions {
            if token == WAKE_TOKEN {
                self.wake_pending = false;
                self.post_wake_read();
            } else {
                self.complete(token as usize, result);
            }
        }
    }

    /// Operations the kernel may still write into memory of this loop for.
    fn in_flight(&self) -> usize {
        let exchanges: usize = self
            .slots
            .iter()
            .flatten()
            .map(|ex| ex.outstanding as usize)
            .sum();
        exchanges + usize::from(self.wake_pending)
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
        self.wake_pending = self.push(entry);
    }

    /// Queues `entry`; false when the kernel refuses the batch that would make room.
    fn push(&mut self, entry: io_uring::squeue::Entry) -> bool {
        // SAFETY: every buffer an entry points at lives in a boxed exchange (or the
        // boxed wake buffer) that is not freed while the operation is outstanding:
        // a slot is freed only when its count of outstanding operations is zero, and
        // a stopping loop drains its operations or leaks their buffers (`stop`).
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
            #[cfg(test)]
            if request.head.starts_with(tests::PANIC) {
                panic!("a failure injected into the retriever thread");
            }
            self.free.pop();
            self.start(slot, request, reply);
        }
    }

    /// Starts `request` in `slot` on an idle connection or a new one.
    fn start(&mut self, slot: usize, request: HttpRequest, reply: Reply) {
        let pooled = if request.fresh_connection {
            None
        } else {
            self.idle.get_mut(&request.pool_key()).and_then(|v| v.pop())
        };
        let reused = pooled.is_some();
        let opened = match pooled {
            Some(conn) => Ok(conn),
            None => open(&request),
        };
        match opened {
            Ok(conn) => {
                self.slots[slot] = Some(Exchange::new(request, reply, conn, reused));
                self.issue(slot);
            }
            Err(error) => {
                let _ = reply.send(Err(error));
                self.free.push(slot);
            }
        }
    }

    /// Queues the operation the exchange needs next, or ends it.
    fn issue(&mut self, slot: usize) {
        let Some(ex) = self.slots[slot].as_mut() else {
            return;
        };
        let next = ex.next(&self.pool);
        self.follow(slot, next);
    }

    /// Does what an exchange asked for.
    fn follow(&mut self, slot: usize, next: Next) {
        match next {
            Next::Submit(entry) => self.submit(slot, entry),
            Next::Done => self.finish(slot),
            Next::Fail(error) => self.fail(slot, error),
        }
    }

    /// Submits the exchange's next operation; a refused submission fails it.
    fn submit(&mut self, slot: usize, entry: io_uring::squeue::Entry) {
        let Some(ex) = self.slots[slot].as_mut() else {
            return;
        };
        ex.outstanding += 1;
        if !self.push(entry.user_data(slot as u64)) {
            if let Some(ex) = self.slots[slot].as_mut() {
                ex.outstanding -= 1;
            }
            self.fail(
                slot,
                HttpError::Unavailable("the ring refused a submission".into()),
            );
        }
    }

    /// Ends the exchange with `error` once its operations are done.
    fn fail(&mut self, slot: usize, error: HttpError) {
        if let Some(ex) = self.slots[slot].as_mut() {
            ex.set_failed(error);
        }
        self.finish(slot);
    }

    /// Takes the completion of one of the exchange's operations.
    fn complete(&mut self, slot: usize, result: i32) {
        let Some(ex) = self.slots.get_mut(slot).and_then(|s| s.as_mut()) else {
            return;
        };
        // A completion for an exchange with nothing outstanding cannot come from
        // this loop's submissions; ignoring it keeps the count from wrapping.
        if ex.outstanding == 0 {
            return;
        }
        ex.outstanding -= 1;
        if ex.has_failed() {
            return self.finish(slot);
        }
        let next = ex.completed(result, &self.pool);
        self.follow(slot, next);
    }

    /// Fails requests past their deadline, stalled, or no longer awaited; their
    /// pending operations then complete at once, after which the slots are freed.
    fn expire(&mut self) {
        let now = Instant::now();
        for ex in self.slots.iter_mut().flatten() {
            ex.expire(now);
        }
    }

    /// Answers the caller and frees the slot once no operation is outstanding.
    fn finish(&mut self, slot: usize) {
        if self.slots[slot]
            .as_ref()
            .is_none_or(|ex| ex.outstanding > 0)
        {
            return;
        }
        let Some(ex) = self.slots[slot].take() else {
            return;
        };
        self.free.push(slot);
        match ex.end(&self.pool) {
            Ended::Retry(request, reply) => {
                // Other pooled sockets to this server are likely stale too.
                self.idle.remove(&request.pool_key());
                self.free.pop();
                self.start(slot, request, reply);
            }
            Ended::Answered {
                reply,
                outcome,
                idle,
            } => {
                if let Some((key, conn)) = idle {
                    let pool = self.idle.entry(key).or_default();
                    if pool.len() < MAX_IDLE_PER_ENDPOINT {
                        pool.push(conn);
                    }
                }
                if let Some(reply) = reply {
                    let _ = reply.send(outcome);
                }
            }
        }
    }
}

impl Drop for EventLoop {
    /// A loop that unwinds from a panic still cancels and drains its operations and
    /// answers its callers, instead of freeing buffers under the kernel.
    fn drop(&mut self) {
        if !self.slots.is_empty() {
            self.stop("it panicked");
        }
    }
}

/// A new connection for `request`: a socket and, for HTTPS, a fresh TLS session.
fn open(request: &HttpRequest) -> Result<Conn, HttpError> {
    let socket = new_socket().map_err(|e| HttpError::Connect {
        addr: request.addr,
        reason: e.to_string(),
    })?;
    let tls = request.tls.as_ref().map(TlsState::new).transpose()?;
    Ok(Conn { socket, tls })
}

/// Several retriever threads, each with its own ring, sharing requests round-robin.
#[derive(Clone, Debug)]
pub struct Retrievers {
    threads: Arc<[Retriever]>,
    next: Arc<AtomicUsize>,
}

impl Retrievers {
    /// Starts `count` retriever threads (1 to `MAX_RETRIEVERS`).
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// The head of a request that makes the retriever thread panic.
    pub(super) const PANIC: &[u8] = b"PANIC";

    /// A loopback port that accepts connections and never answers.
    fn silent_server() -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        std::thread::spawn(move || {
            let held: Vec<_> = listener.incoming().collect();
            drop(held);
        });
        addr
    }

    fn request(addr: std::net::SocketAddr) -> HttpRequest {
        HttpRequest {
            addr,
            head: b"GET / HTTP/1.1\r\nhost: test\r\n\r\n".to_vec(),
            body: bytes::Bytes::new(),
            head_only: false,
            timeout: Duration::from_secs(600),
            stall_timeout: Duration::from_secs(600),
            fresh_connection: true,
            first_byte_seen: None,
            tls: None,
            max_body: 1024,
        }
    }

    #[test]
    fn an_error_exit_drains_the_operations_in_flight() {
        let ring = IoUring::new(RING_ENTRIES).expect("a ring");
        // SAFETY: eventfd takes no pointers; the result is checked below.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        assert!(raw >= 0, "an event fd");
        // SAFETY: `raw` is a fresh descriptor owned by nobody else.
        let wake = unsafe { OwnedFd::from_raw_fd(raw) };
        let (sender, receiver) = std::sync::mpsc::sync_channel(4);
        let mut event_loop = EventLoop::new(ring, wake, receiver);
        let (reply, answer) = oneshot::channel();
        sender
            .send((request(silent_server()), reply))
            .expect("queued");
        // Connect and send go through; the receive of the head waits on the silent
        // server when the next submission fails.
        event_loop.submits_before_error = Some(8);
        event_loop.run();
        assert_eq!(
            event_loop.in_flight(),
            0,
            "nothing left for the kernel to write"
        );
        let mut answer = answer;
        assert!(
            matches!(answer.try_recv(), Ok(Err(HttpError::Unavailable(_)))),
            "the waiting request is told the retriever stopped"
        );
    }

    #[tokio::test]
    async fn a_dead_retriever_fails_waiting_and_later_requests() {
        let retriever = Retriever::start().expect("a retriever");
        let waiting = tokio::spawn({
            let retriever = retriever.clone();
            async move { retriever.send(request(silent_server())).await }
        });
        // Lets the first request reach the loop before the second kills it.
        tokio::task::yield_now().await;
        let mut fatal = request(silent_server());
        fatal.head = PANIC.to_vec();
        let guard = Duration::from_secs(60);
        let killed = tokio::time::timeout(guard, retriever.send(fatal)).await;
        assert!(
            matches!(killed, Ok(Err(HttpError::Unavailable(_)))),
            "{killed:?}"
        );
        let waited = tokio::time::timeout(guard, waiting).await;
        assert!(
            matches!(&waited, Ok(Ok(Err(HttpError::Unavailable(why)))) if why.contains("panicked")),
            "the waiting request is told the retriever panicked: {waited:?}"
        );
        let later = tokio::time::timeout(guard, retriever.send(request(silent_server()))).await;
        assert!(
            matches!(later, Ok(Err(HttpError::Unavailable(_)))),
            "a later request fails: {later:?}"
        );
    }
}
