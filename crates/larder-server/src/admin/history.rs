//! The dashboard's history: a fixed ring of samples, one every
//! [`INTERVAL`] ([`CAPACITY`] of them: 15 minutes), taken by a small thread
//! of the admin listener so that charts have a past when the page opens.
//!
//! A sample is a unix time in milliseconds and [`FIELDS`] `f32` figures:
//! rates per second over the interval (from the differences of the
//! server's running totals), levels (memory, items, connections) and the
//! latency percentiles of the requests of that interval (the difference of
//! two merged histograms). `f32` keeps 7 significant digits, plenty for a
//! chart. Memory: `CAPACITY x size_of::<Sample>()` = 450 x 96 = 43,200
//! bytes, allocated once at start ([`History::heap_bytes`]; a unit test
//! pins the figure the README states).
//!
//! The sampler reads what `/metrics` reads: per-worker counters (relaxed
//! atomics), the store's figures (each shard lock briefly), the latency
//! histograms (atomics). It never touches a per-key structure.

use crate::state::server::Server;
use crate::counters::Totals;
use larder_observe::latency::LatencySnapshot;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Time between samples.
pub const INTERVAL: Duration = Duration::from_secs(2);
/// Samples kept: 450 x 2 s = 15 minutes.
pub const CAPACITY: usize = 450;

/// The figures of a sample, in order (the names `/api/v1/history` lists).
pub const FIELDS: [&str; 22] = [
    "get_per_s",
    "set_per_s",
    "delete_per_s",
    "incr_decr_per_s",
    "touch_per_s",
    "meta_per_s",
    "hits_per_s",
    "misses_per_s",
    "bytes_read_per_s",
    "bytes_written_per_s",
    "evictions_per_s",
    "reclaimed_per_s",
    "items_bytes",
    "index_bytes",
    "dead_bytes",
    "conn_buffer_bytes",
    "curr_items",
    "curr_connections",
    "p50_us",
    "p99_us",
    "p999_us",
    "grace_hits_per_s",
];

/// One point of the history.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub unix_ms: u64,
    pub v: [f32; FIELDS.len()],
}

/// The ring (shared by the sampler and the HTTP handler).
pub struct History {
    ring: Mutex<VecDeque<Sample>>,
    capacity: usize,
}

impl History {
    pub fn new(capacity: usize) -> Self {
        History { ring: Mutex::new(VecDeque::with_capacity(capacity)), capacity: capacity.max(1) }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Appends `s`, dropping the oldest sample when full.
    pub fn push(&self, s: Sample) {
        let mut r = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        if r.len() == self.capacity {
            r.pop_front();
        }
        r.push_back(s);
    }

    /// Every sample, oldest first (a copy: the lock is held for a memcpy).
    pub fn samples(&self) -> Vec<Sample> {
        self.ring.lock().unwrap_or_else(|e| e.into_inner()).iter().copied().collect()
    }

    pub fn latest(&self) -> Option<Sample> {
        self.ring.lock().unwrap_or_else(|e| e.into_inner()).back().copied()
    }

    /// Bytes the ring holds (fixed from the start).
    pub fn heap_bytes(&self) -> usize {
        self.ring.lock().unwrap_or_else(|e| e.into_inner()).capacity() * std::mem::size_of::<Sample>()
    }
}

/// The running totals a sample is the difference of.
struct Mark {
    at: Instant,
    t: Totals,
    evictions: u64,
    reclaimed: u64,
    latency: LatencySnapshot,
}

fn mark(srv: &Server) -> (Mark, larder_store::Stats) {
    let st = srv.store_stats();
    let m = Mark {
        at: Instant::now(),
        t: srv.counters().totals(),
        evictions: st.evictions,
        reclaimed: st.reclaimed,
        latency: srv.insight().observer.latency.snapshot(),
    };
    (m, st)
}

pub fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Percentiles (microseconds) of the requests recorded between two
/// snapshots of the latency histograms.
fn interval_quantiles(prev: &LatencySnapshot, cur: &LatencySnapshot) -> [f32; 3] {
    let counts: Vec<u64> = cur.counts.iter().zip(&prev.counts).map(|(c, p)| c.saturating_sub(*p)).collect();
    let d = LatencySnapshot { count: counts.iter().sum(), counts, sum_ns: cur.sum_ns.wrapping_sub(prev.sum_ns) };
    [0.5, 0.99, 0.999].map(|q| d.quantile(q) as f32 / 1000.0)
}

fn sample(srv: &Server, prev: &Mark, cur: &Mark, st: &larder_store::Stats) -> Sample {
    let dt = cur.at.duration_since(prev.at).as_secs_f64().max(1e-3);
    // After `stats reset` the totals restart below the mark: a rate of 0.
    let rate = |c: u64, p: u64| (c.saturating_sub(p) as f64 / dt) as f32;
    let (a, b) = (&cur.t, &prev.t);
    let (read_bufs, write_bufs) = srv.conns().budget.buffer_bytes();
    let [p50, p99, p999] = interval_quantiles(&prev.latency, &cur.latency);
    use std::sync::atomic::Ordering::Relaxed;
    let v = [
        rate(a.cmd_get, b.cmd_get),
        rate(a.cmd_set, b.cmd_set),
        rate(a.delete_hits + a.delete_misses, b.delete_hits + b.delete_misses),
        rate(a.incr_hits + a.incr_misses + a.decr_hits + a.decr_misses, b.incr_hits + b.incr_misses + b.decr_hits + b.decr_misses),
        rate(a.cmd_touch, b.cmd_touch),
        rate(a.cmd_meta, b.cmd_meta),
        rate(a.get_hits, b.get_hits),
        rate(a.get_misses, b.get_misses),
        rate(a.bytes_read, b.bytes_read),
        rate(a.bytes_written, b.bytes_written),
        rate(cur.evictions, prev.evictions),
        rate(cur.reclaimed, prev.reclaimed),
        st.bytes as f32,
        st.index_bytes as f32,
        st.bytes_dead as f32,
        (read_bufs + write_bufs) as f32,
        st.curr_items as f32,
        srv.counters().conns.curr_connections.load(Relaxed) as f32,
        p50,
        p99,
        p999,
        rate(a.grace_hits, b.grace_hits),
    ];
    Sample { unix_ms: unix_ms(), v }
}

/// Start the sampler thread: one sample every [`INTERVAL`] until the server
/// stops.
pub fn spawn(srv: Arc<Server>, history: Arc<History>) -> Result<(), String> {
    std::thread::Builder::new()
        .name("larder-history".into())
        .spawn(move || {
            let (mut prev, _) = mark(&srv);
            let mut next = Instant::now() + INTERVAL;
            while !srv.stopping() {
                let now = Instant::now();
                if now < next {
                    // Short naps, so that a stopping server is not held up.
                    std::thread::sleep((next - now).min(Duration::from_millis(200)));
                    continue;
                }
                next += INTERVAL;
                if next < now {
                    next = now + INTERVAL; // suspended for a while: no catch-up burst
                }
                let (cur, st) = mark(&srv);
                history.push(sample(&srv, &prev, &cur, &st));
                prev = cur;
            }
        })
        .map(|_| ())
        .map_err(|e| format!("larder: cannot start the history thread: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_is_capped_and_keeps_the_newest() {
        let h = History::new(5);
        for i in 0..12u64 {
            h.push(Sample { unix_ms: i, v: [i as f32; FIELDS.len()] });
        }
        let s = h.samples();
        assert_eq!(s.len(), 5);
        assert_eq!(s.iter().map(|s| s.unix_ms).collect::<Vec<_>>(), vec![7, 8, 9, 10, 11]);
        assert_eq!(h.latest().unwrap().unix_ms, 11);
        assert!(h.heap_bytes() >= 5 * std::mem::size_of::<Sample>());
    }

    /// The figure README's "Dashboard" section states.
    #[test]
    fn history_memory_is_what_the_readme_says() {
        assert_eq!(std::mem::size_of::<Sample>(), 96);
        let h = History::new(CAPACITY);
        assert_eq!(CAPACITY * std::mem::size_of::<Sample>(), 43_200);
        // VecDeque may round its buffer up; never by more than a few slots.
        assert!(h.heap_bytes() >= 43_200 && h.heap_bytes() < 44_000, "{}", h.heap_bytes());
        assert_eq!(CAPACITY as u64 * INTERVAL.as_secs(), 15 * 60);
    }
}
