//! Reading the store for observability, off the store's own request logic.
//!
//! * [`last_sizes`]: the sizes the calling thread's last successful store or
//!   delete charged and released, for exact per-prefix byte accounting in the
//!   server (a thread-local pair written under the shard lock by the same
//!   call, read right after it returns: no lock, no allocation, and no change
//!   to the store's result types).
//! * [`Store::for_each_item_in_shard`](crate::Store::for_each_item_in_shard):
//!   every live item of one shard with its metadata, under that shard's lock
//!   only (the server's `lru_crawler metadump` walks the shards one by one).
//!
//! Kept in its own file so the eviction work in `evict.rs`/`shard.rs`/
//! `segment.rs` and this module do not touch the same lines.

use std::cell::Cell;

std::thread_local! {
    /// (bytes of the item written, bytes of the item removed or replaced);
    /// 0 = none.
    static LAST: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Called by the store (same thread, just before it returns).
#[inline]
pub(crate) fn note(written: u64, removed: u64) {
    LAST.with(|c| c.set((written, removed)));
}

/// For the calling thread's last successful `store`/`store_if`/`meta_store`
/// (`Stored`): (bytes the new item occupies, bytes of the item it replaced,
/// 0 if none). For its last successful `delete`/`delete_if`: (0, bytes of
/// the removed item). Sizes are what the store charges in `Stats::bytes`
/// (header + key + value). Only meaningful right after such a call.
#[inline]
pub fn last_sizes() -> (u64, u64) {
    LAST.with(|c| c.get())
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
}

impl crate::Store {
    /// Number of shards ([`for_each_item_in_shard`](Self::for_each_item_in_shard) takes 0..this).
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Calls `f(key, item)` for every live item (not expired, not flushed)
    /// of shard `shard`, under that shard's lock only: other shards keep
    /// serving, and this one waits for one walk of its segments. Segments
    /// are walked oldest first; an item is live when the index still points
    /// at it. Nothing is modified (expired items are left to the usual
    /// reclaim paths). Returns the number of items passed to `f`.
    pub fn for_each_item_in_shard(&self, shard: usize, now: crate::Time, mut f: impl FnMut(&[u8], &DumpItem)) -> usize {
        let Some(s) = self.shards.get(shard) else { return 0 };
        let mut g = s.0.lock().unwrap_or_else(|e| e.into_inner());
        g.apply_flush(self.flush.load(std::sync::atomic::Ordering::Acquire), now, &self.pool);
        let g = &*g;
        let mut n = 0;
        for id in g.segs.oldest_first() {
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
                        };
                        f(key, &item);
                        n += 1;
                    }
                }
                off += h.total();
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Mode, Store};

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
        assert_eq!(seen[&b"k:1".to_vec()].size, super::item_bytes(3, 8, 0));
        assert!(!seen.contains_key(&b"k:2".to_vec()));
        assert!(!seen.contains_key(&b"k:10".to_vec()));
        s.flush_all(10, 10);
        let mut n = 0;
        for sh in 0..s.shard_count() {
            n += s.for_each_item_in_shard(sh, 10, |_, _| {});
        }
        assert_eq!(n, 0);
    }
}
