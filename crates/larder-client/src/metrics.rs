//! The client's counters: near hits, server hits, misses, loads,
//! invalidations (IV lines applied), flushes (whole near cache dropped),
//! retries (reads repeated on another connection after a pooled one failed),
//! lease_lost (a `get_or_load` whose CAS-gated store lost to another write).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Default)]
pub struct Metrics {
    pub near_hits: AtomicU64,
    pub server_hits: AtomicU64,
    pub misses: AtomicU64,
    pub loads: AtomicU64,
    pub invalidations: AtomicU64,
    pub flushes: AtomicU64,
    pub retries: AtomicU64,
    pub lease_lost: AtomicU64,
}

/// A copy of the counters at one moment.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MetricsSnapshot {
    pub near_hits: u64,
    pub server_hits: u64,
    pub misses: u64,
    pub loads: u64,
    pub invalidations: u64,
    pub flushes: u64,
    pub retries: u64,
    pub lease_lost: u64,
}

impl Metrics {
    pub fn snapshot(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            near_hits: self.near_hits.load(Relaxed),
            server_hits: self.server_hits.load(Relaxed),
            misses: self.misses.load(Relaxed),
            loads: self.loads.load(Relaxed),
            invalidations: self.invalidations.load(Relaxed),
            flushes: self.flushes.load(Relaxed),
            retries: self.retries.load(Relaxed),
            lease_lost: self.lease_lost.load(Relaxed),
        }
    }
}

pub fn inc(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}
