//! larder's eviction at segment granularity: the current segment FIFO and
//! candidates for a frequency-aware replacement, modelled as the store
//! would run them.
//!
//! # The model
//!
//! Capacity is `segments × seg_items` item slots. Items are appended in
//! write order to an *open* segment; a full one is closed and a new one
//! opened. The index maps a key to (segment, slot) plus the store's 4-bit
//! saturating access counter, bumped on every hit. When every segment is in
//! use and a new one is needed, one segment is *evicted*: its live items
//! are walked and each either dies or **survives by being copied** (re-
//! appended) to a destination queue's open segment, its index entry pointed
//! at the copy. Copies take slots like any write — a survivor costs
//! capacity — and when the destination's open segment is full, the rest of
//! the survivors are compacted in place at the front of the victim itself,
//! which then becomes the destination's open segment (a fresh generation in
//! the store). So eviction never needs a spare segment, and a segment is
//! freed once its survivors fit in the room left by earlier ones — exactly
//! what the store can do under one shard lock.
//!
//! When nearly everything survives (a hot working set that fits), freeing
//! one segment can take many evictions. The store bounds the work of one
//! allocation, so the model does too: after [`MAX_COPYING_EVICTIONS`]
//! evictions for the same allocation, the next victims die whole. (Unbounded
//! chains would be 0.001 better on orm-busy ÷4, tighter bounds cost more:
//! 0.005 at 4, 0.013 at 2.)
//!
//! # Policies ([`SegKind`])
//!
//! - **Fifo** — today's store: the oldest segment dies whole.
//! - **Clock** — one queue; survivors are live items with counter > 0,
//!   re-appended with the counter decremented (a CLOCK second chance at
//!   segment granularity).
//! - **S3** — segment-level S3-FIFO. Two queues of segments: *small* (new
//!   writes, ~10% of the segments) and *main*. Evicting a small segment
//!   promotes items hit at least `promote` times to main (counter reset) and
//!   records the rest in a bounded ghost ([`HashGhost`]: 4-byte
//!   fingerprints, direct-mapped); evicting a main segment re-appends items
//!   with counter > 0 to main, counter decremented. A miss on a key the
//!   ghost remembers writes it straight to main.
//! - **Merge** — Segcache-style merge eviction: the `n` oldest segments are
//!   merged into one; the most frequently hit live items (counter ≥ 1, most
//!   frequent first, at most one segment's worth) survive with their
//!   counters halved, the merged segment goes to the tail, `n − 1` segments
//!   are freed.
//!
//! Not modelled: sharding (the store splits segments over shards and
//! approximates a global order across them), expiry, item sizes (every
//! item takes one slot: equal counts, as the comparison with the item-based
//! policies requires).

use crate::ghost::{Ghost, HashGhost};
use crate::util::FastMap;
use crate::Policy;
use std::collections::VecDeque;

const SMALL: usize = 0;
const MAIN: usize = 1;
const FREQ_MAX: u8 = 15;
/// Evictions with survivors per allocation; further ones copy nothing.
pub const MAX_COPYING_EVICTIONS: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegKind {
    Fifo,
    Clock,
    S3 { promote: u8 },
    Merge { n: usize },
}

#[derive(Clone, Copy)]
struct Slot {
    seg: u32,
    pos: u32,
    freq: u8,
}

pub struct SegCache {
    kind: SegKind,
    seg_items: usize,
    max_segs: usize,
    small_target: usize,
    segs: Vec<Vec<u32>>,
    free_ids: Vec<u32>,
    used: usize,
    queues: [VecDeque<u32>; 2],
    open: [Option<u32>; 2],
    index: FastMap<u32, Slot>,
    ghost: HashGhost,
    use_ghost: bool,
    /// Items copied by eviction (survivors), for the cost column.
    pub copies: u64,
    /// Segments evicted (or merged).
    pub evictions: u64,
}

impl SegCache {
    /// `capacity` items in segments of `seg_items` (at least 2 segments).
    pub fn new(kind: SegKind, capacity: usize, seg_items: usize) -> SegCache {
        let seg_items = seg_items.max(1);
        let max_segs = (capacity / seg_items).max(2);
        SegCache {
            kind,
            seg_items,
            max_segs,
            small_target: ((max_segs + 5) / 10).max(1),
            segs: Vec::new(),
            free_ids: Vec::new(),
            used: 0,
            queues: [VecDeque::new(), VecDeque::new()],
            open: [None, None],
            index: FastMap::default(),
            ghost: HashGhost::new(max_segs * seg_items * 9 / 10),
            use_ghost: true,
            copies: 0,
            evictions: 0,
        }
    }

    /// Segment S3-FIFO without the ghost: every miss writes to small.
    pub fn without_ghost(mut self) -> SegCache {
        self.use_ghost = false;
        self
    }

    pub fn capacity(&self) -> usize {
        self.max_segs * self.seg_items
    }

    fn is_live(&self, key: u32, seg: u32, pos: usize) -> bool {
        matches!(self.index.get(&key), Some(s) if s.seg == seg && s.pos as usize == pos)
    }

    /// Appends to `q`'s open segment, evicting as needed.
    fn append(&mut self, q: usize, key: u32, freq: u8) {
        let mut evictions_here = 0usize;
        loop {
            if let Some(id) = self.open[q] {
                let seg = &mut self.segs[id as usize];
                if seg.len() < self.seg_items {
                    seg.push(key);
                    let pos = (seg.len() - 1) as u32;
                    self.index.insert(key, Slot { seg: id, pos, freq });
                    return;
                }
            }
            if self.used < self.max_segs {
                let id = self.new_segment();
                self.queues[q].push_back(id);
                self.open[q] = Some(id);
                continue;
            }
            evictions_here += 1;
            self.evict_one(evictions_here - 1);
        }
    }

    fn new_segment(&mut self) -> u32 {
        self.used += 1;
        match self.free_ids.pop() {
            Some(id) => id,
            None => {
                self.segs.push(Vec::with_capacity(self.seg_items));
                (self.segs.len() - 1) as u32
            }
        }
    }

    fn free_segment(&mut self, id: u32) {
        self.segs[id as usize].clear();
        self.free_ids.push(id);
        self.used -= 1;
    }

    /// Oldest segment of `q` other than its open one.
    fn oldest_closed(&self, q: usize) -> Option<u32> {
        self.queues[q].iter().copied().find(|&id| Some(id) != self.open[q])
    }

    fn remove_from_queue(&mut self, q: usize, id: u32) {
        let i = self.queues[q].iter().position(|&x| x == id).unwrap();
        self.queues[q].remove(i);
        if self.open[q] == Some(id) {
            self.open[q] = None;
        }
    }

    fn victim_queue(&self) -> usize {
        match self.kind {
            SegKind::S3 { .. } => {
                let small_closed = self.oldest_closed(SMALL).is_some();
                let main_closed = self.oldest_closed(MAIN).is_some();
                if small_closed && (self.queues[SMALL].len() >= self.small_target || !main_closed) {
                    SMALL
                } else if main_closed {
                    MAIN
                } else if !self.queues[SMALL].is_empty() {
                    SMALL
                } else {
                    MAIN
                }
            }
            _ => SMALL,
        }
    }

    /// Evicts one segment; `earlier`: evictions already done for the
    /// allocation at hand (past [`MAX_COPYING_EVICTIONS`], plainly).
    fn evict_one(&mut self, earlier: usize) {
        let plain = earlier >= MAX_COPYING_EVICTIONS;
        self.evictions += 1;
        if let (SegKind::Merge { n }, false) = (self.kind, plain) {
            return self.merge(n);
        }
        let vq = self.victim_queue();
        let victim = self.oldest_closed(vq).or_else(|| self.queues[vq].front().copied()).expect("a segment to evict");
        self.remove_from_queue(vq, victim);
        let keys = std::mem::take(&mut self.segs[victim as usize]);
        let mut survivors = Vec::new();
        let dest = match self.kind {
            SegKind::S3 { .. } => MAIN,
            _ => SMALL,
        };
        for (pos, &key) in keys.iter().enumerate() {
            if !self.is_live(key, victim, pos) {
                continue;
            }
            let f = self.index[&key].freq;
            let keep = match (self.kind, vq) {
                _ if plain => None,
                (SegKind::Fifo, _) | (SegKind::Merge { .. }, _) => None,
                (SegKind::Clock, _) => (f > 0).then(|| f - 1),
                (SegKind::S3 { promote }, SMALL) => (f >= promote).then_some(0),
                (SegKind::S3 { .. }, _) => (f > 0).then(|| f - 1),
            };
            match keep {
                Some(nf) => survivors.push((key, nf)),
                None => {
                    self.index.remove(&key);
                    if matches!(self.kind, SegKind::S3 { .. }) && vq == SMALL {
                        self.ghost.insert(key);
                    }
                }
            }
        }
        self.segs[victim as usize] = keys;
        self.place_survivors(victim, dest, survivors, true);
    }

    /// Copies `survivors` into `dest`'s open segment; what does not fit is
    /// compacted into `victim`, which becomes `dest`'s open segment
    /// (`as_open`) or a closed segment at `dest`'s tail. A victim left
    /// empty is freed.
    fn place_survivors(&mut self, victim: u32, dest: usize, survivors: Vec<(u32, u8)>, as_open: bool) {
        self.copies += survivors.len() as u64;
        let mut rest = survivors.into_iter().peekable();
        if let Some(id) = self.open[dest] {
            while self.segs[id as usize].len() < self.seg_items {
                let Some((key, f)) = rest.next() else { break };
                let seg = &mut self.segs[id as usize];
                seg.push(key);
                self.index.insert(key, Slot { seg: id, pos: (seg.len() - 1) as u32, freq: f });
            }
        }
        self.segs[victim as usize].clear();
        if rest.peek().is_none() {
            self.free_segment(victim);
            return;
        }
        for (key, f) in rest {
            let seg = &mut self.segs[victim as usize];
            seg.push(key);
            self.index.insert(key, Slot { seg: victim, pos: (seg.len() - 1) as u32, freq: f });
        }
        self.queues[dest].push_back(victim);
        if as_open {
            self.open[dest] = Some(victim);
        }
    }

    /// Segcache-style: merge up to `n` oldest closed segments into one.
    fn merge(&mut self, n: usize) {
        let mut victims = Vec::new();
        while victims.len() < n {
            match self.oldest_closed(SMALL) {
                Some(id) => {
                    self.remove_from_queue(SMALL, id);
                    victims.push(id);
                }
                None => break,
            }
        }
        if victims.is_empty() {
            let id = self.queues[SMALL].front().copied().expect("a segment to evict");
            self.remove_from_queue(SMALL, id);
            victims.push(id);
        }
        let mut live = Vec::new();
        for &v in &victims {
            for (pos, &key) in self.segs[v as usize].iter().enumerate() {
                if self.is_live(key, v, pos) {
                    live.push((key, self.index[&key].freq));
                }
            }
        }
        // Most frequent first; stable, so older items first among equals.
        live.sort_by_key(|&(_, f)| std::cmp::Reverse(f));
        let budget = if victims.len() >= 2 { self.seg_items } else { 0 };
        let mut survivors = Vec::new();
        for (i, &(key, f)) in live.iter().enumerate() {
            if i < budget && f >= 1 {
                survivors.push((key, f / 2));
            } else {
                self.index.remove(&key);
            }
        }
        let first = victims[0];
        for &v in &victims[1..] {
            self.free_segment(v);
        }
        // The merged segment is written fresh (nothing goes to the open
        // segment) and closed at the tail.
        self.copies += survivors.len() as u64;
        self.segs[first as usize].clear();
        if survivors.is_empty() {
            self.free_segment(first);
            return;
        }
        for (key, f) in survivors {
            let seg = &mut self.segs[first as usize];
            seg.push(key);
            self.index.insert(key, Slot { seg: first, pos: (seg.len() - 1) as u32, freq: f });
        }
        self.queues[SMALL].push_back(first);
    }
}

impl Policy for SegCache {
    fn name(&self) -> String {
        match self.kind {
            SegKind::Fifo => "seg-FIFO".into(),
            SegKind::Clock => "seg-CLOCK".into(),
            SegKind::S3 { promote: 1 } if !self.use_ghost => "seg-S3-FIFO(no ghost)".into(),
            SegKind::S3 { promote: 1 } => "seg-S3-FIFO".into(),
            SegKind::S3 { promote } => format!("seg-S3-FIFO(t={promote})"),
            SegKind::Merge { n } => format!("seg-merge({n})"),
        }
    }

    fn access(&mut self, key: u32) -> bool {
        if let Some(s) = self.index.get_mut(&key) {
            s.freq = (s.freq + 1).min(FREQ_MAX);
            return true;
        }
        let q = match self.kind {
            SegKind::S3 { .. } if self.use_ghost && self.ghost.take(key) => MAIN,
            _ => SMALL,
        };
        self.append(q, key, 0);
        false
    }

    fn contains(&self, key: u32) -> bool {
        self.index.contains_key(&key)
    }

    fn len(&self) -> usize {
        self.index.len()
    }

    fn copies(&self) -> u64 {
        self.copies
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hits;

    #[test]
    fn seg_fifo_drops_the_oldest_segment_whole() {
        // 3 segments of 2 items.
        let mut p = SegCache::new(SegKind::Fifo, 6, 2);
        assert_eq!(hits(&mut p, &[1, 2, 3, 4, 5, 6, 1]), "......H");
        // 7 needs a fourth segment: [1 2] dies whole, hot or not.
        p.access(7);
        assert!(!p.contains(1) && !p.contains(2) && p.contains(3));
        assert_eq!((p.len(), p.copies), (5, 0));
    }

    #[test]
    fn seg_clock_copies_hit_items_and_pays_for_it() {
        let mut p = SegCache::new(SegKind::Clock, 6, 2);
        for k in [1, 2, 3, 4, 5, 6, 1] {
            p.access(k);
        }
        // Evicting [1 2]: 1 survives (counter 1 -> 0), copied into the
        // victim itself (the open segment [5 6] is full), which becomes open.
        p.access(7);
        assert!(p.contains(1) && !p.contains(2));
        assert_eq!(p.copies, 1);
        assert_eq!(p.index[&1].freq, 0);
        // [1 7] is now the open (and newest) segment; 8 evicts [3 4].
        p.access(8);
        assert!(p.contains(1) && !p.contains(3) && !p.contains(4));
        assert_eq!(p.len(), 5);
    }

    #[test]
    fn seg_s3_filters_one_hit_wonders_and_keeps_hot_items() {
        // 10 segments of 10 items: small target 1 segment.
        let mut p = SegCache::new(SegKind::S3 { promote: 1 }, 100, 10);
        for k in 0..20 {
            p.access(k);
            p.access(k);
        }
        for k in 1000..3000 {
            p.access(k);
            if k % 10 == 0 {
                // keep the hot set hit
                for h in 0..20 {
                    assert!(p.access(h), "hot key {h} lost at scan key {k}");
                }
            }
        }
        assert!(p.queues[MAIN].len() <= 4, "main holds the hot set, not the scan");
    }

    #[test]
    fn seg_s3_ghost_sends_returning_keys_to_main() {
        let mut p = SegCache::new(SegKind::S3 { promote: 1 }, 40, 10);
        for k in 0..50 {
            p.access(k);
        }
        assert!(!p.contains(0), "0 died in small (never hit)");
        p.access(0);
        assert!(p.queues[MAIN].contains(&p.index[&0].seg));
    }

    #[test]
    fn seg_merge_keeps_the_most_frequent() {
        // 4 segments of 4; merge 3 -> 1.
        let mut p = SegCache::new(SegKind::Merge { n: 3 }, 16, 4);
        for k in 0..16 {
            p.access(k);
        }
        for k in [0, 0, 5, 9, 9, 9] {
            p.access(k);
        }
        p.access(100);
        // Segments [0..4) [4..8) [8..12) merged: survivors 9, 0, 5.
        for k in [0, 5, 9, 12, 100] {
            assert!(p.contains(k), "{k}");
        }
        assert_eq!(p.len(), 3 + 4 + 1);
        assert_eq!(p.index[&9].freq, 1);
    }

    #[test]
    fn every_policy_stays_within_capacity() {
        let mut rng = crate::util::Rng::new(3);
        for kind in [SegKind::Fifo, SegKind::Clock, SegKind::S3 { promote: 1 }, SegKind::Merge { n: 4 }] {
            let mut p = SegCache::new(kind, 100, 7);
            for _ in 0..20_000 {
                let k = (rng.next_u64() % 300) as u32;
                p.access(k);
                let slots: usize = p.segs.iter().map(|s| s.len()).sum();
                assert!(slots <= p.capacity() && p.used <= p.max_segs);
                assert!(p.len() <= slots);
            }
        }
    }
}
