//! Coalesced cold misses: stampede protection for an *absent* key.
//!
//! Grace mode (`stampede::grace`) protects plain get/set clients when a hot
//! key expires: someone still has the old value to serve. When the key is
//! absent (after a restart, a flush, an eviction, a first deploy) there is
//! nothing to serve, and every client that misses recomputes it. With
//! `-o coalesce=<window>` the first `get` of an absent key in grace's scope
//! misses as usual (that client recomputes and sets); other plain `get`s of
//! that key within the window are *parked*: the connection stops executing
//! requests (its pipelined requests wait behind it; no thread blocks), and
//! the request runs again when the key is written or deleted, when
//! `flush_all` runs, or at the end of the window, whichever comes first.
//! Run again, it finds the new value, or misses.
//!
//! State is a fixed table of [`SLOTS`] slots indexed by a hash of the key,
//! as grace's winner table: who started the current round and when, a
//! write generation, and how many requests are parked on the slot. No
//! allocation, no lock. Two keys sharing a slot can cause an extra winner
//! or an early re-run (a miss a little sooner than the window), never a
//! wrong value: values always come from the store.
//!
//! Parked requests are held by the worker that owns their connection
//! (`conn::worker`); this module only wakes the workers when a slot with
//! parked requests changes. The wake-up is race-free: a parker counts
//! itself on the slot (and in the server-wide count a flush reads) and then
//! re-reads the generations, a writer bumps the generation and then reads
//! the count (all sequentially consistent), so at least one of them sees
//! the other. A writer ends the key's round before it bumps the generation,
//! so a getter whose snapshot already has the new generation does not park
//! behind the round (the write could not release it).
//!
//! The slots, the flush generation, the parked count and the workers'
//! dirty flags come from `sync`: the loom model
//! `tests/loom_coalesce.rs` runs a parked getter's worker against a write,
//! a delete, a flush and the end of the window, and checks that it is
//! always woken. (Under loom the table has one slot, so every key shares
//! it, and the workers' wake-ups are `sync::ModelWaker`s.)

use crate::stampede::keyhash::KeyHash;
use crate::sync::{seqcst_point, AtomicBool, AtomicU32, AtomicU64};
use std::sync::atomic::Ordering::*;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

#[cfg(not(larder_loom))]
const SLOTS: usize = 16384;
#[cfg(larder_loom)]
const SLOTS: usize = 1;

/// `-o coalesce` settings.
#[derive(Clone, Debug)]
pub struct CoalesceConfig {
    /// How long a parked request waits at most (0: off).
    pub window: Duration,
    /// Parked requests per key (per slot) at most; more getters miss.
    pub max_per_key: u32,
    /// Parked requests in the whole server at most.
    pub max_total: u32,
}

impl Default for CoalesceConfig {
    fn default() -> Self {
        CoalesceConfig { window: Duration::ZERO, max_per_key: 1024, max_total: 16384 }
    }
}

impl CoalesceConfig {
    pub fn enabled(&self) -> bool {
        !self.window.is_zero()
    }
}

/// What a plain getter that missed should do.
#[derive(Debug, PartialEq, Eq)]
pub enum ColdVerdict {
    /// Answer the miss: this client recomputes (or coalescing is full).
    Miss,
    /// Park the request on this ticket.
    Park(Ticket),
}

/// A parked request's claim: what releases it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    slot: u32,
    /// The slot's write generation and the flush generation when the
    /// getter looked the key up: a change of either releases it.
    gen: u32,
    flush_gen: u32,
    pub deadline: Instant,
}

/// A getter's view before its lookup (see [`Coalescer::before_lookup`]).
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    gen: u32,
    flush_gen: u32,
}

#[derive(Default)]
struct Slot {
    /// (32-bit key tag << 32) | milliseconds (since start) the round began;
    /// 0: no round.
    owner: AtomicU64,
    /// Bumped by every write or delete of a key of this slot.
    gen: AtomicU32,
    /// Requests parked on this slot now.
    parked: AtomicU32,
    /// The connection that started the round: its own later gets of the key
    /// (pipelined behind its miss) must not wait for itself.
    owner_conn: AtomicU32,
}

/// Counters, shown in `stats larder` (plain `std` atomics: no decision
/// is made from them).
#[derive(Default)]
pub struct CoalesceStats {
    /// Getters that missed and were told to recompute (round starters).
    pub wins: std::sync::atomic::AtomicU64,
    /// Requests parked, ever.
    pub waits: std::sync::atomic::AtomicU64,
    /// Parked requests released by a write, delete or flush of their key.
    pub released: std::sync::atomic::AtomicU64,
    /// Parked requests whose window ended first (they then missed).
    pub timeouts: std::sync::atomic::AtomicU64,
    /// Getters that would have been parked but a cap was reached (they
    /// missed instead).
    pub overflows: std::sync::atomic::AtomicU64,
}

pub struct Coalescer {
    pub config: CoalesceConfig,
    slots: Box<[Slot]>,
    hash: KeyHash,
    epoch: Instant,
    flush_gen: AtomicU32,
    parked_now: AtomicU32,
    /// Per worker: a key its parked requests may wait for changed (so it
    /// need not look at them on every turn of its loop).
    dirty: Box<[AtomicBool]>,
    /// Per worker: how to interrupt its `poll` (set once the workers exist).
    wakers: OnceLock<Vec<Arc<mio::Waker>>>,
    /// The same, for the workers of a loom model.
    #[cfg(larder_loom)]
    model_wakers: OnceLock<Vec<Arc<crate::sync::ModelWaker>>>,
    pub stats: CoalesceStats,
}

impl Coalescer {
    pub fn new(config: CoalesceConfig, workers: usize) -> Coalescer {
        let slots = if config.enabled() { SLOTS } else { 0 };
        Coalescer {
            config,
            slots: (0..slots).map(|_| Slot::default()).collect(),
            hash: KeyHash::new(),
            epoch: Instant::now(),
            flush_gen: AtomicU32::new(0),
            parked_now: AtomicU32::new(0),
            dirty: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            wakers: OnceLock::new(),
            #[cfg(larder_loom)]
            model_wakers: OnceLock::new(),
            stats: CoalesceStats::default(),
        }
    }

    #[inline]
    pub fn enabled(&self) -> bool {
        self.config.enabled()
    }

    /// The workers' wakers, in worker order (called once at start-up).
    pub fn set_wakers(&self, wakers: Vec<Arc<mio::Waker>>) {
        let _ = self.wakers.set(wakers);
    }

    /// The wakers of a loom model's workers, in worker order.
    #[cfg(larder_loom)]
    pub fn set_model_wakers(&self, wakers: Vec<Arc<crate::sync::ModelWaker>>) {
        let _ = self.model_wakers.set(wakers);
    }

    /// Requests parked in the whole server now.
    pub fn parked_now(&self) -> u32 {
        self.parked_now.load(Relaxed)
    }

    fn slot_of(&self, key: &[u8]) -> (usize, u32) {
        let h = self.hash.hash(key);
        ((h as usize) & (SLOTS - 1), ((h >> 32) as u32) | 1)
    }

    fn millis(&self, at: Instant) -> u32 {
        at.duration_since(self.epoch).as_millis() as u32
    }

    /// Taken before a coalescing getter looks the key up, so that a write
    /// landing between its miss and its parking still releases it.
    #[inline]
    pub fn before_lookup(&self, key: &[u8]) -> Snapshot {
        let (i, _) = self.slot_of(key);
        Snapshot { gen: self.slots[i].gen.load(SeqCst), flush_gen: self.flush_gen.load(SeqCst) }
    }

    /// A plain getter of `key` (in scope) on connection `conn` missed. The
    /// first of a round is told to miss (it recomputes); later ones park
    /// until `now + window`, except on the round's own connection. A round
    /// whose window has passed is taken over by the next getter.
    pub fn on_miss(&self, key: &[u8], conn: u32, seen: Snapshot, now: Instant) -> ColdVerdict {
        let (i, tag) = self.slot_of(key);
        let slot = &self.slots[i];
        let ms = self.millis(now);
        let window = self.config.window.as_millis().min(u32::MAX as u128 / 2) as u32;
        let cur = slot.owner.load(Relaxed);
        let (cur_tag, began) = ((cur >> 32) as u32, cur as u32);
        let round_open = cur_tag == tag && ms.wrapping_sub(began) < window;
        if !round_open {
            return match slot.owner.compare_exchange(cur, ((tag as u64) << 32) | ms as u64, Relaxed, Relaxed) {
                Ok(_) => {
                    slot.owner_conn.store(conn, Relaxed);
                    self.stats.wins.fetch_add(1, Relaxed);
                    ColdVerdict::Miss
                }
                // Another getter started the round between our load and
                // exchange: wait for it (below), unless that was not for us.
                Err(_) => self.park(i, slot, seen, now, began.wrapping_add(window).wrapping_sub(ms)),
            };
        }
        if slot.owner_conn.load(Relaxed) == conn {
            // The refilling client asks again before it set: it would wait
            // for itself.
            return ColdVerdict::Miss;
        }
        self.park(i, slot, seen, now, began.wrapping_add(window).wrapping_sub(ms))
    }

    fn park(&self, i: usize, slot: &Slot, seen: Snapshot, now: Instant, left_ms: u32) -> ColdVerdict {
        let window = self.config.window;
        // What is left of the round's window (a lost race: the whole window).
        let left = Duration::from_millis(left_ms as u64).min(window);
        let left = if left.is_zero() { window } else { left };
        if !self.count_parked(slot) {
            self.stats.overflows.fetch_add(1, Relaxed);
            return ColdVerdict::Miss;
        }
        self.stats.waits.fetch_add(1, Relaxed);
        ColdVerdict::Park(Ticket { slot: i as u32, gen: seen.gen, flush_gen: seen.flush_gen, deadline: now + left })
    }

    /// Counts a request parking on `slot`, in the slot and in the whole
    /// server, unless that passes a cap (then nothing is counted).
    #[inline]
    fn count_parked(&self, slot: &Slot) -> bool {
        #[cfg(larder_loom)]
        if crate::sync::flaw::on(crate::sync::flaw::Flaw::FlushCountRelaxed) {
            return self.count_parked_relaxed(slot);
        }
        if slot.parked.fetch_add(1, SeqCst) >= self.config.max_per_key {
            slot.parked.fetch_sub(1, SeqCst);
            return false;
        }
        // `on_flush` reads this count as `on_write` reads the slot's, so it
        // is counted the same way (a `Relaxed` count here let a flush miss
        // a getter parking at that moment: tests/loom_coalesce.rs).
        if self.parked_now.fetch_add(1, SeqCst) >= self.config.max_total {
            self.parked_now.fetch_sub(1, Relaxed);
            slot.parked.fetch_sub(1, SeqCst);
            return false;
        }
        // Both counts are ordered before the generations `released` reads
        // next (module docs).
        seqcst_point();
        true
    }

    /// `count_parked` with the server-wide count `Relaxed`, as it was
    /// (loom models only).
    #[cfg(larder_loom)]
    fn count_parked_relaxed(&self, slot: &Slot) -> bool {
        if slot.parked.fetch_add(1, SeqCst) >= self.config.max_per_key {
            slot.parked.fetch_sub(1, SeqCst);
            return false;
        }
        seqcst_point();
        if self.parked_now.fetch_add(1, Relaxed) >= self.config.max_total {
            self.parked_now.fetch_sub(1, Relaxed);
            slot.parked.fetch_sub(1, SeqCst);
            return false;
        }
        true
    }

    /// Whether a parked request may run again: its key was written or
    /// deleted, the cache was flushed, or its window ended (`timed_out`).
    pub fn released(&self, t: &Ticket, now: Instant) -> Option<bool> {
        let slot = &self.slots[t.slot as usize];
        if slot.gen.load(SeqCst) != t.gen || self.flush_gen.load(SeqCst) != t.flush_gen {
            return Some(false);
        }
        #[cfg(larder_loom)]
        if crate::sync::flaw::on(crate::sync::flaw::Flaw::DeadlineIgnored) {
            return None;
        }
        (now >= t.deadline).then_some(true)
    }

    /// A parked request runs again (`timed_out`: its window ended).
    pub fn unpark(&self, t: &Ticket, timed_out: bool) {
        self.slots[t.slot as usize].parked.fetch_sub(1, SeqCst);
        self.parked_now.fetch_sub(1, Relaxed);
        if timed_out {
            self.stats.timeouts.fetch_add(1, Relaxed);
        } else {
            self.stats.released.fetch_add(1, Relaxed);
        }
    }

    /// A parked request's connection closed: it no longer counts.
    pub fn abandon(&self, t: &Ticket) {
        self.slots[t.slot as usize].parked.fetch_sub(1, SeqCst);
        self.parked_now.fetch_sub(1, Relaxed);
    }

    /// `key` was written or deleted: release whoever waits for it and end
    /// its round (the next miss of it starts a new one).
    pub fn on_write(&self, key: &[u8]) {
        let (i, tag) = self.slot_of(key);
        let slot = &self.slots[i];
        // The round ends before the generation moves: a getter that sees
        // the new generation (its snapshot, taken before its lookup) then
        // sees the round over and starts one rather than parking behind it,
        // where nothing would release it but the old winner's write or the
        // window (tests/loom_coalesce.rs found that with a delete, which
        // calls this before it removes the item).
        #[cfg(larder_loom)]
        if self.on_write_flawed(slot, tag) {
            return;
        }
        end_round(slot, tag);
        slot.gen.fetch_add(1, SeqCst);
        // Ordered before the parked count read next (module docs).
        seqcst_point();
        if slot.parked.load(SeqCst) > 0 {
            self.wake_all();
        }
    }

    /// `on_write` with a deliberate flaw, if one is on (loom models only).
    #[cfg(larder_loom)]
    fn on_write_flawed(&self, slot: &Slot, tag: u32) -> bool {
        use crate::sync::flaw::{on, Flaw};
        if on(Flaw::CountBeforeBump) {
            end_round(slot, tag);
            let parked = slot.parked.load(SeqCst);
            slot.gen.fetch_add(1, SeqCst);
            seqcst_point();
            if parked > 0 {
                self.wake_all();
            }
        } else if on(Flaw::RoundEndsAfterBump) {
            slot.gen.fetch_add(1, SeqCst);
            seqcst_point();
            end_round(slot, tag);
            if slot.parked.load(SeqCst) > 0 {
                self.wake_all();
            }
        } else {
            return false;
        }
        true
    }

    /// `flush_all`: release every parked request (each misses).
    pub fn on_flush(&self) {
        #[cfg(larder_loom)]
        if crate::sync::flaw::on(crate::sync::flaw::Flaw::RoundEndsAfterBump) {
            return self.on_flush_round_ends_late();
        }
        // Rounds end before the flush generation moves (see `on_write`).
        for s in self.slots.iter() {
            s.owner.store(0, Relaxed);
        }
        self.flush_gen.fetch_add(1, SeqCst);
        // Ordered before the parked count read next (module docs).
        seqcst_point();
        if self.parked_now.load(SeqCst) > 0 {
            self.wake_all();
        }
    }

    /// `on_flush` ending the rounds after the flush generation moves, as
    /// it did (loom models only).
    #[cfg(larder_loom)]
    fn on_flush_round_ends_late(&self) {
        self.flush_gen.fetch_add(1, SeqCst);
        seqcst_point();
        for s in self.slots.iter() {
            s.owner.store(0, Relaxed);
        }
        if self.parked_now.load(SeqCst) > 0 {
            self.wake_all();
        }
    }

    /// Tell every worker to look at its parked requests, and interrupt its
    /// `poll`.
    fn wake_all(&self) {
        for d in self.dirty.iter() {
            d.store(true, Release);
        }
        if let Some(wakers) = self.wakers.get() {
            for w in wakers {
                let _ = w.wake();
            }
        }
        #[cfg(larder_loom)]
        if let Some(wakers) = self.model_wakers.get() {
            for w in wakers {
                w.wake();
            }
        }
    }
}

impl Coalescer {
    /// Whether worker `id` should look at its parked requests (and forget
    /// that it was told).
    #[inline]
    pub fn take_dirty(&self, id: usize) -> bool {
        self.dirty.get(id).is_some_and(|d| d.load(Relaxed) && d.swap(false, Acquire))
    }

    /// Worker `id` parked a request that may already be released.
    pub fn mark_dirty(&self, id: usize) {
        if let Some(d) = self.dirty.get(id) {
            d.store(true, Release);
        }
    }
}

/// Ends the slot's round if it is `tag`'s (the next miss starts one).
#[inline]
fn end_round(slot: &Slot, tag: u32) {
    let cur = slot.owner.load(Relaxed);
    if (cur >> 32) as u32 == tag {
        let _ = slot.owner.compare_exchange(cur, 0, Relaxed, Relaxed);
    }
}

/// Parse a window: `250ms`, `2s`, `2` (seconds).
pub fn parse_window(v: &str) -> Option<Duration> {
    if let Some(ms) = v.strip_suffix("ms") {
        return ms.parse::<u64>().ok().map(Duration::from_millis);
    }
    crate::stampede::grace::parse_duration(v).map(|s| Duration::from_secs(s as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(window_ms: u64, per_key: u32, total: u32) -> Coalescer {
        Coalescer::new(CoalesceConfig { window: Duration::from_millis(window_ms), max_per_key: per_key, max_total: total }, 2)
    }

    #[test]
    fn first_misses_then_others_park_until_a_write() {
        let c = on(1000, 10, 100);
        let t0 = Instant::now();
        let seen = c.before_lookup(b"k");
        assert_eq!(c.on_miss(b"k", 10, seen, t0), ColdVerdict::Miss);
        let seen = c.before_lookup(b"k");
        let ColdVerdict::Park(t) = c.on_miss(b"k", 11, seen, t0) else { panic!("second getter should park") };
        assert_eq!(c.parked_now(), 1);
        assert_eq!(c.released(&t, t0), None);
        c.on_write(b"k");
        assert!(c.take_dirty(0) && c.take_dirty(1), "every worker is told");
        assert!(!c.take_dirty(0));
        assert_eq!(c.released(&t, t0), Some(false));
        c.unpark(&t, false);
        assert_eq!(c.parked_now(), 0);
        // The write ended the round: the next miss starts a new one.
        assert_eq!(c.on_miss(b"k", 12, c.before_lookup(b"k"), t0), ColdVerdict::Miss);
    }

    #[test]
    fn a_write_between_lookup_and_parking_still_releases() {
        let c = on(1000, 10, 100);
        let t0 = Instant::now();
        assert_eq!(c.on_miss(b"k", 13, c.before_lookup(b"k"), t0), ColdVerdict::Miss);
        let seen = c.before_lookup(b"k");
        // The winner's set lands after this getter's lookup missed.
        c.on_write(b"k");
        // The round ended, so this getter is a new winner: no wait at all.
        assert_eq!(c.on_miss(b"k", 14, seen, t0), ColdVerdict::Miss);
        // And a getter that parks on an old snapshot is released at once.
        let stale = seen;
        let ColdVerdict::Park(t) = c.on_miss(b"k", 15, stale, t0) else { panic!() };
        assert_eq!(c.released(&t, t0), Some(false));
    }

    #[test]
    fn the_window_bounds_the_wait_and_then_the_round_passes_on() {
        let c = on(200, 10, 100);
        let t0 = Instant::now();
        assert_eq!(c.on_miss(b"k", 16, c.before_lookup(b"k"), t0), ColdVerdict::Miss);
        let t1 = t0 + Duration::from_millis(150);
        let ColdVerdict::Park(t) = c.on_miss(b"k", 17, c.before_lookup(b"k"), t1) else { panic!() };
        // Parked late in the round: it waits only for what is left of it.
        assert_eq!(t.deadline, t0 + Duration::from_millis(200));
        assert_eq!(c.released(&t, t1), None);
        assert_eq!(c.released(&t, t0 + Duration::from_millis(200)), Some(true));
        c.unpark(&t, true);
        assert_eq!(c.stats.timeouts.load(Relaxed), 1);
        // The winner never set: the next getter after the window wins.
        assert_eq!(c.on_miss(b"k", 18, c.before_lookup(b"k"), t0 + Duration::from_millis(250)), ColdVerdict::Miss);
    }

    #[test]
    fn caps_turn_parking_into_misses() {
        let c = on(1000, 2, 3);
        let t0 = Instant::now();
        assert_eq!(c.on_miss(b"a", 19, c.before_lookup(b"a"), t0), ColdVerdict::Miss);
        assert!(matches!(c.on_miss(b"a", 20, c.before_lookup(b"a"), t0), ColdVerdict::Park(_)));
        assert!(matches!(c.on_miss(b"a", 21, c.before_lookup(b"a"), t0), ColdVerdict::Park(_)));
        // Per key: two parked at most.
        assert_eq!(c.on_miss(b"a", 22, c.before_lookup(b"a"), t0), ColdVerdict::Miss);
        assert_eq!(c.on_miss(b"b", 23, c.before_lookup(b"b"), t0), ColdVerdict::Miss);
        assert!(matches!(c.on_miss(b"b", 24, c.before_lookup(b"b"), t0), ColdVerdict::Park(_)));
        // In total: three.
        assert_eq!(c.on_miss(b"b", 25, c.before_lookup(b"b"), t0), ColdVerdict::Miss);
        assert_eq!(c.parked_now(), 3);
        assert_eq!(c.stats.overflows.load(Relaxed), 2);
    }

    #[test]
    fn the_refilling_connection_never_waits_for_itself() {
        let c = on(1000, 10, 100);
        let t0 = Instant::now();
        assert_eq!(c.on_miss(b"k", 7, c.before_lookup(b"k"), t0), ColdVerdict::Miss);
        assert_eq!(c.on_miss(b"k", 7, c.before_lookup(b"k"), t0), ColdVerdict::Miss);
        assert!(matches!(c.on_miss(b"k", 8, c.before_lookup(b"k"), t0), ColdVerdict::Park(_)));
    }

    #[test]
    fn flush_releases_everyone() {
        let c = on(1000, 10, 100);
        let t0 = Instant::now();
        assert_eq!(c.on_miss(b"k", 26, c.before_lookup(b"k"), t0), ColdVerdict::Miss);
        let ColdVerdict::Park(t) = c.on_miss(b"k", 27, c.before_lookup(b"k"), t0) else { panic!() };
        c.on_flush();
        assert_eq!(c.released(&t, t0), Some(false));
    }

    #[test]
    fn windows() {
        assert_eq!(parse_window("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_window("2s"), Some(Duration::from_secs(2)));
        assert_eq!(parse_window("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_window("soon"), None);
    }
}
