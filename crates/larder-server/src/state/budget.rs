//! The connection-memory budget: what connection buffers may hold beyond
//! each connection's resting buffers (`conn::session::BUF_SIZE` for input
//! and for output).
//!
//! One budget for the whole server (`-o read_buf_mem_limit`; memcached
//! splits its limit over the workers, but a large value needs a large part
//! of it on whichever worker serves it). It is touched only when a buffer
//! grows past or shrinks back to its resting size, not per request.
//! A session charges what its buffers hold past their resting size after
//! each event and gives it all back when it closes. Before a buffer grows,
//! the session (input: a data block to receive) or the executor (output: a
//! value to send) asks whether the growth fits; what does not fit is
//! refused with memcached's out-of-memory replies and counted
//! (`read_buf_oom`, `response_obj_oom`). So the process holds at most
//! `-m` + connections × 2 × `BUF_SIZE` + this budget, whatever clients send
//! or fail to read.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

pub struct ConnBudget {
    limit: usize,
    /// Replies a connection may have unsent (`usize::MAX`: any). Set with
    /// `-o read_buf_mem_limit`, as memcached runs out of response objects:
    /// its per-worker share of the limit in 16 KiB buffers (at least one),
    /// each holding 14 responses.
    pub resp_limit: usize,
    /// Bytes charged by this worker's sessions (input + output).
    used: AtomicUsize,
    /// Of those and of the resting buffers: bytes of input and output
    /// buffers, for `stats` (`read_buf_bytes`, `response_obj_bytes`).
    read_bytes: AtomicUsize,
    write_bytes: AtomicUsize,
    pub read_oom: AtomicU64,
    pub write_oom: AtomicU64,
}

impl ConnBudget {
    pub fn new(limit: usize) -> ConnBudget {
        ConnBudget {
            limit,
            resp_limit: usize::MAX,
            used: AtomicUsize::new(0),
            read_bytes: AtomicUsize::new(0),
            write_bytes: AtomicUsize::new(0),
            read_oom: AtomicU64::new(0),
            write_oom: AtomicU64::new(0),
        }
    }

    /// Bytes still free.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.limit.saturating_sub(self.used.load(Relaxed))
    }

    pub fn used(&self) -> usize {
        self.used.load(Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Take `n` bytes if they fit (atomically: two workers cannot both
    /// take the last of it).
    #[inline]
    pub fn try_take(&self, n: usize) -> bool {
        let mut cur = self.used.load(Relaxed);
        loop {
            if cur + n > self.limit {
                return false;
            }
            match self.used.compare_exchange_weak(cur, cur + n, Relaxed, Relaxed) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// A charge moved from `old` to `new` bytes, whether or not it fits
    /// (growth that was not asked for first: a reply's few bytes past the
    /// pause mark, a buffer's rounding).
    #[inline]
    pub fn recharge(&self, old: usize, new: usize) {
        move_by(&self.used, old, new);
    }

    /// A session's buffers went from `(read, write)` bytes to the new ones.
    #[inline]
    pub fn resize(&self, old_bufs: (usize, usize), new_bufs: (usize, usize)) {
        move_by(&self.read_bytes, old_bufs.0, new_bufs.0);
        move_by(&self.write_bytes, old_bufs.1, new_bufs.1);
    }

    /// (input buffer bytes, output buffer bytes) held by the worker's sessions.
    pub fn buffer_bytes(&self) -> (usize, usize) {
        (self.read_bytes.load(Relaxed), self.write_bytes.load(Relaxed))
    }

    #[inline]
    pub fn count(counter: &AtomicU64) {
        Self::count_n(counter, 1);
    }

    #[inline]
    pub fn count_n(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }
}

/// Move a shared gauge from `old` to `new` (no atomic operation when equal).
#[inline]
fn move_by(gauge: &AtomicUsize, old: usize, new: usize) {
    if new > old {
        gauge.fetch_add(new - old, Relaxed);
    } else if old > new {
        gauge.fetch_sub(old - new, Relaxed);
    }
}

/// A large value the store let go of while connections still send it
/// (pinned, not copied: `exec::output`) is charged here when there is
/// room, as a copy of it in a connection's output would have been, so the
/// store's `-m` is free for new values at once.
impl larder_store::PinSpill for ConnBudget {
    fn try_take(&self, n: usize) -> bool {
        ConnBudget::try_take(self, n)
    }

    fn give_back(&self, n: usize) {
        move_by(&self.used, n, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_and_gives_back() {
        let b = ConnBudget::new(1000);
        assert!(b.try_take(600));
        assert!(!b.try_take(401));
        assert_eq!(b.remaining(), 400);
        b.recharge(600, 100);
        assert_eq!(b.remaining(), 900);
        b.resize((0, 0), (16, 16));
        b.resize((16, 16), (16, 0));
        assert_eq!(b.buffer_bytes(), (16, 0));
        b.recharge(100, 0);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn two_threads_never_take_more_than_the_limit() {
        let b = std::sync::Arc::new(ConnBudget::new(10_000));
        let taken: usize = (0..2)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || (0..10_000).filter(|_| b.try_take(3)).count() * 3)
            })
            .map(|t| t.join().unwrap())
            .sum();
        assert_eq!(taken, b.used());
        assert!(taken <= 10_000 && taken > 10_000 - 3);
    }
}
