//! Random numbers and the distributions a workload draws from.
//!
//! * [`Rng`]: a small, fast, seedable generator (xoshiro256++ seeded by splitmix64). The load
//!   generator draws several numbers per request, so it must be cheap and allocation free.
//! * [`KeyDist`]: which key a request touches: uniform over the key space, or Zipf with
//!   exponent `s` (rank 1 is the hottest key). Zipf uses Hörmann & Derflinger's
//!   rejection-inversion method, which is O(1) per sample and needs no table, so a key space
//!   of millions of keys costs no memory.
//! * [`SizeDist`]: value sizes: fixed, uniform over a range, or `etc`: the value-size model
//!   fitted to Facebook's ETC pool by Atikoglu et al., "Workload Analysis of a Large-Scale
//!   Key-Value Store" (SIGMETRICS 2012): a generalized Pareto distribution with location
//!   θ = 15 bytes (as mutilate uses it), scale σ = 214.476, shape k = 0.348238. Its mean is
//!   θ + σ/(1-k) ≈ 344 bytes, the median ≈ 15 + σ(2^k - 1)/k ≈ 170 bytes, and the tail is heavy;
//!   samples are clamped to `[1, max]` (max 256 KiB by default, which cuts a fraction of about
//!   4e-7 of the samples).

/// xoshiro256++: fast, good statistical quality, 32 bytes of state.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        Rng { s: [splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x)] }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = (s[0].wrapping_add(s[3])).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n) (n > 0), by multiply-shift (bias is negligible for n << 2^64).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Zipf over ranks 1..=n with exponent s > 0, by rejection-inversion
/// (W. Hörmann, G. Derflinger, "Rejection-inversion to generate variates from monotone
/// discrete distributions", 1996).
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    threshold: f64,
}

impl Zipf {
    pub fn new(n: u64, s: f64) -> Zipf {
        assert!(n >= 1 && s > 0.0, "zipf needs n >= 1 and s > 0");
        let mut z = Zipf { n: n as f64, s, h_integral_x1: 0.0, h_integral_n: 0.0, threshold: 0.0 };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(z.n + 0.5);
        z.threshold = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.s) * log_x) * log_x
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let mut t = x * (1.0 - self.s);
        if t < -1.0 {
            t = -1.0;
        }
        (helper1(t) * x).exp()
    }

    /// A rank in 1..=n; rank 1 is the most frequent.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.threshold || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

/// ln(1+x)/x, stable near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1)/x, stable near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

/// Which key index (0-based) a request uses.
#[derive(Clone, Debug)]
pub enum KeyDist {
    Uniform { n: u64 },
    Zipf(Zipf),
}

impl KeyDist {
    pub fn parse(spec: &str, n: u64) -> Result<KeyDist, String> {
        if spec == "uniform" {
            return Ok(KeyDist::Uniform { n });
        }
        if let Some(s) = spec.strip_prefix("zipf") {
            let s = s.trim_start_matches([':', '=']);
            let s: f64 = if s.is_empty() { 0.99 } else { s.parse().map_err(|_| format!("bad zipf skew {s:?}"))? };
            if s <= 0.0 {
                return Err("zipf skew must be > 0".into());
            }
            return Ok(KeyDist::Zipf(Zipf::new(n, s)));
        }
        Err(format!("unknown key distribution {spec:?} (uniform | zipf:S)"))
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match self {
            KeyDist::Uniform { n } => rng.below(*n),
            KeyDist::Zipf(z) => z.sample(rng) - 1,
        }
    }
}

/// Facebook ETC value sizes (Atikoglu et al. 2012), generalized Pareto parameters.
pub const ETC_LOCATION: f64 = 15.0;
pub const ETC_SCALE: f64 = 214.476;
pub const ETC_SHAPE: f64 = 0.348238;

/// Value sizes in bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    Fixed(usize),
    Uniform { min: usize, max: usize },
    /// Generalized Pareto (ETC-like), clamped to [1, max].
    Etc { max: usize },
}

impl SizeDist {
    /// `100`, `50-500`, `etc` or `etc:MAX`.
    pub fn parse(spec: &str) -> Result<SizeDist, String> {
        let bad = || format!("bad value size {spec:?} (N | MIN-MAX | etc[:MAX])");
        if let Some(rest) = spec.strip_prefix("etc") {
            let max = if rest.is_empty() { 256 * 1024 } else { parse_size(rest.trim_start_matches(':')).ok_or_else(bad)? };
            return Ok(SizeDist::Etc { max });
        }
        if let Some((a, b)) = spec.split_once('-') {
            let (min, max) = (parse_size(a).ok_or_else(bad)?, parse_size(b).ok_or_else(bad)?);
            if min > max || max == 0 {
                return Err(bad());
            }
            return Ok(SizeDist::Uniform { min, max });
        }
        Ok(SizeDist::Fixed(parse_size(spec).ok_or_else(bad)?))
    }

    pub fn max(&self) -> usize {
        match *self {
            SizeDist::Fixed(n) => n,
            SizeDist::Uniform { max, .. } => max,
            SizeDist::Etc { max } => max,
        }
    }

    /// Mean size (for the ETC model: the mean of the clamped distribution, approximately).
    pub fn mean(&self) -> f64 {
        match *self {
            SizeDist::Fixed(n) => n as f64,
            SizeDist::Uniform { min, max } => (min + max) as f64 / 2.0,
            SizeDist::Etc { .. } => ETC_LOCATION + ETC_SCALE / (1.0 - ETC_SHAPE),
        }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> usize {
        match *self {
            SizeDist::Fixed(n) => n,
            SizeDist::Uniform { min, max } => min + rng.below((max - min + 1) as u64) as usize,
            SizeDist::Etc { max } => {
                let u = rng.next_f64();
                let x = ETC_LOCATION + ETC_SCALE * ((1.0 - u).powf(-ETC_SHAPE) - 1.0) / ETC_SHAPE;
                (x as usize).clamp(1, max)
            }
        }
    }
}

/// `123`, `4k`/`4KiB`, `1m`.
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let lower = s.to_ascii_lowercase();
    let (num, mult) = if let Some(n) = lower.strip_suffix("kib").or(lower.strip_suffix('k')) {
        (n.to_string(), 1024)
    } else if let Some(n) = lower.strip_suffix("mib").or(lower.strip_suffix('m')) {
        (n.to_string(), 1024 * 1024)
    } else {
        (lower.clone(), 1)
    };
    num.trim().parse::<usize>().ok().map(|n| n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_below_in_range_and_spread() {
        let mut rng = Rng::new(1);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[rng.below(10) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn zipf_skew_matches_exponent() {
        for &s in &[0.7, 0.99, 1.2] {
            let n = 10_000;
            let z = Zipf::new(n, s);
            let mut rng = Rng::new(42);
            let mut counts = vec![0u64; n as usize + 1];
            let draws = 2_000_000;
            for _ in 0..draws {
                let k = z.sample(&mut rng);
                assert!((1..=n).contains(&k));
                counts[k as usize] += 1;
            }
            // P(1)/P(2) = 2^s and P(1)/P(10) = 10^s.
            let r2 = counts[1] as f64 / counts[2] as f64;
            let r10 = counts[1] as f64 / counts[10] as f64;
            assert!((r2 / 2f64.powf(s) - 1.0).abs() < 0.05, "s={s} r2={r2}");
            assert!((r10 / 10f64.powf(s) - 1.0).abs() < 0.08, "s={s} r10={r10}");
            // Rank 1's share against the exact normalisation constant.
            let h: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
            let p1 = counts[1] as f64 / draws as f64;
            assert!((p1 * h - 1.0).abs() < 0.03, "s={s} p1={p1} expected {}", 1.0 / h);
        }
    }

    #[test]
    fn keydist_zipf_is_zero_based() {
        let d = KeyDist::parse("zipf:1.0", 5).unwrap();
        let mut rng = Rng::new(3);
        let mut seen = [false; 5];
        for _ in 0..10_000 {
            seen[d.sample(&mut rng) as usize] = true;
        }
        assert!(seen.iter().all(|&b| b));
        assert!(KeyDist::parse("zipf:0", 5).is_err());
        assert!(KeyDist::parse("pareto", 5).is_err());
    }

    #[test]
    fn etc_sizes_in_range_and_heavy_tailed() {
        let d = SizeDist::parse("etc").unwrap();
        let mut rng = Rng::new(7);
        let mut sizes: Vec<usize> = (0..200_000).map(|_| d.sample(&mut rng)).collect();
        assert!(sizes.iter().all(|&s| (1..=256 * 1024).contains(&s)));
        sizes.sort_unstable();
        let median = sizes[sizes.len() / 2] as f64;
        let expected_median = ETC_LOCATION + ETC_SCALE * (2f64.powf(ETC_SHAPE) - 1.0) / ETC_SHAPE;
        assert!((median / expected_median - 1.0).abs() < 0.05, "median {median} vs {expected_median}");
        assert!(sizes[0] >= 15, "location is 15 bytes");
        let mean = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
        assert!((mean / d.mean() - 1.0).abs() < 0.1, "mean {mean} vs {}", d.mean());
        // heavy tail: the 99.9th percentile is far above the median.
        assert!(sizes[sizes.len() * 999 / 1000] as f64 > 15.0 * median);
        let capped = SizeDist::parse("etc:1000").unwrap();
        assert!((0..100_000).all(|_| capped.sample(&mut rng) <= 1000));
    }

    #[test]
    fn size_specs() {
        assert_eq!(SizeDist::parse("100").unwrap(), SizeDist::Fixed(100));
        assert_eq!(SizeDist::parse("4k").unwrap(), SizeDist::Fixed(4096));
        assert_eq!(SizeDist::parse("50-500").unwrap(), SizeDist::Uniform { min: 50, max: 500 });
        assert_eq!(SizeDist::parse("1k-16k").unwrap(), SizeDist::Uniform { min: 1024, max: 16384 });
        assert!(SizeDist::parse("500-50").is_err());
        let u = SizeDist::parse("8-40").unwrap();
        let mut rng = Rng::new(9);
        for _ in 0..10_000 {
            let s = u.sample(&mut rng);
            assert!((8..=40).contains(&s));
        }
    }
}
