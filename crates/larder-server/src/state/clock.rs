//! The server clock and memcached's expiry-time rules.
//!
//! Like memcached, time inside the server is "relative time": whole seconds
//! since a moment a little before the process started, taken from a monotonic
//! clock so wall-clock jumps do not expire (or resurrect) items. Protocol
//! exptimes are converted with [`Clock::expiry`]: 0 = never, up to 30 days =
//! relative seconds, larger = a Unix timestamp, negative = already expired.
//!
//! Tests may shift the clock with memcached's debug `debugtime <seconds>`
//! command (only when the server was started with `-o debugtime`).

use larder_store::Time;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Largest relative exptime; beyond it an exptime is a Unix timestamp.
const REALTIME_MAXDELTA: i64 = 60 * 60 * 24 * 30;

/// memcached starts its relative clock this far in the past, so that a
/// relative time of 0 never occurs for a live item and 1 means "expired".
const START_OFFSET: i64 = 2;

pub struct Clock {
    started: Instant,
    /// Unix time corresponding to relative time 0.
    process_started: i64,
    /// Seconds added by `debugtime`.
    shift: AtomicI64,
}

impl Clock {
    pub fn new() -> Clock {
        let unix = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
        Clock {
            started: Instant::now(),
            process_started: unix - START_OFFSET,
            shift: AtomicI64::new(0),
        }
    }

    /// The current relative time in seconds.
    pub fn now(&self) -> Time {
        let secs = self.started.elapsed().as_secs() as i64 + START_OFFSET + self.shift.load(Ordering::Relaxed);
        secs.clamp(1, u32::MAX as i64) as Time
    }

    /// Seconds since the server started.
    pub fn uptime(&self) -> u64 {
        (self.now() as i64 - START_OFFSET).max(0) as u64
    }

    /// Unix time as the server sees it (shifted by `debugtime`).
    pub fn unix_now(&self) -> i64 {
        self.process_started + self.now() as i64
    }

    /// Convert a protocol exptime to an absolute relative time (0 = never).
    pub fn expiry(&self, exptime: i64) -> Time {
        if exptime == 0 {
            return 0;
        }
        if exptime < 0 {
            return 1;
        }
        if exptime > REALTIME_MAXDELTA {
            if exptime <= self.process_started {
                return 1;
            }
            return (exptime - self.process_started).min(u32::MAX as i64) as Time;
        }
        (exptime + self.now() as i64).min(u32::MAX as i64) as Time
    }

    /// `debugtime <delta>`: move the clock by `delta` seconds.
    pub fn shift(&self, delta: i64) {
        self.shift.fetch_add(delta, Ordering::Relaxed);
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_follows_memcached_rules() {
        let c = Clock::new();
        let now = c.now();
        assert_eq!(c.expiry(0), 0);
        assert_eq!(c.expiry(-1), 1);
        assert_eq!(c.expiry(10), now + 10);
        assert_eq!(c.expiry(REALTIME_MAXDELTA), now + REALTIME_MAXDELTA as u32);
        // An absolute time in the past is already expired.
        assert_eq!(c.expiry(REALTIME_MAXDELTA + 1), 1);
        // An absolute time 100 s from now.
        let abs = c.unix_now() + 100;
        assert_eq!(c.expiry(abs), now + 100);
    }

    #[test]
    fn debugtime_shifts() {
        let c = Clock::new();
        let t0 = c.now();
        c.shift(100);
        assert!(c.now() >= t0 + 100 && c.now() <= t0 + 101);
    }
}
