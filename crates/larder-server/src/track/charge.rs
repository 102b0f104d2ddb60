//! What the subscribers' queues hold, counted and charged to the
//! connection-memory budget (`connmem::budget`, `-o read_buf_mem_limit`).
//!
//! Each queue is bounded by `-o track_stream_kb`, but the number of
//! subscribers only by `-c`: without a shared charge, N subscribers that
//! never read could hold N × the stream bound outside every limit. So a
//! queue asks this before its buffer grows; a growth refused is treated as
//! the queue's overflow (one `LOST`, the subscriber's entries dropped). It
//! is refused past [`QUEUE_SHARE`] of the budget (so subscribers that never
//! read cannot starve the data connections' buffers of the rest) or when
//! the budget itself has no room. Growth that answers a request (`MN`) or says
//! the stream lost messages (`LOST`) is taken unasked, as a connection's
//! reply past its pause mark is: a few bytes, never repeated without the
//! client reading.

use crate::connmem::budget::ConnBudget;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Where queue bytes are charged: the server's connection budget, or
/// nothing (the tracker's unit and loom tests).
pub trait Budget: Send + Sync {
    /// Take `n` bytes if they fit.
    fn try_take(&self, n: usize) -> bool;
    /// Take `n` bytes whether or not they fit.
    fn take(&self, n: usize);
    /// Give `n` bytes back.
    fn give_back(&self, n: usize);
}

impl Budget for ConnBudget {
    fn try_take(&self, n: usize) -> bool {
        ConnBudget::try_take(self, n)
    }

    fn take(&self, n: usize) {
        self.recharge(0, n);
    }

    fn give_back(&self, n: usize) {
        self.recharge(n, 0);
    }
}

/// The part of the connection budget all queues together may take (the
/// rest stays for the connections' own buffers): one half.
pub const QUEUE_SHARE: (usize, usize) = (1, 2);

/// The queues' bytes (their buffers' capacity), their cap and the budget
/// they are charged to; shared by the tracker and every queue.
pub struct QueueMemory {
    budget: Option<Arc<dyn Budget>>,
    cap: usize,
    bytes: AtomicUsize,
}

impl Default for QueueMemory {
    /// Counted only: no budget, no cap.
    fn default() -> QueueMemory {
        QueueMemory { budget: None, cap: usize::MAX, bytes: AtomicUsize::new(0) }
    }
}

impl QueueMemory {
    /// Charged to `budget`, whose limit is `budget_bytes`; the queues take
    /// at most [`QUEUE_SHARE`] of it.
    pub fn charged_to(budget: Arc<dyn Budget>, budget_bytes: usize) -> QueueMemory {
        let cap = budget_bytes / QUEUE_SHARE.1 * QUEUE_SHARE.0;
        QueueMemory { budget: Some(budget), cap, bytes: AtomicUsize::new(0) }
    }

    /// The most all queues may hold (growth that must happen aside).
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes the queues' buffers hold now (`larder_track_queue_bytes`).
    pub fn bytes(&self) -> usize {
        self.bytes.load(Relaxed)
    }

    /// Grow by `n` if that stays within the cap and the budget has room;
    /// false (nothing taken) if not.
    pub fn try_grow(&self, n: usize) -> bool {
        // Counted first, so two queues cannot both take the cap's last bytes.
        let before = self.bytes.fetch_add(n, Relaxed);
        if before.saturating_add(n) > self.cap {
            self.bytes.fetch_sub(n, Relaxed);
            return false;
        }
        if let Some(b) = &self.budget {
            if !b.try_take(n) {
                self.bytes.fetch_sub(n, Relaxed);
                return false;
            }
        }
        true
    }

    /// Grow by `n` whatever the budget says.
    pub fn grow(&self, n: usize) {
        if let Some(b) = &self.budget {
            b.take(n);
        }
        self.bytes.fetch_add(n, Relaxed);
    }

    pub fn shrink(&self, n: usize) {
        if let Some(b) = &self.budget {
            b.give_back(n);
        }
        self.bytes.fetch_sub(n, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_the_connection_budget_within_its_share() {
        let budget = Arc::new(ConnBudget::new(2000));
        let m = QueueMemory::charged_to(budget.clone(), 2000);
        assert_eq!(m.cap(), 1000);
        assert!(m.try_grow(600));
        assert!(!m.try_grow(500), "over the queues' share");
        assert_eq!((m.bytes(), budget.used()), (600, 600));
        // The data connections take the rest of the budget: refused too.
        assert!(budget.try_take(1300));
        assert!(!m.try_grow(200), "the budget is full");
        assert_eq!((m.bytes(), budget.used()), (600, 1900));
        m.grow(500);
        assert_eq!((m.bytes(), budget.used()), (1100, 2400), "unasked growth is still counted");
        m.shrink(1100);
        budget.recharge(1300, 0);
        assert_eq!((m.bytes(), budget.used()), (0, 0));
        let free = QueueMemory::default();
        assert!(free.try_grow(1 << 40));
        assert_eq!(free.bytes(), 1 << 40);
    }
}
