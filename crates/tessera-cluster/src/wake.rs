//! How an idle executor learns at once that there is work, instead of at its next poll.
//!
//! Ballista's pull loop sleeps between empty polls, and a job paid that wait at its start
//! and twice per stage: a task's status went out with the poll after the task ended, and
//! the next stage's tasks came with the poll after that. At 50 ms a wait, this was most of
//! the cost of distributing a query of a few hundred milliseconds. The loop polls at once
//! when its `poll_now_notify` is notified; three sources notify it:
//!
//! - the scheduler, when a job is submitted or a stage becomes runnable (Ballista's
//!   `on_work_available`), sends one datagram to each registered executor, at the UDP port
//!   of the same number as its Flight port ([`work_available`], [`listen`]);
//! - a task's end, once its slot is free again: Ballista queues the status before it
//!   frees the slot, so the poll that follows carries it ([`after_tasks`]);
//! - a backstop every [`BACKSTOP_MS`], Ballista's own idle interval, so that a lost
//!   datagram costs no more than the loop did without them ([`backstop`]).
//!
//! A datagram is only ever a hint to poll: a stranger who sends one causes one more poll,
//! at most one per [`WAKE_GAP_MS_MIN`].

use std::sync::Arc;
use std::time::Duration;

use ballista_scheduler::cluster::ClusterState;
use ballista_scheduler::config::OnWorkAvailableFn;
use tokio::net::UdpSocket;
use tokio::sync::{Notify, Semaphore};

/// The one byte a wake-up carries.
const WAKE: u8 = 0x57;

/// Executors the scheduler wakes at most per event (one datagram each).
const EXECUTORS_WOKEN_MAX: usize = 1024;

/// The interval at which an idle executor polls whatever the wake-ups say: Ballista's
/// idle interval without them.
pub(crate) const BACKSTOP_MS: u64 = 50;

/// The shortest gap between two polls that datagrams cause.
const WAKE_GAP_MS_MIN: u64 = 1;

/// How long a task's end waits for its slot to be freed before the loop is woken anyway.
const SLOT_FREED_WAIT_MS_MAX: u64 = 20;

/// The scheduler's `on_work_available`: a datagram to every executor `cluster` knows.
/// The callback runs inside the scheduler's event loop, so the sending is spawned.
pub(crate) fn work_available(
    cluster: Arc<dyn ClusterState>,
    socket: Arc<UdpSocket>,
) -> OnWorkAvailableFn {
    Arc::new(move |_reason| {
        let (cluster, socket) = (Arc::clone(&cluster), Arc::clone(&socket));
        tokio::spawn(async move {
            let executors = cluster.registered_executor_metadata().await;
            for executor in executors.iter().take(EXECUTORS_WOKEN_MAX) {
                // A lost datagram is made up for by the executor's backstop.
                let _ = socket
                    .send_to(&[WAKE], (executor.host.as_str(), executor.port))
                    .await;
            }
        });
    })
}

/// Wakes `poll_now` for every wake-up datagram that reaches `socket`.
pub(crate) async fn listen(socket: UdpSocket, poll_now: Arc<Notify>) {
    let mut datagram = [0_u8; 16];
    loop {
        // Anything else (another datagram, an error surfacing on the socket) is ignored,
        // after the same pause, so that neither a flood nor a failing socket spins.
        if let Ok((length, _)) = socket.recv_from(&mut datagram).await
            && is_wake(&datagram[..length])
        {
            poll_now.notify_one();
        }
        tokio::time::sleep(Duration::from_millis(WAKE_GAP_MS_MIN)).await;
    }
}

/// Whether `datagram` is a wake-up.
fn is_wake(datagram: &[u8]) -> bool {
    datagram == [WAKE]
}

/// Wakes `poll_now` every [`BACKSTOP_MS`].
pub(crate) async fn backstop(poll_now: Arc<Notify>) {
    let mut ticks = tokio::time::interval(Duration::from_millis(BACKSTOP_MS));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        poll_now.notify_one();
    }
}

/// Wakes `poll_now` after each `task_ended`, once a slot of `free_slots` is free (with
/// one slot, exactly when the ended task's status is queued).
pub(crate) async fn after_tasks(
    task_ended: Arc<Notify>,
    free_slots: Arc<Semaphore>,
    poll_now: Arc<Notify>,
) {
    loop {
        task_ended.notified().await;
        let freed = tokio::time::timeout(
            Duration::from_millis(SLOT_FREED_WAIT_MS_MAX),
            free_slots.acquire(),
        )
        .await;
        // The permit goes back before the loop polls, which counts it as free.
        drop(freed);
        poll_now.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;

    use ballista_core::serde::scheduler::{
        ExecutorData, ExecutorMetadata, ExecutorOperatingSystemSpecification, ExecutorSpecification,
    };
    use ballista_scheduler::cluster::memory::InMemoryClusterState;
    use ballista_scheduler::config::WorkAvailableReason;
    use futures::FutureExt;

    use super::*;

    /// Long enough for anything on loopback; a hang guard, not a measure of speed.
    const HANG_S_MAX: u64 = 30;

    async fn surely<T>(what: &str, future: impl Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(HANG_S_MAX), future)
            .await
            .unwrap_or_else(|_| panic!("{what} did not happen"))
    }

    async fn listening() -> (Arc<Notify>, u16) {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let port = socket.local_addr().unwrap().port();
        let poll_now = Arc::new(Notify::new());
        tokio::spawn(listen(socket, Arc::clone(&poll_now)));
        (poll_now, port)
    }

    #[test]
    fn only_the_wake_byte_is_a_wake_up() {
        assert!(is_wake(&[WAKE]));
        for other in [&[][..], &[WAKE, WAKE], &[0], b"GET / HTTP/1.1"] {
            assert!(!is_wake(other), "{other:?}");
        }
    }

    #[tokio::test]
    async fn the_scheduler_wakes_every_registered_executor() {
        let cluster = Arc::new(InMemoryClusterState::default());
        let mut woken = Vec::new();
        for id in ["a", "b"] {
            let (poll_now, port) = listening().await;
            let metadata = ExecutorMetadata {
                id: id.into(),
                host: "127.0.0.1".into(),
                port,
                grpc_port: port,
                specification: ExecutorSpecification::default().with_vcores(1),
                os_info: ExecutorOperatingSystemSpecification::default(),
            };
            let data = ExecutorData {
                executor_id: id.into(),
                total_vcores: 1,
                available_vcores: 1,
            };
            cluster.register_executor(metadata, data).await.unwrap();
            woken.push(poll_now);
        }
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let callback = work_available(cluster, socket);
        callback(WorkAvailableReason::JobSubmitted { job_id: "j".into() });
        for poll_now in woken {
            surely("a wake-up", poll_now.notified()).await;
        }
    }

    /// On the test's one thread, `after_tasks` runs only where the test awaits, so the
    /// check between the yields and the slot's release sees exactly what it did.
    #[tokio::test(flavor = "current_thread")]
    async fn a_task_end_wakes_the_loop_once_its_slot_is_free() {
        let (task_ended, poll_now) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let free_slots = Arc::new(Semaphore::new(1));
        let running = Arc::clone(&free_slots).acquire_owned().await.unwrap();
        tokio::spawn(after_tasks(
            Arc::clone(&task_ended),
            Arc::clone(&free_slots),
            Arc::clone(&poll_now),
        ));
        task_ended.notify_one();
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
        assert!(
            poll_now.notified().now_or_never().is_none(),
            "woken before the task's slot was free, so before its status was queued"
        );
        drop(running);
        surely("the wake-up after the task", poll_now.notified()).await;
    }
}
