//! Ghost filters: bounded sets of recently evicted keys, so a key that comes
//! back soon after eviction can skip the probationary queue.
//!
//! [`ExactGhost`] is the textbook one (S3-FIFO's G): a FIFO of keys with a
//! hash set, bounded by an entry count; a key leaves after `cap` newer
//! insertions or when it is found. Its memory (a key or hash plus a hash-set
//! entry per ghost) is what a server would have to count against `-m`.
//!
//! [`HashGhost`] is what larder can afford: a direct-mapped table of `cap`
//! 32-bit fingerprints of the key hash, indexed by other bits of the same
//! hash; inserting overwrites whatever sat in the slot, finding clears it.
//! 4 bytes per entry, O(1), no allocation, no per-entry pointers. Compared
//! with the exact FIFO it forgets some keys early (a slot collision evicts
//! a random older ghost) and, with probability ~cap/2^32 per lookup, reports
//! a false hit; at 4 bytes per entry it costs 1/2 of an index slot per
//! ghost.

use crate::util::{mix64, FastMap};
use std::collections::VecDeque;

pub trait Ghost {
    fn insert(&mut self, key: u32);
    /// Whether `key` is a ghost; if so it is removed.
    fn take(&mut self, key: u32) -> bool;
}

pub struct ExactGhost {
    cap: usize,
    fifo: VecDeque<(u32, u64)>,
    map: FastMap<u32, u64>,
    seq: u64,
}

impl ExactGhost {
    pub fn new(cap: usize) -> ExactGhost {
        ExactGhost { cap, fifo: VecDeque::new(), map: FastMap::default(), seq: 0 }
    }
}

impl Ghost for ExactGhost {
    fn insert(&mut self, key: u32) {
        if self.cap == 0 {
            return;
        }
        self.seq += 1;
        self.map.insert(key, self.seq);
        self.fifo.push_back((key, self.seq));
        while self.map.len() > self.cap || self.fifo.len() > 2 * self.cap + 16 {
            let (k, s) = self.fifo.pop_front().unwrap();
            if self.map.get(&k) == Some(&s) {
                self.map.remove(&k);
            }
        }
    }

    fn take(&mut self, key: u32) -> bool {
        self.map.remove(&key).is_some()
    }
}

pub struct HashGhost {
    slots: Vec<u32>,
}

impl HashGhost {
    pub fn new(cap: usize) -> HashGhost {
        HashGhost { slots: vec![0; cap.max(1)] }
    }

    fn at(&self, key: u32) -> (usize, u32) {
        let h = mix64(key as u64 ^ 0x6a09_e667_f3bc_c909);
        ((h as usize) % self.slots.len(), ((h >> 32) as u32) | 1)
    }
}

impl Ghost for HashGhost {
    fn insert(&mut self, key: u32) {
        let (i, f) = self.at(key);
        self.slots[i] = f;
    }

    fn take(&mut self, key: u32) -> bool {
        let (i, f) = self.at(key);
        if self.slots[i] == f {
            self.slots[i] = 0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_ghost_is_a_bounded_fifo() {
        let mut g = ExactGhost::new(2);
        g.insert(1);
        g.insert(2);
        g.insert(3);
        assert!(!g.take(1), "oldest forgotten");
        assert!(g.take(2));
        assert!(!g.take(2), "taken once");
        assert!(g.take(3));
    }

    #[test]
    fn hash_ghost_remembers_most_of_its_capacity() {
        let mut g = HashGhost::new(1000);
        for k in 0..500 {
            g.insert(k);
        }
        let found = (0..500).filter(|&k| g.take(k)).count();
        // 500 keys into 1000 slots: ~ 1000 * (1 - e^-0.5) = 393 distinct slots survive.
        assert!((350..=450).contains(&found), "{found}");
        assert_eq!((10_000..20_000).filter(|&k| g.take(k)).count(), 0);
    }
}
