//! Eviction policy: which segment dies when memory is needed.
//!
//! The store asks the policy in two steps, so a smarter policy (S3-FIFO
//! queues, merge eviction using the index's frequency bits) can replace this
//! one without touching the allocation path:
//!
//! 1. [`EvictionPolicy::shard_order`]: the order in which shards are asked
//!    for a victim. The requesting shard is already locked; others are only
//!    `try_lock`ed, so eviction never waits for a lock and cannot deadlock.
//! 2. [`EvictionPolicy::pick`]: the victim segment inside a locked shard.
//!
//! [`Fifo`] approximates a global segment FIFO: every shard publishes the
//! generation of its oldest segment, and shards are asked oldest first.
//! Before any live data is evicted, every shard is asked for a segment that
//! loses nothing (all items expired, or flushed); then the oldest segment of
//! the shard with the oldest segment goes.

use crate::shard::Shard;
use crate::Time;

/// What kind of victim is wanted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Want {
    /// Only a segment that loses nothing: all its items expired, or flushed.
    Free,
    /// Any segment, live data included (the policy's real choice).
    Evict,
    /// `-M`: a segment without live, unexpired, unflushed items, even if
    /// finding out means walking it.
    Reclaim,
}

pub(crate) trait EvictionPolicy: Send + Sync {
    /// Fills `out` with shard numbers to ask, most preferred first.
    fn shard_order(&self, me: usize, oldest: &[u64], out: &mut Vec<usize>);
    /// A segment of `shard` to evict, never `protect`.
    fn pick(&self, shard: &Shard, protect: u32, now: Time, want: Want) -> Option<u32>;
}

pub(crate) struct Fifo;

impl EvictionPolicy for Fifo {
    fn shard_order(&self, me: usize, oldest: &[u64], out: &mut Vec<usize>) {
        out.clear();
        out.extend(0..oldest.len());
        let key = |i: &usize| {
            let g = oldest[*i];
            // The own shard last among equals; empty shards (MAX) at the end
            // but still present: the own shard may hold segments not yet
            // published.
            (g, *i == me)
        };
        out.sort_by_key(key);
        out.retain(|&i| i == me || oldest[i] != u64::MAX);
    }

    fn pick(&self, shard: &Shard, protect: u32, now: Time, want: Want) -> Option<u32> {
        // A segment whose items have all expired (or were flushed) costs
        // nothing to reclaim, wherever it is in the queue (segments are few:
        // a scan per segment's worth of writes is cheap).
        let free = shard
            .segs
            .oldest_first()
            .find(|&id| id != protect && (shard.segs.get(id).all_expired(now) || shard.is_flushed(id)));
        if free.is_some() || want == Want::Free {
            return free;
        }
        let mut candidates = shard.segs.oldest_first().filter(|&id| id != protect);
        if want == Want::Evict {
            return candidates.next();
        }
        // Without eviction, only reclaim segments holding nothing live; look
        // at the two oldest, which is where dead and expired data gathers.
        candidates.take(2).find(|&id| shard.reclaimable(id, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_asked_oldest_first() {
        let oldest = [5u64, u64::MAX, 2, 9];
        let mut out = Vec::new();
        Fifo.shard_order(3, &oldest, &mut out);
        assert_eq!(out, vec![2, 0, 3]);
        Fifo.shard_order(1, &oldest, &mut out);
        assert_eq!(out, vec![2, 0, 3, 1], "own shard always asked");
    }
}
