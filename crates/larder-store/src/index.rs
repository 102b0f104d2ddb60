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
//! The table does not store full hashes; growing it (done by the shard, which
//! owns the segments) re-hashes each key read back from its segment.

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

pub struct Index {
    buckets: Vec<Bucket>,
    mask: usize,
    used: usize,
}

impl Index {
    /// A table of `nbuckets` buckets (a power of two).
    pub fn new(nbuckets: usize) -> Index {
        assert!(nbuckets.is_power_of_two());
        Index { buckets: vec![Bucket::default(); nbuckets], mask: nbuckets - 1, used: 0 }
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

    /// Whether one more entry keeps the load at or under 31/32. (With cuckoo
    /// moves an insert practically never fails below that; when it does,
    /// the shard grows the table early.)
    pub fn has_room(&self) -> bool {
        (self.used + 1) * 32 <= self.slots() * 31
    }

    fn cand(&self, h: u64) -> [usize; 2] {
        let a = hash::bucket(h, self.mask);
        [a, hash::alt_bucket(a, hash::tag(h), self.mask)]
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
                        return Some((Pos { bucket: bi, i }, loc));
                    }
                }
            }
        }
        None
    }

    /// The slot pointing at exactly `loc` (locations are unique).
    pub fn find_loc(&self, h: u64, loc: Loc) -> Option<Pos> {
        self.find(h, |l| l == loc).map(|(p, _)| p)
    }

    /// Inserts a new entry; `false` if both candidate buckets are full and
    /// no entry can be moved aside. When both are full, a breadth-first
    /// search (two levels: up to 16 + 128 entries) looks for a chain of
    /// entries that can each move to their other bucket, ending at a free
    /// slot; the chain is then shifted and the new entry takes the freed
    /// slot. This keeps inserts succeeding past 95% load.
    pub fn insert(&mut self, h: u64, loc: Loc) -> bool {
        let new = pack(hash::tag(h), loc);
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
                let alt = hash::alt_bucket(bucket, slot_tag(self.buckets[bucket].0[i]), self.mask);
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

    /// Saturating access counter (for a frequency-aware eviction policy).
    pub fn bump(&mut self, pos: Pos) {
        let s = &mut self.buckets[pos.bucket].0[pos.i];
        if *s & 0xf != 0xf {
            *s += 1;
        }
    }

    #[cfg_attr(not(test), allow(dead_code))]
    pub fn freq(&self, pos: Pos) -> u8 {
        (self.buckets[pos.bucket].0[pos.i] & 0xf) as u8
    }

    /// The occupied slots of both candidate buckets of `h` (for displacement).
    pub fn candidates(&self, h: u64) -> impl Iterator<Item = (Pos, Loc)> + '_ {
        let [a, b] = self.cand(h);
        let second = if a == b { None } else { Some(b) };
        std::iter::once(a).chain(second).flat_map(move |bi| {
            self.buckets[bi].0.iter().enumerate().filter(|(_, &s)| s != 0).map(move |(i, &s)| (Pos { bucket: bi, i }, slot_loc(s)))
        })
    }

    /// Every occupied location (for re-hashing into a bigger table).
    pub fn locations(&self) -> impl Iterator<Item = Loc> + '_ {
        self.buckets.iter().flat_map(|b| b.0.iter()).filter(|&&s| s != 0).map(|&s| slot_loc(s))
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
        assert_eq!(ix.locations().count(), 1);
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
}
