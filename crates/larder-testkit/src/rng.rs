//! Seeded pseudo-random generators for tests: deterministic, dependency-free,
//! and fast enough to fill hundreds of MiB.
//!
//! Three classic generators, because the test files picked different ones
//! before they shared this module and a test's random cases are part of what
//! it checks: moving a test here must not change the sequence it sees. Each
//! type reproduces its algorithm exactly (the unit tests below pin the first
//! outputs), so the same seed gives the same cases as before.
//!
//! * [`XorShift64`]: Marsaglia's xorshift64 with shifts 13, 7, 17. The
//!   cheapest; the state must not be zero (it would stay zero).
//! * [`XorShift64Star`]: xorshift64 with shifts 12, 25, 27 and a final
//!   multiply, which fixes xorshift's weak low bits.
//! * [`SplitMix64`]: a counter run through a 64-bit finaliser; every seed,
//!   zero included, gives a good stream, and [`splitmix64`] alone turns a
//!   structured number (a key id and a version, say) into a well-mixed seed.
//!
//! None of them is for cryptography.

/// Marsaglia's xorshift64 (13, 7, 17). A zero state stays zero, so seed it
/// with something non-zero (for example `seed | 1`).
#[derive(Clone, Debug)]
pub struct XorShift64(pub u64);

impl XorShift64 {
    /// Steps the state and returns it.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (modulo reduction: the bias is negligible for the
    /// small `n` tests use). `n` must not be zero.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `pct` percent.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// xorshift64* (12, 25, 27, then a multiply). A zero state stays zero.
#[derive(Clone, Debug)]
pub struct XorShift64Star(pub u64);

impl XorShift64Star {
    /// Steps the state and returns the multiplied output.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`. `n` must not be zero.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// An index into something `len` long (`len` must not be zero).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }
}

/// SplitMix64: any seed, zero included.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// Advances the counter and returns its mixed value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        mix(self.0)
    }

    /// A number in `0..n`. `n` must not be zero.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `pct` percent.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// 2^64 divided by the golden ratio: SplitMix64's counter increment.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The first SplitMix64 output for seed `x`: a one-shot hash that spreads
/// structured inputs (small ids, counters) over all 64 bits.
pub fn splitmix64(x: u64) -> u64 {
    SplitMix64(x).next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorshift64_matches_the_algorithm() {
        // By hand from seed 1: 1 ^ 1<<13 = 0x2001; ^ >>7 (0x40) = 0x2041;
        // ^ <<17 (0x4082_0000) = 0x4082_2041.
        let mut r = XorShift64(1);
        assert_eq!(r.next_u64(), 0x4082_2041);
        assert_ne!(r.next_u64(), 0x4082_2041);
    }

    #[test]
    fn xorshift64_star_matches_the_algorithm() {
        // Seed 1: the state becomes 1 | 1<<25, times the multiplier.
        assert_eq!(XorShift64Star(1).next_u64(), 0x0200_0001u64.wrapping_mul(0x2545_F491_4F6C_DD1D));
        assert_eq!(XorShift64Star(1).next_u64(), 0x47e4_ce4b_896c_dd1d);
    }

    #[test]
    fn splitmix64_matches_the_reference_output() {
        // The published first output of SplitMix64 seeded with 0.
        assert_eq!(SplitMix64(0).next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn below_and_chance_stay_in_range() {
        let mut a = XorShift64(7);
        let mut b = SplitMix64(7);
        let mut c = XorShift64Star(7);
        let mut hits = 0;
        for _ in 0..10_000 {
            assert!(a.below(10) < 10 && b.below(3) < 3 && c.below(1) == 0 && c.index(5) < 5);
            hits += u32::from(a.chance(30));
            assert!(!b.chance(0) && b.chance(100));
        }
        // 30% of 10,000 draws, far from both ends.
        assert!((2500..3500).contains(&hits), "{hits}");
    }
}
