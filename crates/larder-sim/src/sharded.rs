//! Hash-partitioned caches: the store's shards.
//!
//! larder splits its segments over N shards (N = segments ÷ 8, clamped to
//! 1..=16, rounded down to a power of two, for the store's minimum of 64
//! segments: 8 shards of 8 segments), each with its own lock, index and
//! segments. A shard-local policy sees only its 1/N of the keys and
//! segments, so the coarseness of segment-granularity decisions is felt N
//! times more: with 8 segments per shard, S3-FIFO's "10% small queue" is one
//! segment. This wrapper runs N independent copies of a policy, each with
//! capacity ÷ N, and routes each key by hash — a pessimistic model of the
//! store, which also evicts across shards to approximate a global order.

use crate::util::mix64;
use crate::Policy;

pub struct Sharded {
    shards: Vec<Box<dyn Policy>>,
}

impl Sharded {
    /// `make(capacity_of_one_shard)` builds one shard.
    pub fn new(n: usize, cap: usize, make: impl Fn(usize) -> Box<dyn Policy>) -> Sharded {
        let n = n.max(1);
        Sharded { shards: (0..n).map(|_| make(cap / n)).collect() }
    }

    /// The store's shard count for a cache of `segments` segments.
    pub fn store_shards(segments: usize) -> usize {
        let n = (segments / 8).clamp(1, 16);
        1 << (usize::BITS - 1 - n.leading_zeros())
    }

    fn shard(&self, key: u32) -> usize {
        (mix64(key as u64 ^ 0x5bd1_e995) % self.shards.len() as u64) as usize
    }
}

impl Policy for Sharded {
    fn name(&self) -> String {
        format!("{}/{}sh", self.shards[0].name(), self.shards.len())
    }

    fn access(&mut self, key: u32) -> bool {
        let s = self.shard(key);
        self.shards[s].access(key)
    }

    fn contains(&self, key: u32) -> bool {
        self.shards[self.shard(key)].contains(key)
    }

    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum()
    }

    fn copies(&self) -> u64 {
        self.shards.iter().map(|s| s.copies()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::basic::Lru;

    #[test]
    fn routes_by_hash_and_splits_capacity() {
        assert_eq!(Sharded::store_shards(64), 8);
        assert_eq!(Sharded::store_shards(1000), 16);
        assert_eq!(Sharded::store_shards(24), 2);
        let mut p = Sharded::new(4, 400, |c| Box::new(Lru::lru(c)));
        for k in 0..10_000 {
            p.access(k);
        }
        assert!(p.len() <= 400 && p.len() > 300);
        assert_eq!(p.name(), "LRU/4sh");
        assert!(p.access(9_999) && p.contains(9_998));
    }
}
