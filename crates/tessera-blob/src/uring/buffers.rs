//! Receive buffers that come back when the caller drops a body, so the next body lands
//! in memory that is already mapped: no page faults and no zeroing per request, as
//! the preallocated receive buffers of
//! AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023).

use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// Bodies at least this large are received into pooled buffers; smaller ones are cheap
/// to allocate.
const POOLED_MIN: usize = 256 * 1024;
/// Most bytes of idle buffers a retriever keeps for reuse.
const POOL_BYTES: usize = 256 * 1024 * 1024;
/// Most idle buffers a retriever keeps for reuse.
const POOL_BUFFERS: usize = 64;

/// Idle body buffers of one retriever, bounded by [`POOL_BUFFERS`] and [`POOL_BYTES`];
/// beyond that buffers are freed.
#[derive(Debug, Default)]
pub(super) struct BufferPool {
    idle: Mutex<Vec<Vec<u8>>>,
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
    pub(super) fn take(&self, len: usize) -> Vec<u8> {
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
    pub(super) fn into_bytes(pool: &Arc<BufferPool>, buffer: Vec<u8>) -> Bytes {
        if buffer.capacity() < POOLED_MIN {
            return Bytes::from(buffer);
        }
        Bytes::from_owner(Pooled {
            buffer,
            pool: pool.clone(),
        })
    }
}
