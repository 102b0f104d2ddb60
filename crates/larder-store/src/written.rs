//! When the items of one segment were written, kept per segment instead of
//! per item: `stats items` `age` (the write time of the oldest live data)
//! and the time an item brings along when eviction moves it.
//!
//! A segment's offsets are split into a few regions, each with the time its
//! items were written and how many of them are still live. Items are placed
//! in offset order, so a write at a new time opens a region at its offset;
//! the item header itself has no room for a write time (every bit of its
//! control byte is taken, and two more bytes per item would cost the small
//! items the store packs most of: see `item.rs`).
//!
//! Why regions and not one time per segment: a segment can stay open for a
//! long time while writes trickle in, and a segment in the main queue takes
//! in survivors written at any time. With one time per segment an item
//! written late carried the segment's first time, and once eviction moved
//! it elsewhere it made that segment look as old as that time, for as long
//! as it lived (`age` stayed old after every old item was deleted).
//!
//! With more distinct times than [`REGIONS`], two neighbouring regions are
//! merged: first a region with nothing live (no time is lost), else the two
//! whose times are closest, keeping the older time. A time can therefore
//! only be overstated (an item reads as older than it is), never
//! understated, and only by the gap between the merged times.

use crate::Time;

/// Regions per segment: 4 × 12 bytes, per segment (never per item).
pub const REGIONS: usize = 4;

#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Region {
    /// Offset of the first item of the region.
    from: u32,
    /// When its items were written (the oldest of them, after a merge).
    time: Time,
    /// Its items still live.
    live: u32,
}

/// The write times of a segment's items (see the module docs).
#[derive(Clone, Default, Debug)]
pub struct WriteTimes {
    r: [Region; REGIONS],
    n: u8,
}

impl WriteTimes {
    /// A live item written at `time` was placed at `off`, after every item
    /// placed before it (offsets only grow while a segment is written).
    pub fn wrote(&mut self, off: u32, time: Time) {
        let n = self.n as usize;
        if n > 0 && self.r[n - 1].time == time {
            self.r[n - 1].live += 1;
            return;
        }
        debug_assert!(n == 0 || off >= self.r[n - 1].from, "{off} before {:?}", self.r[n - 1]);
        if n == REGIONS {
            self.merge_one();
        }
        let n = self.n as usize;
        self.r[n] = Region { from: off, time, live: 1 };
        self.n += 1;
    }

    /// The item at `off` is no longer live here.
    pub fn gone(&mut self, off: u32) {
        let i = self.region(off);
        debug_assert!(self.r[i].live > 0, "{off}: {self:?}");
        self.r[i].live = self.r[i].live.saturating_sub(1);
    }

    /// When the item at `off` was written (or earlier, see the module docs).
    pub fn time_at(&self, off: u32) -> Time {
        self.r[self.region(off)].time
    }

    /// The write time of the oldest live item, if any is live.
    pub fn oldest_live(&self) -> Option<Time> {
        self.r[..self.n as usize].iter().filter(|r| r.live > 0).map(|r| r.time).min()
    }

    /// The live items counted here (equal to the segment's `live_items`).
    #[cfg(test)]
    pub fn live(&self) -> u32 {
        self.r[..self.n as usize].iter().map(|r| r.live).sum()
    }

    /// The region holding offset `off`: the last that starts at or before it.
    fn region(&self, off: u32) -> usize {
        let n = self.n as usize;
        (1..n).rev().find(|&i| self.r[i].from <= off).unwrap_or(0)
    }

    /// Makes room for one more region: drops one holding nothing live (its
    /// offsets fall to a neighbour; no live item's time changes), else
    /// merges the two neighbours whose times are closest, keeping the older.
    fn merge_one(&mut self) {
        let n = self.n as usize;
        if let Some(i) = (0..n).find(|&i| self.r[i].live == 0) {
            if i == 0 {
                self.r[1].from = self.r[0].from;
            }
            self.r.copy_within(i + 1..n, i);
        } else {
            let i = (0..n - 1).min_by_key(|&i| self.r[i].time.abs_diff(self.r[i + 1].time)).unwrap_or(0);
            let (a, b) = (self.r[i], self.r[i + 1]);
            self.r[i] = Region { from: a.from, time: a.time.min(b.time), live: a.live + b.live };
            self.r.copy_within(i + 2..n, i + 1);
        }
        self.n -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_time_per_region() {
        let mut w = WriteTimes::default();
        assert_eq!(w.oldest_live(), None);
        w.wrote(0, 10);
        w.wrote(100, 10);
        w.wrote(200, 50);
        assert_eq!((w.time_at(0), w.time_at(150), w.time_at(200), w.time_at(9999)), (10, 10, 50, 50));
        assert_eq!(w.oldest_live(), Some(10));
        w.gone(0);
        assert_eq!(w.oldest_live(), Some(10));
        w.gone(100);
        assert_eq!(w.oldest_live(), Some(50), "only the item written at 50 is left");
        assert_eq!(w.live(), 1);
        w.gone(200);
        assert_eq!(w.oldest_live(), None);
    }

    #[test]
    fn a_dead_region_is_merged_away_first() {
        let mut w = WriteTimes::default();
        for (i, t) in [10, 11, 30, 31].into_iter().enumerate() {
            w.wrote(i as u32 * 100, t);
        }
        w.gone(200); // the item written at 30
        w.wrote(400, 60);
        assert_eq!(w.n as usize, REGIONS);
        assert_eq!([0, 100, 300, 400].map(|o| w.time_at(o)), [10, 11, 31, 60], "no live time changed");
        assert_eq!(w.live(), 4);
    }

    #[test]
    fn the_closest_times_are_merged_keeping_the_older() {
        let mut w = WriteTimes::default();
        for (i, t) in [10, 50, 52, 90, 200].into_iter().enumerate() {
            w.wrote(i as u32 * 100, t);
        }
        assert_eq!([0, 100, 200, 300, 400].map(|o| w.time_at(o)), [10, 50, 50, 90, 200]);
        assert_eq!(w.live(), 5);
        w.gone(100);
        w.gone(0);
        assert_eq!(w.oldest_live(), Some(50));
    }

    #[test]
    fn moved_in_items_keep_older_times_out_of_order() {
        // A main-queue segment takes survivors written at any time.
        let mut w = WriteTimes::default();
        for (i, t) in [40, 10, 45, 12, 41].into_iter().enumerate() {
            w.wrote(i as u32 * 100, t);
        }
        // Full at 41: of the neighbours' gaps (40|10 = 30, 10|45 = 35,
        // 45|12 = 33), 40 and 10 are closest and merge, keeping 10 (so the
        // item written at 40 reads as older, never younger).
        assert_eq!([0, 100, 200, 300, 400].map(|o| w.time_at(o)), [10, 10, 45, 12, 41]);
        w.gone(0);
        w.gone(100);
        assert_eq!(w.oldest_live(), Some(12));
        w.gone(300);
        assert_eq!(w.oldest_live(), Some(41));
        assert_eq!(w.live(), 2);
    }
}
