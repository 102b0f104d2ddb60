//! Per-key value sizes for the byte-capacity comparisons: the traces carry
//! no sizes, so each key draws one, once, from a seeded distribution —
//! exactly as larder-bench's trace scenarios do (same generator, seed and
//! ETC parameters, so a key has the same size in both tools and the
//! simulator's figures line up with the real servers' runs).
//!
//! - `50-500`, `500-5000`: uniform in bytes, inclusive.
//! - `etc`: Facebook's ETC value sizes as fitted by Atikoglu et al.,
//!   *Workload Analysis of a Large-Scale Key-Value Store* (SIGMETRICS 2012):
//!   generalized Pareto, location 15, scale 214.476, shape 0.348238, clamped
//!   to 1 B .. 256 KiB (mean ≈ 344 B, median ≈ 170 B, heavy tail).
//! - a number: every key that size.

/// Seed shared with larder-bench (`trace::SIZE_SEED`).
const SIZE_SEED: u64 = 0x005e_ed0f_5173;
const ETC_LOCATION: f64 = 15.0;
const ETC_SCALE: f64 = 214.476;
const ETC_SHAPE: f64 = 0.348238;
const ETC_MAX: usize = 256 * 1024;

/// A value-size distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sizes {
    Fixed(usize),
    Uniform(usize, usize),
    Etc,
}

impl Sizes {
    /// `4000`, `50-500` or `etc`.
    pub fn parse(spec: &str) -> Option<Sizes> {
        if spec == "etc" {
            return Some(Sizes::Etc);
        }
        if let Some((a, b)) = spec.split_once('-') {
            let (a, b) = (a.parse().ok()?, b.parse().ok()?);
            return (a <= b && a > 0).then_some(Sizes::Uniform(a, b));
        }
        spec.parse().ok().map(Sizes::Fixed)
    }

    /// The value size of trace key `key`.
    pub fn of(self, key: u32) -> usize {
        match self {
            Sizes::Fixed(n) => n,
            Sizes::Uniform(lo, hi) => lo + ((first_draw(key) as u128 * (hi - lo + 1) as u128) >> 64) as usize,
            Sizes::Etc => {
                let u = (first_draw(key) >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
                let x = ETC_LOCATION + ETC_SCALE * ((1.0 - u).powf(-ETC_SHAPE) - 1.0) / ETC_SHAPE;
                (x as usize).clamp(1, ETC_MAX)
            }
        }
    }
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The first output of larder-bench's xoshiro256++ seeded (by splitmix64)
/// with the key's size seed.
fn first_draw(key: u32) -> u64 {
    let mut x = SIZE_SEED ^ ((key as u64) << 8);
    let s = [splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x)];
    (s[0].wrapping_add(s[3])).rotate_left(23).wrapping_add(s[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_range_with_the_expected_means() {
        for (spec, mean) in [("50-500", 275.0), ("500-5000", 2750.0), ("etc", 344.0)] {
            let s = Sizes::parse(spec).unwrap();
            let v: Vec<usize> = (0..50_000u32).map(|k| s.of(k)).collect();
            let m = v.iter().sum::<usize>() as f64 / v.len() as f64;
            assert!((m - mean).abs() < mean * 0.08, "{spec}: mean {m}");
            if let Sizes::Uniform(lo, hi) = s {
                assert!(v.iter().all(|&x| (lo..=hi).contains(&x)));
            }
            assert_eq!(s.of(12345), s.of(12345));
        }
        assert_eq!(Sizes::parse("4000"), Some(Sizes::Fixed(4000)));
        assert_eq!(Sizes::parse("5-1"), None);
    }
}
