//! Multi-threaded get/set rates against one `Store` (90% get, 10% set,
//! uniform keys, all fitting in memory), to see how the sharded locks scale.
//! `cargo run --release -p larder-store --example throughput -- [threads] [seconds]`

use larder_store::{Config, Lookup, Mode, Store};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().map_or(2, |a| a.parse().unwrap());
    let secs: f64 = args.next().map_or(2.0, |a| a.parse().unwrap());
    let s = Arc::new(Store::new(Config { memory_limit: 256 << 20, ..Config::default() }).unwrap());
    let nkeys = 200_000u64;
    let keys: Arc<Vec<Vec<u8>>> = Arc::new((0..nkeys).map(|i| format!("key:{i:012}").into_bytes()).collect());
    let value = vec![b'v'; 100];
    for k in keys.iter() {
        s.store(Mode::Set, k, 0, 0, &value, 1);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (s, keys, stop, total) = (s.clone(), keys.clone(), stop.clone(), total.clone());
            std::thread::spawn(move || {
                let value = vec![b'w'; 100];
                let mut x = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(t as u64 + 1);
                let mut out = Vec::with_capacity(256);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..256 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let k = &keys[(x % nkeys) as usize];
                        if x % 10 < 1 {
                            s.store(Mode::Set, k, 0, 0, &value, 1);
                        } else if let Lookup::Hit(()) = s.get(k, 1, |i| {
                            out.clear();
                            out.extend_from_slice(i.value);
                        }) {
                        }
                        n += 1;
                    }
                }
                total.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let rate = total.load(Ordering::Relaxed) as f64 / t.elapsed().as_secs_f64();
    println!("{threads} threads, {} shards: {:.2} M ops/s (90% get, 10% set)", s.stats().shards, rate / 1e6);
}
