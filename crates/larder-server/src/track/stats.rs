//! The tracker's `stats` figures (names as in docs/near-cache.md). The
//! counters are shared atomics moved only on the slow path (somebody
//! subscribes), never by a server without subscribers. Plain `std` atomics
//! even in the loom build: they are reports, not part of any protocol.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

#[derive(Default)]
pub struct Counters {
    pub subscribers: AtomicU64,
    pub keys: AtomicU64,
    pub bytes: AtomicU64,
    pub registrations: AtomicU64,
    pub invalidations: AtomicU64,
    pub evictions: AtomicU64,
    pub lost: AtomicU64,
    pub flushes: AtomicU64,
}

/// A snapshot for `stats` (and `/metrics`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrackStats {
    /// Subscribers now (gauge).
    pub track_subscribers: u64,
    /// Keys in the tracking table now (gauge).
    pub track_keys: u64,
    /// Bytes the table counts now: key bytes + entry overhead (gauge).
    pub track_bytes: u64,
    /// `-o track_table_mb` in bytes.
    pub track_table_limit: u64,
    /// (key, sid) registrations made.
    pub track_registrations: u64,
    /// `IV` lines queued.
    pub track_invalidations: u64,
    /// Entries evicted from the full table (each sent `IV`).
    pub track_evictions: u64,
    /// Subscriber overflows (`LOST` queued).
    pub track_lost: u64,
    /// `IA` lines queued.
    pub track_flushes: u64,
    /// Bytes the subscribers' queues hold now, charged to the connection
    /// budget (gauge).
    pub track_queue_bytes: u64,
}

impl TrackStats {
    /// `(name, value)` in the order `stats` prints them.
    pub fn pairs(&self) -> [(&'static str, u64); 10] {
        [
            ("larder_track_subscribers", self.track_subscribers),
            ("larder_track_keys", self.track_keys),
            ("larder_track_bytes", self.track_bytes),
            ("larder_track_table_limit", self.track_table_limit),
            ("larder_track_registrations", self.track_registrations),
            ("larder_track_invalidations", self.track_invalidations),
            ("larder_track_evictions", self.track_evictions),
            ("larder_track_lost", self.track_lost),
            ("larder_track_flushes", self.track_flushes),
            ("larder_track_queue_bytes", self.track_queue_bytes),
        ]
    }
}

impl Counters {
    pub fn snapshot(&self, table_limit: usize) -> TrackStats {
        TrackStats {
            track_subscribers: self.subscribers.load(Relaxed),
            track_keys: self.keys.load(Relaxed),
            track_bytes: self.bytes.load(Relaxed),
            track_table_limit: table_limit as u64,
            track_registrations: self.registrations.load(Relaxed),
            track_invalidations: self.invalidations.load(Relaxed),
            track_evictions: self.evictions.load(Relaxed),
            track_lost: self.lost.load(Relaxed),
            track_flushes: self.flushes.load(Relaxed),
            track_queue_bytes: 0,
        }
    }
}

#[inline]
pub fn add(c: &AtomicU64, n: u64) {
    if n > 0 {
        c.fetch_add(n, Relaxed);
    }
}

#[inline]
pub fn sub(c: &AtomicU64, n: u64) {
    if n > 0 {
        c.fetch_sub(n, Relaxed);
    }
}
