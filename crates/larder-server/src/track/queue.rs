//! One subscriber's pending output: the bytes of push lines not yet moved
//! into its connection's output buffer, bounded in bytes
//! (`-o track_stream_kb`).
//!
//! * A push that does not fit clears the queue and leaves one `LOST` line
//!   (plus one `MN` per barrier it discarded: a barrier is a reply the
//!   client waits for, and `LOST` already covers every push before it).
//!   From then until `LOST` is handed to the connection the subscriber is
//!   *lost*: further `IV`/`IA` are dropped (the client flushes everything
//!   when it reads `LOST`), so a subscriber that never reads costs at most
//!   its bound.
//! * `LOST` is held back until the tracker has dropped the subscriber's
//!   table entries ([`Queue::set_purged`]): otherwise the client could read
//!   `LOST`, flush, read a key again and register it, and the late purge
//!   would then remove that fresh registration (a key tracked by nobody
//!   while the client caches it).
//! * The buffer grows on demand up to the bound plus a little slack for
//!   `LOST`/`MN` (never to twice the bound as plain `Vec` doubling would)
//!   and keeps its capacity while pushes wait: the steady path appends and
//!   drains without allocating. Drained empty, a buffer grown past
//!   [`RESTING`] is freed, so an idle subscriber holds at most that.
//! * Every growth is charged to the connection budget ([`QueueMemory`]);
//!   a push whose growth it refuses (past the queues' half of the budget,
//!   or the budget full) overflows the queue as a push past the bound
//!   does, so all subscribers together hold at most half the budget,
//!   however many there are.

use super::charge::QueueMemory;
use super::line;
use std::sync::Arc;

/// What became of a push.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushed {
    Queued,
    /// The queue was full: it now holds `LOST` (the caller must have the
    /// subscriber's table entries dropped, then call `set_purged`).
    Overflowed,
    /// The subscriber is already lost: nothing queued.
    Dropped,
}

/// Room kept past the bound for `LOST` and the `MN` lines after it.
const SLACK: usize = 64;

/// A buffer drained empty keeps at most this capacity (a subscriber that
/// keeps up never frees and regrows; one that fell behind gives its burst's
/// memory back).
pub const RESTING: usize = 4096;

pub struct Queue {
    buf: Vec<u8>,
    bound: usize,
    /// Where the buffer's capacity is counted and charged; `charged` is
    /// what this queue has charged (its buffer's capacity).
    memory: Arc<QueueMemory>,
    charged: usize,
    /// The subscriber is gone: its memory is given back and nothing more
    /// is queued.
    closed: bool,
    /// `LOST` is queued and not yet handed out.
    lost: bool,
    /// The table entries of this subscriber are dropped since the last
    /// overflow (`LOST` may be handed out).
    purged: bool,
}

impl Queue {
    /// A queue whose memory is counted but charged to no budget (tests).
    pub fn new(bound: usize) -> Queue {
        Queue::charged(bound, Arc::default())
    }

    /// A queue whose buffer is charged to `memory`.
    pub fn charged(bound: usize, memory: Arc<QueueMemory>) -> Queue {
        Queue { buf: Vec::new(), bound, memory, charged: 0, closed: false, lost: false, purged: true }
    }

    /// Bytes waiting.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes the buffer holds (for the memory test: never past bound +
    /// slack).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    pub fn lost(&self) -> bool {
        self.lost
    }

    /// Make room for `n` more bytes without growing past bound + slack.
    /// The growth is charged first; `must`: whatever the budget says (the
    /// bytes answer a request or report a loss), else false if it refuses
    /// (nothing grown).
    fn reserve(&mut self, n: usize, must: bool) -> bool {
        let need = self.buf.len() + n;
        if need <= self.buf.capacity() {
            return true;
        }
        let want = (self.buf.capacity() * 2).max(need).max(256).min(self.bound + SLACK).max(need);
        let extra = want - self.charged;
        if must {
            self.memory.grow(extra);
        } else if !self.memory.try_grow(extra) {
            return false;
        }
        self.charged = want;
        self.buf.reserve_exact(want - self.buf.len());
        self.settle();
        true
    }

    /// Make the charge match the buffer's capacity (an allocator may give
    /// more than asked; shrinking gives less).
    fn settle(&mut self) {
        let cap = self.buf.capacity();
        if cap > self.charged {
            self.memory.grow(cap - self.charged);
        } else if cap < self.charged {
            self.memory.shrink(self.charged - cap);
        }
        self.charged = cap;
    }

    /// The subscriber is gone: free the buffer, give its charge back, and
    /// drop whatever a writer that still holds it pushes later.
    pub fn close(&mut self) {
        self.closed = true;
        self.buf = Vec::new();
        self.settle();
    }

    /// Queue `IV key`.
    pub fn push_iv(&mut self, key: &[u8]) -> Pushed {
        if self.lost || self.closed {
            return Pushed::Dropped;
        }
        let n = line::iv_len(key);
        if self.buf.len() + n > self.bound || !self.reserve(n, false) {
            self.overflow();
            return Pushed::Overflowed;
        }
        line::push_iv(&mut self.buf, key);
        Pushed::Queued
    }

    /// Queue `IA`.
    pub fn push_ia(&mut self) -> Pushed {
        if self.lost || self.closed {
            return Pushed::Dropped;
        }
        if self.buf.len() + line::IA.len() > self.bound || !self.reserve(line::IA.len(), false) {
            self.overflow();
            return Pushed::Overflowed;
        }
        self.buf.extend_from_slice(line::IA);
        Pushed::Queued
    }

    /// Queue `MN` after everything queued so far. Never dropped and not
    /// held to the bound (it answers a request); the stream driver stops
    /// reading requests while [`len`](Self::len) is over the bound, as a
    /// data connection does while its replies are unread, so `mn`s cannot
    /// pile up.
    pub fn push_mn(&mut self) {
        if self.closed {
            return;
        }
        self.reserve(line::MN.len(), true);
        self.buf.extend_from_slice(line::MN);
    }

    /// Clear, keep the barriers, queue `LOST` first.
    fn overflow(&mut self) {
        let mut mns = 0usize;
        let mut at = 0;
        while let Some((n, is_mn)) = line::next_line(&self.buf[at..]) {
            mns += usize::from(is_mn);
            at += n;
        }
        self.buf.clear();
        // Usually within the capacity just cleared; a queue the budget
        // refused its first bytes takes these few unasked.
        self.reserve(line::LOST.len() + mns * line::MN.len(), true);
        self.buf.extend_from_slice(line::LOST);
        for _ in 0..mns {
            self.buf.extend_from_slice(line::MN);
        }
        self.lost = true;
        self.purged = false;
    }

    /// The subscriber's table entries are gone: `LOST` may be handed out.
    pub fn set_purged(&mut self) {
        self.purged = true;
    }

    /// Whether the queue holds `LOST` that waits for a purge.
    pub fn purge_pending(&self) -> bool {
        self.lost && !self.purged
    }

    /// Move whole lines, at most `max` bytes (at least one line if the
    /// first is longer), to the end of `out`; the bytes moved. Nothing
    /// while `LOST` waits for its purge.
    pub fn drain_into(&mut self, out: &mut Vec<u8>, max: usize) -> usize {
        if self.buf.is_empty() || self.purge_pending() {
            return 0;
        }
        let n = if self.buf.len() <= max {
            self.buf.len()
        } else {
            // The last line end within `max`, or the first line.
            match self.buf[..max].iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                None => line::next_line(&self.buf).map_or(self.buf.len(), |(n, _)| n),
            }
        };
        out.extend_from_slice(&self.buf[..n]);
        self.buf.drain(..n);
        if self.buf.is_empty() && self.buf.capacity() > RESTING {
            self.buf.shrink_to(RESTING);
            self.settle();
        }
        // After an overflow `LOST` is the first line: it has left.
        self.lost = false;
        n
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drained(q: &mut Queue) -> Vec<u8> {
        let mut out = Vec::new();
        q.drain_into(&mut out, usize::MAX);
        out
    }

    #[test]
    fn pushes_in_order_and_drains_whole_lines() {
        let mut q = Queue::new(1000);
        assert_eq!(q.push_iv(b"a"), Pushed::Queued);
        q.push_mn();
        assert_eq!(q.push_ia(), Pushed::Queued);
        let mut out = Vec::new();
        assert_eq!(q.drain_into(&mut out, 8), 6, "stops at the last whole line within max");
        assert_eq!(out, b"IV a\r\n");
        assert_eq!(q.drain_into(&mut out, 2), 4, "a first line longer than max still moves");
        assert_eq!(drained(&mut q), b"IA\r\n");
        assert!(q.is_empty());
    }

    #[test]
    fn overflow_leaves_one_lost_keeps_barriers_and_drops_until_drained() {
        let mut q = Queue::new(20);
        assert_eq!(q.push_iv(b"k1"), Pushed::Queued); // 7 bytes
        q.push_mn(); // 11
        assert_eq!(q.push_iv(b"k2"), Pushed::Queued); // 18
        assert_eq!(q.push_iv(b"k3"), Pushed::Overflowed);
        assert!(q.lost() && q.purge_pending());
        assert_eq!(q.push_iv(b"k4"), Pushed::Dropped);
        assert_eq!(q.push_ia(), Pushed::Dropped);
        q.push_mn();
        // Held back until the purge.
        assert_eq!(drained(&mut q), b"");
        q.set_purged();
        assert_eq!(drained(&mut q), b"LOST\r\nMN\r\nMN\r\n");
        assert!(!q.lost());
        assert_eq!(q.push_iv(b"k5"), Pushed::Queued);
        assert_eq!(drained(&mut q), b"IV k5\r\n");
    }

    #[test]
    fn capacity_stays_near_the_bound() {
        let mut q = Queue::new(10_000);
        for i in 0..100_000u32 {
            q.push_iv(format!("key{i}").as_bytes());
            // As the stream driver does: no request is read (so no `mn`)
            // while the queue is over its bound.
            if i % 7 == 0 && q.len() <= 10_000 {
                q.push_mn();
            }
            if q.purge_pending() {
                q.set_purged();
            }
            assert!(q.len() <= 10_000 + SLACK);
        }
        assert!(q.capacity() <= 10_000 + SLACK, "capacity {}", q.capacity());
    }

    #[test]
    fn a_growth_the_budget_refuses_overflows_and_every_charge_comes_back() {
        use crate::connmem::budget::ConnBudget;
        let budget = Arc::new(ConnBudget::new(2048));
        let memory = Arc::new(QueueMemory::charged_to(budget.clone(), 2048));
        // Two queues, each allowed 64 KiB, share 1 KiB (half a 2 KiB budget).
        let mut a = Queue::charged(64 << 10, memory.clone());
        let mut b = Queue::charged(64 << 10, memory.clone());
        let mut queued = 0;
        while a.push_iv(b"some:key:of:moderate:length") == Pushed::Queued {
            queued += 1;
        }
        assert!(queued > 10 && a.lost(), "a grew until the budget refused ({queued} queued)");
        assert!(budget.used() <= 1024 + SLACK, "budget used {}", budget.used());
        assert_eq!(b.push_iv(b"k"), Pushed::Overflowed, "nothing left for b");
        assert_eq!(memory.bytes(), a.capacity() + b.capacity());
        assert_eq!(memory.bytes(), budget.used());
        // Drained, a gives back what it grew past the resting size.
        a.set_purged();
        assert_eq!(drained(&mut a), b"LOST\r\n");
        assert!(a.capacity() <= RESTING);
        assert_eq!(memory.bytes(), a.capacity() + b.capacity());
        b.close();
        assert_eq!(b.push_iv(b"k"), Pushed::Dropped, "closed");
        drop(a);
        assert_eq!((memory.bytes(), budget.used()), (0, 0));
    }
}
