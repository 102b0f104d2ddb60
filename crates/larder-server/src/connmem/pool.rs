//! A worker's cache of resting-size connection buffers, so that a
//! connection with nothing in flight holds none.
//!
//! A session takes a read buffer and an output buffer from its worker's
//! pool when it has work (bytes arrived, replies to send) and gives them
//! back once everything it read is processed and everything it produced is
//! sent (`conn::session`) — not at once, but when its worker says so: at
//! the worker's once-a-second housekeeping, or when newer sessions push it
//! off the worker's short list of holders (`conn::worker::HOLDERS`). So a
//! busy connection does not take and give back its buffers on every
//! request, ten thousand idle connections hold no buffers at all (memcached
//! 1.6 does the same with its per-thread read buffer and response object
//! caches), and a connection that wakes again takes the buffer it gave
//! back a moment ago: warm requests allocate nothing.
//!
//! Only buffers of exactly the resting size are kept, at most [`KEEP`] of
//! each kind; grown ones go to the shelf (`connmem::shelf`) as before.
//! What the pool holds is reported to the budget's `stats` gauges
//! (`read_buf_bytes`, `read_buf_bytes_free`, `response_obj_bytes`) but not
//! charged: the budget bounds what buffers hold past their resting size,
//! and the pool holds resting buffers no connection is using.

use crate::connmem::budget::ConnBudget;
use std::sync::Arc;

/// Resting size of each buffer (read and output).
pub const BUF_SIZE: usize = 16 * 1024;
/// Buffers kept per kind: a worker serves one connection at a time, so
/// only connections with work in flight between wake-ups (a partial
/// request, unsent replies) keep one out; past this many, buffers given
/// back are freed. At most 2 × 16 × 16 KiB = 512 KiB per worker.
pub const KEEP: usize = 16;

pub struct BufPool {
    /// Read buffers: `BUF_SIZE` initialised bytes each.
    read: Vec<Vec<u8>>,
    /// Output buffers: empty, `BUF_SIZE` capacity each.
    write: Vec<Vec<u8>>,
    budget: Arc<ConnBudget>,
    /// The (read, write) bytes last reported to the budget.
    published: (usize, usize),
}

impl BufPool {
    pub fn new(budget: Arc<ConnBudget>) -> BufPool {
        BufPool { read: Vec::with_capacity(KEEP), write: Vec::with_capacity(KEEP), budget, published: (0, 0) }
    }

    /// A read buffer of `BUF_SIZE` initialised bytes.
    #[inline]
    pub fn take_read(&mut self) -> Vec<u8> {
        match self.read.pop() {
            Some(buf) => buf,
            None => new_read(),
        }
    }

    /// An empty output buffer of `BUF_SIZE` capacity.
    #[inline]
    pub fn take_write(&mut self) -> Vec<u8> {
        match self.write.pop() {
            Some(buf) => buf,
            None => new_write(),
        }
    }

    /// A read buffer no longer needed: kept if it is resting-size and
    /// there is a slot, freed otherwise (the caller shelves grown ones).
    #[inline]
    pub fn give_read(&mut self, buf: Vec<u8>) {
        if buf.len() == BUF_SIZE && self.read.len() < KEEP {
            self.read.push(buf);
        }
    }

    /// An output buffer no longer needed (its bytes all sent).
    #[inline]
    pub fn give_write(&mut self, mut buf: Vec<u8>) {
        if buf.capacity() == BUF_SIZE && self.write.len() < KEEP {
            buf.clear();
            self.write.push(buf);
        }
    }

    /// Report what the pool holds now to the budget's gauges (no atomic
    /// operation when it did not change, as for a warm connection whose
    /// buffers went out and came back within one wake-up).
    #[inline]
    pub fn publish(&mut self) {
        let now = (self.read.len() * BUF_SIZE, self.write.len() * BUF_SIZE);
        if now != self.published {
            self.budget.pooled(self.published, now);
            self.published = now;
        }
    }
}

/// A new read buffer: only while the pool warms up, or past [`KEEP`]
/// connections with work in flight.
#[cold]
fn new_read() -> Vec<u8> {
    vec![0; BUF_SIZE]
}

#[cold]
fn new_write() -> Vec<u8> {
    Vec::with_capacity(BUF_SIZE)
}

impl Drop for BufPool {
    fn drop(&mut self) {
        self.budget.pooled(self.published, (0, 0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_resting_buffers_and_reports_them() {
        let budget = Arc::new(ConnBudget::new(1 << 20));
        let mut pool = BufPool::new(budget.clone());
        let r = pool.take_read();
        let w = pool.take_write();
        assert_eq!((r.len(), w.capacity()), (BUF_SIZE, BUF_SIZE));
        let rp = r.as_ptr();
        pool.give_read(r);
        pool.give_write(w);
        pool.publish();
        assert_eq!(budget.buffer_bytes(), (BUF_SIZE, BUF_SIZE));
        assert_eq!(budget.free_bytes(), (BUF_SIZE, BUF_SIZE));
        // The same buffer comes back: no allocation.
        let again = pool.take_read();
        assert_eq!(again.as_ptr(), rp);
        // Grown buffers are not kept; nor more than KEEP.
        pool.give_read(vec![0; BUF_SIZE * 2]);
        for _ in 0..KEEP + 3 {
            pool.give_read(vec![0; BUF_SIZE]);
        }
        pool.publish();
        assert_eq!(budget.free_bytes().0, KEEP * BUF_SIZE);
        assert_eq!(budget.used(), 0, "resting buffers are not charged");
        drop(pool);
        assert_eq!(budget.buffer_bytes(), (0, 0));
    }
}
