//! TinyLFU's frequency estimate: a count-min sketch of 4-bit counters with
//! periodic aging, fronted by a doorkeeper Bloom filter.
//!
//! - **Count-min sketch.** 4 rows of `width` 4-bit counters (`width` = the
//!   cache capacity rounded up to a power of two, as in Caffeine); a key
//!   increments one counter per row (saturating at 15) and its estimate is
//!   the minimum of its 4 counters: never an underestimate, and collisions
//!   only inflate.
//! - **Aging.** After `10 × capacity` increments every counter is halved
//!   (and the doorkeeper cleared), so the sketch reflects recent popularity:
//!   a key that was hot yesterday decays instead of blocking admission
//!   forever.
//! - **Doorkeeper.** A Bloom filter in front of the sketch absorbs each key's
//!   first occurrence per aging period; only repeats reach the counters. The
//!   estimate is `sketch + doorkeeper bit`. One-hit wonders (most keys of a
//!   scan) then cost a filter bit instead of 4 counters, which keeps the
//!   counters of real repeat keys from being inflated by collisions.
//!   (Caffeine's production sketch has no doorkeeper; the TinyLFU paper and
//!   Caffeine's simulator do.)

use crate::util::mix64;

pub struct Sketch {
    rows: [Vec<u8>; 4],
    mask: usize,
    door: Vec<u64>,
    door_mask: usize,
    additions: usize,
    sample: usize,
}

impl Sketch {
    pub fn new(capacity: usize) -> Sketch {
        let width = capacity.max(16).next_power_of_two();
        let door_bits = (width * 8).next_power_of_two();
        Sketch {
            rows: std::array::from_fn(|_| vec![0u8; width]),
            mask: width - 1,
            door: vec![0; door_bits / 64],
            door_mask: door_bits - 1,
            additions: 0,
            sample: 10 * capacity.max(1),
        }
    }

    fn hashes(key: u32) -> (u64, u64) {
        let h = mix64(key as u64);
        (h, mix64(h ^ 0xa076_1d64_78bd_642f))
    }

    fn idx(h: (u64, u64), i: u64, mask: usize) -> usize {
        (h.0.wrapping_add(i.wrapping_mul(h.1)).rotate_right(17) as usize) & mask
    }

    fn door_contains(&self, h: (u64, u64)) -> bool {
        (0..3).all(|i| {
            let b = Self::idx(h, i + 7, self.door_mask);
            self.door[b / 64] >> (b % 64) & 1 == 1
        })
    }

    /// Records one access.
    pub fn increment(&mut self, key: u32) {
        let h = Self::hashes(key);
        if !self.door_contains(h) {
            for i in 0..3 {
                let b = Self::idx(h, i + 7, self.door_mask);
                self.door[b / 64] |= 1 << (b % 64);
            }
        } else {
            for (i, row) in self.rows.iter_mut().enumerate() {
                let c = &mut row[Self::idx(h, i as u64, self.mask)];
                if *c < 15 {
                    *c += 1;
                }
            }
        }
        self.additions += 1;
        if self.additions >= self.sample {
            self.age();
        }
    }

    /// Halves every counter and clears the doorkeeper.
    pub fn age(&mut self) {
        for row in &mut self.rows {
            for c in row.iter_mut() {
                *c >>= 1;
            }
        }
        self.door.iter_mut().for_each(|w| *w = 0);
        self.additions /= 2;
    }

    /// Estimated accesses in the current aging period (0..=16).
    pub fn frequency(&self, key: u32) -> u8 {
        let h = Self::hashes(key);
        let min = self.rows.iter().enumerate().map(|(i, row)| row[Self::idx(h, i as u64, self.mask)]).min().unwrap();
        min + self.door_contains(h) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_repeats_and_ages() {
        let mut s = Sketch::new(1000);
        for _ in 0..5 {
            s.increment(42);
        }
        s.increment(7);
        assert_eq!(s.frequency(42), 5, "1 in the doorkeeper + 4 counted");
        assert_eq!(s.frequency(7), 1, "doorkeeper only");
        assert_eq!(s.frequency(99), 0);
        s.age();
        assert_eq!(s.frequency(42), 2, "4 halved, doorkeeper cleared");
        assert_eq!(s.frequency(7), 0);
    }

    #[test]
    fn ages_itself_after_ten_times_capacity() {
        let mut s = Sketch::new(16);
        for _ in 0..20 {
            s.increment(1);
        }
        assert_eq!(s.frequency(1), 16, "saturated at 15 + doorkeeper");
        for k in 100..240 {
            s.increment(k);
        }
        assert!(s.frequency(1) <= 8, "halved at least once: {}", s.frequency(1));
    }
}
