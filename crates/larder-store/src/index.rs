//! The hash index of one shard: 8-byte slots in 64-byte (cache-line) buckets
//! of 8 slots, with two candidate buckets per key (partial-key cuckoo
//! hashing: the second bucket is derived from the first and the tag, so an
//! entry can be moved to its other bucket without reading its key; an insert
//! goes to the emptier bucket, or moves entries aside when both are full; a
//! lookup scans both). A slot holds a
//! 16-bit tag from the key hash, the segment id and offset of the item, and
//! a 4-bit access counter; slot value 0 means empty (segment ids start at 1,
//! so an occupied slot is never 0). Lookups compare tags and only read the
//! item's key in the segment on a tag match.
//!
//! Slot layout (bit 63 = most significant):
//!
//! ```text
//! 63..48 tag   47..28 segment id   27..4 offset in segment   3..0 frequency
//! ```
//!
//! The table does not store full hashes; resizing it re-hashes each key read
//! back from its segment (the shard supplies the hashes), incrementally: the
//! new table takes new entries while the old one is migrated a few buckets
//! per operation.
//!
//! Tables have any number of buckets (positions by multiply-shift, see
//! [`hash::bucket`]), so a full table grows by a quarter rather than
//! doubling: a doubled table sits at half load, and when memory is full the
//! item count no longer grows into it — at -m 256 with 48-byte items a
//! doubled index held 40% of its slots, a quarter of all memory. Growing by
//! a quarter keeps the load between 78% and 97% (9.2 bytes of index per
//! item on average instead of 12), and a table left mostly empty (values
//! grew, so fewer items fit) is shrunk ([`Index::shrunk`]).

use crate::hash;

pub const SLOTS_PER_BUCKET: usize = 8;
pub const SEG_BITS: u32 = 20;
pub const OFF_BITS: u32 = 24;
/// Largest segment id a slot can hold.
pub const MAX_SEG_ID: u32 = (1 << SEG_BITS) - 1;
/// Largest segment size whose offsets fit a slot.
pub const MAX_SEGMENT_SIZE: usize = 1 << OFF_BITS;

/// Where an item lives: segment id (shard-local, >= 1) and byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    pub seg: u32,
    pub off: u32,
}

/// Position of a slot in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    bucket: usize,
    i: usize,
    /// In the table being migrated away from.
    old: bool,
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket([u64; SLOTS_PER_BUCKET]);

fn pack(tag: u16, loc: Loc) -> u64 {
    debug_assert!(loc.seg >= 1 && loc.seg <= MAX_SEG_ID);
    debug_assert!((loc.off as usize) < MAX_SEGMENT_SIZE);
    (tag as u64) << 48 | (loc.seg as u64) << 28 | (loc.off as u64) << 4
}

fn slot_tag(s: u64) -> u16 {
    (s >> 48) as u16
}

fn slot_loc(s: u64) -> Loc {
    Loc { seg: ((s >> 28) & MAX_SEG_ID as u64) as u32, off: ((s >> 4) & (MAX_SEGMENT_SIZE as u64 - 1)) as u32 }
}

/// One table of buckets.
struct Table {
    buckets: Vec<Bucket>,
    used: usize,
}

impl Table {
    /// A table of `nbuckets` buckets (at least one).
    fn new(nbuckets: usize) -> Table {
        assert!(nbuckets >= 1);
        Table { buckets: vec![Bucket::default(); nbuckets], used: 0 }
    }

    pub fn bytes_for(nbuckets: usize) -> usize {
        nbuckets * std::mem::size_of::<Bucket>()
    }

    pub fn nbuckets(&self) -> usize {
        self.buckets.len()
    }

    pub fn bytes(&self) -> usize {
        Self::bytes_for(self.buckets.len())
    }

    pub fn slots(&self) -> usize {
        self.buckets.len() * SLOTS_PER_BUCKET
    }

    pub fn used(&self) -> usize {
        self.used
    }

    fn cand(&self, h: u64) -> [usize; 2] {
        let n = self.buckets.len();
        let a = hash::bucket(h, n);
        [a, hash::alt_bucket(a, hash::tag(h), n)]
    }

    fn free_slot(&self, bucket: usize) -> Option<usize> {
        self.buckets[bucket].0.iter().position(|&s| s == 0)
    }

    /// The slot for hash `h` whose location satisfies `is_key`.
    pub fn find(&self, h: u64, mut is_key: impl FnMut(Loc) -> bool) -> Option<(Pos, Loc)> {
        let tag = hash::tag(h);
        let [a, b] = self.cand(h);
        for (n, &bi) in [a, b].iter().enumerate() {
            if n == 1 && b == a {
                break;
            }
            for (i, &s) in self.buckets[bi].0.iter().enumerate() {
                if s != 0 && slot_tag(s) == tag {
                    let loc = slot_loc(s);
                    if is_key(loc) {
                        return Some((Pos { bucket: bi, i, old: false }, loc));
                    }
                }
            }
        }
        None
    }

    /// Inserts a new entry; `false` if both candidate buckets are full and
    /// no entry can be moved aside. When both are full, a breadth-first
    /// search (two levels: up to 16 + 128 entries) looks for a chain of
    /// entries that can each move to their other bucket, ending at a free
    /// slot; the chain is then shifted and the new entry takes the freed
    /// slot. This keeps inserts succeeding past 95% load.
    pub fn insert(&mut self, h: u64, loc: Loc) -> bool {
        self.insert_raw(h, pack(hash::tag(h), loc))
    }

    /// Inserts an already packed slot (its tag is the tag of `h`).
    fn insert_raw(&mut self, h: u64, new: u64) -> bool {
        let [a, b] = self.cand(h);
        let free = |bk: &Bucket| bk.0.iter().filter(|&&s| s == 0).count();
        let bi = if free(&self.buckets[b]) > free(&self.buckets[a]) { b } else { a };
        if let Some(i) = self.free_slot(bi) {
            self.buckets[bi].0[i] = new;
            self.used += 1;
            return true;
        }
        if self.cuckoo(a, b, new) {
            self.used += 1;
            return true;
        }
        false
    }

    fn cuckoo(&mut self, a: usize, b: usize, new: u64) -> bool {
        #[derive(Clone, Copy, Default)]
        struct Node {
            bucket: usize,
            /// Index of the parent node (usize::MAX for a root).
            parent: usize,
            /// Slot of the parent's bucket whose entry would move here.
            slot: usize,
        }
        const MAX: usize = 2 + 2 * SLOTS_PER_BUCKET + 2 * SLOTS_PER_BUCKET * SLOTS_PER_BUCKET;
        let mut nodes = [Node::default(); MAX];
        nodes[0] = Node { bucket: a, parent: usize::MAX, slot: 0 };
        let mut len = 1;
        if b != a {
            nodes[1] = Node { bucket: b, parent: usize::MAX, slot: 0 };
            len = 2;
        }
        let mut head = 0;
        while head < len {
            let bucket = nodes[head].bucket;
            for i in 0..SLOTS_PER_BUCKET {
                let alt = hash::alt_bucket(bucket, slot_tag(self.buckets[bucket].0[i]), self.buckets.len());
                if alt == bucket {
                    continue;
                }
                if let Some(free) = self.free_slot(alt) {
                    // Shift the chain: each entry moves to its other bucket,
                    // from the free end back to a root, which gets `new`.
                    let (mut dst_b, mut dst_i) = (alt, free);
                    let (mut cur, mut src_i) = (head, i);
                    loop {
                        let nb = nodes[cur].bucket;
                        self.buckets[dst_b].0[dst_i] = self.buckets[nb].0[src_i];
                        (dst_b, dst_i) = (nb, src_i);
                        if nodes[cur].parent == usize::MAX {
                            break;
                        }
                        src_i = nodes[cur].slot;
                        cur = nodes[cur].parent;
                    }
                    self.buckets[dst_b].0[dst_i] = new;
                    return true;
                }
                if len < MAX {
                    nodes[len] = Node { bucket: alt, parent: head, slot: i };
                    len += 1;
                }
            }
            head += 1;
        }
        false
    }

    /// Points an occupied slot at a new location (same key); resets frequency.
    pub fn replace(&mut self, pos: Pos, loc: Loc) {
        let s = &mut self.buckets[pos.bucket].0[pos.i];
        debug_assert!(*s != 0);
        *s = pack(slot_tag(*s), loc);
    }

    pub fn remove(&mut self, pos: Pos) {
        let s = &mut self.buckets[pos.bucket].0[pos.i];
        debug_assert!(*s != 0);
        *s = 0;
        self.used -= 1;
    }

    fn relocate(&mut self, pos: Pos, loc: Loc, freq: u8) {
        let s = &mut self.buckets[pos.bucket].0[pos.i];
        debug_assert!(*s != 0);
        *s = pack(slot_tag(*s), loc) | (freq.min(15) as u64);
    }

    /// Saturating access counter (for a frequency-aware eviction policy).
    pub fn bump(&mut self, pos: Pos) {
        let s = &mut self.buckets[pos.bucket].0[pos.i];
        if *s & 0xf != 0xf {
            *s += 1;
        }
    }

    pub fn freq(&self, pos: Pos) -> u8 {
        (self.buckets[pos.bucket].0[pos.i] & 0xf) as u8
    }

    /// The occupied slots of both candidate buckets of `h` (for displacement).
    pub fn candidates(&self, h: u64) -> impl Iterator<Item = (Pos, Loc)> + '_ {
        let [a, b] = self.cand(h);
        let second = if a == b { None } else { Some(b) };
        std::iter::once(a).chain(second).flat_map(move |bi| {
            self.buckets[bi].0.iter().enumerate().filter(|(_, &s)| s != 0).map(move |(i, &s)| (Pos { bucket: bi, i, old: false }, slot_loc(s)))
        })
    }

}

/// A shard's index: the current table and, while it grows, the previous
/// one, which is migrated into the current one a few buckets per operation
/// (so a resize never stalls the shard for a full re-hash). Every entry is
/// in exactly one of the two; lookups try the current table, then the old.
pub struct Index {
    cur: Table,
    old: Option<Table>,
    /// Next bucket of `old` to migrate.
    cursor: usize,
}

impl Index {
    /// An index of `nbuckets` buckets.
    pub fn new(nbuckets: usize) -> Index {
        Index { cur: Table::new(nbuckets), old: None, cursor: 0 }
    }

    pub fn bytes_for(nbuckets: usize) -> usize {
        nbuckets * std::mem::size_of::<Bucket>()
    }

    /// Buckets of the current table.
    pub fn nbuckets(&self) -> usize {
        self.cur.nbuckets()
    }

    /// Bytes of both tables.
    pub fn bytes(&self) -> usize {
        self.cur.bytes() + self.old.as_ref().map_or(0, Table::bytes)
    }

    pub fn slots(&self) -> usize {
        self.cur.slots() + self.old.as_ref().map_or(0, Table::slots)
    }

    pub fn used(&self) -> usize {
        self.cur.used() + self.old.as_ref().map_or(0, Table::used)
    }

    /// Whether one more entry keeps the current table's load, counting the
    /// entries still to migrate, at or under 31/32. (With cuckoo moves an
    /// insert practically never fails below that; when it does, the shard
    /// grows the table early.)
    pub fn has_room(&self) -> bool {
        (self.used() + 1) * 32 <= self.cur.slots() * 31
    }

    pub fn migrating(&self) -> bool {
        self.old.is_some()
    }

    fn table(&self, pos: Pos) -> &Table {
        if pos.old {
            self.old.as_ref().expect("position in a dropped table")
        } else {
            &self.cur
        }
    }

    fn table_mut(&mut self, pos: Pos) -> &mut Table {
        if pos.old {
            self.old.as_mut().expect("position in a dropped table")
        } else {
            &mut self.cur
        }
    }

    /// The slot for hash `h` whose location satisfies `is_key`.
    pub fn find(&self, h: u64, mut is_key: impl FnMut(Loc) -> bool) -> Option<(Pos, Loc)> {
        if let Some(found) = self.cur.find(h, &mut is_key) {
            return Some(found);
        }
        let (pos, loc) = self.old.as_ref()?.find(h, is_key)?;
        Some((Pos { old: true, ..pos }, loc))
    }

    /// The slot pointing at exactly `loc` (locations are unique).
    pub fn find_loc(&self, h: u64, loc: Loc) -> Option<Pos> {
        self.find(h, |l| l == loc).map(|(p, _)| p)
    }

    /// Inserts a new entry (into the current table); `false` if it is full
    /// around `h` even after cuckoo moves.
    pub fn insert(&mut self, h: u64, loc: Loc) -> bool {
        self.cur.insert(h, loc)
    }

    /// Points an occupied slot at a new location (same key); resets frequency.
    pub fn replace(&mut self, pos: Pos, loc: Loc) {
        self.table_mut(pos).replace(pos, loc)
    }

    pub fn remove(&mut self, pos: Pos) {
        self.table_mut(pos).remove(pos)
    }

    /// Points an occupied slot at a copy of its item (eviction moved it),
    /// with access counter `freq`.
    pub fn relocate(&mut self, pos: Pos, loc: Loc, freq: u8) {
        self.table_mut(pos).relocate(pos, loc, freq)
    }

    /// Saturating access counter (for a frequency-aware eviction policy).
    pub fn bump(&mut self, pos: Pos) {
        self.table_mut(pos).bump(pos)
    }

    pub fn freq(&self, pos: Pos) -> u8 {
        self.table(pos).freq(pos)
    }

    /// The occupied slots of both candidate buckets of `h` in the current
    /// table (for displacement).
    pub fn candidates(&self, h: u64) -> impl Iterator<Item = (Pos, Loc)> + '_ {
        self.cur.candidates(h)
    }

    /// Buckets of the table that replaces a full one of `n` buckets.
    pub fn grown(n: usize) -> usize {
        n + n.div_ceil(4)
    }

    /// Buckets for a table holding `used` entries at about 85% load, if
    /// that is under two thirds of the current table (else `None`: not
    /// worth a migration).
    pub fn shrunk(&self) -> Option<usize> {
        if self.migrating() {
            return None;
        }
        let want = (self.used() * 100).div_ceil(85 * SLOTS_PER_BUCKET).max(1);
        (want * 3 < self.nbuckets() * 2).then_some(want)
    }

    /// Starts resizing to `nbuckets`: a new, empty current table; the
    /// previous one is migrated by [`migrate`](Self::migrate). Not while
    /// migrating.
    pub fn start_resize(&mut self, nbuckets: usize) {
        assert!(self.old.is_none(), "resize during a migration");
        let next = Table::new(nbuckets);
        self.old = Some(std::mem::replace(&mut self.cur, next));
        self.cursor = 0;
    }

    /// Moves the entries of up to `nbuckets` buckets of the old table into
    /// the current one; `rehash` gives the key hash of a location. Once the
    /// old table is empty it is dropped and its byte size returned (to be
    /// released from the memory budget); otherwise 0. An entry that finds
    /// no room (practically impossible: a grown table is at most 78% full, a
    /// shrunk one 85%) stays in the old table, still found by lookups, and
    /// is retried on the next pass.
    pub fn migrate(&mut self, nbuckets: usize, mut rehash: impl FnMut(Loc) -> u64) -> usize {
        let Some(old) = self.old.as_mut() else { return 0 };
        let end = (self.cursor + nbuckets).min(old.nbuckets());
        for b in self.cursor..end {
            for i in 0..SLOTS_PER_BUCKET {
                let s = old.buckets[b].0[i];
                if s != 0 && self.cur.insert_raw(rehash(slot_loc(s)), s) {
                    old.buckets[b].0[i] = 0;
                    old.used -= 1;
                }
            }
        }
        self.cursor = end;
        if end == old.nbuckets() {
            self.cursor = 0;
            if old.used == 0 {
                let bytes = old.bytes();
                self.old = None;
                return bytes;
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_packing_roundtrips_extremes() {
        for &(tag, seg, off) in &[(0u16, 1u32, 0u32), (u16::MAX, MAX_SEG_ID, (MAX_SEGMENT_SIZE - 1) as u32), (0x1234, 77, 12345)] {
            let s = pack(tag, Loc { seg, off });
            assert_ne!(s, 0);
            assert_eq!(slot_tag(s), tag);
            assert_eq!(slot_loc(s), Loc { seg, off });
            assert_eq!(s & 0xf, 0);
        }
    }

    #[test]
    fn insert_find_replace_remove() {
        let mut ix = Index::new(4);
        assert_eq!(std::mem::size_of::<Bucket>(), 64);
        let h = 0xabcd_0000_0000_0001u64;
        assert!(ix.insert(h, Loc { seg: 1, off: 10 }));
        // Same tag, other location: the predicate decides.
        assert!(ix.insert(h, Loc { seg: 2, off: 20 }));
        assert_eq!(ix.used(), 2);
        let (p, l) = ix.find(h, |l| l.seg == 2).unwrap();
        assert_eq!(l, Loc { seg: 2, off: 20 });
        ix.bump(p);
        ix.bump(p);
        assert_eq!(ix.freq(p), 2);
        ix.replace(p, Loc { seg: 3, off: 30 });
        assert_eq!(ix.freq(p), 0);
        assert!(ix.find_loc(h, Loc { seg: 2, off: 20 }).is_none());
        let p = ix.find_loc(h, Loc { seg: 3, off: 30 }).unwrap();
        ix.remove(p);
        assert_eq!(ix.used(), 1);
        // A different tag never matches.
        assert!(ix.find(h ^ (1 << 60), |_| true).is_none());
        assert_eq!(ix.used(), 1);
    }

    #[test]
    fn fills_both_buckets_then_refuses() {
        let mut ix = Index::new(1);
        for i in 0..8 {
            assert!(ix.insert(i, Loc { seg: 1, off: i as u32 }));
        }
        assert!(!ix.insert(99, Loc { seg: 1, off: 99 }));
        assert!(!ix.has_room());
        assert_eq!(ix.candidates(5).count(), 8);
    }

    #[test]
    fn saturating_frequency() {
        let mut ix = Index::new(2);
        ix.insert(7, Loc { seg: 1, off: 1 });
        let (p, _) = ix.find(7, |_| true).unwrap();
        for _ in 0..40 {
            ix.bump(p);
        }
        assert_eq!(ix.freq(p), 15);
        assert_eq!(ix.find(7, |_| true).unwrap().1, Loc { seg: 1, off: 1 });
    }

    #[test]
    fn relocate_keeps_the_tag_and_sets_the_counter() {
        let mut ix = Index::new(2);
        let h = 0x1234_0000_0000_0007u64;
        ix.insert(h, Loc { seg: 1, off: 1 });
        let (p, _) = ix.find(h, |_| true).unwrap();
        ix.bump(p);
        ix.relocate(p, Loc { seg: 5, off: 64 }, 3);
        let (p, l) = ix.find(h, |_| true).unwrap();
        assert_eq!((l, ix.freq(p)), (Loc { seg: 5, off: 64 }, 3));
        assert_eq!(ix.used(), 1);
    }
}

#[cfg(test)]
mod load_tests {
    use super::*;

    /// With cuckoo moves, 8-slot buckets fill past 95% before the first
    /// insert fails (so growth is driven by the 31/32 load factor).
    #[test]
    fn first_overflow_happens_late() {
        let h = crate::hash::KeyHasher::new();
        for &nb in &[1usize << 8, 1 << 14] {
            let mut ix = Index::new(nb);
            let mut i = 0u64;
            while ix.insert(h.hash(&i.to_le_bytes()), Loc { seg: 1, off: 0 }) {
                i += 1;
            }
            let load = ix.used() as f64 / ix.slots() as f64;
            eprintln!("{nb} buckets: first overflow at load {load:.3}");
            assert!(load > 0.95, "{load}");
        }
    }

    /// Entries moved by cuckoo chains stay findable, with their locations.
    #[test]
    fn moved_entries_stay_findable() {
        let h = crate::hash::KeyHasher::new();
        let mut ix = Index::new(64);
        let mut inserted = Vec::new();
        for i in 0..(64 * 8 * 98 / 100) as u32 {
            let x = h.hash(&i.to_le_bytes());
            let loc = Loc { seg: 1 + i % 1000, off: i };
            assert!(ix.insert(x, loc), "insert {i}");
            inserted.push((x, loc));
        }
        assert_eq!(ix.used(), inserted.len());
        for &(x, loc) in &inserted {
            let p = ix.find_loc(x, loc).expect("entry lost by a move");
            assert_eq!(ix.find(x, |l| l == loc).unwrap().0, p);
        }
        // Removing half keeps the rest intact.
        for &(x, loc) in inserted.iter().step_by(2) {
            let p = ix.find_loc(x, loc).unwrap();
            ix.remove(p);
        }
        for &(x, loc) in inserted.iter().skip(1).step_by(2) {
            assert!(ix.find_loc(x, loc).is_some());
        }
    }

    /// Growth migrates entries a few buckets at a time; meanwhile every
    /// entry stays findable, removable and replaceable, new entries land in
    /// the new table, and the old table's bytes come back at the end.
    #[test]
    fn incremental_growth_keeps_every_entry() {
        let hasher = crate::hash::KeyHasher::new();
        let hash_of = |loc: Loc| hasher.hash(&loc.off.to_le_bytes());
        let mut ix = Index::new(16);
        let mut live: Vec<Loc> = Vec::new();
        let mut next = 0u32;
        let mut add = |ix: &mut Index, live: &mut Vec<Loc>| {
            let loc = Loc { seg: 1, off: next };
            next += 1;
            assert!(ix.insert(hash_of(loc), loc));
            live.push(loc);
        };
        while ix.has_room() {
            add(&mut ix, &mut live);
        }
        let before = ix.bytes();
        ix.start_resize(Index::grown(ix.nbuckets()));
        assert!(ix.migrating());
        assert_eq!(ix.bytes(), before + Index::bytes_for(Index::grown(16)));
        let mut freed = 0;
        let mut round = 0;
        while ix.migrating() {
            freed += ix.migrate(1, hash_of);
            // Interleave: add (every other round: the new table is only a
            // quarter bigger), remove, replace, look everything up.
            if round % 2 == 0 {
                add(&mut ix, &mut live);
            }
            if round % 3 == 0 {
                let gone = live.remove(round % live.len());
                let p = ix.find_loc(hash_of(gone), gone).unwrap();
                ix.remove(p);
            }
            if round % 5 == 0 {
                let i = round % live.len();
                let old = live[i];
                let p = ix.find_loc(hash_of(old), old).unwrap();
                // Same key hash, new location: encode it in the segment id.
                let new = Loc { seg: 2, off: old.off };
                ix.replace(p, new);
                live[i] = new;
            }
            assert_eq!(ix.used(), live.len());
            for &l in &live {
                assert!(ix.find(hash_of(Loc { seg: 1, off: l.off }), |x| x == l).is_some(), "lost {l:?} in round {round}");
            }
            round += 1;
        }
        assert_eq!(freed, before);
        assert_eq!(ix.nbuckets(), 20, "a quarter more");
        assert_eq!(ix.bytes(), Index::bytes_for(20));
        assert_eq!(ix.migrate(8, hash_of), 0);
    }
}
