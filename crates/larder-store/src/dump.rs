//! Reading the store for observability, off the store's own request logic:
//! every live item of one shard with its metadata ([`DumpItem`]), under
//! that shard's lock only (the server's `lru_crawler metadump` walks the
//! shards one by one, through `Store::for_each_item_in_shard_from`, whose
//! body is [`walk_shard`] here).

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

use crate::Departures;

impl crate::Store {
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

    /// The body of [`Store::for_each_item_in_shard_from`](crate::Store::for_each_item_in_shard_from).
    pub(crate) fn walk_shard(
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
    use crate::{Config, Mode, Store};

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
        assert_eq!(seen[&b"k:1".to_vec()].size, crate::item_bytes(3, 8, 0));
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
