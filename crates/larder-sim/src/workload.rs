//! The synthetic scan-resistance workload: a hot Zipf-distributed key set,
//! then the same hot stream interleaved with a long scan of one-hit keys.
//!
//! Phase 1 (warm-up) draws `warm` requests from Zipf(`alpha`) over `hot`
//! keys. Phase 2 draws `measure` more hot requests and, after each one,
//! `scan_per_hot` keys of a scan that never repeats (a batch job walking a
//! table, a crawler). The figure of merit is the hit ratio of the *hot*
//! requests in phase 2: a scan-resistant policy keeps it near the no-scan
//! value, a recency-only policy (FIFO, LRU) lets the scan flush the hot set.
//! Scan keys are disjoint from hot keys (they start at 1<<31).

use crate::util::Rng;

#[derive(Clone, Debug)]
pub struct ScanWorkload {
    pub hot: usize,
    pub alpha: f64,
    pub warm: usize,
    pub measure: usize,
    pub scan_per_hot: usize,
    pub seed: u64,
}

impl Default for ScanWorkload {
    fn default() -> Self {
        ScanWorkload { hot: 10_000, alpha: 1.0, warm: 200_000, measure: 200_000, scan_per_hot: 2, seed: 42 }
    }
}

/// One request of the workload; `measured` marks phase-2 hot requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Req {
    pub key: u32,
    pub measured: bool,
}

/// Zipf sampler over `0..n` by inverse CDF (binary search).
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(n: usize, alpha: f64) -> Zipf {
        let mut cdf = Vec::with_capacity(n);
        let mut sum = 0.0;
        for i in 1..=n {
            sum += 1.0 / (i as f64).powf(alpha);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        Zipf { cdf }
    }

    pub fn sample(&self, rng: &mut Rng) -> u32 {
        let u = rng.next_f64();
        self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1) as u32
    }
}

impl ScanWorkload {
    /// The request stream; with `scan == false`, phase 2 has no scan (the
    /// baseline the scan run is compared with).
    pub fn requests(&self, scan: bool) -> Vec<Req> {
        let z = Zipf::new(self.hot, self.alpha);
        let mut rng = Rng::new(self.seed);
        let mut out = Vec::with_capacity(self.warm + self.measure * (1 + self.scan_per_hot));
        for _ in 0..self.warm {
            out.push(Req { key: z.sample(&mut rng), measured: false });
        }
        let mut next_scan = 1u32 << 31;
        for _ in 0..self.measure {
            out.push(Req { key: z.sample(&mut rng), measured: true });
            if scan {
                for _ in 0..self.scan_per_hot {
                    out.push(Req { key: next_scan, measured: false });
                    next_scan += 1;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_skews_to_low_ranks() {
        let z = Zipf::new(1000, 1.0);
        let mut rng = Rng::new(1);
        let n = 100_000;
        let top10 = (0..n).filter(|_| z.sample(&mut rng) < 10).count() as f64 / n as f64;
        // H(10)/H(1000) = 2.929/7.485 = 0.391
        assert!((top10 - 0.391).abs() < 0.01, "{top10}");
    }

    #[test]
    fn scan_keys_never_repeat_and_are_not_measured() {
        let w = ScanWorkload { hot: 100, warm: 10, measure: 50, scan_per_hot: 3, ..Default::default() };
        let r = w.requests(true);
        assert_eq!(r.len(), 10 + 50 * 4);
        let scans: Vec<u32> = r.iter().filter(|q| q.key >= 1 << 31).map(|q| q.key).collect();
        let mut d = scans.clone();
        d.dedup();
        assert_eq!(d.len(), 150);
        assert!(r.iter().filter(|q| q.measured).all(|q| q.key < 100));
        assert_eq!(w.requests(false).len(), 60);
    }
}
