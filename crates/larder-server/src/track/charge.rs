//! What the subscribers' queues hold, counted and charged to the
//! connection-memory budget (`connmem::budget`, `-o read_buf_mem_limit`).
//!
//! Each queue is bounded by `-o track_stream_kb`, but the number of
//! subscribers only by `-c`: without a shared charge, N subscribers that
//! never read could hold N × the stream bound outside every limit. So a
//! queue asks this before its buffer grows; a growth the budget refuses is
//! treated as the queue's overflow (one `LOST`, the subscriber's entries
//! dropped), so all queues together never hold more than the budget has
//! free, and they compete with connection buffers for it as any other
//! connection output does. Growth that answers a request (`MN`) or says
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

/// The queues' bytes (their buffers' capacity) and the budget they are
/// charged to; shared by the tracker and every queue.
#[derive(Default)]
pub struct QueueMemory {
    budget: Option<Arc<dyn Budget>>,
    bytes: AtomicUsize,
}

impl QueueMemory {
    pub fn charged_to(budget: Arc<dyn Budget>) -> QueueMemory {
        QueueMemory { budget: Some(budget), bytes: AtomicUsize::new(0) }
    }

    /// Bytes the queues' buffers hold now (`larder_track_queue_bytes`).
    pub fn bytes(&self) -> usize {
        self.bytes.load(Relaxed)
    }

    /// Grow by `n` if the budget has room; false (nothing taken) if not.
    pub fn try_grow(&self, n: usize) -> bool {
        if let Some(b) = &self.budget {
            if !b.try_take(n) {
                return false;
            }
        }
        self.bytes.fetch_add(n, Relaxed);
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
    fn charges_the_connection_budget() {
        let budget = Arc::new(ConnBudget::new(1000));
        let m = QueueMemory::charged_to(budget.clone());
        assert!(m.try_grow(600));
        assert!(!m.try_grow(500), "over the budget");
        assert_eq!((m.bytes(), budget.used()), (600, 600));
        m.grow(500);
        assert_eq!((m.bytes(), budget.used()), (1100, 1100), "unasked growth is still counted");
        m.shrink(1100);
        assert_eq!((m.bytes(), budget.used()), (0, 0));
        let free = QueueMemory::default();
        assert!(free.try_grow(1 << 40));
        assert_eq!(free.bytes(), 1 << 40);
    }
}
