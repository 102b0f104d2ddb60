//! One shard of the tracking table: which subscribers (sids) read which
//! key, by exact key, oldest registration first.
//!
//! * **Exact keys.** Each entry keeps a copy of its key; lookups hash the
//!   key (the tracker's keyed hash) and then compare bytes along the
//!   bucket's chain, so two keys with the same hash are two entries: a
//!   collision can cost a comparison, never a forgotten registration.
//! * **FIFO.** Entries are linked in the order they were created; when a
//!   new entry does not fit in the shard's byte limit the oldest are taken
//!   out and handed back to the caller, which queues `IV` for each (an
//!   eviction is never silent). A new sid on an existing entry does not
//!   move it: the entry goes when its first registration is the oldest.
//! * **Memory counted** as key bytes plus [`ENTRY_OVERHEAD`] per entry plus
//!   8 bytes per sid beyond the [`INLINE_SIDS`] kept inline; the shard
//!   never holds more than its limit by that count.
//! * **Allocation.** Creating an entry allocates its key copy (and, the
//!   first time a slot or bucket is needed, grows the slab or bucket
//!   array: amortised, and bounded by the limit). A key read by more than
//!   [`INLINE_SIDS`] subscribers spills its sids to a `Vec`. Looking up,
//!   re-registering a tracked (key, sid), removing and evicting allocate
//!   nothing.

/// "No entry" in chains and lists.
pub const NIL: u32 = u32::MAX;
/// Subscribers an entry holds without a heap allocation.
pub const INLINE_SIDS: usize = 2;
/// Bytes counted per entry besides its key: the slab slot, its share of
/// the bucket array (load factor at most 1, so at most two slots per
/// entry), and the allocator's own header of the key copy.
pub const ENTRY_OVERHEAD: usize = std::mem::size_of::<Entry>() + 2 * 4 + 16;

/// The subscribers of one key.
#[derive(Default)]
pub struct Sids {
    inline: [u64; INLINE_SIDS],
    n: u8,
    more: Vec<u64>,
}

impl Sids {
    pub fn contains(&self, sid: u64) -> bool {
        self.inline[..self.n as usize].contains(&sid) || self.more.contains(&sid)
    }

    /// Add `sid`; the bytes the entry's count grows by.
    fn add(&mut self, sid: u64) -> usize {
        if (self.n as usize) < INLINE_SIDS {
            self.inline[self.n as usize] = sid;
            self.n += 1;
            0
        } else {
            let cap = self.more.capacity();
            self.more.push(sid);
            (self.more.capacity() - cap) * 8
        }
    }

    /// Remove `sid` if present; whether it was.
    fn remove(&mut self, sid: u64) -> bool {
        let n = self.n as usize;
        if let Some(i) = self.inline[..n].iter().position(|&s| s == sid) {
            // Refill the inline slot from the spill, or close the gap.
            if let Some(last) = self.more.pop() {
                self.inline[i] = last;
            } else {
                self.inline[i] = self.inline[n - 1];
                self.n -= 1;
            }
            return true;
        }
        if let Some(i) = self.more.iter().position(|&s| s == sid) {
            self.more.swap_remove(i);
            return true;
        }
        false
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.inline[..self.n as usize].iter().chain(self.more.iter()).copied()
    }

    fn spilled_bytes(&self) -> usize {
        self.more.capacity() * 8
    }
}

pub struct Entry {
    key: Box<[u8]>,
    hash: u64,
    /// Next entry in the same bucket (or, for a free slot, the next free).
    chain: u32,
    /// FIFO links, oldest at the shard's head.
    prev: u32,
    next: u32,
    pub sids: Sids,
}

impl Entry {
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    fn bytes(&self) -> usize {
        self.key.len() + ENTRY_OVERHEAD + self.sids.spilled_bytes()
    }
}

/// What an entry becomes when it leaves the table (its key and sids, for
/// the caller to queue `IV`s with).
pub type Removed = Entry;

/// What a registration did.
#[derive(Debug, PartialEq, Eq)]
pub enum Registered {
    /// New entry, or a sid added to one.
    Added,
    /// The (key, sid) was already tracked.
    Already,
    /// A single entry is larger than the whole shard limit: not tracked
    /// (the caller invalidates at once instead).
    TooBig,
}

pub struct Shard {
    buckets: Vec<u32>,
    slab: Vec<Entry>,
    free: u32,
    head: u32,
    tail: u32,
    len: usize,
    bytes: usize,
    limit: usize,
}

impl Shard {
    pub fn new(limit: usize) -> Shard {
        Shard { buckets: Vec::new(), slab: Vec::new(), free: NIL, head: NIL, tail: NIL, len: 0, bytes: 0, limit }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes counted (key bytes + overheads).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    fn bucket_of(&self, hash: u64) -> usize {
        (hash as usize) & (self.buckets.len() - 1)
    }

    fn find(&self, hash: u64, key: &[u8]) -> u32 {
        if self.buckets.is_empty() {
            return NIL;
        }
        let mut i = self.buckets[self.bucket_of(hash)];
        while i != NIL {
            let e = &self.slab[i as usize];
            if e.hash == hash && *e.key == *key {
                return i;
            }
            i = e.chain;
        }
        NIL
    }

    /// Register (key, sid). Evicted entries are handed to `evicted` (oldest
    /// first), before the new one is added.
    pub fn register(&mut self, hash: u64, key: &[u8], sid: u64, mut evicted: impl FnMut(Removed)) -> Registered {
        let i = self.find(hash, key);
        if i != NIL {
            let e = &mut self.slab[i as usize];
            if e.sids.contains(sid) {
                return Registered::Already;
            }
            let grew = e.sids.add(sid);
            self.bytes += grew;
            // A spill can take the shard past its limit: make room behind
            // this entry (never evict the entry being registered).
            while self.bytes > self.limit && self.head != NIL && self.head != i {
                let old = self.unlink(self.head);
                evicted(old);
            }
            return Registered::Added;
        }
        let need = key.len() + ENTRY_OVERHEAD;
        if need > self.limit {
            return Registered::TooBig;
        }
        while self.bytes + need > self.limit && self.head != NIL {
            let old = self.unlink(self.head);
            evicted(old);
        }
        self.insert(hash, key, sid);
        Registered::Added
    }

    fn insert(&mut self, hash: u64, key: &[u8], sid: u64) {
        if self.len + 1 > self.buckets.len() {
            self.grow_buckets();
        }
        let mut sids = Sids::default();
        sids.add(sid);
        let e = Entry { key: key.into(), hash, chain: NIL, prev: self.tail, next: NIL, sids };
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.slab[i as usize].chain;
            self.slab[i as usize] = e;
            i
        } else {
            self.slab.push(e);
            (self.slab.len() - 1) as u32
        };
        let b = self.bucket_of(hash);
        self.slab[i as usize].chain = self.buckets[b];
        self.buckets[b] = i;
        if self.tail != NIL {
            self.slab[self.tail as usize].next = i;
        } else {
            self.head = i;
        }
        self.tail = i;
        self.len += 1;
        self.bytes += need_of(&self.slab[i as usize]);
    }

    fn grow_buckets(&mut self) {
        let n = (self.buckets.len() * 2).max(16);
        self.buckets.clear();
        self.buckets.resize(n, NIL);
        let mut i = self.head;
        while i != NIL {
            let b = self.bucket_of(self.slab[i as usize].hash);
            self.slab[i as usize].chain = self.buckets[b];
            self.buckets[b] = i;
            i = self.slab[i as usize].next;
        }
    }

    /// Take entry `i` out of its bucket chain and the FIFO; its slot goes
    /// to the free list.
    fn unlink(&mut self, i: u32) -> Removed {
        let (hash, prev, next) = {
            let e = &self.slab[i as usize];
            (e.hash, e.prev, e.next)
        };
        // Bucket chain.
        let b = self.bucket_of(hash);
        if self.buckets[b] == i {
            self.buckets[b] = self.slab[i as usize].chain;
        } else {
            let mut p = self.buckets[b];
            while self.slab[p as usize].chain != i {
                p = self.slab[p as usize].chain;
            }
            self.slab[p as usize].chain = self.slab[i as usize].chain;
        }
        // FIFO.
        if prev != NIL {
            self.slab[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.slab[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
        let free = Entry { key: Box::default(), hash: 0, chain: self.free, prev: NIL, next: NIL, sids: Sids::default() };
        let e = std::mem::replace(&mut self.slab[i as usize], free);
        self.free = i;
        self.len -= 1;
        self.bytes -= e.bytes();
        e
    }

    /// Take `key`'s entry out (an invalidation consumes it).
    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<Removed> {
        let i = self.find(hash, key);
        (i != NIL).then(|| self.unlink(i))
    }

    /// Forget `sid` everywhere in this shard (its subscriber is lost or
    /// gone); entries left without a sid leave. How many (key, sid) pairs
    /// were dropped.
    pub fn drop_sid(&mut self, sid: u64) -> usize {
        let mut dropped = 0;
        let mut i = self.head;
        while i != NIL {
            let next = self.slab[i as usize].next;
            let e = &mut self.slab[i as usize];
            let before = e.sids.spilled_bytes();
            if e.sids.remove(sid) {
                dropped += 1;
                if e.sids.is_empty() {
                    self.unlink(i);
                } else {
                    let after = e.sids.spilled_bytes();
                    self.bytes -= before - after;
                }
            }
            i = next;
        }
        dropped
    }

    /// Drop every entry (`flush_all`); how many there were. Keeps the slab
    /// and buckets allocated for reuse.
    pub fn clear(&mut self) -> usize {
        let n = self.len;
        while self.head != NIL {
            self.unlink(self.head);
        }
        n
    }

    /// The oldest entry's key (tests).
    #[cfg(test)]
    pub fn oldest(&self) -> Option<&[u8]> {
        (self.head != NIL).then(|| self.slab[self.head as usize].key())
    }

    /// Recount what the shard holds from scratch (tests: the running count
    /// must match).
    #[cfg(test)]
    pub fn recount(&self) -> (usize, usize) {
        let (mut n, mut bytes) = (0, 0);
        let mut i = self.head;
        while i != NIL {
            n += 1;
            bytes += self.slab[i as usize].bytes();
            i = self.slab[i as usize].next;
        }
        (n, bytes)
    }
}

fn need_of(e: &Entry) -> usize {
    e.bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hash that puts every key in one chain: exact comparison must
    /// still tell them apart.
    const SAME: u64 = 7;

    #[test]
    fn colliding_keys_stay_distinct() {
        let mut s = Shard::new(1 << 20);
        let mut ev = Vec::new();
        for k in [b"a".as_slice(), b"b", b"c"] {
            assert_eq!(s.register(SAME, k, 1, |e| ev.push(e)), Registered::Added);
        }
        assert_eq!(s.register(SAME, b"b", 1, |e| ev.push(e)), Registered::Already);
        assert_eq!(s.register(SAME, b"b", 2, |e| ev.push(e)), Registered::Added);
        assert!(ev.is_empty());
        let b = s.remove(SAME, b"b").unwrap();
        assert_eq!(b.key(), b"b");
        assert_eq!(b.sids.iter().collect::<Vec<_>>(), [1, 2]);
        assert!(s.remove(SAME, b"b").is_none());
        assert_eq!(s.remove(SAME, b"a").unwrap().key(), b"a");
        assert_eq!(s.remove(SAME, b"c").unwrap().key(), b"c");
        assert_eq!((s.len(), s.bytes()), (0, 0));
    }

    #[test]
    fn over_the_limit_the_oldest_leave_first() {
        let per = 4 + ENTRY_OVERHEAD;
        let mut s = Shard::new(per * 3);
        let mut ev: Vec<Vec<u8>> = Vec::new();
        for i in 0..10u64 {
            let k = format!("k{i:03}");
            s.register(i, k.as_bytes(), 9, |e| ev.push(e.key().to_vec()));
            assert!(s.bytes() <= s.limit());
            assert_eq!(s.recount(), (s.len(), s.bytes()));
        }
        assert_eq!(ev, (0..7).map(|i| format!("k{i:03}").into_bytes()).collect::<Vec<_>>());
        assert_eq!(s.oldest(), Some(b"k007".as_slice()));
        // A key larger than the whole shard is refused, nothing evicted.
        assert_eq!(s.register(1, &vec![b'x'; per * 3], 9, |_| panic!("evicted")), Registered::TooBig);
    }

    #[test]
    fn dropping_a_sid_keeps_other_subscribers_entries() {
        let mut s = Shard::new(1 << 20);
        for i in 0..100u64 {
            s.register(i, format!("k{i}").as_bytes(), 1, |_| {});
            if i % 2 == 0 {
                s.register(i, format!("k{i}").as_bytes(), 2, |_| {});
            }
            if i % 10 == 0 {
                // Spill past the inline sids.
                for sid in 3..8 {
                    s.register(i, format!("k{i}").as_bytes(), sid, |_| {});
                }
            }
        }
        assert_eq!(s.drop_sid(1), 100);
        assert_eq!(s.len(), 50);
        assert_eq!(s.recount(), (s.len(), s.bytes()));
        assert_eq!(s.drop_sid(5), 10);
        assert_eq!(s.recount(), (s.len(), s.bytes()));
        assert_eq!(s.clear(), 50);
        assert_eq!((s.len(), s.bytes()), (0, 0));
    }
}
