//! S3-FIFO (Yang et al., SOSP 2023): three FIFO queues.
//!
//! - S, the small queue (10% of the capacity), receives new keys.
//! - M, the main queue (90%), receives keys that proved themselves.
//! - G, the ghost queue, remembers keys evicted from S (as many as M holds).
//!
//! A hit only increments the key's 2-bit frequency (saturating at 3): no
//! list manipulation, which is what makes it cheap and lock-friendly. On a
//! miss the key goes to M if G remembers it, else to S. When the cache is
//! full: if S holds at least its 10% share, S's oldest key is examined — if
//! it was hit at least `threshold` times while in S it moves to M (frequency
//! reset), otherwise it is evicted into G (a one-hit wonder never reaches
//! M); otherwise M's oldest key is examined — with frequency > 0 it is
//! re-inserted at M's head with frequency − 1 (CLOCK-like second chances),
//! else evicted.
//!
//! Trade-off: quick demotion of new keys (most die in S after ~10% of the
//! cache's turnover) filters scans and one-hit wonders, at the cost of a
//! key with a long reuse distance missing once more before G sends it to M.
//! The paper's pseudo-code moves on `freq > 1`, implementations commonly on
//! `freq >= 1`; `threshold` selects (1 by default).

use crate::ghost::{ExactGhost, Ghost};
use crate::list::Lists;
use crate::util::FastMap;
use crate::Policy;

const SMALL: usize = 0;
const MAIN: usize = 1;

pub struct S3Fifo {
    cap: usize,
    small_cap: usize,
    threshold: u8,
    lists: Lists,
    map: FastMap<u32, u32>,
    ghost: ExactGhost,
}

impl S3Fifo {
    pub fn new(cap: usize) -> S3Fifo {
        S3Fifo::with_threshold(cap, 1)
    }

    pub fn with_threshold(cap: usize, threshold: u8) -> S3Fifo {
        let cap = cap.max(2);
        let small_cap = (cap / 10).max(1);
        S3Fifo { cap, small_cap, threshold, lists: Lists::new(2), map: FastMap::default(), ghost: ExactGhost::new(cap - small_cap) }
    }

    /// S3-FIFO with no ghost: a key evicted from S is forgotten (for
    /// measuring what the ghost is worth, `examples/ghost_irm.rs`).
    pub fn without_ghost(cap: usize) -> S3Fifo {
        S3Fifo { ghost: ExactGhost::new(0), ..S3Fifo::new(cap) }
    }

    fn evict(&mut self) {
        if self.lists.len(SMALL) >= self.small_cap || self.lists.len(MAIN) == 0 {
            self.evict_small();
        } else {
            self.evict_main();
        }
    }

    fn evict_small(&mut self) {
        while let Some(t) = self.lists.back(SMALL) {
            if self.lists.meta(t) >= self.threshold {
                self.lists.move_to_front(t, MAIN);
                self.lists.set_meta(t, 0);
                if self.lists.len(MAIN) > self.cap - self.small_cap {
                    self.evict_main();
                    return;
                }
            } else {
                let k = self.lists.remove(t);
                self.map.remove(&k);
                self.ghost.insert(k);
                return;
            }
        }
    }

    fn evict_main(&mut self) {
        while let Some(t) = self.lists.back(MAIN) {
            let f = self.lists.meta(t);
            if f > 0 {
                self.lists.move_to_front(t, MAIN);
                self.lists.set_meta(t, f - 1);
            } else {
                let k = self.lists.remove(t);
                self.map.remove(&k);
                return;
            }
        }
    }
}

impl Policy for S3Fifo {
    fn name(&self) -> String {
        if self.threshold == 1 { "S3-FIFO".into() } else { format!("S3-FIFO(t={})", self.threshold) }
    }

    fn access(&mut self, key: u32) -> bool {
        if let Some(&h) = self.map.get(&key) {
            let f = self.lists.meta(h);
            self.lists.set_meta(h, (f + 1).min(3));
            return true;
        }
        while self.map.len() >= self.cap {
            self.evict();
        }
        let q = if self.ghost.take(key) { MAIN } else { SMALL };
        let h = self.lists.push_front(q, key, 0);
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
    fn one_hit_wonders_never_reach_main() {
        // cap 10: S = 1, M = 9. Key 1 is hit while in S, so it moves to M;
        // keys 100.. are one-hit wonders and cycle through S only.
        let mut p = S3Fifo::new(10);
        assert_eq!(hits(&mut p, &[1, 1]), ".H");
        for k in 100..200 {
            p.access(k);
            assert!(p.contains(1), "hot key survives one-hit wonder {k}");
        }
        assert_eq!(p.lists.len(MAIN), 1, "only key 1 reached M");
    }

    #[test]
    fn ghost_hit_goes_straight_to_main() {
        let mut p = S3Fifo::new(10);
        for k in 0..11 {
            p.access(k); // into S, never hit; 10 evicts 0 into G
        }
        assert!(!p.contains(0));
        assert!(!p.access(0), "a ghost hit is still a miss");
        assert_eq!(p.lists.list_of(p.map[&0]), MAIN);
    }

    #[test]
    fn main_gives_second_chances() {
        // cap 4 (S 1, M 3). 1, 2, 3 are hit in S; inserting 5 moves them
        // to M (frequency reset) and evicts 4 into G.
        let mut p = S3Fifo::new(4);
        for k in [1, 1, 2, 2, 3, 3, 4, 5] {
            p.access(k);
        }
        assert_eq!(p.lists.len(MAIN), 3);
        assert!(!p.contains(4));
        assert!(p.access(1), "1 now has frequency 1 in M");
        assert!(!p.access(4), "4 comes back from G (evicting 5 from S) into M");
        assert_eq!(p.lists.list_of(p.map[&4]), MAIN);
        // 6: S is empty so M's tail is examined: 1 (freq 1) gets a second
        // chance, 2 (freq 0) is evicted.
        p.access(6);
        assert!(p.contains(1) && !p.contains(2) && p.contains(3));
    }
}
