//! Hit-ratio properties of the eviction policy, through the real [`Store`]
//! API (get, and set on a miss, as a look-aside cache does):
//!
//! - **Scan resistance.** A hot Zipf-distributed key set keeps its hit
//!   ratio while a long scan of one-hit keys runs through the cache under
//!   segment S3-FIFO; under the segment FIFO it collapses.
//! - **No calcification.** After a phase of 100-byte values, a phase of
//!   10 KiB values gets the hit ratio a fresh store gets: memory (and the
//!   frequency earned by the old items) moves to the new workload.
//!
//! The same experiments at item granularity, for more policies, are in
//! `crates/larder-sim`.

use crate::evict::{EvictionPolicy, Fifo, S3Fifo};
use crate::{Config, Lookup, Mode, Store};

/// Zipf(alpha) over `0..n` by inverse CDF, with a splitmix64 stream.
struct Zipf {
    cdf: Vec<f64>,
    state: u64,
}

impl Zipf {
    fn new(n: usize, alpha: f64, seed: u64) -> Zipf {
        let mut cdf: Vec<f64> = (1..=n).map(|i| 1.0 / (i as f64).powf(alpha)).collect();
        let mut sum = 0.0;
        for c in cdf.iter_mut() {
            sum += *c;
            *c = sum;
        }
        cdf.iter_mut().for_each(|c| *c /= sum);
        Zipf { cdf, state: seed }
    }

    fn next(&mut self) -> usize {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
        self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1)
    }
}

const MIB: usize = 1 << 20;

fn store(policy: Box<dyn EvictionPolicy>) -> Store {
    Store::with_policy(Config { memory_limit: 4 * MIB, segment_size: 64 << 10, ..Config::default() }, policy).unwrap()
}

/// get; on a miss, set `value`. Whether it hit (and the value read back is
/// the one written for this key).
fn access(s: &Store, key: &[u8], value: &[u8]) -> bool {
    match s.get(key, 1, |it| it.value == value) {
        Lookup::Hit(same) => {
            assert!(same, "wrong value for {}", String::from_utf8_lossy(key));
            true
        }
        _ => {
            s.store(Mode::Set, key, 0, 0, value, 1);
            false
        }
    }
}

/// Hit ratio of the phase-2 hot requests, with or without 2 scan keys
/// after each.
fn hot_hit_ratio(policy: Box<dyn EvictionPolicy>, scan: bool) -> f64 {
    let s = store(policy);
    // 100-byte values, ~32k fit: the hot set is ~3x the cache.
    let value = [7u8; 100];
    let mut z = Zipf::new(100_000, 1.0, 42);
    for _ in 0..300_000 {
        access(&s, format!("hot:{}", z.next()).as_bytes(), &value);
    }
    let (mut hits, mut n, mut scan_key) = (0, 0, 0u64);
    for _ in 0..150_000 {
        hits += access(&s, format!("hot:{}", z.next()).as_bytes(), &value) as u32;
        n += 1;
        if scan {
            for _ in 0..2 {
                access(&s, format!("scan:{scan_key}").as_bytes(), &value);
                scan_key += 1;
            }
        }
    }
    hits as f64 / n as f64
}

#[test]
fn hot_set_survives_a_scan() {
    let base = hot_hit_ratio(Box::new(S3Fifo), false);
    let scanned = hot_hit_ratio(Box::new(S3Fifo), true);
    let fifo_base = hot_hit_ratio(Box::new(Fifo), false);
    let fifo_scanned = hot_hit_ratio(Box::new(Fifo), true);
    eprintln!("S3-FIFO: {base:.3} -> {scanned:.3} under the scan; FIFO: {fifo_base:.3} -> {fifo_scanned:.3}");
    assert!(scanned >= 0.9 * base, "segment S3-FIFO: hot hit ratio {base:.3} fell to {scanned:.3} under a scan");
    assert!(fifo_scanned < 0.8 * fifo_base, "the scan should hurt FIFO: {fifo_base:.3} -> {fifo_scanned:.3}");
    assert!(base > fifo_base, "frequency-aware beats FIFO without a scan too: {base:.3} vs {fifo_base:.3}");
}

/// Hit ratios of a phase of 10 KiB values over a Zipf key set ~3x the
/// cache: over the whole phase, and over its second half (after the
/// cache has turned over ~75 times).
fn big_value_phase(s: &Store) -> (f64, f64) {
    let value = vec![9u8; 10 << 10];
    let mut z = Zipf::new(1_200, 1.0, 7);
    let n = 60_000;
    let hits: Vec<bool> = (0..n).map(|_| access(s, format!("big:{}", z.next()).as_bytes(), &value)).collect();
    let ratio = |h: &[bool]| h.iter().filter(|&&x| x).count() as f64 / h.len() as f64;
    (ratio(&hits), ratio(&hits[n / 2..]))
}

/// Phase-2 hit ratios (whole phase, second half) of a fresh store and of
/// one that first served a phase of 100-byte values, and the index bytes
/// left from that phase.
fn calcification(policy: fn() -> Box<dyn EvictionPolicy>) -> ((f64, f64), (f64, f64), u64) {
    let fresh = big_value_phase(&store(policy()));
    let s = store(policy());
    let small = [1u8; 100];
    let mut z = Zipf::new(100_000, 1.0, 3);
    for _ in 0..300_000 {
        access(&s, format!("small:{}", z.next()).as_bytes(), &small);
    }
    let st = s.stats();
    assert!(st.evictions > 0 && st.curr_items > 20_000, "phase 1 filled the cache with small items: {st:?}");
    let phase1_index = st.index_bytes;
    let after = big_value_phase(&s);
    let end = s.stats();
    assert!(end.curr_items < 2_000, "the small items made room: {end:?}");
    assert!(end.index_bytes * 10 < phase1_index, "the index shrank: {phase1_index} -> {} bytes", end.index_bytes);
    (fresh, after, end.index_bytes)
}

/// [`calcification`] `n` times, averaged. Each store hashes keys with its
/// own random key, which moves one run's steady hit ratio by about 0.003
/// (sd); one run against the 0.01 limit failed about 1 time in 75 on main
/// (8 of 600 runs), with no calcification behind it. Three runs make that
/// spread about 0.0017.
fn calcification_mean(n: usize, policy: fn() -> Box<dyn EvictionPolicy>) -> ((f64, f64), (f64, f64), u64) {
    let mut sum = [0.0; 4];
    let mut index = 0;
    for _ in 0..n {
        let ((a, b), (c, d), i) = calcification(policy);
        for (s, x) in sum.iter_mut().zip([a, b, c, d]) {
            *s += x / n as f64;
        }
        index = index.max(i);
    }
    ((sum[0], sum[1]), (sum[2], sum[3]), index)
}

#[test]
fn no_calcification_after_a_change_of_item_size() {
    let ((fresh, fresh2), (after, after2), index) = calcification_mean(3, || Box::new(S3Fifo));
    let ((ffresh, _), (fafter, _), _) = calcification(|| Box::new(Fifo));
    eprintln!(
        "10 KiB phase: S3-FIFO fresh {fresh:.3} after {after:.3} (second half {fresh2:.3} / {after2:.3}); \
         FIFO fresh {ffresh:.3} after {fafter:.3}; index {index} bytes"
    );
    // Once the cache has turned over, the same hit ratio as a fresh store:
    // nothing of phase 1 is left (the index shrank back, and the small
    // items' access counts decayed).
    assert!((after2 - fresh2).abs() <= 0.01, "phase-2 steady hit ratio {after2:.3} vs a fresh store's {fresh2:.3}");
    // Over the whole phase S3-FIFO pays for its memory of phase 1 while
    // main-queue items with hits decay (up to 3 passes), about 0.015 here;
    // FIFO, which cannot calcify, pays nothing.
    assert!((after - fresh).abs() <= 0.03, "phase-2 hit ratio {after:.3} vs a fresh store's {fresh:.3}");
    assert!((fafter - ffresh).abs() <= 0.01, "FIFO: {fafter:.3} vs {ffresh:.3}");
}
