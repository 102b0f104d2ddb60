//! Big keys: the K largest items currently stored, kept current as items
//! are written, deleted, expired and evicted.
//!
//! # Algorithm
//!
//! A min-heap of at most K entries ordered by item size, plus a hash map
//! from key to heap position, under one mutex. A write of a key already in
//! the set updates its size in place (and moves it in the heap); a write of
//! a new key enters if the set has room or if it is larger than the
//! smallest member, which it then replaces; a removal of a member takes it
//! out. Each operation that takes the lock is O(log K).
//!
//! # Keeping the hot path off the lock
//!
//! Almost every write is a small item of a key that is not a member. Two
//! lock-free checks let those return at once:
//!
//! * `threshold` (an atomic): the size an item needs to enter. While the set
//!   has never been full it is `min_size` (default 1); once full it is the
//!   smallest member's size + 1.
//! * a counting filter (4 Ki+ atomic counters indexed by key hash) of the
//!   current members: a key whose cell is zero is certainly not a member.
//!
//! A write below `threshold` whose cell is zero, and a removal whose cell is
//! zero, do one hash and two relaxed loads and return.
//!
//! # Shrinking below K, and staleness
//!
//! When members are deleted the set holds fewer than K entries. It does not
//! rescan the store; it **refills only as items are written**, and with the
//! threshold kept at the *floor* (the smallest member's size when the set
//! was last full) so the hot path stays cheap: until K members are back,
//! the set lists the largest items written (or still stored) that are at
//! least as big as the floor. A server that wants a full list again can
//! feed items from a store scan (e.g. the metadump crawler) through
//! [`BigKeys::on_store`]: the same call, idempotent.
//!
//! Calls made after the store operation, from several threads, can reach
//! this structure in a different order than the store applied them
//! (two writers of the same key racing): the report may then briefly show a
//! stale size for that key until its next write or removal. Reports are
//! diagnostics; the server may re-check each reported key against the store
//! before printing ([`BigKeys::render`] takes a `verify` closure).
//!
//! Memory: K entries (key copy, size, times) + the map + the filter:
//! [`BigKeys::heap_bytes`], bounded by K x (250 + ~80) bytes + the filter.
//!
//! # `stats bigkeys` (format)
//!
//! ```text
//! STAT bigkey:<rank>:key <escaped key>
//! STAT bigkey:<rank>:size <bytes charged for the item>
//! STAT bigkey:<rank>:prefix <escaped prefix> (omitted when the key has no delimiter)
//! STAT bigkey:<rank>:age <seconds since it was written>
//! STAT bigkey:<rank>:ttl <seconds left, -1 if it never expires>
//! ...                                        (rank 1 = largest)
//! STAT bigkeys_tracked <n>
//! STAT bigkeys_limit <K>
//! END
//! ```
//!
//! With the server's `-X` (memcached's "no key dumps") the `key` lines are
//! left out ([`BigKeys::render_hiding_keys`]): sizes, prefixes, ages and
//! TTLs remain, the names do not.
//!
//! Keys and prefixes are escaped by [`crate::escape::escape_key`]
//! (printable ASCII, no space, `%XX` for any other byte and for `%`), so a
//! key holding any byte cannot forge lines; `user:1` prints as itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::util::{hash_bytes, key_prefix, stat_i64, stat_key, stat_u64};

/// Default K.
pub const DEFAULT_BIGKEYS: usize = 20;

/// One member of the set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BigKey {
    pub key: Vec<u8>,
    pub size: u64,
    /// Unix time (seconds) of the write.
    pub stored_at: u64,
    /// Absolute unix expiry time in seconds, 0 = never.
    pub exptime: u64,
}

struct Entry {
    key: Box<[u8]>,
    hash: u64,
    size: u64,
    stored_at: u64,
    exptime: u64,
}

#[derive(Default)]
struct Inner {
    heap: Vec<Entry>,
    pos: HashMap<Box<[u8]>, usize>,
    floor: u64,
}

/// The top-K set. `Send + Sync`; share it by reference or `Arc`.
pub struct BigKeys {
    k: usize,
    min_size: u64,
    threshold: AtomicU64,
    filter: Box<[AtomicU16]>,
    inner: Mutex<Inner>,
}

impl BigKeys {
    /// The `k` largest items (k >= 1, at most 65535), ignoring items smaller
    /// than `min_size` bytes.
    pub fn new(k: usize, min_size: u64) -> Self {
        let k = k.clamp(1, u16::MAX as usize);
        let cells = (k * 16).next_power_of_two().max(4096);
        BigKeys {
            k,
            min_size: min_size.max(1),
            threshold: AtomicU64::new(min_size.max(1)),
            filter: (0..cells).map(|_| AtomicU16::new(0)).collect(),
            inner: Mutex::new(Inner {
                heap: Vec::with_capacity(k),
                pos: HashMap::with_capacity(k),
                floor: min_size.max(1),
            }),
        }
    }

    pub fn limit(&self) -> usize {
        self.k
    }

    #[inline]
    fn cell(&self, h: u64) -> &AtomicU16 {
        &self.filter[h as usize & (self.filter.len() - 1)]
    }

    /// An item of `size` bytes was stored under `key` at unix time `now`,
    /// expiring at unix time `exptime` (0 = never). Also for writes that
    /// change an existing item's size (append, incr, ...) and `touch` (same
    /// size, new `exptime`).
    #[inline]
    pub fn on_store(&self, key: &[u8], size: u64, now: u64, exptime: u64) {
        let h = hash_bytes(key);
        if size < self.threshold.load(Ordering::Relaxed) && self.cell(h).load(Ordering::Relaxed) == 0 {
            return;
        }
        self.store_slow(key, h, size, now, exptime);
    }

    /// `key` left the store (delete, eviction, expiry, flush).
    #[inline]
    pub fn on_remove(&self, key: &[u8]) {
        let h = hash_bytes(key);
        if self.cell(h).load(Ordering::Relaxed) == 0 {
            return;
        }
        self.remove_slow(key);
    }

    #[cold]
    fn store_slow(&self, key: &[u8], h: u64, size: u64, now: u64, exptime: u64) {
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        if let Some(&i) = inner.pos.get(key) {
            let e = &mut inner.heap[i];
            let old = e.size;
            e.size = size;
            e.stored_at = now;
            e.exptime = exptime;
            if size < self.min_size {
                self.remove_at(inner, i);
            } else if size > old {
                sift_down(inner, i);
            } else {
                sift_up(inner, i);
            }
        } else if size >= self.min_size {
            let entry = Entry { key: key.into(), hash: h, size, stored_at: now, exptime };
            if inner.heap.len() < self.k {
                if size < inner.floor {
                    return;
                }
                self.cell(h).fetch_add(1, Ordering::Relaxed);
                inner.pos.insert(entry.key.clone(), inner.heap.len());
                inner.heap.push(entry);
                let i = inner.heap.len() - 1;
                sift_up(inner, i);
            } else if size > inner.heap[0].size {
                self.remove_at(inner, 0);
                self.cell(h).fetch_add(1, Ordering::Relaxed);
                inner.pos.insert(entry.key.clone(), inner.heap.len());
                inner.heap.push(entry);
                let i = inner.heap.len() - 1;
                sift_up(inner, i);
            }
        }
        self.update_threshold(inner);
    }

    #[cold]
    fn remove_slow(&self, key: &[u8]) {
        let mut g = self.inner.lock().unwrap();
        let inner = &mut *g;
        if let Some(&i) = inner.pos.get(key) {
            self.remove_at(inner, i);
            self.update_threshold(inner);
        }
    }

    fn update_threshold(&self, inner: &mut Inner) {
        if inner.heap.len() >= self.k {
            inner.floor = inner.heap[0].size;
            self.threshold.store(inner.heap[0].size.saturating_add(1), Ordering::Relaxed);
        } else {
            self.threshold.store(inner.floor, Ordering::Relaxed);
        }
    }

    fn remove_at(&self, inner: &mut Inner, i: usize) {
        let last = inner.heap.len() - 1;
        inner.heap.swap(i, last);
        let e = inner.heap.pop().unwrap();
        inner.pos.remove(&e.key);
        self.cell(e.hash).fetch_sub(1, Ordering::Relaxed);
        if i < inner.heap.len() {
            let k = inner.heap[i].key.clone();
            inner.pos.insert(k, i);
            sift_down(inner, i);
            sift_up(inner, i);
        }
    }

    /// The members, largest first.
    pub fn top(&self) -> Vec<BigKey> {
        let g = self.inner.lock().unwrap();
        let mut v: Vec<BigKey> = g
            .heap
            .iter()
            .map(|e| BigKey { key: e.key.to_vec(), size: e.size, stored_at: e.stored_at, exptime: e.exptime })
            .collect();
        drop(g);
        v.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.key.cmp(&b.key)));
        v
    }

    /// The `stats bigkeys` reply (format in the module docs), `END\r\n`
    /// included. `now` is unix seconds; `delimiter` the prefix delimiter;
    /// `verify(key, size)` may drop entries the store no longer holds
    /// (pass `|_, _| true` to print the set as is).
    pub fn render(&self, out: &mut Vec<u8>, now: u64, delimiter: u8, verify: impl FnMut(&[u8], u64) -> bool) {
        self.render_opts(out, now, delimiter, false, verify)
    }

    /// [`BigKeys::render`] without the `key` lines (the server's `-X`).
    pub fn render_hiding_keys(&self, out: &mut Vec<u8>, now: u64, delimiter: u8, verify: impl FnMut(&[u8], u64) -> bool) {
        self.render_opts(out, now, delimiter, true, verify)
    }

    fn render_opts(&self, out: &mut Vec<u8>, now: u64, delimiter: u8, hide_keys: bool, mut verify: impl FnMut(&[u8], u64) -> bool) {
        let top = self.top();
        let mut rank = 0u64;
        for b in top.iter().filter(|b| verify(&b.key, b.size)) {
            rank += 1;
            let r = rank.to_string();
            let head = [&b"bigkey:"[..], r.as_bytes(), b":"].concat();
            if !hide_keys {
                stat_key(out, &[&head, b"key"], &b.key);
            }
            stat_u64(out, &[&head, b"size"], b.size);
            if let Some(p) = key_prefix(&b.key, delimiter) {
                stat_key(out, &[&head, b"prefix"], p);
            }
            stat_u64(out, &[&head, b"age"], now.saturating_sub(b.stored_at));
            let ttl = if b.exptime == 0 { -1 } else { b.exptime.saturating_sub(now) as i64 };
            stat_i64(out, &[&head, b"ttl"], ttl);
        }
        stat_u64(out, &[b"bigkeys_tracked"], rank);
        stat_u64(out, &[b"bigkeys_limit"], self.k as u64);
        out.extend_from_slice(b"END\r\n");
    }

    /// Heap bytes in use (entries, key copies, map, filter).
    pub fn heap_bytes(&self) -> usize {
        let g = self.inner.lock().unwrap();
        let keys: usize = g.heap.iter().map(|e| e.key.len() * 2).sum();
        self.filter.len() * 2
            + g.heap.capacity() * std::mem::size_of::<Entry>()
            + g.pos.capacity() * (std::mem::size_of::<(Box<[u8]>, usize)>() + 1)
            + keys
    }
}

fn sift_up(inner: &mut Inner, mut i: usize) {
    while i > 0 {
        let p = (i - 1) / 2;
        if inner.heap[i].size >= inner.heap[p].size {
            break;
        }
        swap(inner, i, p);
        i = p;
    }
}

fn sift_down(inner: &mut Inner, mut i: usize) {
    let n = inner.heap.len();
    loop {
        let l = 2 * i + 1;
        let r = l + 1;
        let mut m = i;
        if l < n && inner.heap[l].size < inner.heap[m].size {
            m = l;
        }
        if r < n && inner.heap[r].size < inner.heap[m].size {
            m = r;
        }
        if m == i {
            break;
        }
        swap(inner, i, m);
        i = m;
    }
}

fn swap(inner: &mut Inner, a: usize, b: usize) {
    inner.heap.swap(a, b);
    *inner.pos.get_mut(&inner.heap[a].key).unwrap() = a;
    *inner.pos.get_mut(&inner.heap[b].key).unwrap() = b;
}

#[cfg(test)]
mod tests {
    use super::*;
    use larder_testkit::XorShift64;

    fn keys(b: &BigKeys) -> Vec<(String, u64)> {
        b.top().into_iter().map(|k| (String::from_utf8(k.key).unwrap(), k.size)).collect()
    }

    #[test]
    fn ten_mib_value_tops_the_list() {
        let b = BigKeys::new(10, 1);
        let mut x = 7u64;
        for i in 0..10_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            b.on_store(format!("k:{i}").as_bytes(), 100 + (x >> 50), 1000, 0);
        }
        b.on_store(b"item:huge", 10 << 20, 1000, 0);
        let top = b.top();
        assert_eq!(top.len(), 10);
        assert_eq!(top[0].key, b"item:huge");
        assert_eq!(top[0].size, 10 << 20);
        // sizes descending and they are the true 10 largest
        let mut all: Vec<u64> = Vec::new();
        let mut x = 7u64;
        for _ in 0..10_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            all.push(100 + (x >> 50));
        }
        all.push(10 << 20);
        all.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(top.iter().map(|k| k.size).collect::<Vec<_>>(), all[..10].to_vec());
    }

    #[test]
    fn updates_deletes_and_refill() {
        let b = BigKeys::new(3, 1);
        b.on_store(b"a", 10, 0, 0);
        b.on_store(b"b", 20, 0, 0);
        b.on_store(b"c", 30, 0, 0);
        b.on_store(b"d", 5, 0, 0); // too small
        assert_eq!(keys(&b), vec![("c".into(), 30), ("b".into(), 20), ("a".into(), 10)]);
        b.on_store(b"a", 40, 0, 0); // member grows
        assert_eq!(keys(&b)[0], ("a".into(), 40));
        b.on_store(b"a", 1, 0, 0); // member shrinks: stays, smallest now
        assert_eq!(keys(&b)[2], ("a".into(), 1));
        b.on_store(b"e", 25, 0, 0); // replaces a
        assert_eq!(keys(&b), vec![("c".into(), 30), ("e".into(), 25), ("b".into(), 20)]);
        b.on_remove(b"c"); // evicted
        b.on_remove(b"zzz"); // not a member
        assert_eq!(keys(&b), vec![("e".into(), 25), ("b".into(), 20)]);
        // refills only with items >= the floor (20)
        b.on_store(b"f", 19, 0, 0);
        assert_eq!(keys(&b).len(), 2);
        b.on_store(b"g", 21, 0, 0);
        assert_eq!(keys(&b), vec![("e".into(), 25), ("g".into(), 21), ("b".into(), 20)]);
        for k in [b"e", b"g", b"b"] {
            b.on_remove(k);
        }
        assert!(keys(&b).is_empty());
        assert!(b.filter.iter().all(|c| c.load(Ordering::Relaxed) == 0));
    }

    #[test]
    fn render_format() {
        let b = BigKeys::new(5, 1);
        b.on_store(b"item:big", 10_485_800, 100, 0);
        b.on_store(b"plain", 500, 90, 200);
        let mut out = Vec::new();
        b.render(&mut out, 110, b':', |_, _| true);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "STAT bigkey:1:key item:big\r\nSTAT bigkey:1:size 10485800\r\nSTAT bigkey:1:prefix item\r\n\
             STAT bigkey:1:age 10\r\nSTAT bigkey:1:ttl -1\r\n\
             STAT bigkey:2:key plain\r\nSTAT bigkey:2:size 500\r\nSTAT bigkey:2:age 20\r\nSTAT bigkey:2:ttl 90\r\n\
             STAT bigkeys_tracked 2\r\nSTAT bigkeys_limit 5\r\nEND\r\n"
        );
        let mut out = Vec::new();
        b.render(&mut out, 110, b':', |k, _| k != b"item:big");
        assert!(String::from_utf8(out).unwrap().starts_with("STAT bigkey:1:key plain\r\n"));
        let mut out = Vec::new();
        b.render_hiding_keys(&mut out, 110, b':', |_, _| true);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "STAT bigkey:1:size 10485800\r\nSTAT bigkey:1:prefix item\r\n\
             STAT bigkey:1:age 10\r\nSTAT bigkey:1:ttl -1\r\n\
             STAT bigkey:2:size 500\r\nSTAT bigkey:2:age 20\r\nSTAT bigkey:2:ttl 90\r\n\
             STAT bigkeys_tracked 2\r\nSTAT bigkeys_limit 5\r\nEND\r\n"
        );
    }

    #[test]
    fn random_ops_match_model() {
        // against a brute-force model: while no member has been removed, the
        // set is exactly the k largest current items
        let b = BigKeys::new(8, 1);
        let mut model: HashMap<u32, u64> = HashMap::new();
        let mut r = XorShift64(1);
        for _ in 0..20_000 {
            let x = r.next_u64();
            let k = (x % 500) as u32;
            let size = (x >> 20) % 1_000_000;
            if size == 0 {
                continue;
            }
            let grows = model.get(&k).is_none_or(|&old| size >= old);
            if !grows {
                continue; // shrinking members may keep a stale rank: skip
            }
            model.insert(k, size);
            b.on_store(format!("{k}").as_bytes(), size, 0, 0);
            let mut all: Vec<u64> = model.values().copied().collect();
            all.sort_unstable_by(|a, b| b.cmp(a));
            all.truncate(8);
            let got: Vec<u64> = b.top().iter().map(|e| e.size).collect();
            assert_eq!(got, all);
        }
        assert!(b.heap_bytes() < 4096 * 2 + 8 * 600);
    }
}
