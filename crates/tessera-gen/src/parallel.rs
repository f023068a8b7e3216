//! Ordered parallel output: workers fill batches concurrently, one thread writes them in
//! batch order. Output therefore never depends on the number of workers or on timing.

use std::io::{self, Write};
use std::ops::Range;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread;

/// Writes documents `0..total` as NDJSON (each written by `write_doc` into the batch's
/// buffer, then a newline), in batches of `batch` over `threads` workers, in order; the
/// generators' common shape around [`write_ordered`].
pub(crate) fn write_docs(
    total: u64,
    batch: u64,
    threads: usize,
    write_doc: impl Fn(u64, &mut Vec<u8>) + Sync,
    out: &mut impl Write,
) -> io::Result<u64> {
    let fill = |docs: Range<u64>, buf: &mut Vec<u8>| {
        for index in docs {
            write_doc(index, buf);
            buf.push(b'\n');
        }
    };
    write_ordered(total, batch, threads, fill, out)
}

/// Writes the items `0..total`, produced in batches of `batch` by `fill`, to `out` in
/// order; returns the number of bytes written.
///
/// Worker `w` owns batches `w, w + threads, ...`, so the writer knows which worker holds
/// the next batch without any shared queue. Each worker hands over one finished batch
/// at a time through a one-slot channel and reuses buffers the writer has
/// drained, so at most three buffers per worker exist however slow `out` is.
pub(crate) fn write_ordered<F>(
    total: u64,
    batch: u64,
    threads: usize,
    fill: F,
    out: &mut impl Write,
) -> io::Result<u64>
where
    F: Fn(Range<u64>, &mut Vec<u8>) + Sync,
{
    let plan = Plan {
        total,
        batch,
        // More workers than batches would only idle.
        threads: (threads.max(1) as u64).min(total.div_ceil(batch).max(1)),
    };
    let fill = &fill;
    thread::scope(|scope| {
        let mut full = Vec::new();
        let mut empty = Vec::new();
        for worker in 0..plan.threads {
            let (full_tx, full_rx) = mpsc::sync_channel::<Vec<u8>>(1);
            let (empty_tx, empty_rx) = mpsc::channel::<Vec<u8>>();
            full.push(full_rx);
            empty.push(empty_tx);
            scope.spawn(move || produce(plan, worker, fill, &full_tx, &empty_rx));
        }
        let written = drain(plan.batches(), &full, &empty, out);
        // Dropping the receivers makes any worker blocked on a send give up, so an I/O
        // error ends the scope promptly instead of waiting for every batch.
        drop(full);
        written
    })
}

/// How the items are cut into batches and dealt to workers.
#[derive(Clone, Copy)]
struct Plan {
    total: u64,
    batch: u64,
    threads: u64,
}

impl Plan {
    fn batches(self) -> u64 {
        self.total.div_ceil(self.batch)
    }

    fn items(self, b: u64) -> Range<u64> {
        b * self.batch..((b + 1) * self.batch).min(self.total)
    }
}

/// One worker's loop: fill each owned batch and hand it to the writer.
fn produce<F>(
    plan: Plan,
    worker: u64,
    fill: &F,
    full: &SyncSender<Vec<u8>>,
    empty: &Receiver<Vec<u8>>,
) where
    F: Fn(Range<u64>, &mut Vec<u8>),
{
    let mut b = worker;
    while b < plan.batches() {
        let mut buf = empty.try_recv().unwrap_or_default();
        buf.clear();
        fill(plan.items(b), &mut buf);
        if full.send(buf).is_err() {
            return; // the writer stopped on an error
        }
        b += plan.threads;
    }
}

/// The writer's loop: take batches round-robin, write them, and return the buffers.
fn drain(
    batches: u64,
    full: &[Receiver<Vec<u8>>],
    empty: &[Sender<Vec<u8>>],
    out: &mut impl Write,
) -> io::Result<u64> {
    let threads = full.len() as u64;
    let mut written = 0;
    for b in 0..batches {
        let worker = (b % threads) as usize;
        // A closed channel means the worker panicked; the scope re-raises that panic.
        let buf = full[worker]
            .recv()
            .map_err(|_| io::Error::other("a generator thread stopped"))?;
        out.write_all(&buf)?;
        written += buf.len() as u64;
        // Fails only once the worker has finished all its batches and needs no buffer.
        let _ = empty[worker].send(buf);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(range: Range<u64>, buf: &mut Vec<u8>) {
        for i in range {
            buf.extend_from_slice(format!("{i}\n").as_bytes());
        }
    }

    #[test]
    fn output_is_ordered_for_any_thread_count() {
        let expected: String = (0..1003).map(|i| format!("{i}\n")).collect();
        for threads in [0, 1, 2, 3, 7] {
            let mut out = Vec::new();
            let n = write_ordered(1003, 10, threads, numbers, &mut out).unwrap();
            assert_eq!(n, expected.len() as u64);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                expected,
                "threads={threads}"
            );
        }
    }

    #[test]
    fn empty_input_writes_nothing() {
        let mut out = Vec::new();
        assert_eq!(write_ordered(0, 10, 4, numbers, &mut out).unwrap(), 0);
        assert!(out.is_empty());
    }

    /// Accepts a few writes, then fails: the error must come back and the workers stop.
    struct Failing(usize);

    impl Write for Failing {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::other("disk full"));
            }
            self.0 -= 1;
            Ok(data.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn write_errors_are_returned() {
        let err = write_ordered(1_000_000, 10, 3, numbers, &mut Failing(5)).unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }
}
