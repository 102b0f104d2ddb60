//! The connection-memory budget: what connection buffers may hold beyond
//! their resting size (`connmem::pool::BUF_SIZE` for input and for
//! output; a connection with nothing in flight holds none for long, see
//! `connmem::pool`).
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
//! `-m` + busy connections × 2 × `BUF_SIZE` + the workers' pools and
//! recently busy connections (`connmem::pool::KEEP` and
//! `conn::worker::HOLDERS` × 2 × `BUF_SIZE` each) + this budget, whatever
//! clients send or fail to read. Grown buffers kept for reuse (`connmem::shelf`) are
//! charged here too, and given up before anything is refused; so are the
//! near-cache subscribers' push queues (`track::charge`), whose number is
//! otherwise bounded only by `-c`.
//!
//! Its counters and the shelf's lock come from `sync`: the loom
//! model `tests/loom_budget.rs` checks, over every interleaving of sessions
//! charging, releasing and shelving with the store's spill, that `used`
//! never passes the limit or goes below zero and that all that is charged
//! is given back.

use crate::connmem::shelf::{size_of_kind, BufKind, Shelf};
use crate::sync::{AtomicU64, AtomicUsize, Mutex};
use std::sync::atomic::Ordering::Relaxed;

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
    /// Grown buffers kept for the next connection that grows.
    shelf: Mutex<Shelf>,
    /// Bytes on the shelf, input and output (also in `used`).
    shelved_read: AtomicUsize,
    shelved_write: AtomicUsize,
    /// Bytes in the workers' pools of resting buffers (`connmem::pool`),
    /// input and output: free buffers, not charged to `used`.
    pooled_read: AtomicUsize,
    pooled_write: AtomicUsize,
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
            shelf: Mutex::default(),
            shelved_read: AtomicUsize::new(0),
            shelved_write: AtomicUsize::new(0),
            pooled_read: AtomicUsize::new(0),
            pooled_write: AtomicUsize::new(0),
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

    /// Take `n` bytes if they fit, freeing the shelf's buffers first if
    /// that makes them fit (a kept buffer never costs a refusal).
    #[inline]
    pub fn try_take(&self, n: usize) -> bool {
        self.take_within(n) || (self.empty_shelf() && self.take_within(n))
    }

    /// Take `n` bytes if they fit (atomically: two workers cannot both
    /// take the last of it).
    #[inline]
    fn take_within(&self, n: usize) -> bool {
        #[cfg(larder_loom)]
        if crate::sync::flaw::on(crate::sync::flaw::Flaw::CheckThenTake) {
            if self.used.load(Relaxed) + n > self.limit {
                return false;
            }
            self.used.fetch_add(n, Relaxed);
            return true;
        }
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

    /// (input buffer bytes, output buffer bytes) held by the sessions, the
    /// shelf and the workers' pools.
    pub fn buffer_bytes(&self) -> (usize, usize) {
        let (read, write) = self.free_bytes();
        (self.read_bytes.load(Relaxed) + read, self.write_bytes.load(Relaxed) + write)
    }

    /// (input, output) buffer bytes no connection is using: on the shelf
    /// and in the workers' pools (`read_buf_bytes_free`).
    pub fn free_bytes(&self) -> (usize, usize) {
        let (read, write) = self.shelved_bytes();
        (read + self.pooled_read.load(Relaxed), write + self.pooled_write.load(Relaxed))
    }

    /// (input, output) bytes in the workers' pools of resting buffers.
    pub fn pooled_bytes(&self) -> (usize, usize) {
        (self.pooled_read.load(Relaxed), self.pooled_write.load(Relaxed))
    }

    /// A worker's pool of resting buffers went from `old` to `new`
    /// (input, output) bytes.
    #[inline]
    pub fn pooled(&self, old: (usize, usize), new: (usize, usize)) {
        move_by(&self.pooled_read, old.0, new.0);
        move_by(&self.pooled_write, old.1, new.1);
    }

    /// (input, output) buffer bytes kept on the shelf for reuse.
    pub fn shelved_bytes(&self) -> (usize, usize) {
        (self.shelved_read.load(Relaxed), self.shelved_write.load(Relaxed))
    }

    fn shelved(&self, kind: BufKind) -> &AtomicUsize {
        match kind {
            BufKind::Read => &self.shelved_read,
            BufKind::Write => &self.shelved_write,
        }
    }

    /// A connection's grown buffer, no longer needed: kept for the next
    /// one that grows if the shelf has a slot for it and the budget room,
    /// freed otherwise.
    pub fn shelve(&self, kind: BufKind, buf: Vec<u8>) {
        let bytes = size_of_kind(kind, &buf);
        let mut shelf = self.shelf.lock().unwrap_or_else(|e| e.into_inner());
        if shelf.has_room(kind, bytes) && self.take_within(bytes) {
            shelf.put(kind, buf);
            self.shelved(kind).fetch_add(bytes, Relaxed);
        }
    }

    /// A kept buffer of at least `min` bytes, its charge given back (the
    /// session charges what it holds).
    pub fn unshelve(&self, kind: BufKind, min: usize) -> Option<Vec<u8>> {
        if self.shelved(kind).load(Relaxed) < min {
            return None;
        }
        // The counters change only under the lock, so they always match
        // what the shelf holds.
        let mut shelf = self.shelf.lock().unwrap_or_else(|e| e.into_inner());
        let buf = shelf.take(kind, min)?;
        let bytes = size_of_kind(kind, &buf);
        self.shelved(kind).fetch_sub(bytes, Relaxed);
        move_by(&self.used, bytes, 0);
        drop(shelf);
        Some(buf)
    }

    /// Free everything on the shelf; true if there was anything.
    fn empty_shelf(&self) -> bool {
        if self.shelved_read.load(Relaxed) + self.shelved_write.load(Relaxed) == 0 {
            return false;
        }
        let mut shelf = self.shelf.lock().unwrap_or_else(|e| e.into_inner());
        let freed = shelf.drain();
        for kind in [BufKind::Read, BufKind::Write] {
            let bytes = self.shelved(kind).swap(0, Relaxed);
            move_by(&self.used, bytes, 0);
        }
        drop(shelf);
        // Freed outside the lock: returning megabytes to the system is slow.
        drop(freed);
        true
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
    #[cfg(larder_loom)]
    if crate::sync::flaw::on(crate::sync::flaw::Flaw::GaugeLoadStore) {
        let v = gauge.load(Relaxed);
        gauge.store((v + new).wrapping_sub(old), Relaxed);
        return;
    }
    if new > old {
        gauge.fetch_add(new - old, Relaxed);
    } else if old > new {
        gauge.fetch_sub(old - new, Relaxed);
    }
}

/// A large value the store let go of while connections still send it
/// (pinned, not copied: `connmem::output`) is charged here when there is
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
    fn the_shelf_is_charged_and_gives_way_before_a_refusal() {
        let b = ConnBudget::new(1_000_000);
        b.shelve(BufKind::Read, vec![0; 300_000]);
        b.shelve(BufKind::Write, Vec::with_capacity(200_000));
        assert_eq!(b.used(), 500_000);
        assert_eq!(b.shelved_bytes(), (300_000, 200_000));
        assert_eq!(b.buffer_bytes(), (300_000, 200_000));
        // Too small for what is asked: stays.
        assert!(b.unshelve(BufKind::Read, 400_000).is_none());
        let r = b.unshelve(BufKind::Read, 100_000).unwrap();
        assert_eq!(r.len(), 300_000);
        assert_eq!((b.used(), b.shelved_bytes()), (200_000, (0, 200_000)));
        // A buffer the budget has no room for is not kept.
        assert!(b.try_take(700_000));
        b.shelve(BufKind::Read, r);
        assert_eq!((b.used(), b.shelved_bytes()), (900_000, (0, 200_000)));
        // Taking what only fits without the shelf empties it.
        assert!(b.try_take(250_000));
        assert_eq!((b.used(), b.shelved_bytes()), (950_000, (0, 0)));
        assert!(!b.try_take(100_000), "nothing left to give way");
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
