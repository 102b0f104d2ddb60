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
//! * `pins`: values stored as large objects are not copied at all. The
//!   reply's header goes into the buffer, the value is queued as a
//!   [`Pinned`] reference to the store's bytes at that point of the stream
//!   ([`Output::push_pinned`]), and what follows it (`\r\n`, the next
//!   reply) goes into the buffer again; the session writes the pieces in
//!   order with one `writev` ([`Output::slices`]). Pinned bytes stay
//!   charged to the store's memory limit (`-m`) while the item is stored,
//!   and to the connection budget (or still `-m`, if the budget is full)
//!   once the store lets go of it (`larder_store::PinSpill`), until sent.
//!   They count as unsent output for `pause_at`, so a connection that does
//!   not read holds at most one such value beyond its bound.

use crate::state::budget::ConnBudget;
use larder_store::{Item, Pinned};
use std::collections::VecDeque;
use std::io::IoSlice;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A pinned value and where it goes in the stream: after `buf[..at]`.
struct PinAt {
    at: usize,
    pin: Pinned,
    /// Bytes of it already written.
    sent: usize,
}

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
    /// Pinned values between the buffer's bytes, in stream order.
    pins: VecDeque<PinAt>,
    /// Their bytes not written yet.
    pinned_unsent: usize,
    /// Whether values may be pinned (the writer knows how to send them:
    /// TCP/TLS/Unix sessions, not UDP, which cuts the buffer into datagrams).
    pinning: bool,
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
        Output { buf: Vec::with_capacity(capacity), pause_at: usize::MAX, budget: None, rest: capacity, charged: 0, refused: false, refusals: 0, resp_unsent: 0, resp_limit: usize::MAX, pins: VecDeque::new(), pinned_unsent: 0, pinning: false }
    }

    /// Output whose capacity past `capacity` is charged to `budget`.
    pub fn budgeted(capacity: usize, budget: Arc<ConnBudget>) -> Output {
        let resp_limit = budget.resp_limit;
        Output { budget: Some(budget), resp_limit, ..Output::new(capacity) }
    }

    /// This output's writer sends pinned values ([`Output::slices`]).
    pub fn with_pins(mut self) -> Output {
        self.pinning = true;
        self
    }

    /// The value of `item` pinned, if it is a large object and this output
    /// sends pinned values: the caller then encodes the reply's header and
    /// queues the pin ([`push_pinned`](Self::push_pinned)) instead of
    /// copying the value.
    #[inline]
    pub fn pin(&self, item: &Item<'_>) -> Option<Pinned> {
        if self.pinning {
            item.pin()
        } else {
            None
        }
    }

    #[cfg(test)]
    fn pin_allowed_for_test(&self) -> Option<()> {
        self.pinning.then_some(())
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
        self.buf.len() + self.pinned_unsent >= self.pause_at
    }

    /// Queues a pinned value at the current end of the output: it is
    /// written after the bytes before it and before any added later.
    pub fn push_pinned(&mut self, pin: Pinned) {
        self.pinned_unsent += pin.len();
        self.pins.push_back(PinAt { at: self.buf.len(), pin, sent: 0 });
    }

    /// Bytes not yet written, pinned values included, when the buffer's
    /// bytes before `wstart` have been.
    #[inline]
    pub fn unsent(&self, wstart: usize) -> usize {
        self.buf.len() - wstart + self.pinned_unsent
    }

    /// Whether pinned values are queued.
    #[inline]
    pub fn has_pins(&self) -> bool {
        !self.pins.is_empty()
    }

    /// Drops the output past `len` bytes of the buffer (a reply taken back),
    /// with the pinned values queued after them. Every reply starts with
    /// bytes in the buffer (its header), so a value pinned at exactly `len`
    /// belongs to a reply before the cut and stays.
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
        while self.pins.back().is_some_and(|p| p.at > len) {
            let p = self.pins.pop_back().expect("checked");
            self.pinned_unsent -= p.pin.len() - p.sent;
        }
    }

    /// Everything was written: empty the buffer and unpin every value.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.pins.clear();
        self.pinned_unsent = 0;
    }

    /// The unsent output from `wstart` as slices in stream order (buffer
    /// bytes and pinned values interleaved), as many as `iov` holds; how
    /// many were filled.
    pub fn slices<'a>(&'a self, wstart: usize, iov: &mut [IoSlice<'a>]) -> usize {
        let mut pos = wstart;
        let mut n = 0;
        for p in &self.pins {
            if p.at > pos {
                if n == iov.len() {
                    return n;
                }
                iov[n] = IoSlice::new(&self.buf[pos..p.at]);
                n += 1;
                pos = p.at;
            }
            if n == iov.len() {
                return n;
            }
            iov[n] = IoSlice::new(&p.pin[p.sent..]);
            n += 1;
        }
        if pos < self.buf.len() && n < iov.len() {
            iov[n] = IoSlice::new(&self.buf[pos..]);
            n += 1;
        }
        n
    }

    /// `n` more bytes of what [`slices`](Self::slices) offered were written:
    /// moves `wstart` and the pinned values on, unpinning those sent.
    pub fn advance(&mut self, wstart: &mut usize, mut n: usize) {
        while n > 0 {
            let next = self.pins.front().map_or(self.buf.len(), |p| p.at);
            if *wstart < next {
                let t = (next - *wstart).min(n);
                *wstart += t;
                n -= t;
                continue;
            }
            let p = self.pins.front_mut().expect("written past the end of the output");
            let t = (p.pin.len() - p.sent).min(n);
            p.sent += t;
            n -= t;
            self.pinned_unsent -= t;
            if p.sent == p.pin.len() {
                self.pins.pop_front();
            }
        }
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

    /// A pinned value of `len` copies of `byte`, from a real store.
    fn pinned(len: usize, byte: u8) -> Pinned {
        use larder_store::{Config, Lookup, Mode, Store};
        let store = Store::new(Config { memory_limit: 16 << 20, item_size_max: 4 << 20, ..Config::default() }).unwrap();
        let value = vec![byte; len];
        store.store(Mode::Set, b"big", 0, 0, &value, 1);
        match store.get(b"big", 1, |item| item.pin()) {
            Lookup::Hit(Some(pin)) => pin,
            _ => panic!("a value larger than a segment is a large object, which pins"),
        }
    }

    /// Drains `out` the way the session does, `chunk` bytes per write.
    fn drain(out: &mut Output, chunk: usize) -> Vec<u8> {
        let mut wire = Vec::new();
        let mut wstart = 0;
        while out.unsent(wstart) > 0 {
            let mut iov = [IoSlice::new(&[]); 3];
            let n = out.slices(wstart, &mut iov);
            let mut took = 0;
            for s in &iov[..n] {
                let t = s.len().min(chunk - took);
                wire.extend_from_slice(&s[..t]);
                took += t;
                if took == chunk {
                    break;
                }
            }
            out.advance(&mut wstart, took);
        }
        assert!(!out.has_pins(), "every pin is released once sent");
        wire
    }

    #[test]
    fn pinned_values_go_out_between_the_buffer_bytes_in_order() {
        let (a, b) = (pinned(2 << 20, b'a'), pinned(3 << 20, b'b'));
        let mut want = Vec::new();
        let mut out = Output::new(64).with_pins();
        for (head, pin) in [(&b"VALUE a\r\n"[..], a), (&b"VALUE b\r\n"[..], b.clone()), (&b"VALUE b again\r\n"[..], b)] {
            out.extend_from_slice(head);
            want.extend_from_slice(head);
            want.extend_from_slice(&pin);
            out.push_pinned(pin);
            out.extend_from_slice(b"\r\n");
            want.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"END\r\n");
        want.extend_from_slice(b"END\r\n");
        assert_eq!(out.unsent(0), want.len());
        out.pause_at = 1 << 20;
        assert!(out.should_pause(), "pinned bytes count as unsent output");
        // Odd write sizes split pins and buffer runs anywhere; a slice
        // array smaller than the pieces makes several rounds.
        assert!(drain(&mut out, 777_777) == want);
    }

    #[test]
    fn truncating_drops_the_pins_after_the_cut_only() {
        let mut out = Output::new(64).with_pins();
        out.extend_from_slice(b"H1");
        out.push_pinned(pinned(2 << 20, b'x'));
        let mark = out.len();
        out.extend_from_slice(b"H2");
        out.push_pinned(pinned(2 << 20, b'y'));
        out.extend_from_slice(b"\r\n");
        out.truncate(mark);
        assert_eq!(out.unsent(0), 2 + (2 << 20), "the first reply (its value ends the buffer) stays");
        let wire = drain(&mut out, 1 << 30);
        assert_eq!(&wire[..2], b"H1");
        assert!(wire[2..].iter().all(|&b| b == b'x'));
        assert!(Output::new(64).pin_allowed_for_test().is_none(), "outputs without with_pins (UDP) never pin");
    }
}
