//! The same replay through the real store: `larder_store::Store` at a memory
//! limit rather than an item count, so item headers, the index and segment
//! granularity all count — what `-m` buys in larder, without the network.
//!
//! The limit follows larder-bench's hit-ratio scenario: every key gets a
//! value of `value_size` bytes (4000 by default), and `-m` is the working set
//! (unique keys × value size) ÷ 4 or ÷ 10 in whole MiB, at least 2. Keys are
//! "k" and the trace's integer, zero-padded to 16 bytes (larder-bench's keys). Reads compare the value with the one
//! written, so a wrong value fails the run instead of counting as a hit.

use crate::Counts;
use larder_store::{Config, Lookup, Mode, Store};

/// `-m` in bytes for `unique` keys of `value_size` bytes at working set ÷ `div`.
pub fn memory_limit(unique: usize, value_size: usize, div: usize) -> usize {
    let mb = ((unique as f64 * value_size as f64 / div as f64 / (1 << 20) as f64).round() as usize).max(2);
    mb << 20
}

/// A value of `len` bytes derived from `key` (checked on every hit).
fn value_of(key: u32, len: usize, buf: &mut Vec<u8>) {
    buf.clear();
    let mut x = (key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while buf.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf.push(x as u8);
    }
}

/// Replays `keys` (get, and set on a miss) through a fresh store of
/// `memory_limit` bytes.
pub fn replay(keys: &[u32], memory_limit: usize, value_size: usize) -> Counts {
    replay_sized(keys, memory_limit, |_| value_size)
}

/// [`replay`] with each key's value size from `size_of`.
pub fn replay_sized(keys: &[u32], memory_limit: usize, size_of: impl Fn(u32) -> usize) -> Counts {
    let store = Store::new(Config { memory_limit, ..Config::default() }).expect("store config");
    let mut c = Counts::default();
    let mut val = Vec::new();
    let mut kbuf = String::new();
    for &k in keys {
        use std::fmt::Write;
        kbuf.clear();
        // 16-byte keys, as larder-bench sends them (and as `bytes` charges).
        let _ = write!(kbuf, "k{k:015}");
        value_of(k, size_of(k), &mut val);
        match store.get(kbuf.as_bytes(), 1, |it| it.value == &val[..]) {
            Lookup::Hit(same) => {
                assert!(same, "key {k}: wrong value read back");
                c.hits += 1;
            }
            _ => {
                c.misses += 1;
                store.store(Mode::Set, kbuf.as_bytes(), 0, 0, &val, 1);
            }
        }
    }
    if std::env::var_os("LARDER_SIM_STATS").is_some() {
        let st = store.stats();
        eprintln!(
            "  -m {} KiB: items {} live {:.3} dead {:.3} index {:.3} segs {}x{} KiB shards {} open/unused {:.3}",
            memory_limit >> 10,
            st.curr_items,
            st.bytes as f64 / memory_limit as f64,
            st.bytes_dead as f64 / memory_limit as f64,
            st.index_bytes as f64 / memory_limit as f64,
            st.segments_used,
            st.segment_size >> 10,
            st.shards,
            (memory_limit as f64 - st.bytes as f64 - st.bytes_dead as f64 - st.index_bytes as f64) / memory_limit as f64
        );
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_follow_larder_bench() {
        assert_eq!(memory_limit(20_484, 4000, 4), 20 << 20);
        assert_eq!(memory_limit(13_756, 4000, 10), 5 << 20);
        assert_eq!(memory_limit(100, 4000, 10), 2 << 20);
    }

    #[test]
    fn small_replay_hits_what_fits() {
        let keys: Vec<u32> = (0..3).flat_map(|_| 0..200u32).collect();
        let c = replay(&keys, 2 << 20, 1000);
        assert_eq!((c.hits, c.misses), (400, 200));
    }
}

