//! Keyed key hashing. Keys come from untrusted clients, so the hash is
//! SipHash-1-3 from the standard library keyed with 128 random bits drawn
//! once per `Store` (`RandomState`), which resists hash flooding. One 64-bit
//! hash of a key supplies every derived position:
//!
//! * bits 48..64: the 16-bit index tag,
//! * bits 40..48: the shard (up to 256 shards),
//! * the low bits: the first candidate bucket; the second is derived from
//!   the first and the tag ([`alt_bucket`]).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

#[derive(Clone)]
pub struct KeyHasher(RandomState);

impl KeyHasher {
    pub fn new() -> KeyHasher {
        KeyHasher(RandomState::new())
    }

    // Written out (not `hash_one`) and inlined: every lookup, write and
    // index migration step hashes a key, and with `hash_one` the compiler
    // sometimes kept the generic call out of line, which cost a set ~6% of
    // its instructions (scripts/instructions-per-request).
    #[inline]
    pub fn hash(&self, key: &[u8]) -> u64 {
        let mut h = self.0.build_hasher();
        h.write(key);
        h.finish()
    }
}

/// The index tag of a hash (compared before any key bytes are touched).
pub fn tag(h: u64) -> u16 {
    (h >> 48) as u16
}

/// The shard of a hash, for `nshards` a power of two up to 256.
pub fn shard(h: u64, nshards: usize) -> usize {
    ((h >> 40) as usize) & (nshards - 1)
}

/// Maps 32 bits of hash onto `0..n` (multiply-shift: no division, any `n`).
fn fastrange(x: u32, n: usize) -> usize {
    ((x as u64 * n as u64) >> 32) as usize
}

/// The first candidate bucket of a hash in a table of `n` buckets (any
/// number: tables grow by a quarter, not by doubling).
pub fn bucket(h: u64, n: usize) -> usize {
    fastrange(h as u32, n)
}

/// The other candidate bucket of an entry in `bucket` with tag `tag`, in a
/// table of `n` buckets (partial-key cuckoo hashing: computable from the
/// slot alone, so entries can be moved without reading their keys). It is
/// `(c - bucket) mod n` for a constant `c` drawn from the tag, which is its
/// own inverse for every `n`: the alternative of the alternative is the
/// bucket itself.
pub fn alt_bucket(bucket: usize, tag: u16, n: usize) -> usize {
    let mix = ((tag as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32;
    let c = fastrange(mix, n);
    if c >= bucket {
        c - bucket
    } else {
        c + n - bucket
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_per_instance_and_deterministic() {
        let a = KeyHasher::new();
        let b = KeyHasher::new();
        assert_eq!(a.hash(b"foo"), a.hash(b"foo"));
        assert_ne!(a.hash(b"foo"), a.hash(b"fop"));
        // Two instances use different keys (collision chance 2^-64).
        assert_ne!(a.hash(b"foo"), b.hash(b"foo"));
    }

    #[test]
    fn derived_positions_spread() {
        let h = KeyHasher::new();
        let mut shards = [0usize; 16];
        let mut same = 0;
        for i in 0..16_000u32 {
            let x = h.hash(&i.to_le_bytes());
            shards[shard(x, 16)] += 1;
            for n in [1000, 1024, 1250] {
                let b1 = bucket(x, n);
                let b2 = alt_bucket(b1, tag(x), n);
                assert!(b1 < n && b2 < n);
                assert_eq!(alt_bucket(b2, tag(x), n), b1, "an involution for any table size");
                same += (b1 == b2) as usize;
            }
        }
        assert!(shards.iter().all(|&n| n > 700 && n < 1300), "{shards:?}");
        assert!(same < 3 * 60, "{same}");
    }
}
