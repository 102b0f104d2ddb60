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
//!
//! [`S3Fifo`] (the store's policy) is S3-FIFO (Yang et al., SOSP 2023) at
//! segment granularity, chosen with the simulator in `crates/larder-sim`
//! (its README has the numbers): on the cache2k traces it matches
//! item-level S3-FIFO and W-TinyLFU, where the segment FIFO misses 8–22%
//! more than memcached's segmented LRU, and a scan of one-hit keys leaves
//! the hot set's hit ratio intact instead of halving it.
//!
//! - Two queues of segments. New writes go to *small* segments; a segment
//!   becomes *main* when it receives eviction survivors. Both queues live in
//!   the shard's one creation-order list, told apart by a flag.
//! - The victim is the oldest small segment while small segments are at
//!   least 10% of the shard's segments, else the oldest main one (the open
//!   ones only when nothing else is left). With few segments per shard
//!   (8 at the store's minimum) the small queue is one or two segments and
//!   main is evicted once survivors overflow into a new main segment:
//!   main's evictions follow its inflow, as in S3-FIFO.
//! - A shard evicts its own segments first (its queues decide), other
//!   shards' only when it has none to spare.
//! - Evicting keeps what earned it (`Shard::evict_keeping`): a small
//!   segment's items hit at least once since written (the index slot's
//!   4-bit counter; more for big items, see below) move to main with the counter reset — one-hit wonders
//!   and scans die after one pass through the small queue, never touching
//!   main; a main segment's items with counter > 0 are re-appended with
//!   counter − 1 (CLOCK), so stale hot items decay.
//! - Survivors are copied, so they cost memory and a memcpy under the shard
//!   lock (about one item copied per miss on the traces). A CAS is derived
//!   from an item's place, so a moved item carries the CAS it had in the
//!   explicit-CAS field meta `E` uses (8 bytes more, 9 for values under 256
//!   bytes): clients never see a move. Stats count the bigger size from the
//!   move on, and the call's departure sink hears of the growth
//!   ([`Departure::Moved`](crate::Departure::Moved)) so per-prefix byte
//!   accounting follows. One allocation
//!   does at most [`MAX_COPYING_EVICTIONS`] such evictions; after that
//!   victims die whole, which bounds the work when nearly everything is
//!   hot.
//! - Size-aware (issue 16): a pass through the queues costs an item more
//!   than one hit when it holds more than the mean: size ÷ the mean key +
//!   value bytes of what the shard writes, rounded up or down at random in
//!   proportion (see `rent` in shard.rs). An item of up to an eighth over
//!   the mean is treated exactly as above; one of three times the size
//!   needs three hits to leave the small queue and pays three per main
//!   pass. Small items pay one hit, as average ones do: a discount for
//!   them (a quarter hit per pass) made old small items outlive a switch to
//!   big values (evict_tests.rs) for 0.001-0.005 of miss ratio on orm-busy
//!   and nothing on the web traces (docs/size-aware-eviction.md). That
//!   keeps big items only while they earn hits in proportion to their
//!   bytes, with no per-item state beyond the index's 4-bit counter,
//!   decided while walking the victim segment. Measured with `larder-sim
//!   --sizes` (the real store replaying the traces with per-key sizes):
//!   miss ratio 0.355 → 0.347 on web07 and 0.181 → 0.176 on web12 with ETC
//!   sizes at -m 2; no change with fixed sizes.
//! - A ghost filter (issue 16, `ghost.rs`): keys that die in the small queue
//!   leave a 4-byte entry (24-bit fingerprint, 8-bit clock) in a
//!   direct-mapped table per shard (at most one entry per 2 KiB of the
//!   limit, 0.2% of it, counted as index bytes; it starts at 1/4 of that
//!   and doubles as it is hit, so keys that never return cost almost none); a key written again while its ghost is there, and
//!   younger than about the last `curr_items` ghosts (S3-FIFO's ghost
//!   size), starts with one hit, so it passes the small queue into main — S3-FIFO's ghost, without needing room in main
//!   at write time. Worth 0.0004–0.005 in miss ratio at working set ÷ 4 and
//!   ÷ 10, but far more when the cache is small: orm-busy at working set ÷ 40
//!   (-m 7, 4000 B values) 0.261 → 0.213 (larder-sim --sizes), where the
//!   small queue is too short for a second hit to arrive in time.
//! - Not (yet) here: a store-wide small/main balance (each shard balances
//!   its own segments).

use crate::segment::SegTable;
use crate::Time;

/// What a policy sees of a locked shard. `Shard` implements it (shard.rs),
/// so the policy needs nothing else of the shard's module, which holds the
/// policy in turn. Called once per segment considered for eviction: a
/// dynamic call there costs nothing next to the eviction it decides.
pub(crate) trait Candidates {
    /// The shard's segments.
    fn segs(&self) -> &SegTable;
    /// Whether every item of segment `id` is flushed.
    fn is_flushed(&self, id: u32) -> bool;
    /// Whether segment `id` is open for the appends of a TTL class.
    fn is_open(&self, id: u32) -> bool;
    /// The open main-queue segment (eviction survivors go there), 0 = none.
    fn open_main(&self) -> u32;
    /// Whether segment `id` holds nothing live that eviction would lose.
    fn reclaimable(&self, id: u32, now: Time) -> bool;
}

/// Evictions that keep survivors per allocation (see the module docs).
pub(crate) const MAX_COPYING_EVICTIONS: usize = 8;

/// What kind of victim is wanted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Want {
    /// Only a segment that loses nothing: all its items expired, or flushed.
    Free,
    /// A segment mostly dead (overwritten, deleted, expired items), to be
    /// compacted: its live items move, nothing is lost. Asked after `Free`
    /// and before `Evict`, so dead bytes go before live data does.
    Compact,
    /// Any segment, live data included (the policy's real choice).
    Evict,
    /// `-M`: a segment without live, unexpired, unflushed items, even if
    /// finding out means walking it.
    Reclaim,
}

pub(crate) trait EvictionPolicy: Send + Sync {
    /// Fills `out` with shard numbers to ask, most preferred first, for
    /// a regular segment or (`large`) a large object's bytes.
    fn shard_order(&self, me: usize, oldest: &[u64], large: bool, out: &mut Vec<usize>);
    /// A segment of `shard` to evict, never `protect`.
    fn pick(&self, shard: &dyn Candidates, protect: u32, now: Time, want: Want) -> Option<u32>;
    /// Whether `Want::Evict` victims keep their survivors
    /// (`Shard::evict_keeping`) rather than dying whole.
    fn keeps_survivors(&self) -> bool {
        false
    }
}

/// Shards ordered by the generation of their oldest segment (the own shard
/// last among equals; empty shards dropped, except the own one, which may
/// hold segments not yet published).
fn oldest_first(me: usize, oldest: &[u64], out: &mut Vec<usize>) {
    out.clear();
    out.extend(0..oldest.len());
    out.sort_by_key(|&i| (oldest[i], i == me));
    out.retain(|&i| i == me || oldest[i] != u64::MAX);
}

/// A segment that loses nothing if reclaimed (every item expired or flushed).
pub(crate) fn free_segment(shard: &dyn Candidates, protect: u32, now: Time) -> Option<u32> {
    // Wherever it is in the queue (segments are few: a scan per segment's
    // worth of writes is cheap).
    let segs = shard.segs();
    segs.oldest_first().find(|&id| id != protect && (segs.get(id).all_expired(now) || shard.is_flushed(id)))
}

/// What the background reclaimer frees at `horizon` (its time, already
/// behind the clock): [`free_segment`], except that flushed segments wait
/// until the flush itself is at least as old as `horizon` (`flush_settled`).
/// memcached leaves flushed items in place until they are read (counted in
/// `get_flushed`) or its LRU crawler comes by; freeing them in the very
/// second of the `flush_all` made a read right after it a plain miss,
/// depending on when the reclaimer ran (memcached's t/stats.t). A store
/// that needs the room takes them at once through [`free_segment`].
pub(crate) fn reclaimable_in_background(shard: &dyn Candidates, horizon: Time, flush_settled: bool) -> Option<u32> {
    let segs = shard.segs();
    segs.oldest_first().find(|&id| segs.get(id).all_expired(horizon) || (flush_settled && shard.is_flushed(id)))
}

/// The regular segment with the fewest live bytes, if at most three
/// quarters of it are live (compacting it frees a quarter of a segment or
/// more, for at most three times as many bytes copied); never an open
/// segment or `protect`. Measured (tests/utilization.rs, 50-500 B values,
/// half the writes overwrites): live share of the limit 0.57 without
/// compaction, 0.83 compacting at half live, 0.88 at three quarters, no
/// better at 85% (the emptiest segment is usually far below the bar).
pub(crate) fn compactable(shard: &dyn Candidates, protect: u32) -> Option<u32> {
    let (segs, open_main) = (shard.segs(), shard.open_main());
    segs.oldest_first()
        .filter(|&id| id != protect && !shard.is_open(id) && id != open_main)
        .map(|id| (segs.get(id), id))
        .filter(|(s, _)| !s.large && s.live_bytes * 4 <= s.buf.len() * 3)
        .min_by_key(|(s, _)| s.live_bytes)
        .map(|(_, id)| id)
}

/// `-M`: only segments holding nothing live; look at the two oldest, which
/// is where dead and expired data gathers.
fn reclaimable(shard: &dyn Candidates, protect: u32, now: Time) -> Option<u32> {
    shard.segs().oldest_first().filter(|&id| id != protect).take(2).find(|&id| shard.reclaimable(id, now))
}

/// The segment FIFO (the store's policy before [`S3Fifo`]; tests compare).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Fifo;

impl EvictionPolicy for Fifo {
    fn shard_order(&self, me: usize, oldest: &[u64], _large: bool, out: &mut Vec<usize>) {
        oldest_first(me, oldest, out)
    }

    fn pick(&self, shard: &dyn Candidates, protect: u32, now: Time, want: Want) -> Option<u32> {
        let free = free_segment(shard, protect, now);
        match want {
            _ if free.is_some() => free,
            Want::Free => None,
            Want::Compact => compactable(shard, protect),
            Want::Evict => shard.segs().oldest_first().find(|&id| id != protect),
            Want::Reclaim => reclaimable(shard, protect, now),
        }
    }
}

/// Segment S3-FIFO (see the module docs).
pub(crate) struct S3Fifo;

impl EvictionPolicy for S3Fifo {
    /// The own shard first for a regular segment: its queues decide (a
    /// shard whose oldest segment is globally oldest may well want to evict
    /// a young small segment, which would shrink every shard's small queue
    /// below one segment's worth of writes). Large objects take the oldest
    /// segments anywhere, as with [`Fifo`], rather than emptying one shard.
    fn shard_order(&self, me: usize, oldest: &[u64], large: bool, out: &mut Vec<usize>) {
        oldest_first(me, oldest, out);
        if !large {
            out.retain(|&i| i != me);
            out.insert(0, me);
        }
    }

    fn pick(&self, shard: &dyn Candidates, protect: u32, now: Time, want: Want) -> Option<u32> {
        let free = free_segment(shard, protect, now);
        match want {
            _ if free.is_some() => return free,
            Want::Free => return None,
            Want::Compact => return compactable(shard, protect),
            Want::Reclaim => return reclaimable(shard, protect, now),
            Want::Evict => {}
        }
        let (mut total, mut small) = (0usize, 0usize);
        let (mut oldest_small, mut oldest_main, mut any) = (None, None, None);
        let (segs, open_main) = (shard.segs(), shard.open_main());
        for id in segs.oldest_first().filter(|&id| id != protect) {
            total += 1;
            any.get_or_insert(id);
            if segs.get(id).main {
                if id != open_main && oldest_main.is_none() {
                    oldest_main = Some(id);
                }
            } else {
                small += 1;
                if !shard.is_open(id) && oldest_small.is_none() {
                    oldest_small = Some(id);
                }
            }
        }
        if small * 10 >= total {
            oldest_small.or(oldest_main).or(any)
        } else {
            oldest_main.or(oldest_small).or(any)
        }
    }

    fn keeps_survivors(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_asked_oldest_first() {
        let oldest = [5u64, u64::MAX, 2, 9];
        let mut out = Vec::new();
        Fifo.shard_order(3, &oldest, false, &mut out);
        assert_eq!(out, vec![2, 0, 3]);
        Fifo.shard_order(1, &oldest, false, &mut out);
        assert_eq!(out, vec![2, 0, 3, 1], "own shard always asked");
        S3Fifo.shard_order(3, &oldest, false, &mut out);
        assert_eq!(out, vec![3, 2, 0], "S3-FIFO: the own queues first");
        S3Fifo.shard_order(3, &oldest, true, &mut out);
        assert_eq!(out, vec![2, 0, 3], "large objects: oldest first");
    }
}
