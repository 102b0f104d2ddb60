//! A connection's output as the executors produce it: a byte buffer that
//! knows when to pause and how much it may grow.
//!
//! * `pause_at`: the session's bound on unsent output. Producers stop
//!   between requests and between the keys of a multi-get once the buffer
//!   reaches it ([`Output::should_pause`]), and resume when the socket has
//!   taken it. So many keys or a deep pipeline never pile up in memory.
//! * `room`: how many bytes the buffer may still grow by, from the worker's
//!   connection budget (`connmem::budget`). A value is copied into the output
//!   whole (the store's item may change or move once its lock is released,
//!   so a reply cannot be left half-copied), so before a value is encoded
//!   the front end asks [`Output::reserve`]; a value that does not fit is
//!   not sent and the command answers memcached's `SERVER_ERROR out of
//!   memory writing get response` instead.
//! * `pins`: values stored as large objects are not copied at all. The
//!   reply's header goes into the buffer, the value is queued as a
//!   [`Pinned`] reference to the store's bytes at that point of the stream
//!   ([`Output::push_held`]), and what follows it (`\r\n`, the next
//!   reply) goes into the buffer again; the session writes the pieces in
//!   order with one `writev` ([`Output::slices`]). Pinned bytes stay
//!   charged to the store's memory limit (`-m`) while the item is stored,
//!   and to the connection budget (or still `-m`, if the budget is full)
//!   once the store lets go of it (`larder_store::PinSpill`), until sent.
//!   They count as unsent output for `pause_at`, so a connection that does
//!   not read holds at most one such value beyond its bound.
//! * `refs` (UDP only, [`Output::with_refs`]): values in regular segments
//!   are not copied either; the output queues a [`ValueRef`] (where the
//!   value lies in the store) the same way, and the UDP writer copies each
//!   datagram's share of it from the store when it builds that datagram
//!   ([`Output::read_next`]). The store refuses the copy if the value's
//!   segment was reused meanwhile; the writer then stops the reply. So a
//!   UDP reply holds its reply lines, one small entry per value, and one
//!   datagram, whatever size its values add up to. (TCP writes the buffer
//!   while it still holds the shard lock's copy: it has no use for refs.)
//!
//! Which of copy, pin or reference a value gets is decided here, by
//! [`Output::hold`]: the executors and wire encoders ask it and never know
//! which transport they produce for.

use crate::connmem::budget::ConnBudget;
use crate::connmem::shelf::BufKind;
use larder_store::{Item, Pinned, Store, ValueRef};
use std::collections::VecDeque;
use std::io::IoSlice;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A value the output sends from the store rather than from its buffer.
#[derive(Debug)]
pub enum Held {
    /// A large object's value, kept alive by the pin.
    Pinned(Pinned),
    /// Where a value in a regular segment lies (UDP outputs only).
    Ref(ValueRef),
}

impl Held {
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Held::Pinned(p) => p.len(),
            Held::Ref(r) => r.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A held value and where it goes in the stream: after `buf[..at]`.
struct HeldAt {
    at: usize,
    value: Held,
    /// Bytes of it already written.
    sent: usize,
}

/// Which values an output holds instead of copying (see [`Output::hold`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Holding {
    /// Copies every value (its writer sends only the buffer).
    Nothing,
    /// Pins large objects ([`Output::slices`] sends them).
    Pins,
    /// Pins large objects and references the other values
    /// ([`Output::read_next`] sends both).
    PinsAndRefs,
}

/// Where [`Output::read_next`] is in the stream: the next buffer byte, and
/// how much of the held value at that point has been read.
#[derive(Default, Clone, Copy, Debug)]
pub struct ReadPos {
    buf: usize,
    held: usize,
    held_read: usize,
}

/// A referenced value's segment was reused before all of it was read: the
/// rest of the reply cannot be sent.
#[derive(Debug, PartialEq, Eq)]
pub struct Gone;

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
    /// Bytes of the held values' queue past [`HELD_REST`] entries charged
    /// to the budget (one entry per value: a UDP multi-get of many keys
    /// queues many references).
    held_charged: usize,
    /// A value was refused for want of room since the last check.
    refused: bool,
    /// Values refused since the session last counted them.
    pub refusals: u64,
    /// Replies not yet fully sent, and how many may be (memcached's
    /// response objects under `-o read_buf_mem_limit`; unlimited without).
    resp_unsent: usize,
    pub resp_limit: usize,
    /// Held values between the buffer's bytes, in stream order.
    held: VecDeque<HeldAt>,
    /// Their bytes not written yet.
    held_unsent: usize,
    /// What the writer knows how to send besides the buffer.
    holding: Holding,
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
        Output { buf: Vec::with_capacity(capacity), pause_at: usize::MAX, budget: None, rest: capacity, charged: 0, held_charged: 0, refused: false, refusals: 0, resp_unsent: 0, resp_limit: usize::MAX, held: VecDeque::new(), held_unsent: 0, holding: Holding::Nothing }
    }

    /// Output whose capacity past `capacity` is charged to `budget`.
    pub fn budgeted(capacity: usize, budget: Arc<ConnBudget>) -> Output {
        let mut out = Output::new(capacity);
        out.resp_limit = budget.resp_limit;
        out.budget = Some(budget);
        out
    }

    /// Like [`budgeted`](Self::budgeted), but holding no buffer until one
    /// is lent ([`lend`](Self::lend)): a connection's output, whose buffer
    /// comes from its worker's pool only while it has replies to send
    /// (`connmem::pool`).
    pub fn budgeted_unbuffered(rest: usize, budget: Arc<ConnBudget>) -> Output {
        let mut out = Output::budgeted(0, budget);
        out.rest = rest;
        out
    }

    /// Whether the output holds a buffer to write into.
    #[inline]
    pub fn has_buffer(&self) -> bool {
        self.buf.capacity() != 0
    }

    /// Write into `buf` (empty) from now on; the output held none.
    #[inline]
    pub fn lend(&mut self, buf: Vec<u8>) {
        debug_assert!(self.buf.capacity() == 0 && buf.is_empty());
        self.buf = buf;
    }

    /// Everything is sent: the buffer, to give back to the pool (or, when
    /// it grew past its resting size, to shelve: its charge is returned
    /// here and `Err` says so). `None` while anything is unsent or held.
    #[inline]
    pub fn give_back(&mut self) -> Option<Result<Vec<u8>, Vec<u8>>> {
        if !self.buf.is_empty() || !self.held.is_empty() || self.buf.capacity() == 0 {
            return None;
        }
        let buf = std::mem::take(&mut self.buf);
        if buf.capacity() <= self.rest && self.held.capacity() <= HELD_REST {
            return Some(Ok(buf));
        }
        self.shed_growth();
        Some(if buf.capacity() > self.rest { Err(buf) } else { Ok(buf) })
    }

    /// After a grown output gave its buffer back: its held queue back to
    /// resting size, and the buffer's charge returned (the shelf charges
    /// the buffer anew if it keeps it).
    #[inline(never)]
    fn shed_growth(&mut self) {
        if self.held.capacity() > HELD_REST {
            self.held = VecDeque::new();
        }
        if let Some(b) = &self.budget {
            b.recharge(self.charged, 0);
            self.charged = 0;
        }
        self.settle_charge();
    }

    /// This output's writer sends pinned values ([`Output::slices`]).
    pub fn with_pins(mut self) -> Output {
        self.holding = Holding::Pins;
        self
    }

    /// This output's writer reads the stream piece by piece from the store
    /// ([`Output::read_next`]): large objects are pinned, other values
    /// referenced. For UDP, which builds one datagram at a time.
    pub fn with_refs(mut self) -> Output {
        self.holding = Holding::PinsAndRefs;
        self
    }

    /// The value of `item` held rather than copied, if this output's writer
    /// can send it so: pinned if it is a large object, referenced if this
    /// output takes references. The caller then encodes the reply's header
    /// and queues the value ([`push_held`](Self::push_held)); on `None` it
    /// copies the value into the buffer.
    #[inline]
    pub fn hold(&self, item: &Item<'_>) -> Option<Held> {
        match self.holding {
            Holding::Nothing => None,
            Holding::Pins => item.pin().map(Held::Pinned),
            Holding::PinsAndRefs => Self::pin_or_reference(item),
        }
    }

    /// [`hold`](Self::hold) for UDP outputs; kept out of line so that the
    /// TCP get path (which inlines `hold`) stays as small as it was.
    #[inline(never)]
    fn pin_or_reference(item: &Item<'_>) -> Option<Held> {
        match item.value_ref() {
            Some(r) => Some(Held::Ref(r)),
            None => item.pin().map(Held::Pinned),
        }
    }

    #[cfg(test)]
    fn pin_allowed_for_test(&self) -> Option<()> {
        (self.holding != Holding::Nothing).then_some(())
    }

    /// Charge the budget for the capacity the buffer has now (growth that
    /// was not reserved, shrinking).
    pub fn settle_charge(&mut self) {
        if let Some(b) = &self.budget {
            let now = self.buf.capacity().saturating_sub(self.rest);
            b.recharge(self.charged, now);
            self.charged = now;
            // Past its resting size, like the buffer.
            let held = self.held.capacity().saturating_sub(HELD_REST) * std::mem::size_of::<HeldAt>();
            if held != self.held_charged {
                b.recharge(self.held_charged, held);
                self.held_charged = held;
            }
        }
    }

    /// Nothing for [`settle_charge`](Self::settle_charge) to do and no
    /// refusal to count: the buffer and the held values' queue are within
    /// their resting sizes and nothing is charged for them.
    #[inline]
    pub fn settled(&self) -> bool {
        self.refusals == 0 && self.charged == 0 && self.held_charged == 0 && self.buf.capacity() <= self.rest && self.held.capacity() <= HELD_REST
    }

    /// Give back to the resting size and return the whole charge.
    pub fn shrink(&mut self) {
        let grown = std::mem::replace(&mut self.buf, Vec::with_capacity(self.rest));
        if let Some(b) = self.budget.as_ref().filter(|_| grown.capacity() > self.rest) {
            // Uncharged first: the shelf charges it anew if it keeps it.
            b.recharge(self.charged, 0);
            self.charged = 0;
            b.shelve(BufKind::Write, grown);
        }
        if self.held.is_empty() && self.held.capacity() > HELD_REST {
            self.held = VecDeque::new();
        }
        self.settle_charge();
    }

    /// Whether the buffer or the held values' queue grew past its resting
    /// size ([`shrink`](Self::shrink) would give memory back).
    #[inline]
    pub fn oversized(&self) -> bool {
        self.buf.capacity() > self.rest || self.held.capacity() > HELD_REST
    }

    /// Give everything charged back to the budget (the connection is
    /// closing; also done on drop, so a connection that ends any other way,
    /// a panic included, gives it back too).
    pub fn release(&mut self) {
        if let Some(b) = &self.budget {
            b.recharge(self.charged + self.held_charged, 0);
            self.charged = 0;
            self.held_charged = 0;
        }
    }

    /// Whether to stop producing until the socket takes what is pending.
    #[inline]
    pub fn should_pause(&self) -> bool {
        self.buf.len() + self.held_unsent >= self.pause_at
    }

    /// Encode a hit's reply: `head` writes what precedes the value (and
    /// says whether the value follows: a meta get without `v` sends none),
    /// then the value, then `trailer`. The value goes out from the store
    /// when it can be held (a pinned large object, or a reference for a
    /// UDP reply), else it is copied; either way only if the buffer has room
    /// (the connection budget), else nothing is written and the refusal is
    /// recorded ([`take_refused`](Self::take_refused)). Every protocol's
    /// hits go through here.
    #[inline(always)]
    pub fn send_value(&mut self, item: &Item<'_>, head: impl FnOnce(&mut Output) -> bool, trailer: &[u8]) {
        if let Some(held) = self.hold(item) {
            if self.reserve(REPLY_HEAD) && head(self) {
                self.push_held(held);
                self.extend_from_slice(trailer);
            }
        } else if self.reserve(item.value.len() + REPLY_HEAD) && head(self) {
            self.extend_from_slice(item.value);
            self.extend_from_slice(trailer);
        }
    }

    /// Whether the unsent output is past the pause point (a stream that
    /// waits for the socket before it produces more: metadump).
    #[inline]
    pub fn past_pause(&self) -> bool {
        self.buf.len() + self.held_unsent > self.pause_at
    }

    /// Queues a held value at the current end of the output: it is
    /// written after the bytes before it and before any added later.
    pub fn push_held(&mut self, value: Held) {
        self.held_unsent += value.len();
        self.held.push_back(HeldAt { at: self.buf.len(), value, sent: 0 });
    }

    /// Bytes not yet written, pinned values included, when the buffer's
    /// bytes before `wstart` have been.
    #[inline]
    pub fn unsent(&self, wstart: usize) -> usize {
        self.buf.len() - wstart + self.held_unsent
    }

    /// Whether pinned values are queued.
    #[inline]
    pub fn has_pins(&self) -> bool {
        !self.held.is_empty()
    }

    /// Drops the output past `len` bytes of the buffer (a reply taken back),
    /// with the pinned values queued after them. Every reply starts with
    /// bytes in the buffer (its header), so a value pinned at exactly `len`
    /// belongs to a reply before the cut and stays.
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
        while self.held.back().is_some_and(|p| p.at > len) {
            let p = self.held.pop_back().expect("checked");
            self.held_unsent -= p.value.len() - p.sent;
        }
    }

    /// Everything was written: empty the buffer and unpin every value.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.held.clear();
        self.held_unsent = 0;
    }

    /// The unsent output from `wstart` as slices in stream order (buffer
    /// bytes and pinned values interleaved), as many as `iov` holds; how
    /// many were filled.
    pub fn slices<'a>(&'a self, wstart: usize, iov: &mut [IoSlice<'a>]) -> usize {
        let mut pos = wstart;
        let mut n = 0;
        for p in &self.held {
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
            let Held::Pinned(pin) = &p.value else {
                unreachable!("references are taken only by outputs read with read_next");
            };
            iov[n] = IoSlice::new(&pin[p.sent..]);
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
            let next = self.held.front().map_or(self.buf.len(), |p| p.at);
            if *wstart < next {
                let t = (next - *wstart).min(n);
                *wstart += t;
                n -= t;
                continue;
            }
            let p = self.held.front_mut().expect("written past the end of the output");
            let t = (p.value.len() - p.sent).min(n);
            p.sent += t;
            n -= t;
            self.held_unsent -= t;
            if p.sent == p.value.len() {
                self.held.pop_front();
            }
        }
    }

    /// The whole stream's length: buffer bytes and held values.
    #[inline]
    pub fn stream_len(&self) -> usize {
        self.buf.len() + self.held.iter().map(|p| p.value.len()).sum::<usize>()
    }

    /// Appends the stream's next bytes from `pos` to `dst`, at most `max`
    /// of them, and moves `pos` on: buffer bytes, pinned bytes, and
    /// referenced values copied from `store` a piece at a time (the store
    /// checks each piece is still the value referenced). [`Gone`] if one
    /// was not: the stream cannot go on. Reads, never consumes: the caller
    /// [`clear`](Self::clear)s the output when done with it.
    pub fn read_next(&self, pos: &mut ReadPos, dst: &mut Vec<u8>, mut max: usize, store: &Store) -> Result<(), Gone> {
        while max > 0 {
            let next = self.held.get(pos.held);
            let until = next.map_or(self.buf.len(), |p| p.at);
            if pos.buf < until {
                let t = (until - pos.buf).min(max);
                dst.extend_from_slice(&self.buf[pos.buf..pos.buf + t]);
                pos.buf += t;
                max -= t;
                continue;
            }
            let Some(p) = next else { return Ok(()) };
            let t = (p.value.len() - pos.held_read).min(max);
            match &p.value {
                Held::Pinned(pin) => dst.extend_from_slice(&pin[pos.held_read..pos.held_read + t]),
                Held::Ref(r) => {
                    let start = dst.len();
                    dst.resize(start + t, 0);
                    if !store.copy_value(r, pos.held_read, &mut dst[start..]) {
                        dst.truncate(start);
                        return Err(Gone);
                    }
                }
            }
            pos.held_read += t;
            max -= t;
            if pos.held_read == p.value.len() {
                pos.held += 1;
                pos.held_read = 0;
            }
        }
        Ok(())
    }

    /// Whether `n` more bytes fit: in spare capacity, or by growing within
    /// the budget (taken before the buffer grows, so concurrent connections
    /// cannot overdraw it). If not, remembers the refusal for
    /// [`take_refused`](Self::take_refused).
    // Always inlined: its fast path (spare capacity) is a comparison, and
    // the get path measured 19 instructions per request more when the
    // compiler stopped inlining it (scripts/instructions-per-request).
    #[inline(always)]
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
        match b.unshelve(BufKind::Write, self.buf.len() + n) {
            Some(mut kept) => {
                kept.extend_from_slice(&self.buf);
                self.buf = kept;
            }
            None => self.buf.reserve_exact(n),
        }
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

/// Held values' queue entries kept between replies (beyond it, a reply's
/// queue is freed once sent).
const HELD_REST: usize = 64;

/// Room a value's reply needs besides the value: its header line or packet.
pub const REPLY_HEAD: usize = 512;

impl Drop for Output {
    fn drop(&mut self) {
        self.release();
    }
}

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
            out.push_held(Held::Pinned(pin));
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
        out.push_held(Held::Pinned(pinned(2 << 20, b'x')));
        let mark = out.len();
        out.extend_from_slice(b"H2");
        out.push_held(Held::Pinned(pinned(2 << 20, b'y')));
        out.extend_from_slice(b"\r\n");
        out.truncate(mark);
        assert_eq!(out.unsent(0), 2 + (2 << 20), "the first reply (its value ends the buffer) stays");
        let wire = drain(&mut out, 1 << 30);
        assert_eq!(&wire[..2], b"H1");
        assert!(wire[2..].iter().all(|&b| b == b'x'));
        assert!(Output::new(64).pin_allowed_for_test().is_none(), "outputs without with_pins never pin");
    }

    #[test]
    fn a_long_queue_of_references_is_charged_and_given_back() {
        use larder_store::{Config, Lookup, Mode, Store};
        let store = Store::new(Config::default()).unwrap();
        store.store(Mode::Set, b"k", 0, 0, b"value", 1);
        let budget = Arc::new(ConnBudget::new(1 << 20));
        let mut out = Output::budgeted(64, budget.clone()).with_refs();
        for _ in 0..HELD_REST {
            let Lookup::Hit(Some(held)) = store.get(b"k", 1, |i| out.hold(i)) else { panic!() };
            out.push_held(held);
        }
        out.settle_charge();
        assert_eq!(budget.used(), 0, "a resting queue is not charged");
        for _ in 0..1000 {
            let Lookup::Hit(Some(held)) = store.get(b"k", 1, |i| out.hold(i)) else { panic!() };
            out.push_held(held);
        }
        out.settle_charge();
        assert!(budget.used() >= 1000 * std::mem::size_of::<HeldAt>(), "{}", budget.used());
        out.clear();
        assert!(out.oversized());
        out.shrink();
        assert_eq!(budget.used(), 0);
        assert!(!out.oversized());
    }

    /// Reads `out`'s whole stream with `read_next`, `chunk` bytes at a time.
    fn read_all(out: &Output, store: &larder_store::Store, chunk: usize) -> Result<Vec<u8>, Gone> {
        let (mut pos, mut wire) = (ReadPos::default(), Vec::new());
        let total = out.stream_len();
        while wire.len() < total {
            let before = wire.len();
            out.read_next(&mut pos, &mut wire, chunk, store)?;
            assert!(wire.len() - before == chunk.min(total - before), "every read but the last fills its chunk");
        }
        Ok(wire)
    }

    #[test]
    fn referenced_and_pinned_values_are_read_in_stream_order_from_the_store() {
        use larder_store::{Config, Mode, Store};
        let store = Store::new(Config { memory_limit: 16 << 20, item_size_max: 4 << 20, ..Config::default() }).unwrap();
        let small: Vec<u8> = (0..50_000u32).map(|i| (i % 253) as u8).collect();
        let big = vec![b'L'; 2 << 20];
        store.store(Mode::Set, b"small", 0, 0, &small, 1);
        store.store(Mode::Set, b"big", 0, 0, &big, 1);
        let mut out = Output::new(64).with_refs();
        let mut want = Vec::new();
        for key in [&b"small"[..], b"big", b"small"] {
            let larder_store::Lookup::Hit(Some(held)) = store.get(key, 1, |item| out.hold(item)) else {
                panic!("held, not copied");
            };
            assert_eq!(matches!(held, Held::Ref(_)), key == b"small", "segment values referenced, large ones pinned");
            out.extend_from_slice(b"VALUE\r\n");
            out.push_held(held);
            out.extend_from_slice(b"\r\n");
            want.extend_from_slice(b"VALUE\r\n");
            want.extend_from_slice(if key == b"big" { &big } else { &small });
            want.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"END\r\n");
        want.extend_from_slice(b"END\r\n");
        assert_eq!(out.stream_len(), want.len());
        assert_eq!(out.len(), 3 * 9 + 5, "the buffer holds only the reply lines");
        for chunk in [1392, 1, 7777, 1 << 30] {
            assert!(read_all(&out, &store, chunk).unwrap() == want, "chunk {chunk}");
        }
        // The small value's segment goes away: reading stops, with the
        // bytes before it intact and nothing of the value.
        store.flush_all(1, 0);
        for i in 0..400u32 {
            store.store(Mode::Set, format!("filler{i}").as_bytes(), 0, 0, &[0; 60_000], 2);
        }
        let mut pos = ReadPos::default();
        let mut wire = Vec::new();
        assert_eq!(out.read_next(&mut pos, &mut wire, 1 << 30, &store), Err(Gone));
        assert_eq!(wire, b"VALUE\r\n", "no byte of a value whose segment went away");
    }
}
