//! The store's public face: every operation a caller can make on [`Store`],
//! in one place. What each does is written once, in the module named in
//! its doc; this file only says what the crate offers.
//!
//! # Requests, reported or not
//!
//! A request may make items leave the store on their own (eviction,
//! expiry found by a lookup, flush, the old value a failed `set` drops),
//! inside the call, under a shard's lock, and possibly in another shard
//! than the key's (eviction makes room anywhere). So the caller's sink
//! ([`Departures`]) travels down with the call instead of living in a hook
//! installed at start-up, and the departures of a call go to whoever made
//! it: the server's worker, whose per-prefix accounting and `watch
//! evictions` lines must hear of them.
//!
//! The request operations are therefore written once, as methods of
//! [`Reporting`] (the store with a caller's sink, generic over the sink so
//! each use is monomorphised: no dispatch beyond what the store's internals
//! already do). [`Store`]'s plain forms of the same names are those very
//! calls with [`Unreported`] as the sink, with no body of their own, so
//! the two cannot differ in anything but reporting. Tests and tools use a
//! few shorthands on top ([`Store::store`], [`Store::delete`],
//! [`Store::arith`]), defined by the same calls.
//!
//! # The rest
//!
//! Flush, background reclaim, limits, statistics, receiving large values
//! in place ([`Landing`]), reading for observability (peek, inspect, shard
//! walks, [`ValueRef`] copies) and snapshots.

use crate::conditional::ArithArgs;
use crate::meta::{Invalidate, MetaGet, MetaItem, WriteOptions};
use crate::shard::Why;
use crate::{
    ArithOutcome, ArithResult, Charge, Config, ConfigError, DeleteOutcome, Departures, DumpItem, Item, Landing, LoadReport, Lookup,
    Mode, PinSpill, SaveReport, SnapshotClock, SnapshotError, Stats, Store, StoreResult, Time, Unreported, ValueRef, Write,
};
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The store, with a caller's departure sink: see the module docs. Made
/// by [`Store::reporting`], typically for one request (a sink usually
/// borrows the caller's accounting; a closure `&mut FnMut` is a sink too).
pub struct Reporting<'a, D: Departures> {
    store: &'a Store,
    d: D,
}

impl Store {
    /// The request operations, reporting departures to `d`.
    #[inline]
    pub fn reporting<D: Departures>(&self, d: D) -> Reporting<'_, D> {
        Reporting { store: self, d }
    }
}

/// The request operations, each written once (see the module docs).
impl<D: Departures> Reporting<'_, D> {
    /// Look a key up; `read` runs while the item is guaranteed stable.
    #[inline]
    pub fn get<R>(&mut self, key: &[u8], now: Time, read: impl FnOnce(&Item<'_>) -> R) -> Lookup<R> {
        self.store.fetch(key, now, None, &mut self.d, read)
    }

    /// Look a key up and set its expiry (`gat`); `read` sees the new expiry.
    #[inline]
    pub fn get_and_touch<R>(&mut self, key: &[u8], now: Time, exptime: Time, read: impl FnOnce(&Item<'_>) -> R) -> Lookup<R> {
        self.store.fetch(key, now, Some(exptime), &mut self.d, read)
    }

    /// Set a live item's expiry; whether it existed.
    #[inline]
    pub fn touch(&mut self, key: &[u8], now: Time, exptime: Time) -> bool {
        self.store.fetch(key, now, Some(exptime), &mut self.d, |_| ()) == Lookup::Hit(())
    }

    /// A get for grace mode: an item that expired less than `grace` seconds
    /// ago is still returned (and kept), with `true` meaning "expired, in
    /// grace" (passed to `read`, which runs under the shard lock, so the
    /// caller can decide there whether to serve the stale value). The server
    /// decides who refills it; the store only keeps the old value readable
    /// until a set replaces it or a delete removes it ([`meta`](crate::meta)).
    #[inline]
    pub fn get_graced<R>(&mut self, key: &[u8], now: Time, grace: Time, read: impl FnOnce(&Item<'_>, bool) -> R) -> Lookup<R> {
        self.store.get_graced_to(key, now, grace, &mut self.d, read)
    }

    /// A meta get (`mg`): look up, optionally vivify, touch, and decide who
    /// wins a refill ([`meta`](crate::meta)). `read` runs under the shard
    /// lock.
    #[inline]
    pub fn meta_get<R>(&mut self, key: &[u8], now: Time, opts: &MetaGet, read: impl FnOnce(&MetaItem<'_>) -> R) -> Lookup<R> {
        self.store.meta_get_to(key, now, opts, &mut self.d, read)
    }

    /// Look a key up without touching it: no access bump, no fetched bit, no
    /// meta state change (the server's `watch` lines report what a write or
    /// delete is about to find). Like every lookup, it removes an expired or
    /// flushed item it finds (the command that follows would have).
    #[inline]
    pub fn peek<R>(&mut self, key: &[u8], now: Time, read: impl FnOnce(&Item<'_>) -> R) -> Lookup<R> {
        self.store.peek_to(key, now, &mut self.d, read)
    }

    /// Every storage command of every protocol: write `w` according to its
    /// mode and `opts` (a CAS, allowed with every mode; meta's stale and
    /// base64 flags; a CAS the client chose), with what a successful write
    /// charged (the new item) and released (the item it replaced).
    #[inline]
    pub fn write(&mut self, w: &Write<'_>, now: Time, opts: &WriteOptions) -> (StoreResult, Charge) {
        self.store.write_to(w, now, opts, &mut self.d)
    }

    /// After a `set` of `key` failed (too large, out of memory): removes
    /// the old value, as memcached does, and reports it to the sink as
    /// [`Departure::Dropped`](crate::Departure::Dropped) (no client deleted
    /// it). Whether there was one.
    #[inline]
    pub fn drop_after_failed_set(&mut self, key: &[u8], now: Time) -> bool {
        self.store.unlink_key(key, now, Why::Dropped, &mut self.d)
    }

    /// Delete `key` if it is live and, when `cas` is given, its CAS
    /// matches ([`conditional`](crate::conditional)), with the bytes the
    /// delete released.
    #[inline]
    pub fn delete_charged(&mut self, key: &[u8], now: Time, cas: Option<u64>) -> (DeleteOutcome, Charge) {
        self.store.delete_to(key, now, cas, &mut self.d)
    }

    /// `md … I`: mark a live item stale instead of deleting it, with a new
    /// (larger) CAS and optionally a new expiry; the win token is cleared so
    /// the next reader wins the refill. `cas`: only if the item's CAS
    /// matches. With what the stale copy charged and the item it replaced
    /// released (nothing when no room for the copy made it a removal, which
    /// the call reports as a departure, `Dropped`).
    #[inline]
    pub fn invalidate_charged(
        &mut self,
        key: &[u8],
        now: Time,
        cas: Option<u64>,
        exptime: Option<Time>,
        new_cas: Option<u64>,
    ) -> (DeleteOutcome, Charge) {
        self.store.invalidate_to(key, now, Invalidate { cas, exptime, new_cas }, &mut self.d)
    }

    /// incr (wrapping at 2^64) or decr (stopping at 0) a decimal value if
    /// it is live and, when `cas` is given, its CAS matches, giving the
    /// rewritten item `new_cas` instead of a derived CAS when set (meta
    /// `ma … E<cas>`); with what a change charged and released (the
    /// rewritten item and the old one).
    #[inline]
    pub fn arith_charged(
        &mut self,
        key: &[u8],
        now: Time,
        incr: bool,
        delta: u64,
        cas: Option<u64>,
        new_cas: Option<u64>,
    ) -> (ArithOutcome, Charge) {
        self.store.arith_to(key, now, ArithArgs { incr, delta, cas, new_cas }, &mut self.d)
    }

    /// Frees every segment (and large object) whose items have all
    /// expired by `now`, or were flushed by a `flush_all` applied at or
    /// before `now` (the server passes a time a little behind its clock, so
    /// a read just after the flush finds the item flushed, not gone),
    /// without waiting for memory pressure, in the
    /// shards `part, part + parts, …` (so that `parts` callers — the
    /// server's workers, once a second — share the work). Items still
    /// indexed there count as `reclaimed`, as memcached's LRU crawler counts
    /// them. Shards whose published `free_at` says nothing is due are
    /// skipped without taking their lock. Returns segments freed.
    #[inline]
    pub fn reclaim_expired(&mut self, now: Time, part: usize, parts: usize) -> usize {
        self.store.reclaim_expired_to(now, part, parts, &mut self.d)
    }
}

impl Store {
    /// A store configured by `config`, evicting with segment S3-FIFO
    /// ([`evict`](crate::evict)).
    pub fn new(config: Config) -> Result<Store, ConfigError> {
        Store::with_policy(config, Box::new(crate::evict::S3Fifo))
    }
}

/// The plain forms of the request operations: the same calls, reporting
/// to nobody. Their docs are on [`Reporting`].
impl Store {
    /// [`Reporting::get`], unreported.
    #[inline]
    pub fn get<R>(&self, key: &[u8], now: Time, read: impl FnOnce(&Item<'_>) -> R) -> Lookup<R> {
        self.reporting(Unreported).get(key, now, read)
    }

    /// [`Reporting::get_and_touch`], unreported.
    #[inline]
    pub fn get_and_touch<R>(&self, key: &[u8], now: Time, exptime: Time, read: impl FnOnce(&Item<'_>) -> R) -> Lookup<R> {
        self.reporting(Unreported).get_and_touch(key, now, exptime, read)
    }

    /// [`Reporting::touch`], unreported.
    #[inline]
    pub fn touch(&self, key: &[u8], now: Time, exptime: Time) -> bool {
        self.reporting(Unreported).touch(key, now, exptime)
    }

    /// [`Reporting::get_graced`], unreported.
    #[inline]
    pub fn get_graced<R>(&self, key: &[u8], now: Time, grace: Time, read: impl FnOnce(&Item<'_>, bool) -> R) -> Lookup<R> {
        self.reporting(Unreported).get_graced(key, now, grace, read)
    }

    /// [`Reporting::meta_get`], unreported.
    #[inline]
    pub fn meta_get<R>(&self, key: &[u8], now: Time, opts: &MetaGet, read: impl FnOnce(&MetaItem<'_>) -> R) -> Lookup<R> {
        self.reporting(Unreported).meta_get(key, now, opts, read)
    }

    /// [`Reporting::peek`], unreported.
    #[inline]
    pub fn peek<R>(&self, key: &[u8], now: Time, read: impl FnOnce(&Item<'_>) -> R) -> Lookup<R> {
        self.reporting(Unreported).peek(key, now, read)
    }

    /// [`Reporting::write`], unreported.
    #[inline]
    pub fn write(&self, w: &Write<'_>, now: Time, opts: &WriteOptions) -> (StoreResult, Charge) {
        self.reporting(Unreported).write(w, now, opts)
    }

    /// [`Reporting::drop_after_failed_set`], unreported.
    #[inline]
    pub fn drop_after_failed_set(&self, key: &[u8], now: Time) -> bool {
        self.reporting(Unreported).drop_after_failed_set(key, now)
    }

    /// [`Reporting::delete_charged`], unreported.
    #[inline]
    pub fn delete_charged(&self, key: &[u8], now: Time, cas: Option<u64>) -> (DeleteOutcome, Charge) {
        self.reporting(Unreported).delete_charged(key, now, cas)
    }

    /// [`Reporting::invalidate_charged`], unreported.
    #[inline]
    pub fn invalidate_charged(
        &self,
        key: &[u8],
        now: Time,
        cas: Option<u64>,
        exptime: Option<Time>,
        new_cas: Option<u64>,
    ) -> (DeleteOutcome, Charge) {
        self.reporting(Unreported).invalidate_charged(key, now, cas, exptime, new_cas)
    }

    /// [`Reporting::arith_charged`], unreported.
    #[inline]
    pub fn arith_charged(
        &self,
        key: &[u8],
        now: Time,
        incr: bool,
        delta: u64,
        cas: Option<u64>,
        new_cas: Option<u64>,
    ) -> (ArithOutcome, Charge) {
        self.reporting(Unreported).arith_charged(key, now, incr, delta, cas, new_cas)
    }

    /// [`Reporting::reclaim_expired`], unreported.
    #[inline]
    pub fn reclaim_expired(&self, now: Time, part: usize, parts: usize) -> usize {
        self.reporting(Unreported).reclaim_expired(now, part, parts)
    }

    /// Shorthand for tests and tools: [`write`](Self::write) of a whole
    /// value in `mode`, no options.
    pub fn store(&self, mode: Mode, key: &[u8], flags: u32, exptime: Time, value: &[u8], now: Time) -> StoreResult {
        self.write(&Write { mode, key, flags, exptime, value, landed: None }, now, &WriteOptions::default()).0
    }

    /// Shorthand: [`delete_charged`](Self::delete_charged) with no CAS;
    /// whether a live item was removed.
    pub fn delete(&self, key: &[u8], now: Time) -> bool {
        self.delete_charged(key, now, None).0 == DeleteOutcome::Deleted
    }

    /// Shorthand: [`arith_charged`](Self::arith_charged) with no CAS, as
    /// the text protocol's incr/decr.
    pub fn arith(&self, key: &[u8], now: Time, incr: bool, delta: u64) -> ArithResult {
        match self.arith_charged(key, now, incr, delta, None, None).0 {
            ArithOutcome::Value { value, .. } => ArithResult::Value(value),
            ArithOutcome::NotFound | ArithOutcome::Exists => ArithResult::NotFound,
            ArithOutcome::NonNumeric => ArithResult::NonNumeric,
            ArithOutcome::OutOfMemory => ArithResult::OutOfMemory,
        }
    }
}

/// Everything else: whole-store commands, large values received in place,
/// observability and snapshots.
impl Store {
    /// Invalidate every item stored before `at` once `now >= at`
    /// (`at <= now`: at once).
    pub fn flush_all(&self, now: Time, at: Time) {
        let _serial = self.flush_lock.lock().unwrap_or_else(|e| e.into_inner());
        let cur = self.flush.load(Ordering::Acquire);
        if now >= cur as u32 {
            // The previous flush is due: shards that have not applied it yet
            // must, before the new word replaces it.
            self.apply_flush_everywhere(cur, now);
        }
        let seq = (cur >> 32).wrapping_add(1) & 0xffff_ffff;
        let due = if at <= now { 0 } else { at };
        let word = seq << 32 | due as u64;
        self.flush.store(word, Ordering::Release);
        if due == 0 {
            // Apply now so the memory is reclaimable at once.
            self.apply_flush_everywhere(word, now);
        }
    }

    /// Change the memory limit at run time (`cache_memlimit`).
    pub fn set_memory_limit(&self, bytes: usize) -> Result<(), ConfigError> {
        if bytes < self.segment_size {
            return Err(ConfigError(format!("memory limit {bytes} is smaller than one segment ({})", self.segment_size)));
        }
        self.pool.set_limit(bytes);
        Ok(())
    }

    /// Store-wide figures for `stats`.
    pub fn stats(&self) -> Stats {
        let mut s = Stats {
            limit_maxbytes: self.pool.limit() as u64,
            segment_size: self.segment_size as u64,
            shards: self.shards.len() as u64,
            ..Stats::default()
        };
        for sh in self.shards.iter() {
            let g = sh.0.lock().unwrap_or_else(|e| e.into_inner());
            let c = &g.st;
            s.curr_items += c.curr_items;
            s.total_items += c.total_items;
            s.bytes += c.live_bytes;
            s.bytes_dead += c.written_bytes - c.live_bytes;
            s.evictions += c.evictions;
            s.reclaimed += c.reclaimed;
            s.expired_unfetched += c.expired_unfetched;
            s.evicted_unfetched += c.evicted_unfetched;
            s.compactions += c.compactions;
            s.segments_used += (g.segs.count() - g.segs.large_count()) as u64;
            s.large_objects += g.segs.large_count() as u64;
            s.large_bytes += g.segs.large_bytes() as u64;
            s.large_pages_bytes += g.segs.large_pages_bytes() as u64;
            s.index_bytes += (g.index.bytes() + g.ghost_bytes()) as u64;
            s.index_slots += g.index.slots() as u64;
            s.index_used += g.index.used() as u64;
            s.evicted_nonzero += c.evicted_nonzero;
            s.last_eviction = s.last_eviction.max(c.last_eviction);
            let born = g.segs.oldest_first().map(|id| g.segs.get(id)).filter_map(|seg| seg.born()).min();
            s.oldest_born = s.oldest_born.into_iter().chain(born).min();
        }
        s.segments_total = s.segments_used + self.pool.spare_segments() as u64;
        s.memory_used = self.pool.used() as u64;
        s.large_spare_bytes = self.pool.spare_large_bytes() as u64;
        s
    }

    /// Where a large object the store lets go of while readers still pin
    /// it is charged, when that has room, instead of `-m` (see
    /// [`Item::pin`]). Without one, such bytes stay in `-m` until unpinned.
    pub fn set_pin_spill(&self, spill: Arc<dyn PinSpill>) {
        self.pool.set_spill(spill);
    }

    /// Whether a value of `value_len` bytes under a key of `key_len` bytes
    /// (as sent) makes a large object, so that receiving it into a
    /// [`Landing`] saves a copy: its item, in the smallest form it can take,
    /// does not fit in a segment. (A value of exactly a segment's size, a
    /// popular power of two, is such a value; before, only longer ones
    /// landed, and each such `set` allocated a fresh buffer.)
    pub fn lands(&self, key_len: usize, value_len: usize) -> bool {
        crate::item::item_len(key_len, value_len, 0) > self.segment_size
    }

    /// A [`Landing`] for a `value_len`-byte value under a key of `key_len`
    /// bytes as sent, charged to the pin spill (the connection budget) until
    /// a write adopts it; `None` without a spill, or when it has no room
    /// (memcached's out of memory).
    pub fn landing(&self, key_len: usize, value_len: usize) -> Option<Landing> {
        self.pool.landing(key_len, value_len)
    }

    /// Read `key`'s live item without changing anything — not even
    /// removing it if it is dead, so nothing leaves the store and no caller
    /// needs to hear of departures (the dashboard's look at its hot keys).
    /// Holds the shard's lock while `read` runs.
    pub fn inspect<R>(&self, key: &[u8], now: Time, read: impl FnOnce(&Item<'_>) -> R) -> Option<R> {
        let h = self.hasher.hash(key);
        let l = self.lock(h, now);
        let loc = l.g.find_live(h, key, now)?;
        Some(read(&l.g.item(loc)))
    }

    /// Number of shards ([`for_each_item_in_shard`](Self::for_each_item_in_shard) takes 0..this).
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Calls `f(key, item)` for every live item (not expired, not flushed)
    /// of shard `shard`, under that shard's lock only: other shards keep
    /// serving. An item is live when the index still points at it. Nothing
    /// is modified (expired items are left to the usual reclaim paths).
    /// Returns the number of items passed to `f`. To bound how long the
    /// shard's lock is held, walk it in steps with
    /// [`for_each_item_in_shard_from`](Self::for_each_item_in_shard_from).
    pub fn for_each_item_in_shard(&self, shard: usize, now: Time, mut f: impl FnMut(&[u8], &DumpItem)) -> usize {
        let mut n = 0;
        let mut after = 0;
        while let Some((items, last)) = self.for_each_item_in_shard_from(shard, now, after, usize::MAX, &mut f) {
            n += items;
            after = last;
        }
        n
    }

    /// One step of a shard walk ([`dump`](crate::dump)): the items of at
    /// most `max_segments` of the shard's segments whose generation is
    /// above `after_gen` (0 to start), lowest generations first, under one
    /// hold of the shard's lock. Returns (items passed to `f`, the highest
    /// generation walked) to pass as `after_gen` next time, or `None` when
    /// no segment is left. Items written between steps land in newer
    /// segments and may be included; an item moved to a newer segment
    /// between steps may be seen twice, as with memcached's crawler.
    pub fn for_each_item_in_shard_from(
        &self,
        shard: usize,
        now: Time,
        after_gen: u64,
        max_segments: usize,
        f: impl FnMut(&[u8], &DumpItem),
    ) -> Option<(usize, u64)> {
        self.walk_shard(shard, now, after_gen, max_segments, f)
    }

    /// Copies bytes `from..from + dst.len()` of the referenced value into
    /// `dst`, if its segment still holds the bytes the reference was made
    /// from (same generation); false, and `dst` untouched, if not. Takes
    /// the shard's lock for the copy only ([`valueref`](crate::valueref)).
    pub fn copy_value(&self, r: &ValueRef, from: usize, dst: &mut [u8]) -> bool {
        let Some(shard) = self.shards.get(r.shard as usize) else {
            return false;
        };
        r.copy_out(&shard.0, |s| &s.segs, from, dst)
    }

    /// Writes every live item (not expired, not flushed) to `w` in the
    /// snapshot format ([`snapshot`](crate::snapshot)), each shard's items
    /// oldest first, holding one shard's lock at a time while its items are
    /// written: meant for a stopped server (the graceful stop), where
    /// nothing waits for those locks. `larder_version` is recorded in the
    /// header.
    pub fn save_snapshot<W: io::Write>(&self, w: W, clock: SnapshotClock, larder_version: &str) -> io::Result<SaveReport> {
        self.save(w, clock, larder_version)
    }

    /// Reads a snapshot from `r` and stores its items
    /// ([`snapshot`](crate::snapshot)). On any error the store is flushed,
    /// so nothing read from a refused file can be served. Meant for an
    /// empty store at start-up.
    pub fn load_snapshot<R: io::Read + Send>(&self, r: R, clock: SnapshotClock) -> Result<LoadReport, SnapshotError> {
        self.load(r, clock)
    }
}

/// The older per-protocol forms the unit tests were written with, as
/// calls of the operations above (tests only: the crate offers one write,
/// one delete, one invalidate and one incr/decr).
#[cfg(test)]
pub(crate) trait TestForms {
    #[allow(clippy::too_many_arguments)]
    fn store_if(&self, mode: Mode, key: &[u8], flags: u32, exptime: Time, value: &[u8], now: Time, cas: Option<u64>) -> StoreResult;
    #[allow(clippy::too_many_arguments)]
    fn meta_store(&self, mode: Mode, key: &[u8], flags: u32, exptime: Time, value: &[u8], now: Time, opts: &WriteOptions) -> StoreResult;
    fn delete_if(&self, key: &[u8], now: Time, cas: Option<u64>) -> DeleteOutcome;
    fn arith_if(&self, key: &[u8], now: Time, incr: bool, delta: u64, cas: Option<u64>) -> ArithOutcome;
    fn arith_meta(&self, key: &[u8], now: Time, incr: bool, delta: u64, cas: Option<u64>, new_cas: Option<u64>) -> ArithOutcome;
    fn invalidate(&self, key: &[u8], now: Time, cas: Option<u64>, exptime: Option<Time>, new_cas: Option<u64>) -> DeleteOutcome;
}

#[cfg(test)]
impl TestForms for Store {
    fn store_if(&self, mode: Mode, key: &[u8], flags: u32, exptime: Time, value: &[u8], now: Time, cas: Option<u64>) -> StoreResult {
        self.meta_store(mode, key, flags, exptime, value, now, &WriteOptions { cas, ..WriteOptions::default() })
    }

    fn meta_store(&self, mode: Mode, key: &[u8], flags: u32, exptime: Time, value: &[u8], now: Time, opts: &WriteOptions) -> StoreResult {
        self.write(&Write { mode, key, flags, exptime, value, landed: None }, now, opts).0
    }

    fn delete_if(&self, key: &[u8], now: Time, cas: Option<u64>) -> DeleteOutcome {
        self.delete_charged(key, now, cas).0
    }

    fn arith_if(&self, key: &[u8], now: Time, incr: bool, delta: u64, cas: Option<u64>) -> ArithOutcome {
        self.arith_charged(key, now, incr, delta, cas, None).0
    }

    fn arith_meta(&self, key: &[u8], now: Time, incr: bool, delta: u64, cas: Option<u64>, new_cas: Option<u64>) -> ArithOutcome {
        self.arith_charged(key, now, incr, delta, cas, new_cas).0
    }

    fn invalidate(&self, key: &[u8], now: Time, cas: Option<u64>, exptime: Option<Time>, new_cas: Option<u64>) -> DeleteOutcome {
        self.invalidate_charged(key, now, cas, exptime, new_cas).0
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Departure, Mode, Store, Unreported};

    /// Departures go to the sink of the call that caused them, and the
    /// plain methods report nothing.
    #[test]
    fn each_call_reports_to_its_own_sink() {
        let s = Store::new(Config { memory_limit: 4 << 20, segment_size: 64 << 10, ..Config::default() }).unwrap();
        s.store(Mode::Set, b"a", 0, 5, b"v", 1);
        s.store(Mode::Set, b"b", 0, 5, b"v", 1);
        let (mut first, mut second) = (Vec::new(), Vec::new());
        let mut one = |k: &[u8], _: u64, why: Departure, _: &crate::DepartedItem| first.push((k.to_vec(), why));
        assert_eq!(s.reporting(&mut one).get(b"a", 6, |_| ()), crate::Lookup::Expired);
        let mut two = |k: &[u8], _: u64, why: Departure, _: &crate::DepartedItem| second.push((k.to_vec(), why));
        assert!(!s.reporting(&mut two).touch(b"b", 6, 0));
        assert_eq!(first, vec![(b"a".to_vec(), Departure::Expired)]);
        assert_eq!(second, vec![(b"b".to_vec(), Departure::Expired)]);
        // Unreported: the same call, nobody told.
        s.store(Mode::Set, b"c", 0, 5, b"v", 1);
        assert_eq!(s.reporting(Unreported).get(b"c", 6, |_| ()), crate::Lookup::Expired);
    }
}
