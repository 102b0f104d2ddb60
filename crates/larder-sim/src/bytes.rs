//! Item-level policies at a capacity in **bytes** (issue 16): with variable
//! value sizes, what matters is hits per byte, and a policy that counts
//! items cannot be compared with a server at a fixed `-m`.
//!
//! Every item costs its key (16 bytes, as larder-bench's keys) plus its
//! value; no headers, no index, no fragmentation — an idealised memory, so
//! these are upper bounds for what each *policy* can do, not for a server.
//! The real store (`store::replay_sized`) runs at the same capacity and pays
//! its real overheads.
//!
//! - [`ByteLru`]: LRU; evicts from the tail until the new item fits.
//! - [`ByteS3Fifo`]: S3-FIFO (Yang et al., SOSP 2023) with the small queue
//!   at 10% of the bytes, main 90%, a 2-bit frequency, and an exact ghost
//!   of as many keys as main holds; size-blind.
//! - `S3-FIFO+rent`: the same with larder's size-aware rule (issue 16,
//!   `rent` in larder-store's shard.rs): a pass through a queue costs
//!   size ÷ (mean size written) hits, rounded at random in proportion,
//!   floored at 1/4; leaving small needs `max(1, rent)` hits; counters up to
//!   15, banked up to three passes' worth. The store's policy at item
//!   granularity, without its segments and overheads.
//! - [`Gdsf`]: Greedy-Dual-Size-Frequency (Cherkasova 1998): priority
//!   `L + frequency / size`; evict the lowest, and `L` rises to the evicted
//!   priority (aging). The classic size-aware baseline: it keeps small,
//!   frequently hit items, but has no scan filter (every miss is admitted).
//! - [`ByteTinyLfu`]: W-TinyLFU (Caffeine) by bytes: 1% window LRU, main
//!   SLRU (20% probation, 80% protected), count-min sketch; a candidate
//!   leaving the window is admitted if its estimated frequency beats that of
//!   the probation victim(s) it would displace, compared one victim at a
//!   time as Caffeine's weighted eviction does.
//!
//! Items larger than the whole capacity are never admitted.

use crate::ghost::{ExactGhost, Ghost};
use crate::list::Lists;
use crate::sketch::Sketch;
use crate::util::FastMap;
use std::collections::BTreeSet;

/// Key bytes charged per item (larder-bench's keys are 16 bytes).
pub const KEY_BYTES: u64 = 16;

/// A policy at a byte capacity.
pub trait BytePolicy {
    fn name(&self) -> String;
    /// One look-aside request for `key` whose item costs `size` bytes:
    /// whether it hit; on a miss the item is offered for insertion.
    fn access(&mut self, key: u32, size: u64) -> bool;
    /// Bytes held (never above the capacity).
    fn used(&self) -> u64;
}

/// The policies compared, at `cap` bytes.
pub fn policies(cap: u64) -> Vec<Box<dyn BytePolicy>> {
    vec![
        Box::new(ByteLru::new(cap)),
        Box::new(ByteS3Fifo::new(cap)),
        Box::new(ByteS3Fifo::sized(cap)),
        Box::new(ByteTinyLfu::new(cap)),
        Box::new(Gdsf::new(cap)),
    ]
}

pub struct ByteLru {
    cap: u64,
    used: u64,
    lists: Lists,
    map: FastMap<u32, (u32, u64)>,
}

impl ByteLru {
    pub fn new(cap: u64) -> ByteLru {
        ByteLru { cap, used: 0, lists: Lists::new(1), map: FastMap::default() }
    }
}

impl BytePolicy for ByteLru {
    fn name(&self) -> String {
        "LRU".into()
    }

    fn access(&mut self, key: u32, size: u64) -> bool {
        if let Some(&(h, _)) = self.map.get(&key) {
            self.lists.move_to_front(h, 0);
            return true;
        }
        if size > self.cap {
            return false;
        }
        while self.used + size > self.cap {
            let h = self.lists.back(0).expect("bytes held");
            let k = self.lists.remove(h);
            self.used -= self.map.remove(&k).expect("indexed").1;
        }
        let h = self.lists.push_front(0, key, 0);
        self.map.insert(key, (h, size));
        self.used += size;
        false
    }

    fn used(&self) -> u64 {
        self.used
    }
}

const SMALL: usize = 0;
const MAIN: usize = 1;

pub struct ByteS3Fifo {
    cap: u64,
    small_cap: u64,
    used: [u64; 2],
    lists: Lists,
    map: FastMap<u32, (u32, u64)>,
    ghost: ExactGhost,
    /// Size-aware (`S3-FIFO+rent`): moving mean of inserted sizes (0 = off).
    mean: f64,
    rng: crate::util::Rng,
}

impl ByteS3Fifo {
    pub fn new(cap: u64) -> ByteS3Fifo {
        // The ghost remembers as many keys as main holds; bounded by an
        // entry count, so size it from a typical item (the capacity / 100
        // lower bound keeps tiny capacities sane) and let it be generous.
        ByteS3Fifo {
            cap,
            small_cap: cap / 10,
            used: [0; 2],
            lists: Lists::new(2),
            map: FastMap::default(),
            ghost: ExactGhost::new(100_000),
            mean: 0.0,
            rng: crate::util::Rng::new(16),
        }
    }

    /// `S3-FIFO+rent` (see the module docs).
    pub fn sized(cap: u64) -> ByteS3Fifo {
        ByteS3Fifo { mean: 1.0, ..ByteS3Fifo::new(cap) }
    }

    /// Hits one pass costs an item of `size` (1 when size-blind).
    fn rent(&mut self, size: u64) -> u8 {
        if self.mean == 0.0 {
            return 1;
        }
        let x = (size as f64).max(self.mean / 4.0) / self.mean;
        let r = x.floor() + (self.rng.next_f64() < x.fract()) as u8 as f64;
        r.min(15.0) as u8
    }

    fn evict(&mut self) {
        loop {
            let from = if self.used[SMALL] > self.small_cap || self.lists.len(MAIN) == 0 { SMALL } else { MAIN };
            let h = self.lists.back(from).expect("bytes held");
            let f = self.lists.meta(h);
            let k = self.lists.key(h);
            let size = self.map[&k].1;
            self.lists.remove(h);
            self.used[from] -= size;
            let r = self.rent(size);
            if from == SMALL && f >= r.max(1) {
                let nh = self.lists.push_front(MAIN, k, 0);
                self.map.insert(k, (nh, size));
                self.used[MAIN] += size;
            } else if from == MAIN && f >= r.max(1) {
                let banked = f.min(3 * r.max(1));
                let nh = self.lists.push_front(MAIN, k, banked - r.min(banked));
                self.map.insert(k, (nh, size));
                self.used[MAIN] += size;
            } else {
                self.map.remove(&k);
                if from == SMALL {
                    self.ghost.insert(k);
                }
                return;
            }
        }
    }
}

impl BytePolicy for ByteS3Fifo {
    fn name(&self) -> String {
        if self.mean == 0.0 { "S3-FIFO" } else { "S3-FIFO+rent" }.into()
    }

    fn access(&mut self, key: u32, size: u64) -> bool {
        if let Some(&(h, _)) = self.map.get(&key) {
            let f = self.lists.meta(h);
            self.lists.set_meta(h, (f + 1).min(if self.mean == 0.0 { 3 } else { 15 }));
            return true;
        }
        if size > self.cap {
            return false;
        }
        if self.mean != 0.0 {
            self.mean = if self.mean == 1.0 { size as f64 } else { self.mean + (size as f64 - self.mean) / 64.0 };
        }
        while self.used[SMALL] + self.used[MAIN] + size > self.cap {
            self.evict();
        }
        let q = if self.ghost.take(key) { MAIN } else { SMALL };
        let h = self.lists.push_front(q, key, 0);
        self.map.insert(key, (h, size));
        self.used[q] += size;
        false
    }

    fn used(&self) -> u64 {
        self.used[SMALL] + self.used[MAIN]
    }
}

/// Priorities as fixed point so they order exactly (f64 bits of a
/// non-negative number order like the number).
fn prio_bits(p: f64) -> u64 {
    p.to_bits()
}

pub struct Gdsf {
    cap: u64,
    used: u64,
    /// The inflation value L.
    age: f64,
    /// (priority bits, sequence, key), lowest first.
    heap: BTreeSet<(u64, u64, u32)>,
    /// key → (priority bits, sequence, frequency, size)
    map: FastMap<u32, (u64, u64, u32, u64)>,
    seq: u64,
}

impl Gdsf {
    pub fn new(cap: u64) -> Gdsf {
        Gdsf { cap, used: 0, age: 0.0, heap: BTreeSet::new(), map: FastMap::default(), seq: 0 }
    }

    fn prio(&self, freq: u32, size: u64) -> f64 {
        // Scaled so that frequency / size stays well above f64 resolution.
        self.age + freq as f64 * 1e6 / size as f64
    }
}

impl BytePolicy for Gdsf {
    fn name(&self) -> String {
        "GDSF".into()
    }

    fn access(&mut self, key: u32, size: u64) -> bool {
        self.seq += 1;
        if let Some(&(p, s, f, sz)) = self.map.get(&key) {
            self.heap.remove(&(p, s, key));
            let np = prio_bits(self.prio(f + 1, sz));
            self.heap.insert((np, self.seq, key));
            self.map.insert(key, (np, self.seq, f + 1, sz));
            return true;
        }
        if size > self.cap {
            return false;
        }
        while self.used + size > self.cap {
            let (p, s, k) = *self.heap.iter().next().expect("bytes held");
            self.heap.remove(&(p, s, k));
            self.used -= self.map.remove(&k).expect("indexed").3;
            self.age = f64::from_bits(p);
        }
        let p = prio_bits(self.prio(1, size));
        self.heap.insert((p, self.seq, key));
        self.map.insert(key, (p, self.seq, 1, size));
        self.used += size;
        false
    }

    fn used(&self) -> u64 {
        self.used
    }
}

const WINDOW: usize = 0;
const PROBATION: usize = 1;
const PROTECTED: usize = 2;

pub struct ByteTinyLfu {
    cap: u64,
    window_cap: u64,
    protected_cap: u64,
    used: [u64; 3],
    lists: Lists,
    map: FastMap<u32, (u32, u64)>,
    sketch: Sketch,
}

impl ByteTinyLfu {
    pub fn new(cap: u64) -> ByteTinyLfu {
        let main = cap - cap / 100;
        ByteTinyLfu {
            cap,
            window_cap: cap / 100,
            protected_cap: main * 8 / 10,
            used: [0; 3],
            lists: Lists::new(3),
            map: FastMap::default(),
            // Sized for the items the capacity holds at ~300 bytes each.
            sketch: Sketch::new((cap / 300).max(64) as usize),
        }
    }

    fn size_of(&self, k: u32) -> u64 {
        self.map[&k].1
    }

    fn move_to(&mut self, h: u32, to: usize) -> u32 {
        let k = self.lists.key(h);
        let size = self.size_of(k);
        let from = self.lists.list_of(h);
        self.lists.remove(h);
        self.used[from] -= size;
        let nh = self.lists.push_front(to, k, 0);
        self.used[to] += size;
        self.map.insert(k, (nh, size));
        nh
    }

    fn drop_node(&mut self, h: u32) {
        let from = self.lists.list_of(h);
        let k = self.lists.remove(h);
        self.used[from] -= self.map.remove(&k).expect("indexed").1;
    }

    fn total(&self) -> u64 {
        self.used.iter().sum()
    }
}

impl BytePolicy for ByteTinyLfu {
    fn name(&self) -> String {
        "W-TinyLFU".into()
    }

    fn access(&mut self, key: u32, size: u64) -> bool {
        self.sketch.increment(key);
        if let Some(&(h, _)) = self.map.get(&key) {
            match self.lists.list_of(h) {
                WINDOW => self.lists.move_to_front(h, WINDOW),
                PROBATION => {
                    self.move_to(h, PROTECTED);
                    while self.used[PROTECTED] > self.protected_cap {
                        let t = self.lists.back(PROTECTED).expect("over its share");
                        self.move_to(t, PROBATION);
                    }
                }
                _ => self.lists.move_to_front(h, PROTECTED),
            }
            return true;
        }
        if size > self.cap {
            return false;
        }
        let h = self.lists.push_front(WINDOW, key, 0);
        self.map.insert(key, (h, size));
        self.used[WINDOW] += size;
        // Window overflow: its LRU items become candidates for main.
        while self.used[WINDOW] > self.window_cap && self.lists.len(WINDOW) > 1 {
            let c = self.lists.back(WINDOW).expect("window not empty");
            let ck = self.lists.key(c);
            let cf = self.sketch.frequency(ck);
            self.move_to(c, PROBATION);
            // Make room in the cache: the candidate against probation's
            // (then protected's) LRU victims, one at a time.
            while self.total() > self.cap {
                let victim = self.lists.back(PROBATION).filter(|&v| self.lists.key(v) != ck).or_else(|| self.lists.back(PROTECTED));
                let Some(v) = victim else { break };
                let vk = self.lists.key(v);
                if self.sketch.frequency(vk) >= cf {
                    // The candidate loses: it leaves, the victim stays.
                    let nh = self.map[&ck].0;
                    self.drop_node(nh);
                    break;
                }
                self.drop_node(v);
            }
        }
        while self.total() > self.cap {
            // Only the window is left to give (a candidate larger than main).
            let t = self.lists.back(WINDOW).or_else(|| self.lists.back(PROBATION)).or_else(|| self.lists.back(PROTECTED)).expect("bytes held");
            self.drop_node(t);
        }
        false
    }

    fn used(&self) -> u64 {
        self.total()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(p: &mut dyn BytePolicy, reqs: &[(u32, u64)]) -> u64 {
        reqs.iter().filter(|&&(k, s)| p.access(k, s)).count() as u64
    }

    #[test]
    fn capacity_is_in_bytes_for_every_policy() {
        for mut p in policies(10_000) {
            // 5 items of 2,000 bytes fit, the 6th evicts; a 20,000-byte item
            // is never admitted.
            let reqs: Vec<(u32, u64)> = (0..6).map(|k| (k, 2_000)).collect();
            run(&mut *p, &reqs);
            assert!(p.used() <= 10_000, "{}: {} bytes", p.name(), p.used());
            assert!(!p.access(99, 20_000) && !p.access(99, 20_000), "{}", p.name());
            assert!(p.used() <= 10_000);
        }
    }

    #[test]
    fn gdsf_keeps_small_items_lru_does_not_care() {
        // Two sets, requests alternating: 20 small (100 B) and 5 big
        // (5,000 B) items; 10,000 bytes hold all the small ones or two big,
        // never everything a key's reuse distance spans (LRU: no hits).
        let reqs: Vec<(u32, u64)> = (0..200).flat_map(|i| [(i % 20, 100u64), (1000 + i % 5, 5_000)]).collect();
        let mut g = Gdsf::new(10_000);
        let mut l = ByteLru::new(10_000);
        let (hg, hl) = (run(&mut g, &reqs), run(&mut l, &reqs));
        assert!(hg >= 170 && hl < 10, "GDSF {hg} hits (small items: 180 possible), LRU {hl}");
    }

    #[test]
    fn s3fifo_resists_a_scan() {
        // A hot set that fits, then one-hit keys interleaved with it.
        let hot: Vec<(u32, u64)> = (0..2_000).map(|i| (i % 20, 100u64)).collect();
        let scan: Vec<(u32, u64)> = (0..2_000).flat_map(|i| [(i % 20, 100u64), (10_000 + 3 * i, 100), (10_001 + 3 * i, 100), (10_002 + 3 * i, 100)]).collect();
        let mut s = ByteS3Fifo::new(5_000);
        let mut l = ByteLru::new(5_000);
        run(&mut s, &hot);
        run(&mut l, &hot);
        let (hs, hl) = (run(&mut s, &scan), run(&mut l, &scan));
        assert!(hs > hl + 500, "S3-FIFO {hs} hits under the scan, LRU {hl}");
    }
}
