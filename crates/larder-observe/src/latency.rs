//! Request-handling latency histograms: cheap per worker, fixed memory,
//! mergeable.
//!
//! # Buckets: log-linear
//!
//! Values are nanoseconds. Values up to 16 ns get one bucket each; above,
//! every power of two `[2^e, 2^(e+1))` is split into 8 equal sub-buckets
//! (the 3 bits after the leading one), the scheme of HdrHistogram with 3
//! significant bits. A bucket's width is at most 1/8 of its lower bound, so
//! any quantile read from the histogram is within 12.5% of the true value.
//! Values are clamped at 2^40 ns (about 18 minutes). That is
//! [`NBUCKETS`] = 312 counters, 2.5 KiB per histogram, whatever the traffic.
//!
//! Buckets hold `(lower, upper]` intervals (a value `v` is filed by `v - 1`),
//! so the cumulative count at a bucket edge is exactly "how many requests
//! took at most that long", which is what a Prometheus `le` bucket means;
//! [`PROMETHEUS_BOUNDS_NS`] are powers of two, which are bucket edges, so the
//! exported buckets are exact, not interpolated.
//!
//! # Concurrency
//!
//! [`Latency`] is the shared registry; each worker takes a
//! [`LatencyWorker`] and calls [`LatencyWorker::record`] with `&mut self`:
//! the counters are atomics written only by their owner with a plain load +
//! store (no locked instruction, no shared cache line); [`Latency::snapshot`]
//! sums all workers with relaxed loads at report time. Use one `Latency` per
//! series (e.g. one for `get`, one for `set`, one for everything else).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::prometheus::Exposition;

const LINEAR: usize = 16;
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
/// The largest exponent kept; larger values are clamped to `2^(MAX_EXP+1) - 1`.
const MAX_EXP: u32 = 40;
/// Number of buckets of every histogram.
pub const NBUCKETS: usize = LINEAR + (MAX_EXP as usize - 3) * SUB;
/// Prometheus `le` bounds used by [`LatencySnapshot::write_prometheus`]:
/// 2^10 ns (~1 us) to 2^33 ns (~8.6 s), each a bucket edge.
pub const PROMETHEUS_BOUNDS_NS: [u64; 24] = {
    let mut a = [0u64; 24];
    let mut i = 0;
    while i < 24 {
        a[i] = 1u64 << (10 + i);
        i += 1;
    }
    a
};

/// Bucket index of `v` (filed as `v - 1`, see the module docs).
#[inline]
pub fn bucket_of(v: u64) -> usize {
    let x = v.saturating_sub(1).min((1u64 << (MAX_EXP + 1)) - 1);
    if x < LINEAR as u64 {
        return x as usize;
    }
    let e = 63 - x.leading_zeros();
    let m = ((x >> (e - SUB_BITS)) as usize) & (SUB - 1);
    LINEAR + (e as usize - 4) * SUB + m
}

/// The largest value filed in bucket `i` (inclusive upper edge).
pub fn bucket_upper(i: usize) -> u64 {
    if i < LINEAR {
        return i as u64 + 1;
    }
    let e = 4 + (i - LINEAR) / SUB;
    let m = (i - LINEAR) % SUB;
    ((SUB + m + 1) as u64) << (e as u32 - SUB_BITS)
}

struct Buckets {
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
    in_use: AtomicBool,
}

/// Shared registry of one latency series.
#[derive(Clone, Default)]
pub struct Latency {
    workers: Arc<Mutex<Vec<Arc<Buckets>>>>,
}

/// One worker's histogram (write with `&mut self`).
pub struct LatencyWorker {
    b: Arc<Buckets>,
}

/// Merged counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencySnapshot {
    pub counts: Vec<u64>,
    pub count: u64,
    pub sum_ns: u64,
}

impl Latency {
    pub fn new() -> Self {
        Self::default()
    }

    /// A histogram for one worker thread (reuses a dropped worker's).
    pub fn worker(&self) -> LatencyWorker {
        let mut w = self.workers.lock().unwrap();
        for b in w.iter() {
            if b.in_use.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                return LatencyWorker { b: b.clone() };
            }
        }
        let b = Arc::new(Buckets {
            counts: (0..NBUCKETS).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            in_use: AtomicBool::new(true),
        });
        w.push(b.clone());
        LatencyWorker { b }
    }

    /// All workers merged.
    pub fn snapshot(&self) -> LatencySnapshot {
        let mut s = LatencySnapshot { counts: vec![0; NBUCKETS], count: 0, sum_ns: 0 };
        for b in self.workers.lock().unwrap().iter() {
            for (i, c) in b.counts.iter().enumerate() {
                let v = c.load(Ordering::Relaxed);
                s.counts[i] += v;
                s.count += v;
            }
            s.sum_ns = s.sum_ns.wrapping_add(b.sum.load(Ordering::Relaxed));
        }
        s
    }

    pub fn heap_bytes(&self) -> usize {
        let n = self.workers.lock().unwrap().len();
        n * (NBUCKETS * 8 + std::mem::size_of::<Buckets>())
    }
}

impl LatencyWorker {
    /// Records one request that took `ns` nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Records `n` requests that took `ns` nanoseconds each: the same as
    /// `n` calls of [`record`](Self::record), in one counter update.
    #[inline]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        let c = &self.b.counts[bucket_of(ns)];
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        let s = &self.b.sum;
        s.store(s.load(Ordering::Relaxed).wrapping_add(ns.wrapping_mul(n)), Ordering::Relaxed);
    }
}

impl Drop for LatencyWorker {
    fn drop(&mut self) {
        self.b.in_use.store(false, Ordering::Release);
    }
}

impl LatencySnapshot {
    /// The value at quantile `q` (0..=1): the upper edge of the bucket
    /// holding it (an overestimate by at most 12.5%). 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut acc = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= rank {
                return bucket_upper(i);
            }
        }
        bucket_upper(NBUCKETS - 1)
    }

    /// How many values were `<= ns` (exact when `ns` is a bucket edge, e.g.
    /// a power of two).
    pub fn count_at_most(&self, ns: u64) -> u64 {
        self.counts.iter().enumerate().take_while(|(i, _)| bucket_upper(*i) <= ns).map(|(_, c)| c).sum()
    }

    /// `(le in seconds, cumulative count)` at [`PROMETHEUS_BOUNDS_NS`].
    pub fn prometheus_buckets(&self) -> Vec<(f64, u64)> {
        let mut out = Vec::with_capacity(PROMETHEUS_BOUNDS_NS.len());
        let mut acc = 0;
        let mut i = 0;
        for &b in PROMETHEUS_BOUNDS_NS.iter() {
            while i < NBUCKETS && bucket_upper(i) <= b {
                acc += self.counts[i];
                i += 1;
            }
            out.push((b as f64 / 1e9, acc));
        }
        out
    }

    /// One histogram series (declare the family first, type histogram,
    /// name ending in `_seconds`).
    pub fn write_prometheus(&self, e: &mut Exposition, name: &str, labels: &[(&str, &str)]) {
        e.histogram(name, labels, &self.prometheus_buckets(), self.sum_ns as f64 / 1e9, self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_edges() {
        for v in 0..100_000u64 {
            let i = bucket_of(v);
            assert!(v <= bucket_upper(i), "{v} {i}");
            if i > 0 {
                assert!(v > bucket_upper(i - 1), "{v} {i}");
            }
        }
        assert_eq!(bucket_of(u64::MAX), NBUCKETS - 1);
        for &b in PROMETHEUS_BOUNDS_NS.iter() {
            assert_eq!(bucket_upper(bucket_of(b)), b);
        }
        // relative width <= 1/8
        for i in LINEAR..NBUCKETS {
            let lo = bucket_upper(i - 1);
            let hi = bucket_upper(i);
            assert!((hi - lo) * 8 <= lo, "{i}: {lo}..{hi}");
        }
    }

    #[test]
    fn merge_and_quantiles() {
        let l = Latency::new();
        let mut a = l.worker();
        let mut b = l.worker();
        for _ in 0..90 {
            a.record(1000);
        }
        b.record_n(1_000_000, 10);
        let s = l.snapshot();
        assert_eq!(s.count, 100);
        assert_eq!(s.sum_ns, 90 * 1000 + 10 * 1_000_000);
        let p50 = s.quantile(0.5);
        assert!((1000..=1125).contains(&p50), "{p50}");
        let p99 = s.quantile(0.99);
        assert!((1_000_000..=1_125_000).contains(&p99), "{p99}");
        assert_eq!(s.count_at_most(1024), 90);
        let pb = s.prometheus_buckets();
        assert_eq!(pb[0], (1024e-9, 90));
        assert_eq!(pb.last().unwrap().1, 100);
        assert_eq!(l.heap_bytes(), 2 * (NBUCKETS * 8 + std::mem::size_of::<Buckets>()));
    }
}
