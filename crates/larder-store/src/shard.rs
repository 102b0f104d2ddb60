//! One shard: the index and segments of the keys that hash to it, and every
//! operation that only needs this shard's lock — lookup with lazy expiry and
//! flush, linking and unlinking items with byte accounting, index growth
//! (incremental: each lookup migrates a few buckets), and evicting one of
//! its segments (walking it and unlinking what is
//! still live, or — for segment S3-FIFO — copying the items that earned it
//! to the open main segment; see [`Shard::evict_keeping`]).
//!
//! Accounting invariants (checked by tests through `Stats`):
//! `live_bytes` = sum of the sizes of indexed items, `written_bytes` = sum of
//! the append offsets of this shard's segments, so dead bytes are the
//! difference. A segment whose last live item goes away is freed at once
//! unless it is an open segment (`open` for new writes, `open_main` for
//! eviction survivors).

use crate::evict::{EvictionPolicy, Want};
use crate::hash::KeyHasher;
use crate::index::{Index, Loc, Pos};
use crate::item::{self, Header};
use crate::pool::Pool;
use crate::ttl::{self, Slot, TTL_CLASSES};
use crate::segment::{SegTable, Segment};
use crate::departures::Departures;
use crate::ghost::Ghost;
use crate::written::WriteTimes;
use crate::{Item, Time};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Buckets of a growing index migrated per lookup (at most 64 entries).
const MIGRATE_BUCKETS: usize = 8;

/// The key of the item at `loc`.
fn key_in(segs: &SegTable, loc: Loc) -> &[u8] {
    let b = segs.bytes(loc.seg, loc.off);
    let h = item::decode(b);
    &b[h.key_off..h.key_off + h.klen]
}

/// Counters behind `Stats`, per shard.
#[derive(Default, Clone, Debug)]
pub(crate) struct Counters {
    pub curr_items: u64,
    pub total_items: u64,
    pub live_bytes: u64,
    pub written_bytes: u64,
    pub evictions: u64,
    pub reclaimed: u64,
    pub expired_unfetched: u64,
    pub evicted_unfetched: u64,
    /// Segments compacted (live items moved out, dead bytes freed).
    pub compactions: u64,
    /// Of `evictions`, those that had an expiry time (memcached's
    /// `evicted_nonzero`).
    pub evicted_nonzero: u64,
    /// The latest eviction: when, and how long its item had gone
    /// unaccessed then (memcached's `evicted_time`).
    pub last_eviction: Option<(Time, Time)>,
}

/// What shard operations that may need memory get from the store.
#[derive(Clone, Copy)]
pub(crate) struct Env<'a> {
    pub pool: &'a Pool,
    pub now: Time,
    /// false with `-M`: only reclaim what holds nothing live.
    pub evict: bool,
    pub policy: &'a dyn EvictionPolicy,
}

/// What a shard publishes for victim choice, read without its lock.
#[derive(Default)]
pub(crate) struct Published {
    /// Generation of its oldest segment (`u64::MAX`: none).
    pub oldest: AtomicU64,
    /// No segment here is free to reclaim (all items expired, or flushed)
    /// before this time; a lower bound.
    pub free_at: AtomicU32,
}

/// Outcome of looking a key up; dead hits have already been removed.
pub(crate) enum Found {
    Live(Pos, Loc),
    Miss,
    Expired,
    Flushed,
}

/// Why an item stops being live (decides which counter moves).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Why {
    Replaced,
    Deleted,
    /// A `set` that failed (too large, no memory) dropped the old value.
    Dropped,
    Expired,
    Flushed,
    /// Flushed by an immediate `flush_all` having been written or read in
    /// the flush's second or the one before: memcached 1.6.25 and later
    /// unlink those at the flush itself (`item_flush_expired`), so a read
    /// finds a plain miss, and `reclaimed` does not count them.
    FlushedAtOnce,
    Evicted,
}

impl Why {
    /// What the caller's [`Departures`] sink is told: nothing for removals
    /// a client asked for (the caller knows them).
    #[inline]
    fn departure(self) -> Option<crate::departures::Departure> {
        use crate::departures::Departure;
        match self {
            Why::Evicted => Some(Departure::Evicted),
            Why::Expired => Some(Departure::Expired),
            Why::Flushed | Why::FlushedAtOnce => Some(Departure::Flushed),
            Why::Dropped => Some(Departure::Dropped),
            Why::Replaced | Why::Deleted => None,
        }
    }
}

impl crate::evict::Candidates for Shard {
    fn segs(&self) -> &SegTable {
        &self.segs
    }
    fn is_flushed(&self, id: u32) -> bool {
        Shard::is_flushed(self, id)
    }
    fn is_open(&self, id: u32) -> bool {
        Shard::is_open(self, id)
    }
    fn open_main(&self) -> u32 {
        self.open_main
    }
    fn reclaimable(&self, id: u32, now: Time) -> bool {
        Shard::reclaimable(self, id, now)
    }
}

pub(crate) struct Shard {
    pub index: Index,
    pub segs: SegTable,
    /// Per TTL class, the segment receiving its appends; 0 = none
    /// ([`ttl`](crate::ttl)).
    pub open: [u32; TTL_CLASSES],
    /// Most classes with an open segment at once.
    pub max_open: usize,
    /// Main-queue segment receiving eviction survivors; 0 = none.
    pub open_main: u32,
    /// Items in segments with a generation <= this are flushed.
    flush_gen: u64,
    /// Last `flush_all` sequence number applied here.
    flush_seq: u32,
    /// When that flush was applied here (the `now` it was applied at).
    flushed_at: Time,
    /// Whether that flush was immediate (`flush_all` without a delay), whose
    /// recently used items count as unlinked at once ([`Why::FlushedAtOnce`]).
    flushed_now: bool,
    /// Highest generation ever installed here.
    max_gen: u64,
    pub st: Counters,
    hasher: KeyHasher,
    /// What other shards read without the lock, for victim choice.
    published: Arc<Published>,
    /// Bytes of the version the last [`commit`](Self::commit) replaced (0:
    /// none) — as it was then: reserving room may have moved it (grown).
    pub last_replaced: u64,
    /// Mixed into key hashes for the random rounding of [`rent`]; advanced
    /// once per eviction pass.
    evict_rng: u64,
    /// Moving average of the key + value bytes of items written here (fixed
    /// point, `<< MEAN_SHIFT`; 0 = none yet), the yardstick of [`rent`]. Of
    /// what is *written*, not of what is resident: after a change from small
    /// to big values the resident mean stays small while the old items hold
    /// the memory, which would charge the new ones many hits each —
    /// calcification, which evict_tests.rs checks.
    write_mean: u64,
    /// Keys that died in the small queue (see [`Ghost`]).
    ghost: Ghost,
    /// This shard's place in the store (for [`ValueRef`](crate::ValueRef)s).
    pub number: u32,
}

/// Fixed-point fraction bits of `Shard::write_mean`.
const MEAN_SHIFT: u32 = 8;
/// `write_mean` moves 1/2^MEAN_DECAY of the way to each new size (about the
/// last 64 writes).
const MEAN_DECAY: u32 = 6;

impl Shard {
    pub fn new(index_buckets: usize, hasher: KeyHasher, published: Arc<Published>) -> Shard {
        published.oldest.store(u64::MAX, Relaxed);
        published.free_at.store(u32::MAX, Relaxed);
        Shard {
            index: Index::new(index_buckets),
            segs: SegTable::new(),
            open: [0; TTL_CLASSES],
            max_open: 1,
            open_main: 0,
            flush_gen: 0,
            flush_seq: 0,
            flushed_at: 0,
            flushed_now: false,
            max_gen: 0,
            st: Counters::default(),
            hasher,
            published,
            last_replaced: 0,
            number: 0,
            evict_rng: 0,
            write_mean: 0,
            ghost: Ghost::default(),
        }
    }

    /// Bytes of the ghost filter.
    pub fn ghost_bytes(&self) -> usize {
        self.ghost.bytes()
    }

    /// Gives the shard a ghost filter of at most `entries` (a power of two).
    pub fn set_ghost(&mut self, entries: usize) {
        self.ghost = Ghost::new(entries);
    }

    fn publish(&self) {
        self.published.oldest.store(self.segs.oldest_gen(), Relaxed);
        self.publish_free_at();
    }

    /// Recomputes [`Published::free_at`]: the earliest time at which some
    /// segment here has nothing live (flushed: at once). O(segments); done
    /// when segments come and go, and after a search for a free segment
    /// here found none (writes and touches only raise the true value, so a
    /// published value is a lower bound that a failed search refreshes).
    pub fn publish_free_at(&self) {
        let at = self
            .segs
            .oldest_first()
            .map(|id| if self.is_flushed(id) { self.flushed_at } else { self.segs.get(id).max_exp })
            .min();
        self.published.free_at.store(at.unwrap_or(u32::MAX), Relaxed);
    }

    /// Applies a pending `flush_all` (word = sequence << 32 | at) once due:
    /// everything stored here so far becomes flushed, and appends move to a
    /// fresh segment.
    pub fn apply_flush(&mut self, word: u64, now: Time, pool: &Pool) {
        let seq = (word >> 32) as u32;
        let at = word as u32;
        if seq != self.flush_seq && now >= at {
            self.flush_seq = seq;
            self.flushed_at = now;
            self.flushed_now = at == 0;
            self.flush_gen = self.max_gen;
            self.close_open(pool);
            let main = std::mem::replace(&mut self.open_main, 0);
            if main != 0 {
                self.free_if_empty(main, pool);
            }
            self.publish();
        }
    }

    pub fn is_flushed(&self, seg: u32) -> bool {
        self.segs.get(seg).gen <= self.flush_gen
    }

    /// Why a flushed item (header `h`) is dead: memcached 1.6.25 and later
    /// unlink, at an immediate flush, the items whose time is the flush's
    /// second or the one before (`oldest_live` is the second before), and
    /// leave older ones to be found flushed (`get_flushed`) or reclaimed.
    /// The access clock keeps seconds mod 65536, as `idle` does.
    fn flushed_why(&self, h: &Header) -> Why {
        if self.flushed_now && (self.flushed_at as u16).wrapping_sub(h.atime) <= 1 {
            Why::FlushedAtOnce
        } else {
            Why::Flushed
        }
    }

    /// Whether the latest flush here was applied at or before `horizon`:
    /// the background reclaimer frees flushed segments only then (see
    /// [`crate::evict::reclaimable_in_background`]).
    pub fn flush_settled(&self, horizon: Time) -> bool {
        self.flushed_at <= horizon
    }

    pub fn header(&self, loc: Loc) -> Header {
        item::decode(self.segs.bytes(loc.seg, loc.off))
    }

    fn key_at(&self, loc: Loc) -> &[u8] {
        key_in(&self.segs, loc)
    }

    /// CAS of the item version at `loc`: (segment generation, offset); for
    /// a large object, the pair reserved when it was installed.
    pub fn cas(&self, loc: Loc) -> u64 {
        if let Some(cas) = self.header(loc).cas {
            return cas; // written with meta `E`, or moved by eviction
        }
        let seg = self.segs.get(loc.seg);
        if seg.large {
            seg.cas
        } else {
            seg.gen << 24 | loc.off as u64
        }
    }

    pub fn item(&self, loc: Loc) -> Item<'_> {
        let b = self.segs.bytes(loc.seg, loc.off);
        let h = item::decode(b);
        let seg = self.segs.get(loc.seg);
        Item {
            key: &b[h.key_off..h.key_off + h.klen],
            value: &b[h.val_off()..h.total()],
            flags: h.flags,
            cas: h.cas.unwrap_or_else(|| self.cas(loc)),
            exptime: h.exptime,
            seg,
            place: (self.number, loc.seg),
        }
    }

    pub fn item_bytes_mut(&mut self, loc: Loc) -> &mut [u8] {
        self.segs.bytes_mut(loc.seg, loc.off)
    }

    /// touch/gat: patches the item's exptime (its CAS stays).
    pub fn set_exptime(&mut self, loc: Loc, exptime: Time) {
        item::set_exptime(self.segs.bytes_mut(loc.seg, loc.off), exptime);
        self.segs.get_mut(loc.seg).note_exptime(exptime);
    }

    /// Finds `key`; removes it if expired or flushed.
    pub fn lookup(&mut self, h: u64, key: &[u8], now: Time, pool: &Pool, d: &mut dyn Departures) -> Found {
        if self.index.migrating() {
            self.migrate_index(pool, MIGRATE_BUCKETS);
        }
        let found = self.index.find(h, |loc| self.key_at(loc) == key);
        let Some((pos, loc)) = found else { return Found::Miss };
        let why = if self.is_flushed(loc.seg) {
            self.flushed_why(&self.header(loc))
        } else if self.header(loc).expired(now) {
            Why::Expired
        } else {
            return Found::Live(pos, loc);
        };
        self.unlink(pos, loc, why, pool, d);
        match why {
            Why::Flushed => Found::Flushed,
            Why::FlushedAtOnce => Found::Miss,
            _ => Found::Expired,
        }
    }

    /// Where `key`'s live item is, changing nothing: a dead one (expired,
    /// flushed) is neither returned nor removed. For looks that are not
    /// commands (the dashboard's).
    pub fn find_live(&self, h: u64, key: &[u8], now: Time) -> Option<Loc> {
        let (_, loc) = self.index.find(h, |loc| self.key_at(loc) == key)?;
        (!self.is_flushed(loc.seg) && !self.header(loc).expired(now)).then_some(loc)
    }

    /// [`lookup`](Self::lookup), except that an item which expired less
    /// than `grace` seconds ago is returned as live (and left in place),
    /// with `true` to say it is past its expiry.
    pub fn lookup_graced(&mut self, h: u64, key: &[u8], now: Time, grace: Time, pool: &Pool, d: &mut dyn Departures) -> (Found, bool) {
        if let Some((pos, loc)) = self.index.find(h, |loc| self.key_at(loc) == key) {
            let hdr = self.header(loc);
            if !self.is_flushed(loc.seg) && hdr.expired(now) && (now as u64) < hdr.exptime as u64 + grace as u64 {
                return (Found::Live(pos, loc), true);
            }
        }
        (self.lookup(h, key, now, pool, d), false)
    }

    /// Removes the index entry at `pos` (pointing at `loc`) and frees the
    /// segment if that was its last live item.
    pub fn unlink(&mut self, pos: Pos, loc: Loc, why: Why, pool: &Pool, d: &mut dyn Departures) {
        self.index.remove(pos);
        self.account_dead(loc, why, d);
        self.free_if_empty(loc.seg, pool);
    }

    /// Accounts the item at `loc` as no longer live (index handled by
    /// caller), telling `d` if it left without a client asking.
    fn account_dead(&mut self, loc: Loc, why: Why, d: &mut dyn Departures) {
        let h = self.header(loc);
        let size = h.total();
        if let Some(why) = why.departure() {
            crate::departures::report(d, self.key_at(loc), &h, why); // the caller's sink (departures.rs)
        }
        let seg = self.segs.get_mut(loc.seg);
        seg.live_bytes -= size;
        seg.live_items -= 1;
        seg.times.gone(loc.off);
        self.st.live_bytes -= size as u64;
        self.st.curr_items -= 1;
        match why {
            // memcached counts flushed items as reclaimed too (issue_183.t).
            Why::Expired | Why::Flushed => {
                self.st.reclaimed += 1;
                self.st.expired_unfetched += !h.fetched as u64;
            }
            Why::Evicted => {
                self.st.evictions += 1;
                self.st.evicted_unfetched += !h.fetched as u64;
            }
            Why::Replaced | Why::Deleted | Why::Dropped | Why::FlushedAtOnce => {}
        }
    }

    /// memcached's `evicted_nonzero` and `evicted_time` for a live item
    /// about to be evicted (its `account_dead` counts the eviction).
    fn note_eviction(&mut self, h: &Header, now: Time) {
        self.st.evicted_nonzero += (h.exptime != 0) as u64;
        // The access clock keeps seconds mod 65536: exact for items idle
        // less than 18 hours, as an eviction-age signal needs.
        self.st.last_eviction = Some((now, h.idle(now)));
    }

    fn account_live(&mut self, loc: Loc, size: usize, payload: usize, exptime: Time, count_total: bool, now: Time) {
        let seg = self.segs.get_mut(loc.seg);
        seg.note_exptime(exptime);
        // Under the shard lock from `append` to here: items are counted in
        // the order they were placed, as `WriteTimes` needs.
        seg.times.wrote(loc.off, now);
        seg.live_bytes += size;
        seg.live_items += 1;
        self.st.live_bytes += size as u64;
        self.st.curr_items += 1;
        self.st.total_items += count_total as u64;
        // Mean size of what is being written (see `write_mean`).
        let x = (payload as u64) << MEAN_SHIFT;
        self.write_mean = if self.write_mean == 0 { x } else { self.write_mean - (self.write_mean >> MEAN_DECAY) + (x >> MEAN_DECAY) };
    }

    /// Whether `id` receives new writes (the open segment of a TTL class).
    pub fn is_open(&self, id: u32) -> bool {
        self.open.contains(&id)
    }

    /// Forgets `id` as an open segment, wherever it is one.
    fn unopen(&mut self, id: u32) {
        for o in self.open.iter_mut().filter(|o| **o == id) {
            *o = 0;
        }
        if id == self.open_main {
            self.open_main = 0;
        }
    }

    fn free_if_empty(&mut self, id: u32, pool: &Pool) {
        if !self.is_open(id) && id != self.open_main && self.segs.get(id).live_items == 0 {
            let seg = self.remove_segment(id);
            pool.give_back(seg.buf, seg.large);
        }
    }

    fn remove_segment(&mut self, id: u32) -> Segment {
        self.unopen(id);
        let seg = self.segs.remove(id);
        self.st.written_bytes -= seg.write_off as u64;
        self.publish();
        seg
    }

    /// Stops appending to the open segments of every TTL class.
    pub fn close_open(&mut self, pool: &Pool) {
        for slot in 0..TTL_CLASSES {
            self.close_slot(slot, pool);
        }
    }

    /// Stops appending to the open segment of TTL class `slot`.
    fn close_slot(&mut self, slot: usize, pool: &Pool) {
        let id = std::mem::replace(&mut self.open[slot], 0);
        if id != 0 {
            self.free_if_empty(id, pool);
        }
    }

    /// The open-segment slot an item expiring at `exptime` goes to (closing
    /// another class's segment if the shard is at its limit; see
    /// [`ttl`](crate::ttl)).
    pub fn open_slot(&mut self, exptime: Time, now: Time, pool: &Pool) -> usize {
        match ttl::choose(&self.open, self.max_open, ttl::class(exptime, now)) {
            Slot::Use(slot) => slot,
            Slot::Replace(close, slot) => {
                self.close_slot(close, pool);
                slot
            }
        }
    }

    /// Whether an item of `size` bytes appended at `slot` now would get a
    /// derived CAS not above `old_cas`, the CAS of the version it replaces.
    /// CAS must grow per key (memcached's stale-set, `ms … I`, compares
    /// them), and derived CAS only grows within one open segment: an older
    /// open segment of another TTL class has a lower generation. Such a
    /// version then stores a fresh CAS explicitly (8 bytes; only when a
    /// key's TTL class changes, or its old version is a large object).
    pub fn needs_fresh_cas(&self, slot: usize, size: usize, old_cas: u64) -> bool {
        let id = self.open[slot];
        if id == 0 {
            return false; // a fresh segment: a generation above all so far
        }
        let seg = self.segs.get(id);
        // A large object's CAS is that of a pad byte appended here (`install`).
        let lands_here = if size > seg.buf.len() { seg.free_space() > 0 } else { seg.free_space() >= size };
        lands_here && (seg.gen << 24 | seg.write_off as u64) <= old_cas
    }

    /// Appends `size` bytes to the open segment of `slot` if they fit; where.
    pub fn append(&mut self, size: usize, slot: usize) -> Option<Loc> {
        let id = self.open[slot];
        if id == 0 {
            return None;
        }
        let seg = self.segs.get_mut(id);
        if seg.free_space() < size {
            return None;
        }
        let off = seg.write_off;
        seg.write_off += size;
        self.st.written_bytes += size as u64;
        Some(Loc { seg: id, off: off as u32 })
    }

    /// Installs a buffer: a regular segment becomes the open one; a large
    /// one is filled by exactly one item of its size, at offset 0.
    ///
    /// CAS values grow with every write in a shard (so per key), as in
    /// memcached: a large object's CAS is the (generation, offset) of a pad
    /// byte appended to the open segment, so it sits between the items
    /// written there before and after it. Without room there, its own fresh
    /// generation is above everything so far, and the next regular write
    /// goes to a fresh segment with a higher one still.
    pub fn install(&mut self, buf: impl Into<crate::large::SegBuf>, gen: u64, large: bool, slot: usize, pool: &Pool) -> Loc {
        self.max_gen = self.max_gen.max(gen);
        let mut seg = Segment::new(buf, gen, large);
        self.st.written_bytes += seg.write_off as u64;
        if large {
            seg.cas = gen << 24;
            if self.open[slot] != 0 {
                let open = self.segs.get_mut(self.open[slot]);
                if open.free_space() > 0 {
                    let off = open.write_off;
                    open.buf[off] = item::PAD;
                    open.write_off += 1;
                    seg.cas = open.gen << 24 | off as u64;
                    self.st.written_bytes += 1;
                }
            }
        }
        let id = self.segs.install(seg);
        if !large {
            self.close_slot(slot, pool);
            self.open[slot] = id;
        }
        self.publish();
        Loc { seg: id, off: 0 }
    }

    /// Makes the freshly written item at `loc` live: it replaces the item at
    /// `old` if that is still indexed, else gets a new index entry. `false`
    /// (the new item discarded) only without eviction, when the index is
    /// full and cannot grow.
    pub fn commit(&mut self, h: u64, loc: Loc, old: Option<Loc>, count_total: bool, env: &Env<'_>, d: &mut dyn Departures) -> bool {
        let pool = env.pool;
        let hdr = self.header(loc);
        self.account_live(loc, hdr.total(), hdr.klen + hdr.vlen, hdr.exptime, count_total, env.now);
        self.last_replaced = 0;
        if let Some((pos, old)) = old.and_then(|o| self.find_moved(h, o, loc)) {
            self.index.replace(pos, loc);
            self.last_replaced = self.header(old).total() as u64;
            self.account_dead(old, Why::Replaced, d);
            self.free_if_empty(old.seg, pool);
            true
        } else if self.link_new(h, loc, env, d) {
            if self.ghost.take(h, self.st.curr_items, pool) {
                if let Some(pos) = self.index.find_loc(h, loc) {
                    self.index.relocate(pos, loc, 1);
                }
            }
            true
        } else {
            self.st.total_items -= count_total as u64;
            self.account_dead(loc, Why::Deleted, d);
            self.free_if_empty(loc.seg, pool);
            false
        }
    }

    /// The index entry of the item that was at `old` — still there, or
    /// moved by an eviction that kept it (segment S3-FIFO copies survivors)
    /// and found by the key of the new version at `new`. Nothing when the
    /// old item has gone.
    pub fn find_moved(&self, h: u64, old: Loc, new: Loc) -> Option<(Pos, Loc)> {
        if let Some(pos) = self.index.find_loc(h, old) {
            return Some((pos, old));
        }
        let key = self.key_at(new);
        self.index.find(h, |l| l != new && key_in(&self.segs, l) == key)
    }

    fn link_new(&mut self, h: u64, loc: Loc, env: &Env<'_>, d: &mut dyn Departures) -> bool {
        let Env { pool, now, evict, .. } = *env;
        if !self.index.has_room() {
            self.grow_index(env, loc.seg, d);
        }
        if self.index.insert(h, loc) || (self.grow_index(env, loc.seg, d) && self.index.insert(h, loc)) {
            return true;
        }
        // No room even after cuckoo moves, and the index cannot grow:
        // displace a dead entry if there is one, else (when evicting) the
        // entry whose segment is oldest.
        let why = |sh: &Shard, l: Loc| {
            if sh.is_flushed(l.seg) {
                sh.flushed_why(&sh.header(l))
            } else if sh.header(l).expired(now) {
                Why::Expired
            } else {
                Why::Evicted
            }
        };
        let victim = self
            .index
            .candidates(h)
            .map(|(p, l)| (why(self, l) == Why::Evicted, self.segs.get(l.seg).gen, p, l))
            .min_by_key(|&(live, gen, _, _)| (live, gen));
        match victim {
            Some((live, _, pos, l)) if evict || !live => {
                let w = why(self, l);
                if w == Why::Evicted {
                    self.note_eviction(&self.header(l), now);
                }
                self.unlink(pos, l, w, pool, d);
                assert!(self.index.insert(h, loc));
                true
            }
            _ => false,
        }
    }

    /// Grows the index by a quarter, evicting segments of this shard chosen
    /// by the policy (never `protect`) if the memory budget requires.
    /// Whether it grew.
    pub fn grow_index(&mut self, env: &Env<'_>, protect: u32, d: &mut dyn Departures) -> bool {
        let Env { pool, .. } = *env;
        if self.index.migrating() {
            // Growing again before the last resize finished migrating:
            // finish it first (only reachable when inserts fail early).
            self.migrate_index(pool, usize::MAX);
            if self.index.migrating() {
                return false;
            }
        }
        self.resize_index(env, protect, Index::grown(self.index.nbuckets()), d)
    }

    /// Shrinks an index left mostly empty — values grew, so fewer items fit
    /// in the same memory, and a table sized for the small ones would hold
    /// memory that items could use (see [`Index::shrunk`]). Called when
    /// this shard evicts, i.e. when memory is full: the new table's bytes
    /// may cost a few segments now and come back with interest once the old
    /// table is migrated and released.
    pub fn maybe_shrink_index(&mut self, env: &Env<'_>, protect: u32, d: &mut dyn Departures) {
        if let Some(n) = self.index.shrunk() {
            self.resize_index(env, protect, n, d);
        }
    }

    /// Starts migrating the index into a table of `nbuckets`, reserving its
    /// bytes first (evicting as [`grow_index`](Self::grow_index) does).
    fn resize_index(&mut self, env: &Env<'_>, protect: u32, nbuckets: usize, d: &mut dyn Departures) -> bool {
        let Env { pool, now, evict, policy } = *env;
        // The old table stays allocated until migrated: reserve all of the
        // new one.
        let extra = Index::bytes_for(nbuckets);
        while !pool.try_reserve(extra) {
            if pool.drop_spare() {
                continue;
            }
            let want = if evict { Want::Evict } else { Want::Reclaim };
            let Some(victim) = policy.pick(self, protect, now, want) else { return false };
            let seg = self.evict_segment(victim, now, d);
            pool.discard(seg.buf);
        }
        self.index.start_resize(nbuckets);
        true
    }

    /// Sizes an empty shard's index for about `items` entries and at least
    /// `slots` slots at once (a warm restart knows what is coming and what
    /// the index was), instead of growing it a quarter at a time, each
    /// growth re-hashing every key. Best effort: nothing happens if the
    /// shard holds items or the budget is short.
    pub fn presize_index(&mut self, env: &Env<'_>, items: usize, slots: usize, d: &mut dyn Departures) {
        // About 85% load, as a shrink leaves it.
        let want = (items.saturating_mul(20).div_ceil(8 * 17)).max(slots / 8);
        if self.index.used() != 0 || self.index.migrating() || want <= self.index.nbuckets() {
            return;
        }
        if !env.pool.has_room(Index::bytes_for(want)) {
            return;
        }
        if self.resize_index(env, 0, want, d) {
            self.migrate_index(env.pool, usize::MAX);
        }
    }

    /// Migrates up to `buckets` buckets of a growing index into its new
    /// table, re-hashing keys read from the segments; releases the old
    /// table's bytes once it is empty.
    pub fn migrate_index(&mut self, pool: &Pool, buckets: usize) {
        let (index, segs, hasher) = (&mut self.index, &self.segs, &self.hasher);
        let freed = index.migrate(buckets, |loc| hasher.hash(key_in(segs, loc)));
        if freed > 0 {
            pool.release(freed);
        }
    }

    /// Whether segment `id` holds nothing live that eviction would lose.
    pub fn reclaimable(&self, id: u32, now: Time) -> bool {
        let seg = self.segs.get(id);
        if seg.live_items == 0 || self.is_flushed(id) || seg.all_expired(now) {
            return true;
        }
        let mut off = 0;
        while off < seg.write_off {
            if seg.buf[off] == item::PAD {
                off += 1;
                continue;
            }
            let loc = Loc { seg: id, off: off as u32 };
            let h = self.header(loc);
            if !h.expired(now) && self.index.find_loc(self.hasher.hash(self.key_at(loc)), loc).is_some() {
                return false;
            }
            off += h.total();
        }
        true
    }

    /// Unlinks every live item of segment `id` and removes the segment,
    /// returning it (its buffer still counted in the pool).
    pub fn evict_segment(&mut self, id: u32, now: Time, d: &mut dyn Departures) -> Segment {
        let flushed = self.is_flushed(id);
        let end = self.segs.get(id).write_off;
        let mut off = 0;
        while off < end && self.segs.get(id).live_items > 0 {
            if self.segs.get(id).buf[off] == item::PAD {
                off += 1;
                continue;
            }
            let loc = Loc { seg: id, off: off as u32 };
            let h = self.header(loc);
            let key_hash = self.hasher.hash(self.key_at(loc));
            if let Some(pos) = self.index.find_loc(key_hash, loc) {
                let why = if flushed {
                    self.flushed_why(&h)
                } else if h.expired(now) {
                    Why::Expired
                } else {
                    self.note_eviction(&h, now);
                    Why::Evicted
                };
                self.index.remove(pos);
                self.account_dead(loc, why, d);
            }
            off += h.total();
        }
        debug_assert_eq!(self.segs.get(id).live_items, 0);
        self.remove_segment(id)
    }

    /// Moves the surviving item at `loc` (header `h`, in victim `victim`)
    /// to the open main segment or, failing that, to offset `compact.next` of
    /// the victim, carrying its CAS; points its index slot (`pos`) at the
    /// copy with counter `nf` (see [`survivor_freq_sized`]). `false` if it fits
    /// nowhere (moved items grow by their CAS field, and compaction in
    /// place must not overwrite items not yet walked): it then dies like
    /// the others.
    #[allow(clippy::too_many_arguments)] // one item's move: where from, where to, its slot, and who hears of it
    fn keep_moved(&mut self, victim: u32, loc: Loc, h: &Header, nf: u8, pos: Pos, compact: &mut Compact, d: &mut dyn Departures) -> bool {
        let size = h.total();
        let cas = self.cas(loc);
        let (hdr, hlen) = item::moved_header(self.segs.bytes(victim, loc.off), cas);
        let body = size - h.key_off;
        let new_size = hlen + body;
        let main = self.open_main;
        let written = self.segs.get(victim).times.time_at(loc.off);
        let dst = if compact.next.is_none() && main != 0 && main != victim && self.segs.get(main).free_space() >= new_size {
            let m = self.segs.get_mut(main);
            let d = m.write_off;
            m.times.wrote(d as u32, written);
            m.write_off += new_size;
            m.live_bytes += new_size;
            m.live_items += 1;
            m.note_exptime(h.exptime);
            let v = self.segs.get_mut(victim);
            v.live_bytes -= size;
            v.live_items -= 1;
            v.times.gone(loc.off);
            self.st.written_bytes += new_size as u64;
            Loc { seg: main, off: d as u32 }
        } else {
            let d = compact.next.unwrap_or(0);
            if d + new_size > loc.off as usize + size {
                return false;
            }
            compact.next = Some(d + new_size);
            compact.times.wrote(d as u32, written);
            let v = self.segs.get_mut(victim);
            v.live_bytes += new_size - size;
            Loc { seg: victim, off: d as u32 }
        };
        self.st.live_bytes += (new_size - size) as u64;
        if dst != loc || hlen != h.key_off {
            // Body first: in place, the new header may cover the old body's
            // start. Within one segment the copy is a memmove.
            self.segs.copy(victim, loc.off as usize + h.key_off, dst.seg, dst.off as usize + hlen, body);
            let d = dst.off as usize;
            self.segs.get_mut(dst.seg).buf[d..d + hlen].copy_from_slice(&hdr[..hlen]);
        }
        self.index.relocate(pos, dst, nf);
        crate::departures::report_growth(d, key_in(&self.segs, dst), h, new_size - size);
        true
    }

    /// Evicts segment `id` the segment S3-FIFO way: a live, unexpired item
    /// survives if it earned it — from a small-queue segment, hit at least
    /// once since written (counter reset to 0); from a main-queue segment,
    /// counter > 0 (counter − 1: a CLOCK second chance), where big items
    /// need and pay more hits and small ones fewer ([`rent`],
    /// [`survivor_freq_sized`]) — and everything else goes as in
    /// [`evict_segment`](Self::evict_segment).
    ///
    /// Survivors are copied to the open main segment, their index slots
    /// pointed at the copies. When it is full (or there is none), the rest
    /// are compacted to the front of the victim itself, which gets a fresh
    /// generation and becomes the open main segment — so keeping survivors
    /// never needs a spare segment. Returns the segment if it was freed,
    /// `None` if it became the open main segment. A moved item carries its
    /// CAS in its header (8 bytes more), so clients never see it change.
    /// Large objects, and flushed or fully expired segments, are evicted
    /// plainly.
    ///
    /// `keep_all` makes it a compaction instead: every live, unexpired item
    /// survives with its counter as it is, so only dead bytes (overwritten,
    /// deleted, expired items) are freed — see [`Want::Compact`].
    pub fn evict_keeping(&mut self, id: u32, now: Time, pool: &Pool, keep_all: bool, d: &mut dyn Departures) -> Option<Segment> {
        let seg = self.segs.get(id);
        if seg.large || self.is_flushed(id) || seg.all_expired(now) {
            return Some(self.evict_segment(id, now, d));
        }
        let from_main = seg.main;
        let end = seg.write_off;
        // The mean size of what is written here: what an average item's stay costs.
        let mean = ((self.write_mean >> MEAN_SHIFT) as usize).max(1);
        self.evict_rng = self.evict_rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        self.st.compactions += keep_all as u64;
        for o in self.open.iter_mut().filter(|o| **o == id) {
            *o = 0;
        }
        let mut compact = Compact::default();
        let mut off = 0;
        while off < end {
            if self.segs.get(id).buf[off] == item::PAD {
                off += 1;
                continue;
            }
            let loc = Loc { seg: id, off: off as u32 };
            let h = self.header(loc);
            let size = h.total();
            let key_hash = self.hasher.hash(self.key_at(loc));
            if let Some(pos) = self.index.find_loc(key_hash, loc) {
                let f = self.index.freq(pos);
                // (The rent only for items with hits: most die unhit, and it costs a division.)
                let keep = match (keep_all, f) {
                    (true, _) => Some(f),
                    (false, 0) => None,
                    (false, _) => survivor_freq_sized(f, from_main, rent(h.klen + h.vlen, mean, key_hash ^ self.evict_rng)),
                };
                if !h.expired(now) && keep.is_some_and(|nf| self.keep_moved(id, loc, &h, nf, pos, &mut compact, d)) {
                    // moved
                } else {
                    let why = if h.expired(now) {
                        Why::Expired
                    } else {
                        self.note_eviction(&h, now);
                        if !from_main && !keep_all {
                            self.ghost.add(key_hash, self.st.curr_items, pool);
                        }
                        Why::Evicted
                    };
                    self.index.remove(pos);
                    self.account_dead(loc, why, d);
                }
            }
            off += size;
        }
        let Some(len) = compact.next else {
            debug_assert_eq!(self.segs.get(id).live_items, 0);
            return Some(self.remove_segment(id));
        };
        let gen = pool.next_gen();
        self.max_gen = self.max_gen.max(gen);
        let seg = self.segs.get_mut(id);
        self.st.written_bytes -= (seg.write_off - len) as u64;
        seg.write_off = len;
        seg.times = compact.times;
        seg.main = true;
        self.segs.requeue(id, gen);
        let prev = std::mem::replace(&mut self.open_main, id);
        if prev != 0 && prev != id {
            self.free_if_empty(prev, pool);
        }
        self.publish();
        None
    }
}

/// In-place compaction of an eviction victim (see
/// [`Shard::evict_keeping`]), once it has started.
#[derive(Default)]
struct Compact {
    /// Where the next kept item goes.
    next: Option<usize>,
    /// The write times of the items kept so far, at their new offsets: the
    /// victim's own, until the walk ends, still describe the old ones.
    times: WriteTimes,
}

/// What one eviction pass charges an item of `size` bytes of key and value,
/// in hits, when the shard writes `mean` such bytes on average: one hit,
/// as in plain S3-FIFO, unless it is more than [`RENT_SLACK`] above the
/// mean; then size ÷ mean, rounded up or down at random in proportion (`h`,
/// a hash, decides), so that on average a big item pays for the bytes it
/// holds — an item of twice the mean pays two hits per pass, one of ten
/// times ten. That keeps the items that earn the most hits per byte, as
/// GDSF does item by item, at segment granularity.
///
/// Never less than one hit. The store used to let small items pay in
/// proportion too (a tenth of the mean: one hit per ten passes, floored at
/// one per four): it was worth nothing measurable on the traces
/// (larder-sim --sizes, web, mean miss ratio of 18 variable-size points
/// 0.2891 against 0.2886, noise ±0.002), and it calcified: after a switch
/// from 100-byte to 10 KiB values the old small items, with banked hits and
/// paying a quarter hit per pass against the new mean, stayed four times
/// as many passes as S3-FIFO lets them (evict_tests.rs'
/// `no_calcification_after_a_change_of_item_size` failed 2 runs in 60).
/// The slack makes the rule exactly S3-FIFO when values have one size and
/// keys nearly one length (otherwise an item a few bytes over the mean
/// would now and then pay two). Key and value bytes, not the item's total:
/// an item moved by an eviction grows by its CAS field, and must not pay
/// more for it.
fn rent(size: usize, mean: usize, h: u64) -> u8 {
    if size <= mean + mean / RENT_SLACK {
        return 1;
    }
    let whole = size / mean;
    let frac = (size % mean) as u64;
    let up = ((h >> 32) % mean as u64) < frac;
    (whole + up as usize).min(FREQ_MAX as usize) as u8
}

/// Sizes up to 1/RENT_SLACK over the mean pay the mean's one hit.
const RENT_SLACK: usize = 8;
/// The index's saturating counter's maximum.
const FREQ_MAX: u8 = 15;

/// Whether an item with counter `f` and rent `r` (at least 1, see
/// [`rent`]) survives a non-compacting eviction pass, and with which
/// counter:
///
/// - from the small queue: if it was hit at least `r` times since it was
///   written (an item of up to the mean size needs one hit, as in S3-FIFO;
///   one of three times the mean needs three), starting over at 0 in main;
/// - from main: if `f >= r`, keeping `min(f, 3·r) − r` — as in S3-FIFO's
///   CLOCK, a pass costs hits and banked hits are capped at three passes'
///   worth, but the cost follows the bytes held.
fn survivor_freq_sized(f: u8, from_main: bool, r: u8) -> Option<u8> {
    let r = r.max(1);
    if f < r {
        return None;
    }
    if from_main {
        let cap = 3u8.saturating_mul(r).min(FREQ_MAX);
        Some(f.min(cap) - r)
    } else {
        Some(0)
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::evict::Fifo;
    use crate::departures::Unreported;

    struct Fixture {
        pool: Pool,
        sh: Shard,
        hasher: KeyHasher,
    }

    impl Fixture {
        fn new() -> Fixture {
            let hasher = KeyHasher::new();
            let sh = Shard::new(4, hasher.clone(), Arc::default());
            Fixture { pool: Pool::new(1 << 20, 4096), sh, hasher }
        }

        /// Writes a new item the way the store does; its location.
        fn put(&mut self, key: &[u8], value: &[u8], exptime: Time, now: Time) -> Loc {
            let size = item::item_len(key.len(), value.len(), 0);
            let slot = self.sh.open_slot(exptime, now, &self.pool);
            let loc = match self.sh.append(size, slot) {
                Some(l) => l,
                None => {
                    let buf = self.pool.segment().unwrap();
                    let gen = self.pool.next_gen();
                    self.sh.install(buf, gen, false, slot, &self.pool);
                    self.sh.append(size, slot).unwrap()
                }
            };
            let bytes = self.sh.item_bytes_mut(loc);
            let voff = item::encode_cas(bytes, key, value.len(), 0, exptime, now, None);
            bytes[voff..].copy_from_slice(value);
            let h = self.hasher.hash(key);
            let old = match self.sh.lookup(h, key, now, &self.pool, &mut Unreported) {
                Found::Live(_, l) => Some(l),
                _ => None,
            };
            let env = Env { pool: &self.pool, now, evict: true, policy: &Fifo };
            assert!(self.sh.commit(h, loc, old, true, &env, &mut Unreported));
            loc
        }

        fn get(&mut self, key: &[u8], now: Time) -> Option<Vec<u8>> {
            match self.sh.lookup(self.hasher.hash(key), key, now, &self.pool, &mut Unreported) {
                Found::Live(_, loc) => Some(self.sh.item(loc).value.to_vec()),
                _ => None,
            }
        }
    }

    /// The write time of the oldest live data, as `Store::stats` finds it
    /// (checking on the way that every segment's write times count its
    /// live items).
    fn oldest_born(sh: &Shard) -> Option<Time> {
        for id in sh.segs.oldest_first() {
            let s = sh.segs.get(id);
            assert_eq!(s.times.live(), s.live_items, "segment {id}: {:?}", s.times);
        }
        sh.segs.oldest_first().map(|id| sh.segs.get(id)).filter_map(|s| s.born()).min()
    }

    #[test]
    fn moved_items_bring_their_write_time() {
        let mut f = Fixture::new();
        let a = f.put(b"a", &[1; 100], 0, 10);
        f.put(b"fill-a", &[0; 3900], 0, 10);
        // (`b` second: the first item of a segment cannot grow by its CAS
        // field in place)
        f.put(b"fill-b", &[0; 3900], 0, 50);
        let b = f.put(b"b", &[2; 100], 0, 50);
        assert_ne!(a.seg, b.seg);
        for key in [&b"a"[..], b"b"] {
            let Found::Live(pos, _) = f.sh.lookup(f.hasher.hash(key), key, 55, &f.pool, &mut Unreported) else { panic!() };
            f.sh.index.bump(pos);
        }
        // b's segment first: `b` is kept in place, and that segment (written
        // at 50) becomes the open main segment, with room.
        assert!(f.sh.evict_keeping(b.seg, 60, &f.pool, false, &mut Unreported).is_none());
        assert_eq!(oldest_born(&f.sh), Some(10));
        // Then a's: `a` moves into it and brings its time along.
        assert!(f.sh.evict_keeping(a.seg, 60, &f.pool, false, &mut Unreported).is_some());
        assert_eq!(f.get(b"a", 60).unwrap(), vec![1; 100]);
        assert_eq!(f.sh.segs.count(), 1);
        assert_eq!(oldest_born(&f.sh), Some(10), "a was written at 10");
        let st = &f.sh.st;
        assert_eq!(st.evictions, 2);
        assert_eq!(st.last_eviction, Some((60, 50)), "fill-a, written and last read at 10");
    }

    #[test]
    fn a_late_write_to_an_old_segment_brings_its_own_time() {
        // A segment installed at 10 still takes writes at 50: one of those
        // that survives an eviction must not make its new segment look as
        // old as 10 (it used to take the whole segment's time along).
        let mut f = Fixture::new();
        let old = f.put(b"old", &[1; 100], 0, 10);
        let late = f.put(b"late", &[2; 100], 0, 50);
        f.put(b"fill", &[0; 3700], 0, 50);
        assert_eq!(old.seg, late.seg);
        let Found::Live(pos, _) = f.sh.lookup(f.hasher.hash(b"late"), b"late", 55, &f.pool, &mut Unreported) else { panic!() };
        f.sh.index.bump(pos);
        f.sh.close_open(&f.pool);
        // `old` dies unread; `late` is kept (compacted in place: the segment
        // becomes the open main one, its times rebuilt).
        assert!(f.sh.evict_keeping(old.seg, 60, &f.pool, false, &mut Unreported).is_none());
        assert_eq!(f.get(b"late", 60).unwrap(), vec![2; 100]);
        assert_eq!(f.get(b"old", 60), None);
        assert_eq!(oldest_born(&f.sh), Some(50), "only `late`, written at 50, is left");
        f.put(b"new", &[3; 100], 0, 70);
        assert_eq!(oldest_born(&f.sh), Some(50));
        let Found::Live(pos, loc) = f.sh.lookup(f.hasher.hash(b"late"), b"late", 80, &f.pool, &mut Unreported) else { panic!() };
        f.sh.unlink(pos, loc, Why::Deleted, &f.pool, &mut Unreported);
        assert_eq!(oldest_born(&f.sh), Some(70));
    }

    #[test]
    fn accounting_follows_links_and_emptied_segments_are_freed() {
        let mut f = Fixture::new();
        let a = f.put(b"a", &[1; 1000], 0, 1);
        f.put(b"b", &[2; 1000], 0, 1);
        f.put(b"c", &[3; 3000], 0, 1); // does not fit: second segment
        assert_eq!(f.sh.segs.count(), 2);
        assert_eq!(f.sh.st.curr_items, 3);
        let first = a.seg;
        // Overwrite a and b: the first segment holds nothing live and is
        // not open, so it is freed at once.
        f.put(b"a", &[4; 10], 0, 1);
        f.put(b"b", &[5; 10], 0, 1);
        assert_eq!(f.sh.segs.count(), 1);
        assert!(f.sh.segs.oldest_first().all(|id| id != first));
        assert_eq!(f.sh.st.curr_items, 3);
        assert_eq!(f.sh.st.total_items, 5);
        assert_eq!(f.get(b"a", 1).unwrap(), vec![4; 10]);
        let live: u64 = [b"a", b"b", b"c"]
            .iter()
            .map(|k| item::item_len(1, f.get(&k[..], 1).unwrap().len(), 0) as u64)
            .sum();
        assert_eq!(f.sh.st.live_bytes, live);
        assert_eq!(f.pool.spare_segments(), 1, "freed buffer kept for reuse");
    }

    #[test]
    fn evicting_a_segment_classifies_and_skips_pads() {
        let mut f = Fixture::new();
        let x = f.put(b"live", b"1", 0, 1);
        f.put(b"gone", b"2", 5, 1);
        f.put(b"dead", b"3", 0, 1);
        f.put(b"dead", b"4", 0, 1); // the first version is dead, same segment
        // A large object leaves a pad byte in the open segment.
        let big = f.pool.large(5000).unwrap();
        let gen = f.pool.next_gen();
        let l = f.sh.install(big, gen, true, ttl::NO_EXPIRY, &f.pool);
        assert!(f.sh.cas(l) > f.sh.cas(x));
        f.put(b"after", b"5", 0, 1);
        assert_eq!(f.sh.segs.bytes(x.seg, 0).iter().filter(|&&b| b == item::PAD).count(), 1);
        let before = f.sh.st.clone();
        let seg = f.sh.evict_segment(x.seg, 6, &mut Unreported);
        assert_eq!(seg.buf.len(), 4096);
        let st = &f.sh.st;
        assert_eq!(st.evictions - before.evictions, 3, "live, dead's 2nd version, after");
        assert_eq!(st.reclaimed - before.reclaimed, 1, "gone had expired");
        assert_eq!(st.curr_items, 0);
        assert_eq!(st.live_bytes, 0);
        assert_eq!(f.get(b"live", 6), None);
        f.pool.discard(seg.buf);
    }

    /// memcached 1.6.25+: an immediate flush unlinks what was used in its
    /// second or the one before (a later read is a plain miss, nothing is
    /// `reclaimed`); older items are found flushed. A delayed flush unlinks
    /// nothing at once (the delayed test below).
    #[test]
    fn immediate_flush_unlinks_recent_items_at_once() {
        let mut f = Fixture::new();
        f.put(b"old", b"v", 0, 7);
        f.put(b"prev", b"v", 0, 9);
        f.put(b"now", b"v", 0, 10);
        f.sh.apply_flush(1u64 << 32, 10, &f.pool);
        let before = f.sh.st.reclaimed;
        let mut look = |k: &[u8]| f.sh.lookup(f.hasher.hash(k), k, 11, &f.pool, &mut Unreported);
        assert!(matches!(look(b"now"), Found::Miss), "written in the flush's second");
        assert!(matches!(look(b"prev"), Found::Miss), "written the second before");
        assert!(matches!(look(b"old"), Found::Flushed), "older: found flushed");
        assert_eq!(f.sh.st.reclaimed - before, 1, "only the flushed one is reclaimed");
        assert_eq!(f.sh.st.curr_items, 0);
    }

    #[test]
    fn delayed_flush_applies_once_due() {
        let mut f = Fixture::new();
        f.put(b"k", b"v", 0, 1);
        let word = 1u64 << 32 | 10;
        f.sh.apply_flush(word, 9, &f.pool);
        assert_eq!(f.get(b"k", 9).unwrap(), b"v");
        f.put(b"j", b"w", 0, 9);
        f.sh.apply_flush(word, 10, &f.pool);
        assert_eq!(f.sh.open, [0; TTL_CLASSES], "appends move to a fresh segment");
        assert!(matches!(f.sh.lookup(f.hasher.hash(b"j"), b"j", 10, &f.pool, &mut Unreported), Found::Flushed));
        f.put(b"n", b"x", 0, 10);
        f.sh.apply_flush(word, 11, &f.pool);
        assert_eq!(f.get(b"n", 11).unwrap(), b"x", "applied once only");
        assert!(matches!(f.sh.lookup(f.hasher.hash(b"k"), b"k", 11, &f.pool, &mut Unreported), Found::Flushed));
    }

    #[test]
    fn free_at_is_a_lower_bound_refreshed_on_demand() {
        let mut f = Fixture::new();
        // (Both in the TTL class of long-lived items: one segment.)
        f.put(b"a", b"1", 5000, 1);
        f.sh.publish_free_at();
        assert_eq!(f.sh.published.free_at.load(Relaxed), 5000);
        f.put(b"b", b"2", 0, 1);
        // Stale until refreshed, and never above the truth.
        assert_eq!(f.sh.published.free_at.load(Relaxed), 5000);
        f.sh.publish_free_at();
        assert_eq!(f.sh.published.free_at.load(Relaxed), u32::MAX);
        f.sh.apply_flush(1 << 32, 2, &f.pool);
        // Flushed segments are free from the second the flush was applied:
        // the reclaimer takes them once that is behind its horizon, so a read
        // right after the flush still finds the items flushed (get_flushed).
        assert_eq!(f.sh.published.free_at.load(Relaxed), 2, "flushed: free from the flush's second");
    }

    #[test]
    fn index_growth_is_budgeted_and_migrates_during_lookups() {
        let mut f = Fixture::new();
        let start = f.sh.index.bytes();
        for i in 0..200u32 {
            f.put(&i.to_le_bytes(), b"v", 0, 1);
        }
        assert!(f.sh.index.nbuckets() > 4);
        // Lookups finish any migration; all keys stay reachable.
        for _ in 0..100 {
            for i in 0..200u32 {
                assert_eq!(f.get(&i.to_le_bytes(), 1).unwrap(), b"v");
            }
        }
        assert!(!f.sh.index.migrating());
        let segs = f.sh.segs.count() - f.sh.segs.large_count();
        assert_eq!(f.pool.used(), segs * 4096 + f.sh.index.bytes() - start + f.pool.spare_segments() * 4096);
    }

    #[test]
    fn rent_is_size_over_mean_on_average() {
        let hashes = |n: u64| (0..n).map(|i| crate::hash::KeyHasher::new().hash(&i.to_le_bytes()));
        for (size, mean, expect) in [(1000usize, 1000usize, 1.0f64), (3000, 1000, 3.0), (2500, 1000, 2.5), (10 << 20, 100, 15.0)] {
            let n = 20_000u64;
            let sum: u64 = hashes(n).map(|h| rent(size, mean, h) as u64).sum();
            let avg = sum as f64 / n as f64;
            assert!((avg - expect).abs() < 0.03 * expect.max(1.0), "size {size} mean {mean}: average rent {avg}, expected {expect}");
        }
        // Never below one hit, and exactly one up to an eighth over the
        // mean (one size of values, keys of slightly different lengths):
        // plain S3-FIFO.
        for size in [1usize, 100, 999, 1000, 1001, 1125] {
            assert!(hashes(2000).all(|h| rent(size, 1000, h) == 1), "size {size}");
        }
        assert!(hashes(2000).any(|h| rent(1126, 1000, h) == 2));
    }

    #[test]
    fn survivors_pay_for_their_bytes() {
        // Never hit: dies, whatever its size.
        assert_eq!(survivor_freq_sized(0, false, 1), None);
        assert_eq!(survivor_freq_sized(0, true, 1), None);
        // Small queue: one hit promotes an item of up to the mean size, with
        // the counter reset; three times the mean needs three hits.
        assert_eq!(survivor_freq_sized(1, false, 1), Some(0));
        assert_eq!(survivor_freq_sized(2, false, 3), None);
        assert_eq!(survivor_freq_sized(3, false, 3), Some(0));
        // Main: an average item is plain S3-FIFO's CLOCK (counter capped at
        // 3, one hit per pass) ...
        assert_eq!(survivor_freq_sized(1, true, 1), Some(0));
        assert_eq!(survivor_freq_sized(15, true, 1), Some(2));
        // ... and a big one pays more per pass and may bank 3 passes' worth.
        assert_eq!(survivor_freq_sized(3, true, 4), None);
        assert_eq!(survivor_freq_sized(15, true, 4), Some(8));
        assert_eq!(survivor_freq_sized(15, true, 15), Some(0));
    }

    #[test]
    fn a_key_back_from_the_ghost_starts_with_a_hit() {
        let mut f = Fixture::new();
        f.sh.set_ghost(64);
        let freq = |f: &mut Fixture, key: &[u8]| {
            let Found::Live(pos, _) = f.sh.lookup(f.hasher.hash(key), key, 1, &f.pool, &mut Unreported) else { panic!("{key:?} missing") };
            f.sh.index.freq(pos)
        };
        let a = f.put(b"a", &[1; 100], 0, 1);
        f.put(b"b", &[2; 100], 0, 1);
        // Evicted from the small queue never hit: both die and become ghosts.
        assert!(f.sh.evict_keeping(a.seg, 1, &f.pool, false, &mut Unreported).is_some());
        assert_eq!(f.get(b"a", 1), None);
        // `a` comes back: it starts with one hit (it will survive the small
        // queue); a key never seen starts with none; the ghost is used up.
        // (Only the last `curr_items` ghosts count: with `c` and `a` cached,
        // the last two, `b` and `a`.)
        f.put(b"c", &[3; 100], 0, 1);
        f.put(b"a", &[1; 100], 0, 1);
        assert_eq!(freq(&mut f, b"a"), 1);
        assert_eq!(freq(&mut f, b"c"), 0);
        assert_eq!(f.sh.ghost.entries(), 1, "only b's ghost is left");
        // An old ghost no longer counts: 600 ghosts later, with one item
        // cached, x's is too old.
        let mut g = Fixture::new();
        g.sh.set_ghost(64);
        let x = g.put(b"x", &[1; 100], 0, 1);
        assert!(g.sh.evict_keeping(x.seg, 1, &g.pool, false, &mut Unreported).is_some());
        for i in 0..600u64 {
            g.sh.ghost.add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 64, 1, &g.pool);
        }
        g.put(b"x", &[1; 100], 0, 1);
        assert_eq!(freq(&mut g, b"x"), 0, "x's ghost is 600 ghosts old, the cache holds one item");
        // A ghost costs its bytes in the budget's index share (store stats).
        assert_eq!(f.sh.ghost_bytes(), 256);
    }
}
