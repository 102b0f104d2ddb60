//! [`KeyHash`]: a seeded hash of a key for the server's fixed-size tables
//! that remember a little about some keys (grace mode's refill winners,
//! coalesced cold misses). A collision only makes two keys share a slot,
//! which those tables tolerate, so the hash is chosen for speed (FNV-1a)
//! and seeded per process so that clients cannot aim keys at one slot.

/// A per-process seeded key hash.
#[derive(Clone, Copy, Debug)]
pub struct KeyHash {
    seed: u64,
}

impl KeyHash {
    /// Seeded from the clock at start-up.
    pub fn new() -> KeyHash {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9e37_79b9_7f4a_7c15)
            | 1;
        KeyHash { seed }
    }

    /// 64 bits of `key`'s hash; its low bits pick a slot, its high bits
    /// make a tag.
    #[inline]
    pub fn hash(&self, key: &[u8]) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64 ^ self.seed;
        for &b in key {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^ (h >> 29)
    }
}

impl Default for KeyHash {
    fn default() -> Self {
        KeyHash::new()
    }
}

#[cfg(test)]
mod tests {
    use super::KeyHash;

    #[test]
    fn same_key_same_hash_and_keys_spread() {
        let k = KeyHash::new();
        assert_eq!(k.hash(b"user:1"), k.hash(b"user:1"));
        let slots: std::collections::HashSet<u64> = (0..1000).map(|i| k.hash(format!("user:{i}").as_bytes()) & 1023).collect();
        assert!(slots.len() > 500, "1000 keys in {} of 1024 slots", slots.len());
    }
}
