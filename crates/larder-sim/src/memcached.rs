//! memcached 1.6's segmented LRU (`-o lru_segmented`, the default), per
//! slab class, modelled at item granularity with memcached 1.6.18's
//! defaults: HOT 20%, WARM 40%, COLD the rest; `temp_lru` off.
//!
//! - New items enter HOT. A fetch sets FETCHED the first time and ACTIVE
//!   on later fetches (so an item needs two hits to count as active).
//! - HOT's tail: an ACTIVE item moves to WARM (flag cleared), otherwise,
//!   while HOT is over its share, to COLD.
//! - WARM's tail: an ACTIVE item is bumped back to WARM's head (flag
//!   cleared); otherwise, while WARM is over its share, it moves to COLD.
//! - A second-or-later fetch of a COLD item marks it ACTIVE and (memcached
//!   does it asynchronously, here at once) moves it to WARM.
//! - Allocation evicts COLD's tail (HOT's, then WARM's, if COLD is empty).
//!
//! Simplifications: the LRU maintainer thread's juggling is done
//! synchronously after each insertion; the age limits (`hot_max_factor`,
//! `warm_max_factor`) are not modelled (shares only), and the 60-second
//! bump throttle is moot with no clock. There is one slab class, i.e. equal
//! item sizes: memcached's real memory overheads are measured by
//! larder-bench against the real server, not here.

use crate::list::Lists;
use crate::util::FastMap;
use crate::Policy;

const HOT: usize = 0;
const WARM: usize = 1;
const COLD: usize = 2;
const FETCHED: u8 = 1;
const ACTIVE: u8 = 2;

pub struct McSlru {
    cap: usize,
    hot_cap: usize,
    warm_cap: usize,
    lists: Lists,
    map: FastMap<u32, u32>,
}

impl McSlru {
    pub fn new(cap: usize) -> McSlru {
        let cap = cap.max(1);
        McSlru { cap, hot_cap: (cap * 20 / 100).max(1), warm_cap: (cap * 40 / 100).max(1), lists: Lists::new(3), map: FastMap::default() }
    }

    fn juggle(&mut self) {
        // HOT: active items go to WARM, the rest to COLD while over share.
        while self.lists.len(HOT) > self.hot_cap {
            let t = self.lists.back(HOT).unwrap();
            let m = self.lists.meta(t);
            if m & ACTIVE != 0 {
                self.lists.set_meta(t, m & !ACTIVE);
                self.lists.move_to_front(t, WARM);
            } else {
                self.lists.move_to_front(t, COLD);
            }
        }
        let mut budget = self.lists.len(WARM);
        while self.lists.len(WARM) > self.warm_cap && budget > 0 {
            budget -= 1;
            let t = self.lists.back(WARM).unwrap();
            let m = self.lists.meta(t);
            if m & ACTIVE != 0 {
                self.lists.set_meta(t, m & !ACTIVE);
                self.lists.move_to_front(t, WARM);
            } else {
                self.lists.move_to_front(t, COLD);
            }
        }
        while self.lists.len(WARM) > self.warm_cap {
            let t = self.lists.back(WARM).unwrap();
            self.lists.move_to_front(t, COLD);
        }
    }
}

impl Policy for McSlru {
    fn name(&self) -> String {
        "memcached-SLRU".into()
    }

    fn access(&mut self, key: u32) -> bool {
        if let Some(&h) = self.map.get(&key) {
            let m = self.lists.meta(h);
            if m & FETCHED == 0 {
                self.lists.set_meta(h, m | FETCHED);
            } else if self.lists.list_of(h) == COLD {
                self.lists.move_to_front(h, WARM);
                self.juggle();
            } else {
                self.lists.set_meta(h, m | ACTIVE);
            }
            return true;
        }
        if self.map.len() >= self.cap {
            let v = self.lists.back(COLD).or_else(|| self.lists.back(HOT)).or_else(|| self.lists.back(WARM)).unwrap();
            let k = self.lists.remove(v);
            self.map.remove(&k);
        }
        let h = self.lists.push_front(HOT, key, 0);
        self.map.insert(key, h);
        self.juggle();
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

    #[test]
    fn two_fetches_make_an_item_survive_the_cold_tail() {
        // cap 10: HOT 2, WARM 4.
        let mut p = McSlru::new(10);
        p.access(1);
        assert!(p.access(1)); // FETCHED
        assert!(p.access(1)); // ACTIVE (in HOT)
        for k in 2..12 {
            p.access(k);
        }
        // 1 left HOT as ACTIVE, so it went to WARM, not COLD: it survives
        // 10 insertions that a FIFO would have evicted it after.
        assert!(p.contains(1));
        assert_eq!(p.lists.list_of(p.map[&1]), WARM);
        assert!(!p.contains(2), "2 went HOT -> COLD and was evicted first");
    }

    #[test]
    fn cold_hit_twice_moves_to_warm() {
        let mut p = McSlru::new(10);
        for k in 0..10 {
            p.access(k);
        }
        // 0 is in COLD now (HOT keeps only the 2 newest).
        assert_eq!(p.lists.list_of(p.map[&0]), COLD);
        p.access(0);
        assert_eq!(p.lists.list_of(p.map[&0]), COLD, "first fetch only sets FETCHED");
        p.access(0);
        assert_eq!(p.lists.list_of(p.map[&0]), WARM);
    }
}
