//! The two baselines: LRU and FIFO.
//!
//! LRU moves a key to the front on every hit and evicts from the back; FIFO
//! never moves anything, so a key dies `capacity` insertions after it was
//! written, however popular. Both are recency-only: a scan of one-hit keys
//! longer than the cache flushes everything, which is what the scan
//! workload shows. FIFO is also what larder's segment FIFO approaches as
//! segments shrink to one item.

use crate::list::Lists;
use crate::util::FastMap;
use crate::Policy;

pub struct Lru {
    cap: usize,
    list: Lists,
    map: FastMap<u32, u32>,
    /// false: FIFO (hits do not move keys).
    promote: bool,
}

#[allow(clippy::self_named_constructors)]
impl Lru {
    pub fn lru(cap: usize) -> Lru {
        Lru { cap: cap.max(1), list: Lists::new(1), map: FastMap::default(), promote: true }
    }

    pub fn fifo(cap: usize) -> Lru {
        Lru { promote: false, ..Lru::lru(cap) }
    }
}

impl Policy for Lru {
    fn name(&self) -> String {
        if self.promote { "LRU" } else { "FIFO" }.into()
    }

    fn access(&mut self, key: u32) -> bool {
        if let Some(&h) = self.map.get(&key) {
            if self.promote {
                self.list.move_to_front(h, 0);
            }
            return true;
        }
        if self.map.len() >= self.cap {
            let v = self.list.back(0).unwrap();
            let k = self.list.remove(v);
            self.map.remove(&k);
        }
        let h = self.list.push_front(0, key, 0);
        self.map.insert(key, h);
        false
    }

    fn contains(&self, key: u32) -> bool {
        self.map.contains_key(&key)
    }

    fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hits;

    #[test]
    fn lru_hand_computed() {
        // cap 3: 1 2 3 1 4 (evicts 2) 2 (miss, evicts 3) 1 (hit) 3 (miss)
        let mut p = Lru::lru(3);
        assert_eq!(hits(&mut p, &[1, 2, 3, 1, 4, 2, 1, 3]), "...H..H.");
        assert!(p.contains(3) && !p.contains(4));
    }

    #[test]
    fn fifo_hand_computed() {
        // cap 3: 1 2 3 1(hit, not moved) 4 (evicts 1) 1 (miss, evicts 2) 3 (hit)
        let mut p = Lru::fifo(3);
        assert_eq!(hits(&mut p, &[1, 2, 3, 1, 4, 1, 3]), "...H..H");
        assert!(!p.contains(2) && p.contains(4));
    }
}
