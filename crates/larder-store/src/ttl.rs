//! TTL classes: which open segment of a shard a new item is appended to.
//!
//! A segment can be reclaimed without losing anything once every item in it
//! has expired (`Segment::max_exp`). If items of very different lifetimes
//! shared segments, a segment would stay occupied until its longest-lived
//! item expired or was evicted, and the memory of its short-lived items
//! would come back only through eviction — which also drops the long-lived
//! neighbours. So each shard keeps one open segment per TTL class, and an
//! item is appended to the open segment of its class: items written around
//! the same time with similar TTLs share segments and expire together (the
//! idea of Segcache's TTL buckets, Yang et al., NSDI 2021, here within each
//! shard).
//!
//! Classes, by TTL left at write time (a factor of 8 apart, so common TTLs —
//! 1 min, 5 min, 1 h, 1 day — land in different classes):
//!
//! ```text
//! class  TTL
//! 0      <= 8 s
//! 1      <= 64 s
//! 2      <= 512 s
//! 3      <= 4096 s
//! 4      longer, or no expiry
//! ```
//!
//! Open segments cost memory: each holds a partly filled buffer. So a shard
//! has at most `max_open` of them (the store sets it from how many segments
//! a shard gets: one per 8, between 1 and [`TTL_CLASSES`]). When a class has
//! no open segment and the shard is at its limit, the item goes to the open
//! segment of the nearest *longer* class (that only makes the item wait
//! longer for its segment; the reverse would hold a short class's segment
//! hostage); if every open segment is of a shorter class, the longest of
//! them is closed and the item's class gets a segment of its own. With
//! `max_open == 1` every item shares one open segment, as before classes.

use crate::Time;

/// Number of TTL classes.
pub(crate) const TTL_CLASSES: usize = 5;

/// The class holding items that never expire.
pub(crate) const NO_EXPIRY: usize = TTL_CLASSES - 1;

/// The TTL class of an item expiring at `exptime` (0 = never) written at `now`.
pub(crate) fn class(exptime: Time, now: Time) -> usize {
    if exptime == 0 {
        return NO_EXPIRY;
    }
    match exptime.saturating_sub(now) {
        0..=8 => 0,
        9..=64 => 1,
        65..=512 => 2,
        513..=4096 => 3,
        _ => NO_EXPIRY,
    }
}

/// What to do to append an item of class `want`, given the shard's open
/// segments (`open[c] != 0`: class `c` has one) and its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Append to (or open) the segment of this class.
    Use(usize),
    /// Close the open segment of the first class, then open the second's.
    Replace(usize, usize),
}

/// Chooses the open segment for class `want` (see the module docs).
pub(crate) fn choose(open: &[u32; TTL_CLASSES], max_open: usize, want: usize) -> Slot {
    if open[want] != 0 {
        return Slot::Use(want);
    }
    if open.iter().filter(|&&id| id != 0).count() < max_open {
        return Slot::Use(want);
    }
    if let Some(longer) = (want + 1..TTL_CLASSES).find(|&c| open[c] != 0) {
        return Slot::Use(longer);
    }
    match (0..want).rev().find(|&c| open[c] != 0) {
        Some(shorter) => Slot::Replace(shorter, want),
        None => Slot::Use(want), // nothing open at all (max_open == 0 is never set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_the_ttl_left() {
        assert_eq!(class(0, 100), NO_EXPIRY);
        assert_eq!(class(102, 100), 0);
        assert_eq!(class(100, 100), 0, "already due");
        assert_eq!(class(160, 100), 1);
        assert_eq!(class(400, 100), 2);
        assert_eq!(class(3700, 100), 3);
        assert_eq!(class(100 + 86_400, 100), NO_EXPIRY);
    }

    #[test]
    fn the_limit_sends_items_to_a_longer_class_or_replaces_a_shorter_one() {
        let mut open = [0u32; TTL_CLASSES];
        assert_eq!(choose(&open, 2, 1), Slot::Use(1), "room: own class");
        open[1] = 7;
        assert_eq!(choose(&open, 2, 1), Slot::Use(1));
        assert_eq!(choose(&open, 2, 3), Slot::Use(3), "second open segment allowed");
        open[3] = 8;
        assert_eq!(choose(&open, 2, 0), Slot::Use(1), "full: nearest longer class");
        assert_eq!(choose(&open, 2, 2), Slot::Use(3));
        assert_eq!(choose(&open, 2, NO_EXPIRY), Slot::Replace(3, NO_EXPIRY), "only shorter ones open");
        assert_eq!(choose(&open, 1, 0), Slot::Use(1));
        let one = [0, 0, 0, 0, 9];
        assert_eq!(choose(&one, 1, 0), Slot::Use(NO_EXPIRY), "one open segment: everything shares it");
    }
}
