//! The global memory budget and the pool of spare segment buffers.
//!
//! Every byte that grows with the number of items is reserved here before it
//! is allocated: regular segments, large objects and index tables. `used`
//! never exceeds `limit` through a reservation; after the limit is lowered it
//! may exceed it until shards evict down (they then drop, rather than reuse,
//! buffers until under the limit).
//!
//! A large object's bytes are released when its last reference drops, not
//! when the store lets go of it: a reader may have pinned it
//! ([`large`](crate::large)), and until then its bytes stay counted here.
//!
//! Buffers of segments freed wholesale (emptied or evicted without an
//! immediate taker) wait in `free` and stay counted in `used`. The `free`
//! lock is a leaf lock, taken at most once per segment's worth of writes.
//! So does the buffer of the last large value received in place, for the
//! next one ([`Spare`](crate::large::Spare)); it is released before any
//! reservation would fail.
//!
//! Its counters and the `free` lock come from [`sync`](crate::sync): the
//! loom models of large objects and of segment reuse run on a real `Pool`.

use crate::large::{Landing, let_go, PinSpill, SegBuf, Spare};
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Mutex};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};

pub struct Pool {
    limit: AtomicUsize,
    /// Shared with every large object, whose `Drop` gives its bytes back.
    used: Arc<AtomicUsize>,
    exhausted: AtomicBool,
    segment_size: usize,
    free: Mutex<Vec<Box<[u8]>>>,
    next_gen: AtomicU64,
    /// Where pinned large objects the store lets go of are charged
    /// instead, when it has room ([`large`](crate::large)).
    spill: OnceLock<Arc<dyn PinSpill>>,
    /// The last freed landing's buffer, kept for the next big write
    /// (counted in `used`; gives way first, see [`drop_spare`](Self::drop_spare)).
    large_spare: Arc<Spare>,
}

impl Pool {
    pub fn new(limit: usize, segment_size: usize) -> Pool {
        let used = Arc::new(AtomicUsize::new(0));
        Pool {
            limit: AtomicUsize::new(limit),
            large_spare: Arc::new(Spare::new(used.clone())),
            used,
            segment_size,
            free: Mutex::new(Vec::new()),
            next_gen: AtomicU64::new(1),
            exhausted: AtomicBool::new(false),
            spill: OnceLock::new(),
        }
    }

    /// Without eviction (`-M`): memory ran out and nothing could be reclaimed.
    /// While set, no shard writes into the tail of its open segment either,
    /// so "out of memory" is one state for the whole cache, as in memcached,
    /// not a per-shard accident of which open segment has room left.
    pub fn exhausted(&self) -> bool {
        self.exhausted.load(Relaxed)
    }

    pub fn set_exhausted(&self, v: bool) {
        if self.exhausted.load(Relaxed) != v {
            self.exhausted.store(v, Relaxed);
        }
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Relaxed)
    }

    pub fn used(&self) -> usize {
        self.used.load(Relaxed)
    }

    pub fn over_limit(&self) -> bool {
        self.used() > self.limit()
    }

    /// Reserves `n` bytes if that keeps `used <= limit`.
    pub fn try_reserve(&self, n: usize) -> bool {
        let limit = self.limit();
        self.used.fetch_update(Relaxed, Relaxed, |u| u.checked_add(n).filter(|&t| t <= limit)).is_ok()
    }

    /// Reserves unconditionally (only for the start-up minimum).
    pub fn force_reserve(&self, n: usize) {
        self.used.fetch_add(n, Relaxed);
    }

    pub fn release(&self, n: usize) {
        let prev = self.used.fetch_sub(n, Relaxed);
        debug_assert!(prev >= n);
    }

    /// A spare or newly allocated regular segment buffer, if the budget allows.
    pub fn segment(&self) -> Option<Box<[u8]>> {
        if let Some(b) = self.free.lock().unwrap().pop() {
            return Some(b);
        }
        // An idle large buffer gives way before the caller evicts live data.
        while !self.try_reserve(self.segment_size) {
            if !self.large_spare.release() {
                return None;
            }
        }
        Some(vec![0u8; self.segment_size].into_boxed_slice())
    }

    /// A buffer for one large object of exactly `n` bytes, if the budget
    /// allows. Spare segment buffers hold budget without holding data, so
    /// they are released first: otherwise a large object could not use
    /// memory that small items gave back, and the caller would evict live
    /// items — or fail — while idle buffers sit here.
    pub fn large(&self, n: usize) -> Option<SegBuf> {
        self.reserve_large(n).then(|| SegBuf::large(n, self.used.clone()))
    }

    /// Reserves `n` bytes for a large object, releasing spare buffers
    /// first if need be (see [`large`](Self::large)); false if they do not fit.
    pub fn reserve_large(&self, n: usize) -> bool {
        while !self.try_reserve(n) {
            if !self.drop_spare() {
                return false;
            }
        }
        true
    }

    /// A [`Landing`] for a `value_len`-byte value, charged to the spill
    /// (the connection budget) until the store adopts it; `None` without a
    /// spill or room in it.
    pub fn landing(&self, key_len: usize, value_len: usize) -> Option<Landing> {
        Landing::new(key_len, value_len, self.used.clone(), self.spill.get()?, &self.large_spare)
    }

    /// Sets where pinned large objects the store lets go of are charged
    /// (once; later calls are ignored).
    pub fn set_spill(&self, spill: Arc<dyn PinSpill>) {
        let _ = self.spill.set(spill);
    }

    /// Whether `n` more bytes fit in the budget, once spare buffers are
    /// released (as [`large`](Self::large) would).
    pub fn has_room(&self, n: usize) -> bool {
        loop {
            if self.used().checked_add(n).is_some_and(|t| t <= self.limit()) {
                return true;
            }
            if !self.drop_spare() {
                return false;
            }
        }
    }

    /// Takes back a buffer that is no longer used (still counted in `used`).
    /// Regular buffers are kept for reuse unless the pool is over its limit;
    /// a large object's bytes are released when its last pin drops.
    pub fn give_back(&self, buf: SegBuf, large: bool) {
        let buf = match buf {
            SegBuf::Large(obj) => return self.let_go(obj),
            SegBuf::Plain(b) => b,
        };
        if large || buf.len() != self.segment_size || self.over_limit() {
            self.release(buf.len());
            drop(buf);
        } else {
            self.free.lock().unwrap().push(buf);
        }
    }

    /// Returns a buffer's bytes to the budget at once (taking ownership so
    /// the buffer cannot outlive its accounting).
    /// A pinned large object's bytes go back when its last pin drops.
    pub fn discard(&self, buf: SegBuf) {
        match buf {
            SegBuf::Plain(b) => self.release(b.len()),
            SegBuf::Large(obj) => self.let_go(obj),
        }
    }

    /// The store lets go of a large object ([`let_go`]); if that left the
    /// pool over its limit (it was lowered) the kept large buffer goes too.
    fn let_go(&self, obj: crate::sync::Arc<crate::large::LargeObject>) {
        let_go(obj, self.spill.get());
        if self.over_limit() {
            self.large_spare.release();
        }
    }

    /// Drops one spare buffer, releasing its bytes; whether there was one.
    /// The kept large buffer goes first: it is the most memory doing nothing.
    pub fn drop_spare(&self) -> bool {
        if self.large_spare.release() {
            return true;
        }
        match self.free.lock().unwrap().pop() {
            Some(b) => {
                self.release(b.len());
                true
            }
            None => false,
        }
    }

    /// Drops spare buffers while over the limit (after the limit shrank).
    pub fn trim(&self) {
        if self.over_limit() {
            self.large_spare.release();
        }
        let mut free = self.free.lock().unwrap();
        while self.over_limit() {
            match free.pop() {
                Some(b) => self.release(b.len()),
                None => break,
            }
        }
    }

    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Relaxed);
        self.trim();
    }

    /// Bytes of the kept large buffer (0 when none is kept).
    pub fn spare_large_bytes(&self) -> usize {
        self.large_spare.bytes()
    }

    pub fn spare_segments(&self) -> usize {
        self.free.lock().unwrap().len()
    }

    /// A new segment generation (never 0, never reused).
    pub fn next_gen(&self) -> u64 {
        self.next_gen.fetch_add(1, Relaxed)
    }

    /// Makes every later [`next_gen`](Self::next_gen) exceed `gen` (after a
    /// warm restart loaded CAS values up to `gen << 24`). Capped so that
    /// `gen << 24` still fits 64 bits.
    pub fn advance_gen_past(&self, gen: u64) {
        self.next_gen.fetch_max(gen.saturating_add(1).min((1 << 40) - 1), Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_enforced() {
        let p = Pool::new(3000, 1000);
        let a = p.segment().unwrap();
        let b = p.segment().unwrap();
        assert!(p.large(1001).is_none());
        let c = p.large(1000).unwrap();
        assert!(p.segment().is_none());
        assert!(p.large(1).is_none());
        assert_eq!(p.used(), 3000);
        p.give_back(c, true);
        assert_eq!(p.used(), 2000);
        p.give_back(a.into(), false);
        assert_eq!(p.used(), 2000, "spare buffers stay counted");
        assert_eq!(p.spare_segments(), 1);
        let a = p.segment().unwrap();
        assert_eq!(p.spare_segments(), 0);
        assert_eq!(a.len(), 1000);
        p.give_back(a.into(), false);
        p.give_back(b.into(), false);
        p.set_limit(500);
        assert_eq!(p.used(), 0);
        assert!(!p.try_reserve(501));
        assert!(p.try_reserve(500));
    }

    #[test]
    fn large_objects_take_the_budget_of_spare_buffers() {
        let p = Pool::new(3000, 1000);
        let a = p.segment().unwrap();
        let b = p.segment().unwrap();
        p.give_back(a.into(), false);
        p.give_back(b.into(), false);
        assert_eq!((p.used(), p.spare_segments()), (2000, 2));
        assert!(p.has_room(1000), "room without touching the spares");
        assert_eq!(p.spare_segments(), 2);
        assert!(p.has_room(2000));
        assert_eq!((p.used(), p.spare_segments()), (1000, 1), "one spare gave way");
        assert!(!p.has_room(3001));
        let b = p.segment().unwrap();
        p.give_back(b.into(), false);
        let big = p.large(2500).expect("spares give way");
        assert_eq!((p.used(), p.spare_segments()), (2500, 0));
        p.give_back(big, true);
        assert_eq!(p.used(), 0);
        assert!(p.large(3001).is_none());
    }

    #[test]
    fn a_pinned_large_object_stays_counted_after_the_store_drops_it() {
        let p = Pool::new(3000, 1000);
        let big = p.large(2000).unwrap();
        let pin = big.pin(10).unwrap();
        p.discard(big);
        assert_eq!(p.used(), 2000, "still held by a reader");
        assert!(p.large(1500).is_none(), "pinned bytes are not handed out twice");
        drop(pin);
        assert_eq!(p.used(), 0);
        assert!(p.large(3000).is_some());
    }

    #[test]
    fn generations_are_unique_and_nonzero() {
        let p = Pool::new(0, 1);
        let a = p.next_gen();
        let b = p.next_gen();
        assert!(a >= 1 && b > a);
    }
}
