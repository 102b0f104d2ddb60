//! W-TinyLFU, the policy of Caffeine (Einziger, Friedman, Manes 2017).
//!
//! - A **window** LRU (1% of the capacity) takes every new key, so a burst
//!   of new keys gets a short chance to prove itself.
//! - The **main** area (99%) is a segmented LRU: *probation* (20% of main)
//!   and *protected* (80%). A hit in probation promotes to protected;
//!   protected's overflow is demoted to probation's MRU end.
//! - **Admission.** When the window overflows, its LRU key (the candidate)
//!   competes with probation's LRU key (the victim): the candidate is
//!   admitted only if its TinyLFU [`Sketch`] frequency is higher; else the
//!   candidate is dropped. Ties favour the victim (the incumbent), which is
//!   what makes scans harmless: a scan key has frequency 1. As in Caffeine,
//!   a candidate with frequency ≥ 6 that loses is still admitted with
//!   probability 1/128, so an attacker cannot pin a victim by inflating it.
//! - Every access increments the sketch, hits and misses alike.
//!
//! **Adaptive window** ([`WTinyLfu::adaptive`]): Caffeine sizes the window
//! by hill climbing, since a 1% window is too small for recency-skewed
//! workloads. Every `10 × capacity` requests it compares the sample's hit
//! rate with the previous sample's: if it improved, it keeps moving the
//! window size in the same direction, else reverses; the step starts at
//! 6.25% of the capacity, decays by 0.98 per sample, and restarts at full
//! size when the hit rate jumps by 5% or more (a workload change). Window
//! and protected shares are moved accordingly. [`WTinyLfu::new`] is the
//! paper's fixed W-TinyLFU(1%).

use crate::list::Lists;
use crate::sketch::Sketch;
use crate::util::{FastMap, Rng};
use crate::Policy;

const WINDOW: usize = 0;
const PROBATION: usize = 1;
const PROTECTED: usize = 2;

pub struct WTinyLfu {
    cap: usize,
    window_cap: usize,
    protected_cap: usize,
    lists: Lists,
    map: FastMap<u32, u32>,
    sketch: Sketch,
    rng: Rng,
    climber: Option<Climber>,
}

/// Caffeine's hill climber state.
struct Climber {
    hits: u64,
    misses: u64,
    prev_rate: f64,
    step: f64,
    window: f64,
}

impl WTinyLfu {
    pub fn new(cap: usize) -> WTinyLfu {
        let cap = cap.max(2);
        let window_cap = (cap / 100).max(1);
        let main = cap - window_cap;
        WTinyLfu {
            cap,
            window_cap,
            protected_cap: main * 8 / 10,
            lists: Lists::new(3),
            map: FastMap::default(),
            sketch: Sketch::new(cap),
            rng: Rng::new(0x7157),
            climber: None,
        }
    }

    /// With Caffeine's adaptive window size.
    pub fn adaptive(cap: usize) -> WTinyLfu {
        let mut p = WTinyLfu::new(cap);
        p.climber = Some(Climber { hits: 0, misses: 0, prev_rate: 0.0, step: -0.0625 * p.cap as f64, window: p.window_cap as f64 });
        p
    }

    fn climb(&mut self, hit: bool) {
        let cap = self.cap;
        let Some(c) = self.climber.as_mut() else { return };
        if hit {
            c.hits += 1;
        } else {
            c.misses += 1;
        }
        if c.hits + c.misses < 10 * cap as u64 {
            return;
        }
        let rate = c.hits as f64 / (c.hits + c.misses) as f64;
        let change = rate - c.prev_rate;
        let amount = if change >= 0.0 { c.step } else { -c.step };
        c.step = if change.abs() >= 0.05 { 0.0625 * cap as f64 * amount.signum() } else { 0.98 * amount };
        c.prev_rate = rate;
        c.hits = 0;
        c.misses = 0;
        c.window = (c.window + amount).clamp(1.0, (cap - 1) as f64);
        self.window_cap = c.window.round() as usize;
        self.protected_cap = (cap - self.window_cap) * 8 / 10;
        while self.lists.len(PROTECTED) > self.protected_cap {
            let d = self.lists.back(PROTECTED).unwrap();
            self.lists.move_to_front(d, PROBATION);
        }
    }

    fn admit(&mut self, candidate: u32, victim: u32) -> bool {
        let c = self.sketch.frequency(candidate);
        let v = self.sketch.frequency(victim);
        if c > v {
            true
        } else if c >= 6 {
            self.rng.next_u64() & 127 == 0
        } else {
            false
        }
    }

    fn drop_node(&mut self, h: u32) {
        let k = self.lists.remove(h);
        self.map.remove(&k);
    }

    /// Moves the window's overflow into main, then evicts while over capacity.
    fn rebalance(&mut self) {
        while self.lists.len(WINDOW) > self.window_cap {
            let c = self.lists.back(WINDOW).unwrap();
            if self.map.len() <= self.cap {
                // Main has room: no contest.
                self.lists.move_to_front(c, PROBATION);
                continue;
            }
            let victim = self.lists.back(PROBATION).or_else(|| self.lists.back(PROTECTED));
            match victim {
                None => self.drop_node(c),
                Some(v) => {
                    if self.admit(self.lists.key(c), self.lists.key(v)) {
                        self.drop_node(v);
                        self.lists.move_to_front(c, PROBATION);
                    } else {
                        self.drop_node(c);
                    }
                }
            }
        }
        while self.map.len() > self.cap {
            let v = self.lists.back(PROBATION).or_else(|| self.lists.back(PROTECTED)).or_else(|| self.lists.back(WINDOW));
            self.drop_node(v.unwrap());
        }
    }
}

impl Policy for WTinyLfu {
    fn name(&self) -> String {
        if self.climber.is_some() { "W-TinyLFU(adaptive)" } else { "W-TinyLFU" }.into()
    }

    fn access(&mut self, key: u32) -> bool {
        let hit = self.lookup(key);
        self.climb(hit);
        hit
    }

    fn contains(&self, key: u32) -> bool {
        self.map.contains_key(&key)
    }

    fn len(&self) -> usize {
        self.map.len()
    }
}

impl WTinyLfu {
    fn lookup(&mut self, key: u32) -> bool {
        self.sketch.increment(key);
        if let Some(&h) = self.map.get(&key) {
            match self.lists.list_of(h) {
                WINDOW => self.lists.move_to_front(h, WINDOW),
                PROTECTED => self.lists.move_to_front(h, PROTECTED),
                _ => {
                    self.lists.move_to_front(h, PROTECTED);
                    if self.lists.len(PROTECTED) > self.protected_cap {
                        let d = self.lists.back(PROTECTED).unwrap();
                        self.lists.move_to_front(d, PROBATION);
                    }
                }
            }
            return true;
        }
        let h = self.lists.push_front(WINDOW, key, 0);
        self.map.insert(key, h);
        self.rebalance();
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_by_frequency() {
        // cap 10: window 1, main 9.
        let mut p = WTinyLfu::new(10);
        for k in 0..10 {
            p.access(k);
        }
        assert_eq!(p.len(), 10);
        // Make 0..9 frequent (and protected).
        for _ in 0..3 {
            for k in 0..10 {
                assert!(p.access(k));
            }
        }
        // The first newcomer pushes 9 out of the window into a tie with
        // probation's victim (both frequency 4): the incumbent wins and 9
        // is dropped. Every later newcomer (frequency 1) loses too.
        for k in 100..150 {
            assert!(!p.access(k));
        }
        let residents = (0..10).filter(|&k| p.contains(k)).count();
        assert_eq!(residents, 9, "only the window slot turned over");
        // A newcomer that becomes frequent while passing through gets in.
        for _ in 0..6 {
            p.sketch.increment(500);
        }
        p.access(500);
        p.access(501);
        assert!(p.contains(500), "admitted: frequency 7 beats the victim");
        assert_eq!((0..10).filter(|&k| p.contains(k)).count(), 8);
    }

    #[test]
    fn probation_hit_promotes_and_protected_overflow_demotes() {
        let mut p = WTinyLfu::new(100); // window 1, protected cap 79
        for k in 0..100 {
            p.access(k);
        }
        for k in 0..99 {
            p.access(k);
        }
        assert_eq!(p.lists.len(PROTECTED), 79);
        assert_eq!(p.lists.len(WINDOW), 1);
        assert_eq!(p.lists.len(PROBATION), 20);
    }

    #[test]
    fn hill_climber_follows_the_hit_rate() {
        // cap 1000: samples of 10,000 requests, steps of 62.5 items.
        let mut p = WTinyLfu::adaptive(1000);
        let sample = |p: &mut WTinyLfu, hit: bool| (0..10_000).for_each(|_| p.climb(hit));
        sample(&mut p, true); // better than nothing: keep the initial (shrinking) direction
        assert_eq!(p.window_cap, 1);
        sample(&mut p, false); // worse: reverse, grow
        assert_eq!(p.window_cap, 64);
        sample(&mut p, true); // better: keep growing
        assert_eq!(p.window_cap, 126);
        sample(&mut p, true); // flat (no worse): same direction, then the step decays
        assert_eq!(p.window_cap, 189);
        sample(&mut p, true);
        assert_eq!(p.window_cap, 250, "188.5 + 0.98 * 62.5");
        assert_eq!(p.protected_cap, (1000 - 250) * 8 / 10);
    }
}
