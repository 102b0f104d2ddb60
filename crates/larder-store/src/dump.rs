//! Reading the store for observability, off the store's own request logic.
//!
//! * [`Charge`]: what a successful store or delete charged and released,
//!   returned by the call, for exact per-prefix byte accounting in the server.
//! * [`Store::for_each_item_in_shard`](crate::Store::for_each_item_in_shard):
//!   every live item of one shard with its metadata, under that shard's lock
//!   only (the server's `lru_crawler metadump` walks the shards one by one).
//!
//! * [`Departures`]: what a caller is told about every item that leaves the
//!   store without a client asking (eviction, expiry found by a lookup or
//!   reclaimed with its segment, flush, the old value a failed `set`
//!   drops) and every item a move grew, with its key and the bytes it was
//!   charged. The caller passes its own sink with each call
//!   ([`Store::reporting`](crate::Store::reporting)): the departures a call
//!   causes — evictions in other shards included — go to whoever made it,
//!   so the server's worker reaches its own accounting and log buffer
//!   without thread-local state. The sink runs under a shard's lock; it
//!   must be quick and must not call the store. It also gets the item's
//!   metadata ([`DepartedItem`]: value length, expiry, last access,
//!   fetched), which the server's `watch evictions` lines print. Deletes
//!   and replacements are not reported (the caller knows them: [`Charge`]).
//!   The store's plain methods report to [`Unreported`].
//!
//! Kept in its own file so the eviction work in `evict.rs`/`shard.rs`/
//! `segment.rs` and this module do not touch the same lines.

/// Why an item left the store on its own — or, for `Moved`, changed size
/// without a client asking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Departure {
    Evicted,
    Expired,
    Flushed,
    /// A `set` that could not be stored (too large, out of memory) dropped
    /// the key's old value, as memcached does, so that no client reads
    /// data it just tried to overwrite. No client asked for that removal.
    Dropped,
    /// Not a departure: eviction (a survivor) or compaction moved the item
    /// and it now stores its CAS, so it grew; the hook's byte count is by
    /// how much. Byte accounting that follows sets and departures adds it,
    /// or the item's later departure would take out more than came in.
    Moved,
}

/// The metadata of an item leaving the store, as its header holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DepartedItem {
    pub value_len: usize,
    /// Absolute expiry (store time), 0 = never.
    pub exptime: crate::Time,
    pub fetched: bool,
    /// Last access, store seconds mod 65536 (see [`idle`](Self::idle)).
    atime: u16,
}

impl DepartedItem {
    /// Seconds since the last access (exact within 65535 s of `now`).
    pub fn idle(&self, now: crate::Time) -> u32 {
        (now as u16).wrapping_sub(self.atime) as u32
    }
}

/// Told about items that leave the store on their own: see the module docs.
pub trait Departures {
    /// `key` left (or, for [`Departure::Moved`], grew) by `bytes`.
    fn departed(&mut self, key: &[u8], bytes: u64, why: Departure, item: &DepartedItem);
}

/// The sink of callers that do not follow departures (tests, tools, the
/// store's plain methods).
pub struct Unreported;

impl Departures for Unreported {
    #[inline]
    fn departed(&mut self, _: &[u8], _: u64, _: Departure, _: &DepartedItem) {}
}

/// Any closure taking what [`Departures::departed`] takes is a sink.
impl<F: FnMut(&[u8], u64, Departure, &DepartedItem)> Departures for F {
    #[inline]
    fn departed(&mut self, key: &[u8], bytes: u64, why: Departure, item: &DepartedItem) {
        self(key, bytes, why, item)
    }
}

/// Called from `Shard::account_dead`.
#[inline]
pub(crate) fn report(d: &mut dyn Departures, key: &[u8], h: &crate::item::Header, why: crate::shard::Why) {
    use crate::shard::Why;
    let why = match why {
        Why::Evicted => Departure::Evicted,
        Why::Expired => Departure::Expired,
        Why::Flushed => Departure::Flushed,
        Why::Dropped => Departure::Dropped,
        Why::Replaced | Why::Deleted => return,
    };
    d.departed(key, h.total() as u64, why, &departed(h));
}

fn departed(h: &crate::item::Header) -> DepartedItem {
    DepartedItem { value_len: h.vlen, exptime: h.exptime, fetched: h.fetched, atime: h.atime }
}

/// Called from `Shard::keep_moved` when a moved item (header `h`) grew by
/// `grew` bytes.
#[inline]
pub(crate) fn report_growth(d: &mut dyn Departures, key: &[u8], h: &crate::item::Header, grew: usize) {
    if grew > 0 {
        d.departed(key, grew as u64, Departure::Moved, &departed(h));
    }
}

/// What one successful write or delete charged and released, in the bytes
/// `Stats::bytes` counts (header + key + value): the new item's size, and the
/// size of the item it replaced or removed (0: none). Returned by the calls
/// that write or remove on a client's behalf (`Store::write`,
/// `Store::delete_charged`, `Store::invalidate_charged`,
/// `Store::arith_charged`), so per-prefix accounting can follow the store
/// exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Charge {
    pub written: u64,
    pub released: u64,
}

/// Bytes the store charges for an item with this key length, value length
/// and client flags (what `Stats::bytes` counts per item).
#[inline]
pub fn item_bytes(klen: usize, vlen: usize, flags: u32) -> u64 {
    crate::item::item_len(klen, vlen, flags) as u64
}

/// One live item as `lru_crawler metadump` describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpItem {
    /// Absolute expiry (store time), 0 = never.
    pub exptime: crate::Time,
    /// Last access (store time; exact within 65535 s of `now`).
    pub last_access: crate::Time,
    pub cas: u64,
    pub fetched: bool,
    /// Bytes the store charges for the item.
    pub size: u64,
    /// The value's length (`stats cachedump` shows it).
    pub value_len: u64,
    /// The client flags (memcached 1.6.24's metadump prints them).
    pub flags: u32,
    /// The key came base64-encoded (meta `b`): memcached's dumps skip such
    /// keys rather than print raw bytes.
    pub key_binary: bool,
}

impl crate::Store {
    /// Look a key up without touching it: no access bump, no fetched bit, no
    /// meta state change (the server's `watch` lines report what a write or
    /// delete is about to find). Like every lookup, it removes an expired or
    /// flushed item it finds (the command that follows would have).
    pub fn peek<R>(&self, key: &[u8], now: crate::Time, read: impl FnOnce(&crate::Item<'_>) -> R) -> crate::Lookup<R> {
        self.peek_to(key, now, &mut Unreported, read)
    }

    pub(crate) fn peek_to<R>(
        &self,
        key: &[u8],
        now: crate::Time,
        d: &mut dyn Departures,
        read: impl FnOnce(&crate::Item<'_>) -> R,
    ) -> crate::Lookup<R> {
        use crate::shard::Found;
        let h = self.hasher.hash(key);
        let mut l = self.lock(h, now);
        match l.g.lookup(h, key, now, &self.pool, d) {
            Found::Live(_, loc) => crate::Lookup::Hit(read(&l.g.item(loc))),
            Found::Miss => crate::Lookup::Miss,
            Found::Expired => crate::Lookup::Expired,
            Found::Flushed => crate::Lookup::Flushed,
        }
    }

    /// Read `key`'s live item without changing anything — not even
    /// removing it if it is dead, so nothing leaves the store and no caller
    /// needs to hear of departures (the dashboard's look at its hot keys).
    /// Holds the shard's lock while `read` runs.
    pub fn inspect<R>(&self, key: &[u8], now: crate::Time, read: impl FnOnce(&crate::Item<'_>) -> R) -> Option<R> {
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
    pub fn for_each_item_in_shard(&self, shard: usize, now: crate::Time, mut f: impl FnMut(&[u8], &DumpItem)) -> usize {
        let mut n = 0;
        let mut after = 0;
        while let Some((items, last)) = self.for_each_item_in_shard_from(shard, now, after, usize::MAX, &mut f) {
            n += items;
            after = last;
        }
        n
    }

    /// One step of a shard walk: the items of at most `max_segments` of the
    /// shard's segments whose generation is above `after_gen` (0 to start),
    /// lowest generations first, under one hold of the shard's lock.
    /// Returns (items passed to `f`, the highest generation walked) to pass
    /// as `after_gen` next time, or `None` when no segment is left. Items
    /// written between steps land in newer segments and may be included;
    /// an item moved to a newer segment between steps may be seen twice, as
    /// with memcached's crawler.
    pub fn for_each_item_in_shard_from(
        &self,
        shard: usize,
        now: crate::Time,
        after_gen: u64,
        max_segments: usize,
        mut f: impl FnMut(&[u8], &DumpItem),
    ) -> Option<(usize, u64)> {
        let s = self.shards.get(shard)?;
        let mut g = s.0.lock().unwrap_or_else(|e| e.into_inner());
        g.apply_flush(self.flush.load(std::sync::atomic::Ordering::Acquire), now, &self.pool);
        let g = &*g;
        let mut todo: Vec<(u64, u32)> =
            g.segs.oldest_first().map(|id| (g.segs.get(id).gen, id)).filter(|&(gen, _)| gen > after_gen).collect();
        if todo.is_empty() {
            return None;
        }
        todo.sort_unstable();
        todo.truncate(max_segments.max(1));
        let mut n = 0;
        for &(_, id) in &todo {
            if g.is_flushed(id) {
                continue;
            }
            let seg = g.segs.get(id);
            let (end, mut live) = (seg.write_off, seg.live_items);
            let mut off = 0;
            while off < end && live > 0 {
                if seg.buf[off] == crate::item::PAD {
                    off += 1;
                    continue;
                }
                let loc = crate::index::Loc { seg: id, off: off as u32 };
                let h = g.header(loc);
                let bytes = &seg.buf[off..];
                let key = &bytes[h.key_off..h.key_off + h.klen];
                if g.index.find_loc(self.hasher.hash(key), loc).is_some() {
                    live -= 1;
                    if !h.expired(now) {
                        let item = DumpItem {
                            exptime: h.exptime,
                            last_access: now.saturating_sub(h.idle(now)),
                            cas: g.cas(loc),
                            fetched: h.fetched,
                            size: h.total() as u64,
                            value_len: h.vlen as u64,
                            flags: h.flags,
                            key_binary: h.key_binary,
                        };
                        f(key, &item);
                        n += 1;
                    }
                }
                off += h.total();
            }
        }
        Some((n, todo.last().map_or(after_gen, |&(gen, _)| gen)))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Departure, Mode, Store};

    /// What a sink saw: (key, bytes, why), one per departure.
    type Seen = Vec<(Vec<u8>, u64, Departure)>;

    #[test]
    fn departures_are_reported_with_their_size() {
        let s = Store::new(Config { memory_limit: 4 << 20, segment_size: 64 << 10, ..Config::default() }).unwrap();
        let mut seen: Seen = Vec::new();
        let mut log = |k: &[u8], b, d, it: &crate::DepartedItem| {
            if d == Departure::Expired {
                // What the server's watch line needs: value length, expiry, idle time.
                assert_eq!((it.value_len, it.exptime, it.fetched, it.idle(6)), (1, 5, false, 5));
            }
            seen.push((k.to_vec(), b, d))
        };
        let mut r = s.reporting(&mut log);
        let set = |r: &mut crate::Reporting<'_, _>, key: &[u8], exptime, value: &[u8]| {
            let w = crate::Write { mode: Mode::Set, key, flags: 0, exptime, value, landed: None };
            r.write(&w, 1, &crate::WriteOptions::default())
        };
        set(&mut r, b"exp", 5, b"v");
        set(&mut r, b"del", 0, b"v");
        r.delete_charged(b"del", 1, None);
        set(&mut r, b"exp2", 0, b"v");
        set(&mut r, b"exp2", 0, b"vv"); // replaced: not reported
        assert!(matches!(r.get(b"exp", 6, |_| ()), crate::Lookup::Expired));
        assert_eq!(seen, vec![(b"exp".to_vec(), super::item_bytes(3, 1, 0), Departure::Expired)]);
        seen.clear();
        // Fill far past the limit: evictions, each reported once, and the
        // store's bytes = stored - departed.
        let mut stored = 0u64;
        let mut log = |k: &[u8], b, d, _: &crate::DepartedItem| seen.push((k.to_vec(), b, d));
        for i in 0..20_000 {
            let k = format!("key:{i}");
            let w = crate::Write { mode: Mode::Set, key: k.as_bytes(), flags: 0, exptime: 0, value: &[b'x'; 500], landed: None };
            if let (crate::StoreResult::Stored(_), charge) = s.reporting(&mut log).write(&w, 6, &crate::WriteOptions::default()) {
                stored += charge.written;
            }
        }
        assert!(seen.iter().any(|x| x.2 == Departure::Evicted));
        let departed: u64 = seen.iter().filter(|x| x.2 != Departure::Moved).map(|x| x.1).sum();
        let grown: u64 = seen.iter().filter(|x| x.2 == Departure::Moved).map(|x| x.1).sum();
        let live = s.stats().bytes;
        // exp2 was stored before the loop (if it was evicted since, its
        // departure is in `departed`).
        let exp2 = super::item_bytes(4, 2, 0);
        assert_eq!(live, stored + exp2 + grown - departed);
    }

    /// Moves (S3-FIFO survivors, compaction) grow items by their CAS field:
    /// reported, so sets + growth - departures = the store's bytes exactly.
    #[test]
    fn moves_report_growth() {
        let s = Store::new(Config { memory_limit: 4 << 20, segment_size: 64 << 10, ..Config::default() }).unwrap();
        let mut seen: Seen = Vec::new();
        let mut log = |k: &[u8], b, d, _: &crate::DepartedItem| seen.push((k.to_vec(), b, d));
        let (mut stored, mut replaced) = (0u64, 0u64);
        for i in 0..40_000u64 {
            // Hot keys (hit, so they survive eviction) and overwrites of
            // recent ones (dead bytes, so compaction).
            let k = if i % 3 == 0 { format!("hot:{}", i % 300) } else { format!("key:{}", i - i % 7) };
            let w = crate::Write { mode: Mode::Set, key: k.as_bytes(), flags: 0, exptime: 0, value: &[b'x'; 300], landed: None };
            if let (crate::StoreResult::Stored(_), charge) = s.reporting(&mut log).write(&w, 1, &crate::WriteOptions::default()) {
                stored += charge.written;
                replaced += charge.released;
            }
            s.reporting(&mut log).get(format!("hot:{}", i % 300).as_bytes(), 1, |_| ());
        }
        let moved = seen.iter().filter(|x| x.2 == Departure::Moved).count();
        assert!(moved > 0 && s.stats().compactions > 0, "moves {moved}, stats {:?}", s.stats());
        let departed: u64 = seen.iter().filter(|x| x.2 != Departure::Moved).map(|x| x.1).sum();
        let grown: u64 = seen.iter().filter(|x| x.2 == Departure::Moved).map(|x| x.1).sum();
        assert_eq!(s.stats().bytes, stored + grown - replaced - departed);
    }

    #[test]
    fn peek_changes_nothing() {
        let s = Store::new(Config { memory_limit: 4 << 20, segment_size: 64 << 10, ..Config::default() }).unwrap();
        s.store(Mode::Set, b"k", 0, 0, b"value", 1);
        s.store(Mode::Set, b"e", 0, 3, b"v", 1);
        assert_eq!(s.peek(b"k", 2, |it| it.value.len()), crate::Lookup::Hit(5));
        assert_eq!(s.peek(b"none", 2, |_| ()), crate::Lookup::Miss);
        assert_eq!(s.peek(b"e", 4, |_| ()), crate::Lookup::Expired);
        // Not marked fetched, not bumped.
        let mut fetched = None;
        for sh in 0..s.shard_count() {
            s.for_each_item_in_shard(sh, 2, |k, it| {
                if k == b"k" {
                    fetched = Some(it.fetched);
                }
            });
        }
        assert_eq!(fetched, Some(false));
    }

    #[test]
    fn inspect_removes_nothing() {
        let s = Store::new(Config { memory_limit: 4 << 20, segment_size: 64 << 10, ..Config::default() }).unwrap();
        s.store(Mode::Set, b"k", 0, 0, b"value", 1);
        s.store(Mode::Set, b"e", 0, 3, b"v", 1);
        assert_eq!(s.inspect(b"k", 2, |it| it.value.len()), Some(5));
        assert_eq!(s.inspect(b"none", 2, |_| ()), None);
        // Expired: not shown, and still there for the command that finds it.
        assert_eq!(s.inspect(b"e", 4, |_| ()), None);
        assert_eq!(s.stats().curr_items, 2);
        assert_eq!(s.get(b"e", 4, |_| ()), crate::Lookup::Expired);
        assert_eq!(s.stats().curr_items, 1);
    }

    #[test]
    fn walks_every_live_item_once() {
        let s = Store::new(Config { memory_limit: 8 << 20, ..Config::default() }).unwrap();
        for i in 0..1000 {
            let k = format!("k:{i}");
            s.store(Mode::Set, k.as_bytes(), 0, if i % 10 == 0 { 5 } else { 0 }, b"value", 1);
        }
        s.store(Mode::Set, b"k:1", 0, 0, b"replaced", 1);
        s.delete(b"k:2", 1);
        let mut seen = std::collections::HashMap::new();
        for sh in 0..s.shard_count() {
            s.for_each_item_in_shard(sh, 10, |k, it| {
                assert!(seen.insert(k.to_vec(), *it).is_none());
            });
        }
        // 1000 - 100 expired (exptime 5 < now 10) - 1 deleted.
        assert_eq!(seen.len(), 899);
        // One segment per step gives the same items.
        let mut stepped = 0;
        for sh in 0..s.shard_count() {
            let mut after = 0;
            while let Some((n, last)) = s.for_each_item_in_shard_from(sh, 10, after, 1, |_, _| {}) {
                assert!(last > after);
                stepped += n;
                after = last;
            }
        }
        assert_eq!(stepped, 899);
        assert_eq!(seen[&b"k:1".to_vec()].size, super::item_bytes(3, 8, 0));
        assert!(!seen.contains_key(b"k:2".as_slice()));
        assert!(!seen.contains_key(b"k:10".as_slice()));
        s.flush_all(10, 10);
        let mut n = 0;
        for sh in 0..s.shard_count() {
            n += s.for_each_item_in_shard(sh, 10, |_, _| {});
        }
        assert_eq!(n, 0);
    }
}
