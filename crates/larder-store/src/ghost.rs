//! The ghost filter of a shard: fingerprints of keys that died in the small
//! queue of segment S3-FIFO (see [`evict`](crate::evict)). A key written
//! again while its ghost is here starts with one hit, so it survives the
//! small queue (S3-FIFO's "a ghost hit goes straight to main", without
//! needing room in main at write time).
//!
//! Each entry is 4 bytes, direct-mapped: a 24-bit fingerprint and 8 bits
//! of the ghost clock. The clock ticks once per `max(1, items ÷ 32)`
//! ghosts, `items` being what the shard holds, so "younger than the last
//! `items` ghosts" is about 32 ticks at any cache size, to 1/32 of it
//! (with a fixed unit of 256 ghosts, a shard holding 50 big items took
//! every ghost of the current unit, up to 255 old, for a young one, and
//! let through the small queue keys it should have filtered:
//! evict_tests.rs' 10 KiB phase, steady hit ratio 0.799 against 0.803 now,
//! means of 60 runs; 0.816 without a ghost, which is what S3-FIFO's ghost
//! costs on requests drawn independently from a fixed popularity, see
//! larder-sim's `examples/ghost_irm.rs`). An
//! entry 256 ticks older than its window (8 windows) looks young again if
//! nothing overwrote its slot meanwhile. Its bytes are reserved from the
//! memory budget, so they are paid for in segments.
//!
//! The table starts small and grows only while it earns its bytes. At
//! most it has one entry per `GHOST_BYTES` of the limit (lib.rs; 0.2%),
//! but it starts at 1/[`START_SHARE`] of that, allocated at the shard's
//! first small-queue eviction, and doubles each time it has served a ghost
//! hit per [`HITS_PER_GROWTH`] entries since it last grew. A workload whose
//! keys never come back (a bulk fill, a scan) thus pays a quarter of it
//! (0.05% of the limit). Measured (BENCHMARKS.md, issue 16): the whole
//! table from the start cost an in-process fill of 8-40 B values at -m 256
//! about 0.002 of utilization; starting at 1/32 cost orm-busy at working
//! set ÷ 4 (larder-sim --sizes 4000, -m 42) 0.0013 in miss ratio, 1/4
//! about 0.001, and neither showed on the other trace points. Growing copies
//! each entry to both of its possible new slots (the new slot bit is not
//! stored); the copy at the wrong slot only matches a key with that same
//! 24-bit fingerprint, as any entry can.

use crate::pool::Pool;

/// The table starts at 1/START_SHARE of its largest size.
const START_SHARE: usize = 4;
/// Entries per ghost hit that make it double.
const HITS_PER_GROWTH: usize = 8;
/// Fewest entries of a table.
const MIN_ENTRIES: usize = 64;

#[derive(Default)]
pub struct Ghost {
    /// The entries (a power of two long, or empty: not allocated yet).
    table: Box<[u32]>,
    /// Ticks of the ghost clock (see the module docs).
    clock: u32,
    /// Ghosts recorded since the clock last ticked.
    since_tick: u64,
    /// Entries at most (a power of two; 0: no ghost).
    max: usize,
    /// Ghost hits since the table last grew.
    hits: usize,
}

impl Ghost {
    /// A ghost of at most `max` entries (a power of two), allocated on the
    /// first [`add`](Self::add): a cache that never evicts from its small
    /// queue (large objects only, or nothing evicted yet) pays nothing for
    /// it — memcached's t/lru.t counts the evictions of 1 MB values at
    /// -m 64 exactly.
    pub fn new(max: usize) -> Ghost {
        debug_assert!(max == 0 || max.is_power_of_two());
        Ghost { max, ..Ghost::default() }
    }

    /// Bytes of the table (reserved from the budget).
    pub fn bytes(&self) -> usize {
        self.table.len() * 4
    }

    /// Slot and 24-bit fingerprint of hash `h` (one false ghost hit per 16
    /// million new keys at most).
    fn slot(&self, h: u64) -> (usize, u32) {
        // Low bits pick the slot. The fingerprint is bits 32..40 and 48..64,
        // none of the shard's bits 40..48 (`hash::shard`): those are the
        // same for every key of a shard, and counting them made false ghost
        // hits 16 times as frequent with 16 shards (14 in an in-process fill
        // of 12 M distinct 8-40 B items at -m 256, each opening a main-queue
        // segment that then sat nearly empty: 0.004 of utilization; 0-1
        // with these bits).
        let fp = (h >> 32) as u32 & 0xFF | ((h >> 48) as u32) << 8;
        ((h as usize) & (self.table.len() - 1), fp)
    }

    /// Records `h` as a ghost, in a shard holding `items` items.
    pub fn add(&mut self, h: u64, items: u64, pool: &Pool) {
        if self.table.is_empty() {
            if self.max == 0 {
                return;
            }
            self.resize((self.max / START_SHARE).max(MIN_ENTRIES).min(self.max), pool);
        }
        let (i, fp) = self.slot(h);
        self.since_tick += 1;
        if self.since_tick >= ghosts_per_tick(items) {
            self.since_tick = 0;
            self.clock = self.clock.wrapping_add(1);
        }
        self.table[i] = (fp << 8) | (self.clock & 0xFF);
    }

    /// Whether `h` is a ghost (then it no longer is). Only about the last
    /// `items` ghosts count, `items` being what the shard holds (to 1/32 of
    /// it, see the module docs): S3-FIFO's ghost remembers as many keys as
    /// the cache holds. A table sized by bytes alone
    /// remembers many times that with big values, and then nearly every
    /// miss is a ghost hit, which turns the small queue's filter off
    /// (evict_tests.rs' Zipf phases lost 0.01).
    pub fn take(&mut self, h: u64, items: u64, pool: &Pool) -> bool {
        if self.table.is_empty() {
            return false;
        }
        let (i, fp) = self.slot(h);
        let g = self.table[i];
        let age = (self.clock.wrapping_sub(g) & 0xFF) as u64;
        let found = g != 0 && g >> 8 == fp && age * ghosts_per_tick(items) < items;
        if found {
            self.table[i] = 0;
            self.hits += 1;
            if self.hits * HITS_PER_GROWTH >= self.table.len() && self.table.len() < self.max {
                self.resize(self.table.len() * 2, pool);
            }
        }
        found
    }

    /// Replaces the table by one of `entries` (at least as many), keeping
    /// what the old one holds. Reserved beyond the budget: the shard's next
    /// segment allocation evicts to pay it back.
    fn resize(&mut self, entries: usize, pool: &Pool) {
        let old = std::mem::take(&mut self.table);
        pool.force_reserve((entries - old.len()) * 4);
        let mut table = vec![0u32; entries].into_boxed_slice();
        if !old.is_empty() {
            for chunk in table.chunks_mut(old.len()) {
                chunk.copy_from_slice(&old);
            }
        }
        self.table = table;
        self.hits = 0;
    }

    /// Live entries (for tests).
    #[cfg(test)]
    pub fn entries(&self) -> usize {
        self.table.iter().filter(|&&g| g != 0).count()
    }
}

/// Ticks of the ghost clock per window of `items` ghosts (see the module docs).
const TICKS_PER_WINDOW: u64 = 32;

/// Ghosts per tick of the clock in a shard holding `items`.
fn ghosts_per_tick(items: u64) -> u64 {
    (items / TICKS_PER_WINDOW).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A well-mixed 64-bit hash of `i` (splitmix64's finaliser).
    fn hash(i: u64) -> u64 {
        let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    #[test]
    fn starts_small_and_grows_only_with_hits() {
        let pool = Pool::new(1 << 20, 4096);
        let mut g = Ghost::new(512);
        assert_eq!(g.bytes(), 0);
        assert!(!g.take(hash(0), 1000, &pool));
        // Keys that never come back: the table stays at its start.
        for i in 0..100_000 {
            g.add(hash(i), 1000, &pool);
        }
        assert_eq!(g.bytes(), 128 * 4);
        assert_eq!(pool.used(), 128 * 4, "its bytes are reserved");
        // Keys that come back: 16 hits (128 / 8) double it, keeping them.
        let mut hits = 0;
        let mut i = 1_000_000;
        while g.bytes() == 128 * 4 {
            g.add(hash(i), 1000, &pool);
            assert!(g.take(hash(i), 1000, &pool), "{i}");
            hits += 1;
            i += 1;
        }
        assert_eq!(hits, 16);
        assert_eq!(g.bytes(), 256 * 4);
        assert_eq!(pool.used(), 256 * 4);
        g.add(hash(7), 1000, &pool);
        let before = g.entries();
        g.resize(512, &pool);
        assert_eq!(g.entries(), 2 * before, "every entry at both of its possible slots");
        assert!(g.take(hash(7), 1000, &pool), "a ghost survives growing");
    }

    #[test]
    fn only_about_the_last_items_ghosts_count() {
        // A shard holding `items` items: a ghost half that many ghosts old
        // is taken, one twice that old is not — with 50 items too, where a
        // clock in units of 256 ghosts took every ghost of its unit.
        let pool = Pool::new(1 << 24, 4096);
        for items in [1u64, 50, 300, 5000] {
            for (age, expect) in [(items / 2, true), (items * 2, false), (items * 3 / 4, true), (items * 5 / 4, false)] {
                let mut g = Ghost::new(1 << 16);
                g.add(hash(0), items, &pool);
                // Other keys, none in the slot of the first.
                let slot = hash(0) & 0xFFFF;
                (1..).map(hash).filter(|h| h & 0xFFFF != slot).take(age as usize).for_each(|h| g.add(h, items, &pool));
                assert_eq!(g.take(hash(0), items, &pool), expect, "{items} items, ghost {age} ghosts old");
            }
        }
    }

    #[test]
    fn grows_to_its_bound_and_no_further() {
        let pool = Pool::new(1 << 20, 4096);
        let mut g = Ghost::new(256);
        for i in 0..10_000 {
            g.add(hash(i), 1000, &pool);
            g.take(hash(i), 1000, &pool);
        }
        assert_eq!(g.bytes(), 256 * 4);
        let mut none = Ghost::new(0);
        none.add(hash(1), 1000, &pool);
        assert!(!none.take(hash(1), 1000, &pool));
        assert_eq!(none.bytes(), 0);
    }
}
