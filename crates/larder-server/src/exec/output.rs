//! A connection's output as the executors produce it: a byte buffer that
//! knows when to pause and how much it may grow.
//!
//! * `pause_at`: the session's bound on unsent output. Producers stop
//!   between requests and between the keys of a multi-get once the buffer
//!   reaches it ([`Output::should_pause`]), and resume when the socket has
//!   taken it. So many keys or a deep pipeline never pile up in memory.
//! * `room`: how many bytes the buffer may still grow by, from the worker's
//!   connection budget (`conn::budget`). A value is copied into the output
//!   whole (the store's item may change or move once its lock is released,
//!   so a reply cannot be left half-copied), so before a value is encoded
//!   the front end asks [`Output::reserve`]; a value that does not fit is
//!   not sent and the command answers memcached's `SERVER_ERROR out of
//!   memory writing get response` instead.

use crate::state::budget::ConnBudget;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

pub struct Output {
    pub buf: Vec<u8>,
    /// Buffer length at which producers pause (`usize::MAX`: never).
    pub pause_at: usize,
    /// Where growth past `rest` bytes of capacity is charged (None: UDP,
    /// whose buffer is bounded by the datagram it answers).
    budget: Option<Arc<ConnBudget>>,
    rest: usize,
    /// Bytes of capacity past `rest` charged to the budget.
    charged: usize,
    /// A value was refused for want of room since the last check.
    refused: bool,
    /// Values refused since the session last counted them.
    pub refusals: u64,
    /// Replies not yet fully sent, and how many may be (memcached's
    /// response objects under `-o read_buf_mem_limit`; unlimited without).
    resp_unsent: usize,
    pub resp_limit: usize,
}

impl Deref for Output {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.buf
    }
}

impl DerefMut for Output {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

impl Output {
    /// Output whose growth is not budgeted.
    pub fn new(capacity: usize) -> Output {
        Output { buf: Vec::with_capacity(capacity), pause_at: usize::MAX, budget: None, rest: capacity, charged: 0, refused: false, refusals: 0, resp_unsent: 0, resp_limit: usize::MAX }
    }

    /// Output whose capacity past `capacity` is charged to `budget`.
    pub fn budgeted(capacity: usize, budget: Arc<ConnBudget>) -> Output {
        let resp_limit = budget.resp_limit;
        Output { budget: Some(budget), resp_limit, ..Output::new(capacity) }
    }

    /// Charge the budget for the capacity the buffer has now (growth that
    /// was not reserved, shrinking).
    pub fn settle_charge(&mut self) {
        if let Some(b) = &self.budget {
            let now = self.buf.capacity().saturating_sub(self.rest);
            b.recharge(self.charged, now);
            self.charged = now;
        }
    }

    /// Give back to the resting size and return the whole charge.
    pub fn shrink(&mut self) {
        self.buf = Vec::with_capacity(self.rest);
        self.settle_charge();
    }

    /// The connection is closing: give everything back.
    pub fn release(&mut self) {
        if let Some(b) = &self.budget {
            b.recharge(self.charged, 0);
            self.charged = 0;
        }
    }

    /// Whether to stop producing until the socket takes what is pending.
    #[inline]
    pub fn should_pause(&self) -> bool {
        self.buf.len() >= self.pause_at
    }

    /// Whether `n` more bytes fit: in spare capacity, or by growing within
    /// the budget (taken before the buffer grows, so concurrent connections
    /// cannot overdraw it). If not, remembers the refusal for
    /// [`take_refused`](Self::take_refused).
    #[inline]
    pub fn reserve(&mut self, n: usize) -> bool {
        let spare = self.buf.capacity() - self.buf.len();
        if n <= spare {
            return true;
        }
        let Some(b) = &self.budget else {
            self.buf.reserve(n);
            return true;
        };
        let want = (self.buf.len() + n).saturating_sub(self.rest).saturating_sub(self.charged);
        if !b.try_take(want) {
            self.refused = true;
            self.refusals += 1;
            return false;
        }
        self.charged += want;
        self.buf.reserve_exact(n);
        self.settle_charge();
        true
    }

    /// Begin one more reply (a request's, or one key's of a multi-get):
    /// false when the connection already has as many unsent replies as it
    /// may hold, as memcached runs out of response objects.
    #[inline]
    pub fn start_response(&mut self) -> bool {
        if self.resp_unsent >= self.resp_limit {
            self.refusals += 1;
            return false;
        }
        self.resp_unsent += 1;
        true
    }

    /// Take back `n` replies begun but abandoned.
    pub fn forget_responses(&mut self, n: usize) {
        self.resp_unsent = self.resp_unsent.saturating_sub(n);
    }

    /// Everything was sent: no reply is pending any more.
    #[inline]
    pub fn all_sent(&mut self) {
        self.resp_unsent = 0;
    }

    /// Whether a value was refused since the last call.
    #[inline]
    pub fn take_refused(&mut self) -> bool {
        std::mem::take(&mut self.refused)
    }
}

/// Room a value's reply needs besides the value: its header line or packet.
pub const REPLY_HEAD: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_uses_spare_capacity_then_the_budget() {
        let budget = Arc::new(ConnBudget::new(50));
        let mut out = Output::budgeted(100, budget.clone());
        assert!(out.reserve(100));
        assert!(!out.reserve(151));
        assert!(out.take_refused());
        assert!(out.reserve(150));
        assert!(out.buf.capacity() >= 150);
        assert_eq!(budget.used(), out.buf.capacity() - 100);
        out.shrink();
        assert_eq!(budget.used(), 0);
        out.pause_at = 10;
        out.extend_from_slice(&[0; 10]);
        assert!(out.should_pause());
    }
}
