//! Grace mode: stampede protection for clients that speak only get/set.
//!
//! With `-o grace=30s` (or per prefix, `-o grace_prefix=page:30s`) an
//! expired item stays readable for the grace period. The first `get` after
//! expiry is a miss: that client recomputes and `set`s, exactly as it always
//! did. Every other `get` meanwhile receives the old value at once. If the
//! winner has not set a fresh value within the lease (`-o grace_lease=5s`),
//! the next getter becomes the winner. A `delete` ends grace at once. No
//! request ever waits for another.
//!
//! Who won is kept in a fixed table of [`SLOTS`] atomic words indexed by a
//! hash of the key: (16-bit key tag, 32-bit time of the win). No allocation,
//! no lock. Two keys sharing a slot can only cause an extra winner (one more
//! recompute), never a wrong value: values always come from the store.

use crate::stampede::keyhash::KeyHash;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const SLOTS: usize = 4096;

/// Grace settings: a default and per-prefix overrides.
#[derive(Clone, Debug, Default)]
pub struct GraceConfig {
    pub default: u32,
    pub prefixes: Vec<(Vec<u8>, u32)>,
    /// How long a winner has to refill before another getter may win.
    pub lease: u32,
}

impl GraceConfig {
    pub fn enabled(&self) -> bool {
        self.default > 0 || !self.prefixes.is_empty()
    }

    /// The longest grace any key gets: expired items stay readable that
    /// long, so nothing younger than that may be reclaimed ahead of need.
    pub fn longest(&self) -> u32 {
        self.prefixes.iter().map(|&(_, g)| g).fold(self.default, u32::max)
    }

    /// Grace seconds for `key`: the longest matching prefix, else the default.
    pub fn for_key(&self, key: &[u8]) -> u32 {
        let mut best: Option<(usize, u32)> = None;
        for (p, secs) in &self.prefixes {
            if key.starts_with(p) && best.is_none_or(|(len, _)| p.len() > len) {
                best = Some((p.len(), *secs));
            }
        }
        best.map_or(self.default, |(_, s)| s)
    }
}

/// What a getter of an item in grace should do.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Serve the stale value; someone else is refilling.
    Serve,
    /// Report a miss: this caller refills.
    Win,
    /// Report a miss: the previous winner ran out of time, this one refills.
    WinAfterTimeout,
}

pub struct Winners {
    slots: Box<[AtomicU64]>,
    hash: KeyHash,
}

impl Default for Winners {
    fn default() -> Self {
        Winners::new()
    }
}

impl Winners {
    pub fn new() -> Winners {
        Winners { slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(), hash: KeyHash::new() }
    }

    fn slot(&self, key: &[u8]) -> (&AtomicU64, u64) {
        let h = self.hash.hash(key);
        let tag = (h >> 48) | 1; // never 0, so an empty slot matches no key
        (&self.slots[(h as usize) & (SLOTS - 1)], tag)
    }

    /// A getter found `key` expired but in grace at `now`.
    pub fn on_stale_read(&self, key: &[u8], now: u32, lease: u32) -> Verdict {
        let (slot, tag) = self.slot(key);
        let cur = slot.load(Relaxed);
        let (cur_tag, won_at) = (cur >> 32, cur as u32);
        let mine = cur_tag == tag;
        if mine && now < won_at.saturating_add(lease) {
            return Verdict::Serve;
        }
        match slot.compare_exchange(cur, (tag << 32) | now as u64, Relaxed, Relaxed) {
            Ok(_) if mine => Verdict::WinAfterTimeout,
            Ok(_) => Verdict::Win,
            // Another getter won between our load and exchange.
            Err(_) => Verdict::Serve,
        }
    }

    /// A fresh value was stored (or the key deleted): forget its winner so
    /// the next expiry starts a new round at once.
    pub fn on_write(&self, key: &[u8]) {
        let (slot, tag) = self.slot(key);
        let cur = slot.load(Relaxed);
        if cur >> 32 == tag {
            let _ = slot.compare_exchange(cur, 0, Relaxed, Relaxed);
        }
    }
}

/// Parse a duration: `30`, `30s`, `2m`, `1h`.
pub fn parse_duration(v: &str) -> Option<u32> {
    let (digits, mult) = match v.as_bytes().last()? {
        b's' => (&v[..v.len() - 1], 1),
        b'm' => (&v[..v.len() - 1], 60),
        b'h' => (&v[..v.len() - 1], 3600),
        _ => (v, 1),
    };
    digits.parse::<u32>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_winner_then_stale_then_a_new_winner_after_the_lease() {
        let w = Winners::new();
        assert_eq!(w.on_stale_read(b"page:1", 100, 5), Verdict::Win);
        assert_eq!(w.on_stale_read(b"page:1", 101, 5), Verdict::Serve);
        assert_eq!(w.on_stale_read(b"page:1", 104, 5), Verdict::Serve);
        assert_eq!(w.on_stale_read(b"page:1", 105, 5), Verdict::WinAfterTimeout);
        assert_eq!(w.on_stale_read(b"page:1", 106, 5), Verdict::Serve);
        // A write ends the round: the next expiry has a new first getter.
        w.on_write(b"page:1");
        assert_eq!(w.on_stale_read(b"page:1", 107, 5), Verdict::Win);
    }

    #[test]
    fn prefixes_pick_the_longest_match() {
        let g = GraceConfig { default: 10, prefixes: vec![(b"page:".to_vec(), 30), (b"page:home".to_vec(), 60)], lease: 5 };
        assert_eq!(g.for_key(b"user:1"), 10);
        assert_eq!(g.for_key(b"page:1"), 30);
        assert_eq!(g.for_key(b"page:home"), 60);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30"), Some(30));
        assert_eq!(parse_duration("30s"), Some(30));
        assert_eq!(parse_duration("2m"), Some(120));
        assert_eq!(parse_duration("x"), None);
    }
}
