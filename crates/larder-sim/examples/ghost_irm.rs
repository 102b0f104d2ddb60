//! What S3-FIFO's ghost is worth when requests are independent draws from a
//! fixed Zipf(1.0) popularity (no temporal locality): item-level S3-FIFO
//! with and without its ghost, steady hit ratio (second half of 60 requests
//! per key), mean of 20 seeds. The store's evict_tests.rs Zipf phases are
//! such a workload (1,200 keys, about 380 of them fit); see
//! docs/size-aware-eviction.md for what this explains.
//!
//! `cargo run --release -p larder-sim --example ghost_irm`

use larder_sim::{s3fifo::S3Fifo, util::Rng, workload::Zipf, Policy};

fn steady_hit_ratio(mut p: S3Fifo, z: &Zipf, keys: usize, seed: u64) -> f64 {
    let mut rng = Rng::new(seed);
    let n = 60 * keys;
    let mut hits = 0usize;
    for i in 0..n {
        let hit = p.access(z.sample(&mut rng));
        hits += (hit && i >= n / 2) as usize;
    }
    hits as f64 / (n - n / 2) as f64
}

fn main() {
    const SEEDS: u64 = 20;
    for (keys, cap) in [(1_200usize, 380usize), (1_200, 200), (10_000, 1_000), (100_000, 32_000)] {
        let z = Zipf::new(keys, 1.0);
        let mean = |ghost: bool| {
            (1..=SEEDS).map(|seed| steady_hit_ratio(if ghost { S3Fifo::new(cap) } else { S3Fifo::without_ghost(cap) }, &z, keys, seed)).sum::<f64>() / SEEDS as f64
        };
        let (with, without) = (mean(true), mean(false));
        println!("Zipf(1.0) over {keys} keys, {cap} cached: S3-FIFO {with:.4}, without its ghost {without:.4} ({:+.4})", with - without);
    }
}
