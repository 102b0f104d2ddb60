//! Belady's optimal policy (OPT/MIN), the lower bound on misses at a given
//! capacity: on a miss with the cache full, evict the resident key whose
//! next request is furthest in the future — or do not admit the new key if
//! its own next request is further still (bypass, as a look-aside cache may
//! decline a `set`). It needs the future, so it is a function of the whole
//! trace rather than a [`Policy`](crate::Policy).
//!
//! Compulsory misses (first requests of each key) are counted like any
//! other: OPT's miss ratio is never below `unique keys ÷ requests`.

use crate::util::FastMap;
use crate::Counts;
use std::collections::BinaryHeap;

pub fn belady(keys: &[u32], cap: usize) -> Counts {
    let n = keys.len();
    // next[i]: index of the next request of keys[i] (n = never).
    let mut next = vec![n; n];
    let mut last: FastMap<u32, usize> = FastMap::default();
    for i in (0..n).rev() {
        next[i] = last.get(&keys[i]).copied().unwrap_or(n);
        last.insert(keys[i], i);
    }
    let mut resident: FastMap<u32, usize> = FastMap::default();
    // Max-heap of (next use, key); stale entries skipped lazily.
    let mut heap: BinaryHeap<(usize, u32)> = BinaryHeap::new();
    let mut c = Counts::default();
    for i in 0..n {
        let k = keys[i];
        if let Some(nu) = resident.get_mut(&k) {
            c.hits += 1;
            *nu = next[i];
            heap.push((next[i], k));
            continue;
        }
        c.misses += 1;
        if cap == 0 {
            continue;
        }
        if resident.len() >= cap {
            // The resident key used furthest in the future.
            let (far, fk) = loop {
                let &(nu, key) = heap.peek().unwrap();
                if resident.get(&key) == Some(&nu) {
                    break (nu, key);
                }
                heap.pop();
            };
            if next[i] >= far {
                continue; // bypass: the new key is needed later than any resident
            }
            heap.pop();
            resident.remove(&fk);
        }
        resident.insert(k, next[i]);
        heap.push((next[i], k));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed() {
        // cap 2. 3 arrives with 1 (next at 3) and 2 (next at 5) resident;
        // its own next use (6) is furthest: bypass. 1 hits; 4 is never
        // used again: bypass; 2 hits; 3 misses.
        let c = belady(&[1, 2, 3, 1, 4, 2, 3], 2);
        assert_eq!((c.hits, c.misses), (2, 5));
        let c = belady(&[1, 2, 1, 3, 1, 2], 2);
        // 3 arrives: next(1)=4, next(2)=5, next(3)=never -> bypass; 1 hit; 2 hit.
        assert_eq!((c.hits, c.misses), (3, 3));
    }

    #[test]
    fn never_worse_than_lru() {
        let mut rng = crate::util::Rng::new(5);
        let keys: Vec<u32> = (0..20_000).map(|_| (rng.next_u64() % 500) as u32).collect();
        let opt = belady(&keys, 100);
        let lru = crate::replay(&mut crate::basic::Lru::lru(100), &keys);
        assert!(opt.misses < lru.misses);
    }
}
